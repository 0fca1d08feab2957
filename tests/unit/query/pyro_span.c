/* Tests of src/query/pyro_span.c (SelectMergeSpanProfile, API: Query:
 * querier.v1.QuerierService): the merged tree of the samples linked to any
 * of several span ids, within the query's series, range and filters. */
#include "fixture.h"

#include "query/pyro.h"

/* Total of the merged tree of spans[0..n) for q. */
static int64_t span_total(qfix *f, const query_params_t *q, const char *const *spans, uint32_t n)
{
	slice_t s[8];
	for (uint32_t i = 0; i < n; i++)
		s[i] = slice_cstr(spans[i]);
	arena_t *a = arena_new();
	model_tree_t t;
	err_t err = {0};
	if (query_pyro_span_merge(f->s, q, s, n, a, &t, &err) < 0)
		fail_msg("query_pyro_span_merge: %d %s", err.status, err.msg);
	int64_t total = t.n_nodes ? t.total[0] : 0;
	arena_free(a);
	return total;
}

static void test_spans(void **state)
{
	qfix *f = *state;
	/* Two partitions (days): T0 and T0 + 7000. */
	qfix_put(f, "api", "cpu:nanoseconds", "pod=a", T0,
	         "main;f 3 span_id=s1\nmain;g 5 span_id=s2\nmain 7");
	qfix_put(f, "api", "cpu:nanoseconds", "pod=b", T0 + 7000,
	         "main;f 11 span_id=s1,trace_id=t\nmain 13 span_id=s3");
	qfix_put(f, "web", "cpu:nanoseconds", NULL, T0, "main 17 span_id=s1");
	query_params_t q = qfix_params("api", "cpu:nanoseconds", T0 - 60, T0 + 7060);
	q.pyro_id = slice_cstr("process_cpu:cpu:nanoseconds:cpu:nanoseconds");
	assert_int_equal(span_total(f, &q, (const char *[]){"s1"}, 1), 3 + 11);
	assert_int_equal(span_total(f, &q, (const char *[]){"s1", "s2", "s1"}, 3), 3 + 5 + 11);
	assert_int_equal(span_total(f, &q, (const char *[]){"s2", "s3"}, 2), 5 + 13);
	assert_int_equal(span_total(f, &q, (const char *[]){"nope"}, 1), 0);
	/* The range and the series filters apply. */
	query_params_t day1 = q;
	day1.until_ns = (T0 + 60) * NS_PER_SEC;
	assert_int_equal(span_total(f, &day1, (const char *[]){"s1"}, 1), 3);
	sel_matcher_t m = {.name = slice_cstr("pod"), .value = slice_cstr("a"), .op = SEL_NE};
	query_params_t notA = q;
	notA.matchers = &m;
	notA.n_matchers = 1;
	assert_int_equal(span_total(f, &notA, (const char *[]){"s1"}, 1), 11);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_spans, qfix_setup, qfix_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
