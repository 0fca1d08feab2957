/* Tests of store_entries_merge (store.c), the one sort and merge of a
 * chunk's entries that both engines' writers use, so that the embedded
 * engine and ClickHouse store the same rows: order by (node, attrset,
 * t_off), equal keys summed with saturation, zero sums dropped. */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_merge_unsorted),
	    cmocka_unit_test(test_merge_saturates),
	    cmocka_unit_test(test_merge_edges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
