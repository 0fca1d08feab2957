/* Tests of src/query/top.c: self and cumulative values per function name,
 * with recursion counted once. */
#include "fixture.h"

/* Expects the cpu:nanoseconds top table with this total and these rows. */
static void expect_top(qfix *f, const query_params_t *q, uint32_t limit, int64_t total, const char *rows)
{
	char want[1024];
	snprintf(want, sizeof want,
	         "{\"type\":\"cpu:nanoseconds\",\"unit\":\"nanoseconds\",\"total\":%lld,\"rows\":[%s]}",
	         (long long)total, rows);
	buf_t b;
	buf_init(&b, SIZE_MAX);
	err_t err = {0};
	if (query_top(f->s, q, limit, &b, &err) < 0)
		fail_msg("query_top: %d %s", err.status, err.msg);
	assert_string_equal(qfix_str(&b), want);
	buf_free(&b);
}

static void test_recursion_counts_once(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0, "main;a;b;a 10\nmain;a 5\nmain;c;a 2");
	query_params_t q = qfix_params("api", "cpu:nanoseconds", T0, T0 + 60);
	expect_top(f, &q, 0, 17,
	           "{\"name\":\"a\",\"self\":17,\"total\":17},{\"name\":\"b\",\"self\":0,\"total\":10},"
	           "{\"name\":\"c\",\"self\":0,\"total\":2},{\"name\":\"main\",\"self\":0,\"total\":17}");
	expect_top(f, &q, 2, 17,
	           "{\"name\":\"a\",\"self\":17,\"total\":17},{\"name\":\"b\",\"self\":0,\"total\":10}");
}

static void test_same_name_sums_and_ties_by_name(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0,
	         "main;w@x.go 3\nmain;w@y.go 4\nmain;z 7\nmain;!/lib/libc.so.6 7\nmain 1");
	query_params_t q = qfix_params("api", "cpu:nanoseconds", T0, T0 + 60);
	expect_top(f, &q, 0, 22,
	           "{\"name\":\"libc.so.6\",\"self\":7,\"total\":7},{\"name\":\"w\",\"self\":7,\"total\":7},"
	           "{\"name\":\"z\",\"self\":7,\"total\":7},{\"name\":\"main\",\"self\":1,\"total\":22}");
}

/* Empty stacks count in the total but are no function: no row (as
 * go tool pprof -top). */
static void test_empty_stacks_count_in_total_only(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0, "main;a 4\n 6");
	query_params_t q = qfix_params("api", "cpu:nanoseconds", T0, T0 + 60);
	expect_top(f, &q, 0, 10,
	           "{\"name\":\"a\",\"self\":4,\"total\":4},{\"name\":\"main\",\"self\":0,\"total\":4}");
	qfix_put(f, "idle", "cpu:nanoseconds", NULL, T0, " 6");
	q.service = slice_cstr("idle");
	expect_top(f, &q, 0, 6, "");
}

static void test_empty(void **state)
{
	qfix *f = *state;
	query_params_t q = qfix_params("api", "cpu:nanoseconds", T0, T0 + 60);
	expect_top(f, &q, 10, 0, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_recursion_counts_once, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_same_name_sums_and_ties_by_name, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_empty_stacks_count_in_total_only, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_empty, qfix_setup, qfix_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
