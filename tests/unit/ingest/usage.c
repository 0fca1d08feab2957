/* Tests src/ingest/usage.c over the embedded store: counts per day, key and
 * reason; the exact JSON of GET /api/usage before and after flushes; reopen
 * (store and all); totals; concurrent adds racing flushes. */
#include <pthread.h>

#include "helpers.h"

#include "base/timeutil.h"
#include "ingest/usage.h"

#define DAY0 (20789LL * NS_PER_DAY) /* 2026-12-02 */

static void assert_json(usage_t *u, const char *project, int64_t from, int64_t until, const char *want)
{
	buf_t b;
	buf_init(&b, 1 << 20);
	err_t err = {0};
	if (usage_query(u, slice_cstr(project), from, until, &b, &err) != 0)
		fail_msg("usage_query: %s", err.msg);
	buf_putc(&b, 0);
	assert_string_equal((const char *)b.p, want);
	buf_free(&b);
}

static void add_sample_traffic(usage_t *u)
{
	slice_t shop = slice_cstr("shop"), other = slice_cstr("other");
	usage_add(u, shop, slice_cstr("ci"), DAY0 + 10, 100, USAGE_ACCEPTED, 0);
	usage_add(u, shop, slice_cstr("ci"), DAY0 + 20, 0, USAGE_RATE_LIMITED, 40);
	usage_add(u, shop, slice_cstr("ci"), DAY0 + 30, 7, USAGE_OUT_OF_WINDOW, 3); /* partly accepted */
	usage_add(u, shop, slice_cstr("ci"), DAY0 + NS_PER_DAY - 1, 0, USAGE_TOO_LARGE, 5);
	usage_add(u, shop, slice_cstr("ci"), DAY0 + NS_PER_DAY, 0, USAGE_INVALID, 2); /* next UTC day */
	usage_add(u, shop, slice_cstr("app"), DAY0 + 5, 0, USAGE_ACCEPTED,
	          9); /* samples of reason accepted */
	usage_add(u, other, slice_cstr("ci2"), DAY0 + 5, 1000, USAGE_ACCEPTED, 0);
}

static const char SHOP_JSON[] =
    "{\"days\":["
    "{\"day\":\"2026-12-02\",\"key\":\"app\",\"accepted\":9,\"rejected\":0,\"rejected_by_reason\":"
    "{\"rate_limited\":0,\"too_large\":0,\"invalid\":0,\"out_of_window\":0}},"
    "{\"day\":\"2026-12-02\",\"key\":\"ci\",\"accepted\":107,\"rejected\":48,\"rejected_by_reason\":"
    "{\"rate_limited\":40,\"too_large\":5,\"invalid\":0,\"out_of_window\":3}},"
    "{\"day\":\"2026-12-03\",\"key\":\"ci\",\"accepted\":0,\"rejected\":2,\"rejected_by_reason\":"
    "{\"rate_limited\":0,\"too_large\":0,\"invalid\":2,\"out_of_window\":0}}"
    "]}";

static void test_counts_json(void **state)
{
	char *dir = temp_dir();
	err_t err = {0};
	store_t *st = open_store(dir, 0);
	usage_t *u = usage_open(st);
	assert_non_null(u);
	assert_json(u, "shop", DAY0, DAY0 + 2 * NS_PER_DAY, "{\"days\":[]}");
	add_sample_traffic(u);
	/* Pending only, flushed, and half flushed + half pending: the same answer. */
	assert_json(u, "shop", DAY0, DAY0 + 2 * NS_PER_DAY, SHOP_JSON);
	assert_int_equal(usage_flush(u, &err), 0);
	assert_json(u, "shop", DAY0, DAY0 + 2 * NS_PER_DAY, SHOP_JSON);
	assert_int_equal(usage_flush(u, &err), 0); /* nothing pending: no change */
	assert_json(u, "shop", 0, 0, SHOP_JSON);

	/* Day range: only the second day; another project sees only its own. */
	assert_json(u, "shop", DAY0 + NS_PER_DAY, DAY0 + NS_PER_DAY + 5,
	            "{\"days\":[{\"day\":\"2026-12-03\",\"key\":\"ci\",\"accepted\":0,\"rejected\":2,"
	            "\"rejected_by_reason\":{\"rate_limited\":0,\"too_large\":0,\"invalid\":2,\"out_of_"
	            "window\":0}}]}");
	assert_json(u, "other", DAY0, DAY0,
	            "{\"days\":[{\"day\":\"2026-12-02\",\"key\":\"ci2\",\"accepted\":1000,\"rejected\":0,"
	            "\"rejected_by_reason\":{\"rate_limited\":0,\"too_large\":0,\"invalid\":0,\"out_of_"
	            "window\":0}}]}");
	assert_json(u, "nobody", 0, 0, "{\"days\":[]}");
	/* Key names are JSON-escaped. */
	usage_add(u, slice_cstr("q"), slice_cstr("a\"b"), DAY0, 1, USAGE_ACCEPTED, 0);
	assert_json(u, "q", 0, 0,
	            "{\"days\":[{\"day\":\"2026-12-02\",\"key\":\"a\\\"b\",\"accepted\":1,\"rejected\":0,"
	            "\"rejected_by_reason\":{\"rate_limited\":0,\"too_large\":0,\"invalid\":0,\"out_of_"
	            "window\":0}}]}");

	/* A buffer too small is a 500, not a truncated answer. */
	buf_t small;
	buf_init(&small, 20);
	assert_int_equal(usage_query(u, slice_cstr("shop"), 0, 0, &small, &err), -1);
	assert_int_equal(err.status, 500);
	buf_free(&small);
	usage_close(u);
	store_close(st);
	remove_dir(dir);
}

static void test_flush_reopen(void **state)
{
	char *dir = temp_dir();
	err_t err = {0};
	store_t *st = open_store(dir, 0);
	usage_t *u = usage_open(st);
	add_sample_traffic(u);
	usage_close(u); /* flushes */
	store_close(st);
	st = open_store(dir, 0);
	u = usage_open(st);
	assert_non_null(u);
	assert_json(u, "shop", 0, 0, SHOP_JSON);
	/* Deltas add to what is stored. */
	add_sample_traffic(u);
	assert_int_equal(usage_flush(u, &err), 0);
	usage_close(u);
	store_close(st);
	st = open_store(dir, 0);
	u = usage_open(st);
	buf_t b;
	buf_init(&b, 1 << 20);
	assert_int_equal(usage_query(u, slice_cstr("shop"), 0, 0, &b, &err), 0);
	buf_putc(&b, 0);
	assert_non_null(strstr((const char *)b.p, "\"key\":\"ci\",\"accepted\":214,\"rejected\":96"));
	buf_free(&b);
	usage_close(u);
	store_close(st);
	remove_dir(dir);
}

typedef struct {
	int n;
	uint64_t sum[USAGE_COUNTERS];
	char last[64];
} rows_seen;

static void collect_row(const usage_row_t *r, void *ctx)
{
	rows_seen *s = ctx;
	char now[64];
	snprintf(now, sizeof now, "%lld/%.*s/%.*s", (long long)r->day, (int)r->project.n,
	         (const char *)r->project.p, (int)r->key.n, (const char *)r->key.p);
	assert_true(s->n == 0 || strcmp(s->last, now) < 0); /* ordered by day, project, key */
	memcpy(s->last, now, sizeof now);
	for (int i = 0; i < USAGE_COUNTERS; i++)
		s->sum[i] += r->counts[i];
	s->n++;
}

static void collect_total(slice_t project, slice_t key, const uint64_t counts[USAGE_COUNTERS], void *ctx)
{
	rows_seen *s = ctx;
	for (int i = 0; i < USAGE_COUNTERS; i++)
		s->sum[i] += counts[i];
	s->n++;
}

static void test_rows_and_totals(void **state)
{
	char *dir = temp_dir();
	err_t err = {0};
	store_t *st = open_store(dir, 0);
	usage_t *u = usage_open(st);
	add_sample_traffic(u);
	usage_flush(u, &err);
	usage_add(u, slice_cstr("other"), slice_cstr("ci2"), DAY0 + 6, 1, USAGE_ACCEPTED, 0);
	rows_seen all = {0};
	assert_int_equal(usage_rows(u, slice_cstr(""), 0, 0, collect_row, &all, &err), 0);
	assert_int_equal(all.n, 4); /* app, ci (day 0, shop), ci2 (other), ci (day 1) */
	assert_int_equal(all.sum[USAGE_ACCEPTED], 9 + 107 + 1001);
	assert_int_equal(all.sum[USAGE_RATE_LIMITED], 40);

	rows_seen totals = {0};
	usage_totals(u, collect_total, &totals);
	assert_int_equal(totals.n, 3); /* per (project, key), all days together */
	assert_int_equal(totals.sum[USAGE_ACCEPTED], 9 + 107 + 1001);
	assert_int_equal(totals.sum[USAGE_INVALID], 2);
	assert_int_equal(totals.sum[USAGE_TOO_LARGE], 5);
	usage_close(u);
	store_close(st);
	remove_dir(dir);
}

typedef struct {
	usage_t *u;
	int id;
} adder_ctx;

static void *adder(void *arg)
{
	adder_ctx *c = arg;
	char key[16];
	snprintf(key, sizeof key, "k%d", c->id % 3);
	for (int i = 0; i < 20000; i++)
		usage_add(c->u, slice_cstr("p"), slice_cstr(key), DAY0 + (i % 2) * NS_PER_DAY, 1,
		          i % USAGE_COUNTERS, 1);
	return NULL;
}

/* Adds from six threads while the main thread flushes: nothing lost, nothing
 * counted twice. */
static void test_concurrent_flush(void **state)
{
	char *dir = temp_dir();
	err_t err = {0};
	store_t *st = open_store(dir, 0);
	usage_t *u = usage_open(st);
	pthread_t th[6];
	adder_ctx ctx[6];
	for (int i = 0; i < 6; i++) {
		ctx[i] = (adder_ctx){.u = u, .id = i};
		pthread_create(&th[i], NULL, adder, &ctx[i]);
	}
	for (int i = 0; i < 20; i++) {
		assert_int_equal(usage_flush(u, &err), 0);
		rows_seen mid = {0};
		assert_int_equal(usage_rows(u, slice_cstr("p"), 0, 0, collect_row, &mid, &err), 0);
	}
	for (int i = 0; i < 6; i++)
		pthread_join(th[i], NULL);
	usage_close(u);
	store_close(st);
	st = open_store(dir, 0);
	u = usage_open(st);
	rows_seen all = {0};
	assert_int_equal(usage_rows(u, slice_cstr("p"), 0, 0, collect_row, &all, &err), 0);
	assert_int_equal(all.n, 6); /* 3 keys × 2 days */
	/* Each add: 1 accepted + 1 of reason i % 5; 4,000 adds per reason per thread. */
	assert_int_equal(all.sum[USAGE_ACCEPTED], 6 * (20000 + 4000));
	for (int r = USAGE_RATE_LIMITED; r < USAGE_COUNTERS; r++)
		assert_int_equal(all.sum[r], 6 * 4000);
	usage_close(u);
	store_close(st);
	remove_dir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_counts_json),
	    cmocka_unit_test(test_flush_reopen),
	    cmocka_unit_test(test_rows_and_totals),
	    cmocka_unit_test(test_concurrent_flush),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
