/* Tests of src/query/flame.c: the flame graph JSON of merged profiles
 * (exact output, merged siblings, deep stacks, empty results, bad params). */
#include "fixture.h"

static void expect_flame(qfix *f, const query_params_t *q, const char *want)
{
	buf_t b;
	buf_init(&b, SIZE_MAX);
	err_t err = {0};
	if (query_flamegraph(f->s, q, &b, &err) < 0)
		fail_msg("query_flamegraph: %d %s", err.status, err.msg);
	assert_string_equal(qfix_str(&b), want);
	buf_free(&b);
}

static void test_window_sums_two_series(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "cpu:nanoseconds", "pod=a", T0, "main;f;g 10\nmain;f 5\nmain;h 20");
	qfix_put(f, "api", "cpu:nanoseconds", "pod=b", T0 + 10, "main;h 1\nmain;f;g 4");
	qfix_put(f, "other", "cpu:nanoseconds", "pod=a", T0, "main;nope 1000");
	query_params_t q = qfix_params("api", "cpu:nanoseconds", T0 - 60, T0 + 60);
	expect_flame(
	    f, &q,
	    "{\"type\":\"cpu:nanoseconds\",\"unit\":\"nanoseconds\",\"total\":40,\"root\":{\"name\":"
	    "\"total\",\"self\":0,\"total\":40,\"children\":[{\"name\":\"main\",\"self\":0,\"total\":"
	    "40,\"children\":[{\"name\":\"h\",\"self\":21,\"total\":21,\"children\":[]},{\"name\":"
	    "\"f\",\"self\":5,\"total\":19,\"children\":[{\"name\":\"g\",\"self\":14,\"total\":14,"
	    "\"children\":[]}]}]}]}}");
}

/* Samples with an empty stack are the root's self (go tool pprof counts
 * them in the total under no function). */
static void test_empty_stacks_are_root_self(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0, "main;f 5\n 3");
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0 + 10, " 1");
	query_params_t q = qfix_params("api", "cpu:nanoseconds", T0, T0 + 60);
	expect_flame(f, &q,
	             "{\"type\":\"cpu:nanoseconds\",\"unit\":\"nanoseconds\",\"total\":9,\"root\":{\"name\":"
	             "\"total\",\"self\":4,\"total\":9,\"children\":[{\"name\":\"main\",\"self\":0,\"total\":"
	             "5,\"children\":[{\"name\":\"f\",\"self\":5,\"total\":5,\"children\":[]}]}]}}");
}

static void test_same_name_siblings_merge_and_frame_marks(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0,
	         "main;work@a.go 3\nmain;work@b.go 4\nmain;work@b.go;x 1\nmain;!/usr/lib/libc.so.6 2\n"
	         "main;k#kernel 1\nzz 1\naa 1\nq\"uote 1");
	query_params_t q = qfix_params("api", "cpu:nanoseconds", T0, T0 + 1);
	expect_flame(
	    f, &q,
	    "{\"type\":\"cpu:nanoseconds\",\"unit\":\"nanoseconds\",\"total\":14,\"root\":{\"name\":"
	    "\"total\",\"self\":0,\"total\":14,\"children\":[{\"name\":\"main\",\"self\":0,\"total\":"
	    "11,\"children\":[{\"name\":\"work\",\"self\":7,\"total\":8,\"children\":[{\"name\":\"x\","
	    "\"self\":1,\"total\":1,\"children\":[]}]},{\"name\":\"libc.so.6\",\"unsymbolized\":true,"
	    "\"self\":2,\"total\":2,\"children\":[]},{\"name\":\"k\",\"kind\":\"kernel\",\"self\":1,"
	    "\"total\":1,\"children\":[]}]},{\"name\":\"aa\",\"self\":1,\"total\":1,\"children\":[]},"
	    "{\"name\":\"q\\\"uote\",\"self\":1,\"total\":1,\"children\":[]},{\"name\":\"zz\",\"self\":"
	    "1,\"total\":1,\"children\":[]}]}}");
}

static void test_unsymbolized_without_binary_is_unknown(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0, "main;! 2");
	query_params_t q = qfix_params("api", "cpu:nanoseconds", T0, T0 + 1);
	expect_flame(
	    f, &q,
	    "{\"type\":\"cpu:nanoseconds\",\"unit\":\"nanoseconds\",\"total\":2,\"root\":{\"name\":"
	    "\"total\",\"self\":0,\"total\":2,\"children\":[{\"name\":\"main\",\"self\":0,\"total\":2,"
	    "\"children\":[{\"name\":\"unknown\",\"unsymbolized\":true,\"self\":2,\"total\":2,"
	    "\"children\":[]}]}]}}");
}

static void test_empty_result_is_not_an_error(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0, "main 5");
	query_params_t q = qfix_params("api", "alloc_space:bytes", T0 - 60, T0 + 60);
	expect_flame(
	    f, &q,
	    "{\"type\":\"alloc_space:bytes\",\"unit\":\"bytes\",\"total\":0,\"root\":{\"name\":\"total\","
	    "\"self\":0,\"total\":0,\"children\":[]}}");
	q = qfix_params("nobody", "cpu:nanoseconds", T0 - 86400 * 30, T0 - 86400 * 29);
	expect_flame(f, &q,
	             "{\"type\":\"cpu:nanoseconds\",\"unit\":\"nanoseconds\",\"total\":0,\"root\":{\"name\":"
	             "\"total\",\"self\":0,\"total\":0,\"children\":[]}}");
}

static void test_deep_stack(void **state)
{
	qfix *f = *state;
	buf_t text;
	buf_init(&text, SIZE_MAX);
	for (int i = 0; i < 4096; i++)
		buf_printf(&text, "%sf%d", i ? ";" : "", i);
	buf_puts(&text, " 7");
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0, qfix_str(&text));
	query_params_t q = qfix_params("api", "cpu:nanoseconds", T0, T0 + 1);
	buf_t b;
	buf_init(&b, SIZE_MAX);
	err_t err = {0};
	assert_int_equal(query_flamegraph(f->s, &q, &b, &err), 0);
	const char *s = qfix_str(&b);
	int opened = 0;
	for (const char *p = s; (p = strstr(p, "\"children\":[")); p++)
		opened++;
	assert_int_equal(opened, 4097);
	assert_non_null(strstr(s, "{\"name\":\"f4095\",\"self\":7,\"total\":7,\"children\":[]}"));
	assert_int_equal(strlen(s) > 4097 * 2, 1);
	assert_string_equal(s + strlen(s) - 5, "]}]}}");
	buf_free(&b);
	buf_free(&text);
}

static void test_bad_params(void **state)
{
	qfix *f = *state;
	buf_t b;
	buf_init(&b, SIZE_MAX);
	err_t err = {0};
	query_params_t q = qfix_params("api", "cpu:nanoseconds", T0, T0);
	assert_int_equal(query_flamegraph(f->s, &q, &b, &err), -1);
	assert_int_equal(err.status, 400);
	q = qfix_params("api", "cpu", T0, T0 + 1);
	assert_int_equal(query_flamegraph(f->s, &q, &b, &err), -1);
	assert_int_equal(err.status, 400);
	assert_non_null(strstr(err.msg, "SAMPLE_TYPE:UNIT"));
	q = qfix_params("", "cpu:nanoseconds", T0, T0 + 1);
	assert_int_equal(query_flamegraph(f->s, &q, &b, &err), -1);
	assert_int_equal(err.status, 400);
	q = qfix_params("api", "", T0, T0 + 1);
	assert_int_equal(query_flamegraph(f->s, &q, &b, &err), -1);
	assert_int_equal(err.status, 400);
	buf_free(&b);
}

static void test_result_past_buffer_ceiling_is_413(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0, "main;f;g 10");
	query_params_t q = qfix_params("api", "cpu:nanoseconds", T0, T0 + 1);
	buf_t b;
	buf_init(&b, 40);
	err_t err = {0};
	assert_int_equal(query_flamegraph(f->s, &q, &b, &err), -1);
	assert_int_equal(err.status, 413);
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_window_sums_two_series, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_empty_stacks_are_root_self, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_same_name_siblings_merge_and_frame_marks, qfix_setup,
	                                    qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_unsymbolized_without_binary_is_unknown, qfix_setup,
	                                    qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_empty_result_is_not_an_error, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_deep_stack, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_bad_params, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_result_past_buffer_ceiling_is_413, qfix_setup,
	                                    qfix_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
