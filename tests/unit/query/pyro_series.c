/* Tests of src/query/pyro_series.c (SelectSeries, API: Query:
 * querier.v1.QuerierService): profiles on Pyroscope's RangeSeries grid (the
 * first start + k·step at or after the profile), sum and average per
 * point, group_by over series labels and the profile type's labels,
 * TopSeries order and limit, and query_pyro_label. Expected values are
 * worked out by hand from the profiles written. */
#include "fixture.h"

#include "query/pyro.h"

#define ID "process_cpu:cpu:nanoseconds:cpu:nanoseconds"

/* "labels:ts=value,…;…" of the series of r (timestamps relative to T0 in
 * seconds, values as integers or with decimals). */
static const char *run(qfix *f, query_pyro_select_t *r, char *out, size_t cap)
{
	arena_t *a = arena_new();
	query_pyro_ts_t *ts;
	uint32_t n;
	err_t err = {0};
	if (query_pyro_select_series(f->s, r, a, &ts, &n, &err) < 0)
		fail_msg("query_pyro_select_series: %d %s", err.status, err.msg);
	size_t o = 0;
	out[0] = 0;
	for (uint32_t i = 0; i < n; i++) {
		o += (size_t)snprintf(out + o, cap - o, "%s", i ? ";" : "");
		for (uint32_t k = 0; k < ts[i].n_labels; k++)
			o += (size_t)snprintf(out + o, cap - o, "%s%.*s=%.*s", k ? "," : "",
			                      (int)ts[i].labels[k].key.n, (const char *)ts[i].labels[k].key.p,
			                      (int)ts[i].labels[k].value.n,
			                      (const char *)ts[i].labels[k].value.p);
		o += (size_t)snprintf(out + o, cap - o, ":");
		for (uint32_t k = 0; k < ts[i].n_points; k++)
			o += (size_t)snprintf(out + o, cap - o, "%s%lld=%g", k ? "," : "",
			                      (long long)(ts[i].ts_ms[k] / 1000 - T0), ts[i].value[k]);
	}
	arena_free(a);
	return out;
}

static query_pyro_select_t sel(const char *service, int64_t from_s, int64_t until_s, int64_t step_s)
{
	query_pyro_select_t r = {.q = qfix_params(service, "cpu:nanoseconds", from_s, until_s)};
	r.q.pyro_id = slice_cstr(ID);
	r.start_ms = from_s * 1000;
	r.step_ms = step_s * 1000;
	return r;
}

/* Profiles at T0+0, +5, +10, +11, +25 (pod a, a, b, a, b); grid from T0 by
 * 10 s: T0+0 → point 0 (at the start), +5 and +10 → point 10 (the first at
 * or after them), +11 → 20, +25 → 30. */
static void put_five(qfix *f)
{
	qfix_put(f, "api", "cpu:nanoseconds", "pod=a", T0, "main 1");
	qfix_put(f, "api", "cpu:nanoseconds", "pod=a", T0 + 5, "main;f 2");
	qfix_put(f, "api", "cpu:nanoseconds", "pod=b", T0 + 10, "main 4");
	qfix_put(f, "api", "cpu:nanoseconds", "pod=a", T0 + 11, "main 8 span_id=x\nmain;g 16");
	qfix_put(f, "api", "cpu:nanoseconds", "pod=b", T0 + 25, "main 32");
	qfix_put(f, "web", "cpu:nanoseconds", "pod=a", T0 + 5, "main 64");
}

static void test_grid_sum_average(void **state)
{
	qfix *f = *state;
	put_five(f);
	char got[1024];
	query_pyro_select_t r = sel("api", T0, T0 + 60, 10);
	assert_string_equal(run(f, &r, got, sizeof got), ":0=1,10=6,20=24,30=32");
	r.average = 1; /* point 10: (2 + 4) / 2 */
	assert_string_equal(run(f, &r, got, sizeof got), ":0=1,10=3,20=24,30=32");
	/* A profile after the last grid point of the range takes the next one:
	 * +25 with until +26 and step 20 → 40 (RangeSeries would drop it). */
	r = sel("api", T0, T0 + 26, 20);
	assert_string_equal(run(f, &r, got, sizeof got), ":0=1,20=30,40=32");
	/* The range selects the profiles, as the flame graph's; the grid starts
	 * at the range's start: +10 and +11 → +16. */
	r = sel("api", T0 + 6, T0 + 12, 10);
	assert_string_equal(run(f, &r, got, sizeof got), ":16=28");
}

/* in_step (/pyroscope/render's timeline): a profile counts on the step
 * that holds it, the last grid point at or before it: +0 and +5 → 0, +10
 * and +11 → 10, +25 → 20. */
static void test_in_step(void **state)
{
	qfix *f = *state;
	put_five(f);
	char got[1024];
	query_pyro_select_t r = sel("api", T0, T0 + 60, 10);
	r.in_step = 1;
	assert_string_equal(run(f, &r, got, sizeof got), ":0=3,10=28,20=32");
	r.average = 1; /* (1 + 2) / 2, (4 + 24) / 2 */
	assert_string_equal(run(f, &r, got, sizeof got), ":0=1.5,10=14,20=32");
	/* A grid that starts before the range: +5, +10 and +11 → +5 (2 + 4 + 24), +25 → +25. */
	r = sel("api", T0 + 1, T0 + 60, 10);
	r.start_ms = (T0 - 5) * 1000;
	r.in_step = 1;
	assert_string_equal(run(f, &r, got, sizeof got), ":5=30,25=32");
	/* A filter on sample attributes: a profile without a matching sample
	 * does not count (else point 10 would be (0 + 8) / 2 and 0, 20 listed as 0). */
	model_label_t span[] = {{slice_cstr("span_id"), slice_cstr("x")}};
	r = sel("api", T0, T0 + 60, 10);
	r.q.labels = span;
	r.q.n_labels = 1;
	r.average = 1;
	assert_string_equal(run(f, &r, got, sizeof got), ":20=8");
	r.in_step = 1;
	assert_string_equal(run(f, &r, got, sizeof got), ":10=8");
}

static void test_group_by_order_limit(void **state)
{
	qfix *f = *state;
	put_five(f);
	char got[1024];
	query_pyro_select_t r = sel("api", T0, T0 + 60, 10);
	slice_t pod[] = {slice_cstr("pod")};
	r.group_by = pod;
	r.n_group_by = 1;
	/* b: 4 + 32 = 36 before a: 1 + 2 + 24 = 27 (by total, descending). */
	assert_string_equal(run(f, &r, got, sizeof got), "pod=b:10=4,30=32;pod=a:0=1,10=2,20=24");
	r.limit = 1;
	assert_string_equal(run(f, &r, got, sizeof got), "pod=b:10=4,30=32");
	/* Labels sorted by name; the type's labels from the id; an absent label is left out. */
	slice_t many[] = {slice_cstr("pod"), slice_cstr("__name__"), slice_cstr("nope"),
	                  slice_cstr("service_name"), slice_cstr("__period_unit__")};
	r = sel("api", T0, T0 + 60, 60);
	r.group_by = many;
	r.n_group_by = 5;
	assert_string_equal(
	    run(f, &r, got, sizeof got),
	    "__name__=process_cpu,__period_unit__=nanoseconds,pod=b,service_name=api:60=36;"
	    "__name__=process_cpu,__period_unit__=nanoseconds,pod=a,service_name=api:0=1,60=26");
}

/* Equal totals: by labels (CompareLabelPairs: pair by pair, a prefix first). */
static void test_ties_by_labels(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "cpu:nanoseconds", "pod=b", T0, "main 5");
	qfix_put(f, "api", "cpu:nanoseconds", "pod=a", T0, "main 5");
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0, "main 5");
	char got[512];
	query_pyro_select_t r = sel("api", T0, T0 + 60, 60);
	slice_t pod[] = {slice_cstr("pod")};
	r.group_by = pod;
	r.n_group_by = 1;
	assert_string_equal(run(f, &r, got, sizeof got), ":0=5;pod=a:0=5;pod=b:0=5");
	model_label_t x[] = {{slice_cstr("a"), slice_cstr("1")}},
	              y[] = {{slice_cstr("a"), slice_cstr("1")}, {slice_cstr("b"), slice_cstr("0")}};
	assert_true(query_pyro_labels_cmp(x, 1, y, 2) < 0);
	assert_true(query_pyro_labels_cmp(y, 2, x, 1) > 0);
	assert_int_equal(query_pyro_labels_cmp(y, 2, y, 2), 0);
}

static void test_nothing_and_bad_step(void **state)
{
	qfix *f = *state;
	put_five(f);
	char got[64];
	query_pyro_select_t r = sel("none", T0, T0 + 60, 10);
	assert_string_equal(run(f, &r, got, sizeof got), "");
	r = sel("api", T0, T0 + 60, 0);
	arena_t *a = arena_new();
	query_pyro_ts_t *ts;
	uint32_t n;
	err_t err = {0};
	assert_int_equal(query_pyro_select_series(f->s, &r, a, &ts, &n, &err), -1);
	assert_int_equal(err.status, 400);
	assert_string_equal(err.msg, "step must be at least 1 ms");
	arena_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_grid_sum_average, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_in_step, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_group_by_order_limit, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_ties_by_labels, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_nothing_and_bad_step, qfix_setup, qfix_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
