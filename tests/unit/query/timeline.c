/* Tests of src/query/timeline.c: buckets, window sums, snapshot averages,
 * cpu_alias scaling, attribute filters and the automatic step. */
#include "fixture.h"

#define B0 1699999980LL /* T0 rounded down to a minute */

static const char *timeline_json(qfix *f, const query_params_t *q, int64_t step, buf_t *b)
{
	err_t err = {0};
	buf_init(b, SIZE_MAX);
	if (query_timeline(f->s, q, step, b, &err) < 0)
		fail_msg("query_timeline: %d %s", err.status, err.msg);
	return qfix_str(b);
}

/* Expects three one-minute points from B0 with the given values. */
static void expect_minutes(qfix *f, const query_params_t *q, const char *type, const char *unit, int64_t v0,
                           int64_t v1, int64_t v2)
{
	char want[512];
	snprintf(
	    want, sizeof want,
	    "{\"type\":\"%s\",\"unit\":\"%s\",\"step\":60,\"points\":[[%lld,%lld],[%lld,%lld],[%lld,%lld]]}",
	    type, unit, B0, (long long)v0, B0 + 60, (long long)v1, B0 + 120, (long long)v2);
	buf_t b;
	assert_string_equal(timeline_json(f, q, 60, &b), want);
	buf_free(&b);
}

static void test_window_buckets(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "cpu:nanoseconds", "pod=a", B0 + 5, "main 10");
	qfix_put(f, "api", "cpu:nanoseconds", "pod=b", B0 + 20, "main;f 5");
	qfix_put(f, "api", "cpu:nanoseconds", "pod=a", B0 + 130, "main 7 thread=1\nmain;g 1");
	qfix_write(f, &(qprof){"api", "samples:count", NULL, B0 + 61, 1000, 1}, "main 3");
	query_params_t q = qfix_params("api", "cpu:nanoseconds", B0, B0 + 180);
	expect_minutes(f, &q, "cpu:nanoseconds", "nanoseconds", 15, 3000, 8);

	/* A filter on sample attributes decodes the chunks. */
	model_label_t l = {slice_cstr("thread"), slice_cstr("1")};
	q.labels = &l;
	q.n_labels = 1;
	expect_minutes(f, &q, "cpu:nanoseconds", "nanoseconds", 0, 0, 7);

	/* A series label filter needs no decoding; from inside a bucket starts at its start. */
	l = (model_label_t){slice_cstr("pod"), slice_cstr("b")};
	q.from_ns = (B0 + 10) * NS_PER_SEC;
	expect_minutes(f, &q, "cpu:nanoseconds", "nanoseconds", 5, 0, 0);
}

static void test_snapshots_average_per_series_per_bucket(void **state)
{
	qfix *f = *state;
	qfix_put(f, "mem", "inuse_space:bytes", "pod=a", B0 + 5, "main 100");
	qfix_put(f, "mem", "inuse_space:bytes", "pod=a", B0 + 20, "main 301");
	qfix_put(f, "mem", "inuse_space:bytes", "pod=b", B0 + 10, "main 50");
	qfix_put(f, "mem", "inuse_space:bytes", "pod=a", B0 + 125, "main 40");
	query_params_t q = qfix_params("mem", "inuse_space:bytes", B0, B0 + 180);
	/* (100 + 301) / 2 + 50, rounded. */
	expect_minutes(f, &q, "inuse_space:bytes", "bytes", 251, 0, 40);
}

/* Empty stacks count in every point: from the chunk header, and when a
 * sample attribute filter decodes the chunks. */
static void test_empty_stacks_count(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "cpu:nanoseconds", NULL, B0 + 5, "main 10\n 3 thread=1");
	qfix_put(f, "api", "cpu:nanoseconds", NULL, B0 + 70, " 4");
	qfix_put(f, "go", "goroutine:count", NULL, B0 + 5, "main 2\n 1");
	qfix_put(f, "go", "goroutine:count", NULL, B0 + 20, "main 2\n 3");
	query_params_t q = qfix_params("api", "cpu:nanoseconds", B0, B0 + 180);
	expect_minutes(f, &q, "cpu:nanoseconds", "nanoseconds", 13, 4, 0);
	model_label_t l = {slice_cstr("thread"), slice_cstr("1")};
	q.labels = &l;
	q.n_labels = 1;
	expect_minutes(f, &q, "cpu:nanoseconds", "nanoseconds", 3, 0, 0);
	q = qfix_params("go", "goroutine:count", B0, B0 + 180);
	expect_minutes(f, &q, "goroutine:count", "count", 4, 0, 0);
}

static void test_automatic_step(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "cpu:nanoseconds", NULL, B0 + 5, "main 10");
	query_params_t q = qfix_params("api", "cpu:nanoseconds", B0, B0 + 3600);
	buf_t b;
	const char *s = timeline_json(f, &q, 0, &b);
	assert_non_null(strstr(s, "\"step\":15,"));
	int points = 0;
	for (const char *p = s; (p = strstr(p, "],[")); p++)
		points++;
	assert_int_equal(points + 1, 240);
	char first[64];
	snprintf(first, sizeof first, "\"points\":[[%lld,10],[%lld,0],", B0, B0 + 15);
	assert_non_null(strstr(s, first));
	buf_free(&b);

	q = qfix_params("api", "cpu:nanoseconds", B0, B0 + 7 * 86400);
	s = timeline_json(f, &q, 0, &b);
	assert_non_null(strstr(s, "\"step\":3600,"));
	buf_free(&b);
}

static void test_bad_step(void **state)
{
	qfix *f = *state;
	query_params_t q = qfix_params("api", "cpu:nanoseconds", B0, B0 + 10 * 86400);
	buf_t b;
	buf_init(&b, SIZE_MAX);
	err_t err = {0};
	assert_int_equal(query_timeline(f->s, &q, 1, &b, &err), -1);
	assert_int_equal(err.status, 400);
	assert_int_equal(query_timeline(f->s, &q, -5, &b, &err), -1);
	assert_int_equal(err.status, 400);
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_window_buckets, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_snapshots_average_per_series_per_bucket, qfix_setup,
	                                    qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_empty_stacks_count, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_automatic_step, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_bad_step, qfix_setup, qfix_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
