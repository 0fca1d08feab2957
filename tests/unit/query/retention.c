/* Queries under retention (store_set_retention, OPS: Retention): every query
 * starts no earlier than now - retention, whether or not the expired day is
 * deleted yet; and sums near the int64 limits saturate. Times here are
 * relative to the real clock, since the clamp uses it. */
#include "fixture.h"

static char *run(qfix *f, const query_params_t *q,
                 int (*fn)(store_t *, const query_params_t *, buf_t *, err_t *))
{
	buf_t b;
	buf_init(&b, SIZE_MAX);
	err_t err = {0};
	if (fn(f->s, q, &b, &err) < 0)
		fail_msg("query: %d %s", err.status, err.msg);
	char *s = strdup(qfix_str(&b));
	buf_free(&b);
	return s;
}

static int top10(store_t *s, const query_params_t *q, buf_t *json, err_t *err)
{
	return query_top(s, q, 10, json, err);
}

static void expect_contains(char *got, const char *want)
{
	if (!strstr(got, want))
		fail_msg("%s\nlacks %s", got, want);
	free(got);
}

static void test_queries_clamped_to_retention(void **state)
{
	qfix *f = *state;
	int64_t now = time_now_ns() / NS_PER_SEC;
	qfix_put(f, "api", "cpu:nanoseconds", NULL, now - 15 * 86400, "main;old 1000");
	qfix_put(f, "api", "cpu:nanoseconds", NULL, now - 14 * 86400 - 600, "main;old 100");
	qfix_put(f, "api", "cpu:nanoseconds", NULL, now - 13 * 86400, "main;kept 10");
	qfix_put(f, "api", "cpu:nanoseconds", NULL, now - 3600, "main;kept 1");
	qfix_put(f, "gone", "cpu:nanoseconds", NULL, now - 15 * 86400, "main 7");
	query_params_t q = qfix_params("api", "cpu:nanoseconds", now - 20 * 86400, now + 60);
	expect_contains(run(f, &q, query_flamegraph), "\"total\":1111,");

	err_t err = {0};
	assert_int_equal(store_set_retention(f->s, slice_cstr("p"), 14, &err), 0);
	/* Still on disk: nothing swept. Never shown: older than 14 days, even within a kept day. */
	char *flame = run(f, &q, query_flamegraph);
	assert_null(strstr(flame, "\"old\""));
	expect_contains(flame, "\"total\":11,");
	expect_contains(run(f, &q, top10), "\"name\":\"kept\"");
	query_params_t sq = qfix_params(NULL, NULL, now - 20 * 86400, now + 60);
	expect_contains(run(f, &sq, query_services),
	                "{\"services\":[{\"name\":\"api\",\"types\":[\"cpu:nanoseconds\"],\"cpu_nanoseconds\":11}]}");

	/* A range wholly before the retention is empty. */
	q = qfix_params("api", "cpu:nanoseconds", now - 16 * 86400, now - 14 * 86400 - 60);
	expect_contains(run(f, &q, query_flamegraph), "\"total\":0,");
	buf_t b;
	buf_init(&b, SIZE_MAX);
	assert_int_equal(query_timeline(f->s, &q, 86400, &b, &err), 0);
	assert_null(strstr(qfix_str(&b), ",1000]"));
	assert_null(strstr(qfix_str(&b), ",100]"));
	buf_free(&b);

	/* Back to the store's default (none here). */
	assert_int_equal(store_set_retention(f->s, slice_cstr("p"), 0, &err), 0);
	q = qfix_params("api", "cpu:nanoseconds", now - 20 * 86400, now + 60);
	expect_contains(run(f, &q, query_flamegraph), "\"total\":1111,");
}

static char *span_json(qfix *f, const char *span_id)
{
	buf_t b;
	buf_init(&b, SIZE_MAX);
	err_t err = {0};
	query_span_opts_t o = {0};
	if (query_span(f->s, slice_cstr("p"), slice_cstr(""), slice_cstr(span_id), &o, &b, &err) < 0)
		fail_msg("query_span: %d %s", err.status, err.msg);
	char *s = strdup(qfix_str(&b));
	buf_free(&b);
	return s;
}

static void test_span_view_clamped(void **state)
{
	qfix *f = *state;
	int64_t now = time_now_ns() / NS_PER_SEC;
	qfix_put(f, "api", "cpu:nanoseconds", NULL, now - 12 * 86400, "main;f 5 span_id=00f067aa0ba902b7");
	expect_contains(span_json(f, "00f067aa0ba902b7"), "\"samples\":1,");
	err_t err = {0};
	assert_int_equal(store_set_retention(f->s, slice_cstr("p"), 11, &err), 0);
	expect_contains(span_json(f, "00f067aa0ba902b7"), "\"samples\":0,");
}

static void test_sums_saturate(void **state)
{
	qfix *f = *state;
	/* Each profile merges to INT64_MAX (model), chunks saturate (store), the
	 * merge, timeline and services sums saturate (query): never wrap negative. */
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0, "main;a 9223372036854775807\nmain;a 9223372036854775807");
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0 + 1,
	         "main;a 9223372036854775807\nmain;b 9223372036854775807");
	query_params_t q = qfix_params("api", "cpu:nanoseconds", T0 - 60, T0 + 60);
	expect_contains(run(f, &q, query_flamegraph), "\"total\":9223372036854775807,");
	buf_t b;
	buf_init(&b, SIZE_MAX);
	err_t err = {0};
	assert_int_equal(query_timeline(f->s, &q, 60, &b, &err), 0);
	assert_non_null(strstr(qfix_str(&b), ",9223372036854775807]"));
	buf_free(&b);
	query_params_t sq = qfix_params(NULL, NULL, T0 - 60, T0 + 60);
	expect_contains(run(f, &sq, query_services), "\"cpu_nanoseconds\":9223372036854775807}");
	qfix_put(f, "neg", "cpu:nanoseconds", NULL, T0, "main -9223372036854775807\nmain -9223372036854775807");
	q = qfix_params("neg", "cpu:nanoseconds", T0 - 60, T0 + 60);
	expect_contains(run(f, &q, query_flamegraph), "\"total\":-9223372036854775808,");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_queries_clamped_to_retention, qfix_setup, qfix_teardown),
		cmocka_unit_test_setup_teardown(test_span_view_clamped, qfix_setup, qfix_teardown),
		cmocka_unit_test_setup_teardown(test_sums_saturate, qfix_setup, qfix_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
