/* Tests of store_entries_merge (store.c), the one sort and merge of a
 * chunk's entries that both engines' writers use, so that the embedded
 * engine and ClickHouse store the same rows: order by (node, attrset,
 * t_off), equal keys summed with saturation, zero sums dropped. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "store/engine.h"

static void expect(const store_wentry_t *got, uint32_t n, const store_wentry_t *want, uint32_t n_want)
{
	assert_int_equal(n, n_want);
	for (uint32_t i = 0; i < n; i++) {
		assert_int_equal(got[i].node, want[i].node);
		assert_int_equal(got[i].attrset, want[i].attrset);
		assert_true(got[i].t_off == want[i].t_off);
		assert_true(got[i].value == want[i].value);
	}
}

static void test_merge_unsorted(void **state)
{
	(void)state;
	store_wentry_t e[] = {
	    {5, 0, 0, 10}, {2, 1, 3, 1},   {5, 0, 0, 7},  {2, 1, -1, 4},
	    {2, 0, 0, 2},  {5, 0, 0, -17}, /* the three (5, 0, 0) sum to 0: dropped */
	    {2, 1, 3, 8},  {9, 2, 0, -3},  {2, 1, -1, 1}, {3, 0, 0, 0}, /* a lone 0: dropped */
	};
	store_wentry_t want[] = {
	    {2, 0, 0, 2},
	    {2, 1, -1, 5},
	    {2, 1, 3, 9},
	    {9, 2, 0, -3},
	};
	uint32_t n = store_entries_merge(e, sizeof e / sizeof *e);
	expect(e, n, want, 4);
}

static void test_merge_saturates(void **state)
{
	(void)state;
	store_wentry_t e[] = {
	    {1, 0, 0, INT64_MAX}, {2, 0, 0, INT64_MIN}, {1, 0, 0, 1},         {2, 0, 0, -1},
	    {1, 0, 0, 5},         {2, 0, 0, -5},        {3, 0, 0, INT64_MAX}, {3, 0, 0, INT64_MIN},
	};
	/* Saturation is sticky in sort order: MAX+1 stays MAX, then +5 stays MAX.
	 * (3, 0, 0): MAX + MIN = -1 exactly, no overflow. */
	store_wentry_t want[] = {{1, 0, 0, INT64_MAX}, {2, 0, 0, INT64_MIN}, {3, 0, 0, -1}};
	uint32_t n = store_entries_merge(e, sizeof e / sizeof *e);
	expect(e, n, want, 3);
}

static void test_merge_edges(void **state)
{
	(void)state;
	assert_int_equal(store_entries_merge(NULL, 0), 0);
	store_wentry_t one = {4, 0, 0, 0};
	assert_int_equal(store_entries_merge(&one, 1), 0);
	store_wentry_t e[] = {{UINT32_MAX, UINT32_MAX, INT64_MAX, 1},
	                      {0, 0, INT64_MIN, 1},
	                      {UINT32_MAX, UINT32_MAX, INT64_MIN, 2}};
	store_wentry_t want[] = {{0, 0, INT64_MIN, 1},
	                         {UINT32_MAX, UINT32_MAX, INT64_MIN, 2},
	                         {UINT32_MAX, UINT32_MAX, INT64_MAX, 1}};
	uint32_t n = store_entries_merge(e, 3);
	expect(e, n, want, 3);
}

/* The oracle: glibc's qsort with each entry's first position as the last
 * key (a stable order by construction), then the same fold. */
typedef struct {
	store_wentry_t e;
	uint32_t at;
} tagged_t;

static int tagged_cmp(const void *a, const void *b)
{
	const tagged_t *x = a, *y = b;
	if (x->e.node != y->e.node)
		return x->e.node < y->e.node ? -1 : 1;
	if (x->e.attrset != y->e.attrset)
		return x->e.attrset < y->e.attrset ? -1 : 1;
	if (x->e.t_off != y->e.t_off)
		return x->e.t_off < y->e.t_off ? -1 : 1;
	return x->at < y->at ? -1 : x->at > y->at;
}

static uint32_t oracle_merge(store_wentry_t *e, uint32_t n)
{
	tagged_t *t = malloc((n + 1) * sizeof *t);
	for (uint32_t i = 0; i < n; i++)
		t[i] = (tagged_t){e[i], i};
	qsort(t, n, sizeof *t, tagged_cmp);
	uint32_t out = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (out && e[out - 1].node == t[i].e.node && e[out - 1].attrset == t[i].e.attrset &&
		    e[out - 1].t_off == t[i].e.t_off) {
			int64_t s;
			if (__builtin_add_overflow(e[out - 1].value, t[i].e.value, &s))
				s = t[i].e.value > 0 ? INT64_MAX : INT64_MIN;
			e[out - 1].value = s;
		} else {
			e[out++] = t[i].e;
		}
	}
	free(t);
	uint32_t kept = 0;
	for (uint32_t i = 0; i < out; i++)
		if (e[i].value != 0)
			e[kept++] = e[i];
	return kept;
}

/* Random arrays of every size to 300 and some larger, few distinct keys
 * (many equal ones, in runs that cross the sort's merge boundaries) and
 * values near the int64 edges, where the order of a saturating sum shows:
 * the same rows as the oracle. */
static void test_merge_matches_stable_oracle(void **state)
{
	(void)state;
	unsigned seed = 42;
	const int64_t edge[] = {INT64_MAX, INT64_MIN, INT64_MAX - 3, INT64_MIN + 2, 1, -1, 0, 7};
	for (uint32_t round = 0; round < 400; round++) {
		uint32_t n = round < 300 ? round : 300 + (uint32_t)(rand_r(&seed) % 5000);
		uint32_t keys = 1 + (uint32_t)(rand_r(&seed) % 12);
		store_wentry_t *a = malloc((n + 1) * sizeof *a), *b = malloc((n + 1) * sizeof *b);
		for (uint32_t i = 0; i < n; i++) {
			uint32_t k = (uint32_t)(rand_r(&seed) % keys);
			a[i] = (store_wentry_t){k % 3, k / 3 % 2, (int64_t)(k / 6) - 1,
			                        rand_r(&seed) % 3 ? edge[rand_r(&seed) % 8]
			                                          : (int64_t)(rand_r(&seed) % 1000) - 500};
		}
		memcpy(b, a, n * sizeof *a);
		uint32_t got = store_entries_merge(a, n), want = oracle_merge(b, n);
		expect(a, got, b, want);
		free(a);
		free(b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_merge_unsorted),
	    cmocka_unit_test(test_merge_saturates),
	    cmocka_unit_test(test_merge_edges),
	    cmocka_unit_test(test_merge_matches_stable_oracle),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
