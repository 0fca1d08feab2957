/* Tests of src/query/services.c: services busiest first by CPU (cpu_alias
 * series counted as count x period) and the types of one service. */
#include "fixture.h"

static void test_services_busiest_first(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "cpu:nanoseconds", "pod=a", T0, "main 60");
	qfix_put(f, "api", "cpu:nanoseconds", "pod=b", T0 + 10, "main 40");
	qfix_put(f, "api", "inuse_space:bytes", NULL, T0, "main 4096");
	qfix_put(f, "db", "cpu:nanoseconds", NULL, T0, "main 300");
	qfix_write(f, &(qprof){"ebpf", "samples:count", NULL, T0, 50000000, 1}, "main 2");
	qfix_put(f, "mem", "inuse_space:bytes", NULL, T0, "main 1");
	qfix_put(f, "aaa", "goroutine:count", NULL, T0, "main 1");
	qfix_put(f, "later", "cpu:nanoseconds", NULL, T0 + 3600, "main 1");
	query_params_t q = qfix_params(NULL, NULL, T0 - 60, T0 + 60);
	buf_t b;
	buf_init(&b, SIZE_MAX);
	err_t err = {0};
	if (query_services(f->s, &q, &b, &err) < 0)
		fail_msg("query_services: %s", err.msg);
	assert_string_equal(
	    qfix_str(&b),
	    "{\"services\":[{\"name\":\"ebpf\",\"types\":[\"cpu:nanoseconds\",\"samples:count\"],"
	    "\"cpu_nanoseconds\":100000000},{\"name\":\"db\",\"types\":[\"cpu:nanoseconds\"],"
	    "\"cpu_nanoseconds\":300},{\"name\":\"api\",\"types\":[\"cpu:nanoseconds\","
	    "\"inuse_space:bytes\"],\"cpu_nanoseconds\":100},{\"name\":\"aaa\",\"types\":["
	    "\"goroutine:count\"],\"cpu_nanoseconds\":0},{\"name\":\"mem\",\"types\":["
	    "\"inuse_space:bytes\"],\"cpu_nanoseconds\":0}]}");
	buf_free(&b);
}

static void test_services_over_two_days_and_empty(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0, "main 5");
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0 + 7200, "main 6");
	query_params_t q = qfix_params(NULL, NULL, T0, T0 + 7260);
	buf_t b;
	buf_init(&b, SIZE_MAX);
	err_t err = {0};
	assert_int_equal(query_services(f->s, &q, &b, &err), 0);
	assert_string_equal(
	    qfix_str(&b),
	    "{\"services\":[{\"name\":\"api\",\"types\":[\"cpu:nanoseconds\"],\"cpu_nanoseconds\":11}]}");
	buf_reset(&b);
	q = qfix_params(NULL, NULL, T0 - 86400 * 5, T0 - 86400 * 4);
	assert_int_equal(query_services(f->s, &q, &b, &err), 0);
	assert_string_equal(qfix_str(&b), "{\"services\":[]}");
	buf_free(&b);
}

static void test_types(void **state)
{
	qfix *f = *state;
	qfix_write(f, &(qprof){"ebpf", "samples:count", NULL, T0, 50000000, 1}, "main 2");
	qfix_put(f, "go", "inuse_space:bytes", NULL, T0, "main 2");
	qfix_put(f, "go", "cpu:nanoseconds", NULL, T0, "main 2");
	qfix_put(f, "go", "alloc_space:bytes", NULL, T0, "main 2");
	buf_t b;
	buf_init(&b, SIZE_MAX);
	err_t err = {0};
	query_params_t q = qfix_params("ebpf", NULL, T0 - 60, T0 + 60);
	assert_int_equal(query_types(f->s, &q, &b, &err), 0);
	assert_string_equal(qfix_str(&b), "{\"types\":[\"cpu:nanoseconds\",\"samples:count\"]}");
	buf_reset(&b);
	q.service = slice_cstr("go");
	assert_int_equal(query_types(f->s, &q, &b, &err), 0);
	assert_string_equal(qfix_str(&b),
	                    "{\"types\":[\"alloc_space:bytes\",\"cpu:nanoseconds\",\"inuse_space:bytes\"]}");
	buf_reset(&b);
	q.service = slice_cstr("nobody");
	assert_int_equal(query_types(f->s, &q, &b, &err), 0);
	assert_string_equal(qfix_str(&b), "{\"types\":[]}");
	buf_reset(&b);
	q.service = slice_cstr("");
	assert_int_equal(query_types(f->s, &q, &b, &err), -1);
	assert_int_equal(err.status, 400);
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_services_busiest_first, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_services_over_two_days_and_empty, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_types, qfix_setup, qfix_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
