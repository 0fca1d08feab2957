/* Tests of src/query/types.c (API: Type ids, Profile names): the type id
 * parser, the ids a listing shows when kinds of one SAMPLE:UNIT carry
 * different profile names, and what each id selects in a query. */
#include "fixture.h"
#include "query/query_int.h"

static void expect_parse(const char *id, int named, const char *profile, const char *type, const char *st,
                         const char *su, int cpu_ns)
{
	query_type_t t;
	err_t err = {0};
	if (query_type_parse(slice_cstr(id), &t, &err) < 0)
		fail_msg("%s: %s", id, err.msg);
	assert_int_equal(t.named, named);
	assert_true(slice_eq_cstr(t.name, id));
	assert_true(slice_eq_cstr(t.profile, profile));
	assert_true(slice_eq_cstr(t.type, type));
	assert_true(slice_eq_cstr(t.sample_type, st));
	assert_true(slice_eq_cstr(t.sample_unit, su));
	assert_int_equal(t.cpu_ns, cpu_ns);
}

static void expect_bad(const char *id)
{
	query_type_t t;
	err_t err = {0};
	if (query_type_parse(slice_cstr(id), &t, &err) == 0)
		fail_msg("%s parsed", id);
	assert_int_equal(err.status, 400);
	assert_non_null(strstr(err.msg, "type must be SAMPLE_TYPE:UNIT or NAME:SAMPLE_TYPE:UNIT"));
}

static void test_parse(void **state)
{
	(void)state;
	expect_parse("cpu:nanoseconds", 0, "", "cpu:nanoseconds", "cpu", "nanoseconds", 1);
	expect_parse("delay:nanoseconds", 0, "", "delay:nanoseconds", "delay", "nanoseconds", 0);
	expect_parse("block:delay:nanoseconds", 1, "block", "delay:nanoseconds", "delay", "nanoseconds", 0);
	expect_parse("mutex:contentions:count", 1, "mutex", "contentions:count", "contentions", "count", 0);
	expect_parse("process_cpu:cpu:nanoseconds", 1, "process_cpu", "cpu:nanoseconds", "cpu", "nanoseconds",
	             1);
	expect_parse("a.b-c_9:x:y", 1, "a.b-c_9", "x:y", "x", "y", 0);
	/* More ':' than three parts: the unit keeps them. */
	expect_parse("block:delay:nano:seconds", 1, "block", "delay:nano:seconds", "delay", "nano:seconds",
	             0);
	/* Not a profile name before the first ':': SAMPLE:UNIT split at the first ':', as before names. */
	expect_parse("Block:delay:nanoseconds", 0, "", "Block:delay:nanoseconds", "Block",
	             "delay:nanoseconds", 0);
	expect_parse("a b:c:d", 0, "", "a b:c:d", "a b", "c:d", 0);
	/* An empty sample type or unit after the name: SAMPLE:UNIT with a ':' in the unit. */
	expect_parse("block::nanoseconds", 0, "", "block::nanoseconds", "block", ":nanoseconds", 0);
	expect_parse("block:delay:", 0, "", "block:delay:", "block", "delay:", 0);
	expect_bad("");
	expect_bad("cpu");
	expect_bad(":nanoseconds");
	expect_bad("cpu:");
	expect_bad(":");
}

static void test_profile_name_valid(void **state)
{
	(void)state;
	assert_true(model_profile_name_valid(slice_cstr("process_cpu")));
	assert_true(model_profile_name_valid(slice_cstr("a.b-c_0")));
	char max[LIMIT_PROFILE_NAME_BYTES + 2];
	memset(max, 'x', sizeof max);
	max[LIMIT_PROFILE_NAME_BYTES] = 0;
	assert_true(model_profile_name_valid(slice_cstr(max)));
	max[LIMIT_PROFILE_NAME_BYTES] = 'x';
	max[LIMIT_PROFILE_NAME_BYTES + 1] = 0;
	assert_false(model_profile_name_valid(slice_cstr(max)));
	assert_false(model_profile_name_valid(slice_cstr("")));
	assert_false(model_profile_name_valid(slice_cstr("Block")));
	assert_false(model_profile_name_valid(slice_cstr("a:b")));
	assert_false(model_profile_name_valid(slice_cstr("a b")));
	assert_false(model_profile_name_valid(slice_cstr("a/b")));
}

static const char *ids_json(query_kind_t *k, uint32_t n, buf_t *b)
{
	buf_reset(b);
	assert_int_equal(query_json_kinds(b, k, n), 0);
	return qfix_str(b);
}

static void test_kind_ids(void **state)
{
	(void)state;
	buf_t b;
	buf_init(&b, SIZE_MAX);
#define K(t, p) {slice_cstr(t), slice_cstr(p)}
	query_kind_t one[] = {K("delay:nanoseconds", "block"), K("contentions:count", "block")};
	assert_string_equal(ids_json(one, 2, &b), "[\"contentions:count\",\"delay:nanoseconds\"]");
	query_kind_t two[] = {K("delay:nanoseconds", "mutex"), K("contentions:count", "block"),
	                      K("delay:nanoseconds", "block"), K("contentions:count", "mutex"),
	                      K("cpu:nanoseconds", "process_cpu")};
	assert_string_equal(ids_json(two, 5, &b),
	                    "[\"block:contentions:count\",\"mutex:contentions:count\",\"cpu:nanoseconds\","
	                    "\"block:delay:nanoseconds\",\"mutex:delay:nanoseconds\"]");
	/* Unnamed series join a single name; beside two names they are the plain id. */
	query_kind_t mixed[] = {K("cpu:nanoseconds", ""), K("cpu:nanoseconds", "process_cpu"),
	                        K("delay:nanoseconds", ""), K("delay:nanoseconds", "block"),
	                        K("delay:nanoseconds", "mutex")};
	assert_string_equal(ids_json(mixed, 5, &b),
	                    "[\"cpu:nanoseconds\",\"delay:nanoseconds\","
	                    "\"block:delay:nanoseconds\",\"mutex:delay:nanoseconds\"]");
	assert_string_equal(ids_json(NULL, 0, &b), "[]");
#undef K
	buf_free(&b);
}

static const char *run(qfix *f, const char *fn, const char *service, const char *type, buf_t *b)
{
	query_params_t q = qfix_params(service, type, T0 - 60, T0 + 60);
	err_t err = {0};
	buf_reset(b);
	int rc = !strcmp(fn, "types") ? query_types(f->s, &q, b, &err)
	         : !strcmp(fn, "top") ? query_top(f->s, &q, 10, b, &err)
	                              : query_labels(f->s, &q, b, &err);
	if (rc < 0)
		fail_msg("%s %s: %d %s", fn, type ? type : "", err.status, err.msg);
	return qfix_str(b);
}

/* Go block and mutex profiles of one service: listed apart, each id selects
 * its kind, the old SAMPLE:UNIT sums both, CPU of any name ranks services. */
static void test_block_and_mutex_apart(void **state)
{
	qfix *f = *state;
	qfix_put(f, "go", "delay:nanoseconds", "__name__=block,pod=a", T0,
	         "main;chanrecv 700\nmain;select 300");
	qfix_put(f, "go", "delay:nanoseconds", "__name__=mutex,pod=a", T0, "main;unlock 50");
	qfix_put(f, "go", "contentions:count", "__name__=block,pod=a", T0, "main;chanrecv 7");
	qfix_put(f, "go", "contentions:count", "__name__=mutex,pod=a", T0, "main;unlock 2");
	qfix_put(f, "go", "cpu:nanoseconds", "__name__=process_cpu", T0, "main 90");
	qfix_put(f, "other", "cpu:nanoseconds", NULL, T0, "main 10");
	buf_t b;
	buf_init(&b, SIZE_MAX);
	assert_string_equal(run(f, "types", "go", NULL, &b),
	                    "{\"types\":[\"block:contentions:count\",\"mutex:contentions:count\","
	                    "\"cpu:nanoseconds\",\"block:delay:nanoseconds\",\"mutex:delay:nanoseconds\"]}");
	assert_string_equal(
	    run(f, "top", "go", "block:delay:nanoseconds", &b),
	    "{\"type\":\"block:delay:nanoseconds\",\"unit\":\"nanoseconds\",\"total\":1000,"
	    "\"rows\":[{\"name\":\"chanrecv\",\"self\":700,\"total\":700},{\"name\":\"select\","
	    "\"self\":300,\"total\":300},{\"name\":\"main\",\"self\":0,\"total\":1000}]}");
	assert_string_equal(run(f, "top", "go", "mutex:delay:nanoseconds", &b),
	                    "{\"type\":\"mutex:delay:nanoseconds\",\"unit\":\"nanoseconds\",\"total\":50,"
	                    "\"rows\":[{\"name\":\"unlock\",\"self\":50,\"total\":50},{\"name\":\"main\","
	                    "\"self\":0,\"total\":50}]}");
	/* An old link: every kind of the type, summed. */
	assert_string_equal(
	    run(f, "top", "go", "contentions:count", &b),
	    "{\"type\":\"contentions:count\",\"unit\":\"count\",\"total\":9,\"rows\":[{\"name\":"
	    "\"chanrecv\",\"self\":7,\"total\":7},{\"name\":\"unlock\",\"self\":2,\"total\":2},{"
	    "\"name\":\"main\",\"self\":0,\"total\":9}]}");
	/* A name of another type selects nothing; so does an unknown name. */
	assert_string_equal(
	    run(f, "top", "go", "block:cpu:nanoseconds", &b),
	    "{\"type\":\"block:cpu:nanoseconds\",\"unit\":\"nanoseconds\",\"total\":0,\"rows\":[]}");
	assert_string_equal(run(f, "top", "go", "process_cpu:cpu:nanoseconds", &b),
	                    "{\"type\":\"process_cpu:cpu:nanoseconds\",\"unit\":\"nanoseconds\",\"total\":90,"
	                    "\"rows\":[{\"name\":\"main\",\"self\":90,\"total\":90}]}");
	/* __name__ is not a label suggestion: the type id selects it. */
	assert_string_equal(run(f, "labels", "go", "block:delay:nanoseconds", &b),
	                    "{\"labels\":[{\"name\":\"pod\",\"source\":\"series\",\"values\":[\"a\"]}]}");
	query_params_t q = qfix_params(NULL, NULL, T0 - 60, T0 + 60);
	err_t err = {0};
	buf_reset(&b);
	assert_int_equal(query_services(f->s, &q, &b, &err), 0);
	assert_string_equal(
	    qfix_str(&b),
	    "{\"services\":[{\"name\":\"go\",\"types\":[\"block:contentions:count\","
	    "\"mutex:contentions:count\",\"cpu:nanoseconds\",\"block:delay:nanoseconds\","
	    "\"mutex:delay:nanoseconds\"],\"cpu_nanoseconds\":90},{\"name\":\"other\",\"types\":["
	    "\"cpu:nanoseconds\"],\"cpu_nanoseconds\":10}]}");
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_profile_name_valid),
	    cmocka_unit_test(test_kind_ids),
	    cmocka_unit_test_setup_teardown(test_block_and_mutex_apart, qfix_setup, qfix_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
