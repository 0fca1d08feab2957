/* Tests of src/query/pyro.c (API: Query: querier.v1.QuerierService): the
 * profile name of a series without __name__ (Pyroscope's rule on its sample
 * type), which series a Pyroscope profile type id selects, and the one
 * translation of (id, selector) into a query that the querier and
 * /pyroscope/render share (query_pyro_query), with `k=""` selecting the
 * series without k as in Prometheus. */
#include "fixture.h"

#include <string.h>

#include "query/pyro.h"
#include "query/query_int.h"

static store_series_t series(const char *type, const char *pt, const char *pu, const model_label_t *labels,
                             uint32_t n)
{
	return (store_series_t){.type = slice_cstr(type),
	                        .period_type = slice_cstr(pt),
	                        .period_unit = slice_cstr(pu),
	                        .labels = labels,
	                        .n_labels = n};
}

static void expect_name(const char *sample_type, const char *name)
{
	store_series_t s = series("x:y", "", "", NULL, 0);
	slice_t got = query_pyro_name(&s, slice_cstr(sample_type));
	if (!slice_eq_cstr(got, name))
		fail_msg("%s: %.*s, want %s", sample_type, (int)got.n, (const char *)got.p, name);
}

static void test_names(void **state)
{
	(void)state;
	expect_name("cpu", "process_cpu");
	expect_name("samples", "process_cpu");
	expect_name("alloc_space", "memory");
	expect_name("inuse_objects", "memory");
	expect_name("space", "memory");
	expect_name("contentions", "mutex");
	expect_name("delay", "mutex");
	expect_name("goroutine", "goroutines");
	expect_name("wall", "wall");
	expect_name("events", "events");
	expect_name("Weird Type", QUERY_PYRO_UNKNOWN_NAME);
	model_label_t named[] = {{slice_cstr("__name__"), slice_cstr("block")}};
	store_series_t s = series("delay:nanoseconds", "", "", named, 1);
	assert_true(slice_eq_cstr(query_pyro_name(&s, slice_cstr("delay")), "block"));
}

static int is(const store_series_t *s, const char *type, const char *id)
{
	query_type_t t;
	err_t err = {0};
	assert_int_equal(query_type_parse(slice_cstr(type), &t, &err), 0);
	return query_pyro_is(s, &t, slice_cstr(id));
}

static void test_is(void **state)
{
	(void)state;
	store_series_t cpu = series("cpu:nanoseconds", "cpu", "nanoseconds", NULL, 0);
	assert_true(is(&cpu, "cpu:nanoseconds", "process_cpu:cpu:nanoseconds:cpu:nanoseconds"));
	assert_false(is(&cpu, "cpu:nanoseconds", "block:cpu:nanoseconds:cpu:nanoseconds"));
	assert_false(is(&cpu, "cpu:nanoseconds", "process_cpu:cpu:nanoseconds:cpu:nanosecond"));
	assert_false(is(&cpu, "cpu:nanoseconds", "process_cpu:cpu:nanoseconds:cpu:nanosecondss"));
	assert_false(is(&cpu, "cpu:nanoseconds", "process_cpu:cpu:nanoseconds:cpu"));
	/* A cpu_alias series read as cpu:nanoseconds has a CPU period. */
	store_series_t alias = series("samples:count", "cpu", "nanoseconds", NULL, 0);
	assert_true(is(&alias, "cpu:nanoseconds", "process_cpu:cpu:nanoseconds:cpu:nanoseconds"));
	assert_true(is(&alias, "samples:count", "process_cpu:samples:count:cpu:nanoseconds"));
	/* Empty period type (py-spy). */
	store_series_t py = series("samples:count", "", "milliseconds", NULL, 0);
	assert_true(is(&py, "samples:count", "process_cpu:samples:count::milliseconds"));
	assert_false(is(&py, "samples:count", "process_cpu:samples:count:cpu:milliseconds"));
	model_label_t named[] = {{slice_cstr("__name__"), slice_cstr("block")}};
	store_series_t block = series("delay:nanoseconds", "contentions", "count", named, 1);
	assert_true(is(&block, "delay:nanoseconds", "block:delay:nanoseconds:contentions:count"));
	assert_false(is(&block, "delay:nanoseconds", "mutex:delay:nanoseconds:contentions:count"));
}

#define CPU_ID "process_cpu:cpu:nanoseconds:cpu:nanoseconds"

/* query_pyro_query of id and selector text into *q (sel and a kept for q). */
static int translate(const char *id, const char *text, sel_t *sel, arena_t *a, query_params_t *q, err_t *err)
{
	memset(q, 0, sizeof *q);
	err_t perr = {0};
	if (sel_parse(slice_cstr(text), sel, &perr) < 0)
		fail_msg("sel_parse %s: %s", text, perr.msg);
	return query_pyro_query(slice_cstr(id), sel, "query: the profile type id", "query", a, q, err);
}

static void test_query(void **state)
{
	(void)state;
	arena_t *a = arena_new();
	sel_t sel;
	query_params_t q;
	err_t err = {0};
	assert_int_equal(translate(CPU_ID,
	                           "{__name__=\"" CPU_ID "\", service_name=\"api\", env=\"prod\", "
	                           "region=\"\", pod!=\"x\", zone=~\"e.*\"}",
	                           &sel, a, &q, &err),
	                 0);
	assert_true(slice_eq_cstr(q.pyro_id, CPU_ID));
	assert_true(slice_eq_cstr(q.type, "cpu:nanoseconds"));
	assert_true(slice_eq_cstr(q.service, "api"));
	/* `=` with a value: series label or sample attribute */
	assert_int_equal(q.n_labels, 1);
	assert_true(slice_eq_cstr(q.labels[0].key, "env") && slice_eq_cstr(q.labels[0].value, "prod"));
	/* k="" and the other operators: series labels, absent = "" */
	assert_int_equal(q.n_matchers, 3);
	assert_true(slice_eq_cstr(q.matchers[0].name, "region") && q.matchers[0].op == SEL_EQ &&
	            q.matchers[0].value.n == 0);
	assert_true(slice_eq_cstr(q.matchers[1].name, "pod") && q.matchers[1].op == SEL_NE);
	assert_true(slice_eq_cstr(q.matchers[2].name, "zone") && q.matchers[2].op == SEL_RE);
	sel_free(&sel);

	static const struct {
		const char *id, *sel;
		int status;
		const char *msg;
	} bad[] = {
	    {"cpu:nanoseconds", "{service_name=\"a\"}", 400,
	     "query: the profile type id \"cpu:nanoseconds\" is not "
	     "NAME:SAMPLE_TYPE:SAMPLE_UNIT:PERIOD_TYPE:PERIOD_UNIT"},
	    {":cpu:nanoseconds:cpu:nanoseconds", "{service_name=\"a\"}", 400,
	     "query: the profile type id \":cpu:nanoseconds:cpu:nanoseconds\" is not "
	     "NAME:SAMPLE_TYPE:SAMPLE_UNIT:PERIOD_TYPE:PERIOD_UNIT"},
	    {"process_cpu::nanoseconds:cpu:nanoseconds", "{service_name=\"a\"}", 400,
	     "query: the profile type id \"process_cpu::nanoseconds:cpu:nanoseconds\" is not "
	     "NAME:SAMPLE_TYPE:SAMPLE_UNIT:PERIOD_TYPE:PERIOD_UNIT"},
	    {"a:b:c:d:e:f", "{service_name=\"a\"}", 400,
	     "query: the profile type id \"a:b:c:d:e:f\" is not "
	     "NAME:SAMPLE_TYPE:SAMPLE_UNIT:PERIOD_TYPE:PERIOD_UNIT"},
	    {CPU_ID, "{env=\"prod\"}", 400, "query must name the service: {service_name=\"NAME\", …}"},
	    {CPU_ID, "{service_name=\"\"}", 400, "query must name the service: {service_name=\"NAME\", …}"},
	    {CPU_ID, "{service_name=~\"a.*\"}", 501,
	     "query: service_name takes = only (the service to merge), not =~"},
	    {CPU_ID, "{service_name!=\"a\"}", 501,
	     "query: service_name takes = only (the service to merge), not !="},
	    {CPU_ID, "{service_name!~\"a\"}", 501,
	     "query: service_name takes = only (the service to merge), not !~"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		err = (err_t){0};
		assert_int_equal(translate(bad[i].id, bad[i].sel, &sel, a, &q, &err), -1);
		assert_int_equal(err.status, bad[i].status);
		assert_string_equal(err.msg, bad[i].msg);
		sel_free(&sel);
	}
	arena_free(a);
}

/* The flame graph total of id{text}, merged as both routes merge. */
static int64_t merged_total(qfix *f, const char *id, const char *text)
{
	arena_t *a = arena_new();
	sel_t sel;
	query_params_t q;
	err_t err = {0};
	if (translate(id, text, &sel, a, &q, &err) < 0)
		fail_msg("query_pyro_query %s: %s", text, err.msg);
	q.project = slice_cstr("p");
	q.from_ns = T0 * NS_PER_SEC;
	q.until_ns = (T0 + 60) * NS_PER_SEC;
	model_tree_t tree;
	if (query_merge(f->s, &q, a, &tree, &err) < 0)
		fail_msg("query_merge %s: %s", text, err.msg);
	int64_t total = tree.n_nodes ? tree.total[0] : 0;
	sel_free(&sel);
	arena_free(a);
	return total;
}

/* k="" selects the series without k (or with it empty; Kiln stores no empty
 * value), k!="" those with one; `=` with a value also matches sample
 * attributes of series without the label. Values by hand from the writes. */
static void test_empty_value(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "cpu:nanoseconds", "env=prod", T0, "main 1");
	qfix_put(f, "api", "cpu:nanoseconds", "env=dev", T0 + 1, "main 2");
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0 + 2, "main 4 env=prod\nmain;f 8");
	assert_int_equal(merged_total(f, CPU_ID, "{service_name=\"api\"}"), 15);
	assert_int_equal(merged_total(f, CPU_ID, "{service_name=\"api\", env=\"\"}"), 12);
	assert_int_equal(merged_total(f, CPU_ID, "{service_name=\"api\", env!=\"\"}"), 3);
	assert_int_equal(merged_total(f, CPU_ID, "{service_name=\"api\", env=\"prod\"}"), 5);
	assert_int_equal(merged_total(f, CPU_ID, "{service_name=\"api\", env=\"\", region=\"\"}"), 12);
	assert_int_equal(merged_total(f, CPU_ID, "{service_name=\"api\", env=~\"|dev\"}"), 14);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_is),
	    cmocka_unit_test(test_query),
	    cmocka_unit_test_setup_teardown(test_empty_value, qfix_setup, qfix_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
