/* Tests of the embedded engine's merged hours (store/local_hours.c) and the
 * sums they serve (store_view_sums, store/local_view.c): over random ranges
 * across several hours and two days, the sums equal the chunk-by-chunk sum
 * of the same view (the oracle: store_view_entries, summed here) exactly,
 * with merged hours absent, present, stale (a late chunk in a merged hour, a
 * stamp that no longer matches, a row that does not decode) and with the
 * derived file damaged; and the merged rows are really used: the engine's
 * counters say how many rows were added and how many chunks decoded, which
 * must equal what the heads predict. Retention deletes the derived file. */
#include <sys/stat.h>

#include "helpers.h"
#include "store/local.h"
#include <zstd.h>

#define HOUR (3600 * NS_PER_SEC)
#define T_FIRST (DAY0 - 5 * HOUR) /* data from 19:00 of the day before DAY0 */
#define T_SPAN (10 * HOUR)        /* to 05:00 of DAY0 */

typedef struct {
	uint32_t series, node, attrset;
	int64_t value;
} row_t;

typedef struct {
	row_t *r;
	size_t n, cap;
} rows_t;

static void rows_add(rows_t *rs, uint32_t series, uint32_t node, uint32_t attrset, int64_t value)
{
	if (rs->n == rs->cap) {
		rs->cap = rs->cap ? rs->cap * 2 : 256;
		rs->r = realloc(rs->r, rs->cap * sizeof *rs->r);
	}
	rs->r[rs->n++] = (row_t){series, node, attrset, value};
}

static int row_cmp(const void *a, const void *b)
{
	const row_t *x = a, *y = b;
	if (x->series != y->series)
		return x->series < y->series ? -1 : 1;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return (x->attrset > y->attrset) - (x->attrset < y->attrset);
}

/* Sorts and sums equal keys (plain int64: the test's values stay far from overflow). */
static void rows_fold(rows_t *rs)
{
	if (!rs->n)
		return;
	qsort(rs->r, rs->n, sizeof *rs->r, row_cmp);
	size_t k = 0;
	for (size_t i = 1; i < rs->n; i++) {
		if (row_cmp(&rs->r[k], &rs->r[i]) == 0)
			rs->r[k].value += rs->r[i].value;
		else
			rs->r[++k] = rs->r[i];
	}
	rs->n = k + 1;
}

typedef struct {
	uint64_t used, chunks; /* what sums should report: merged rows added, chunks decoded */
} expect_t;

/* Checks store_view_sums against the chunks over [from, until) in every
 * partition; when merged is set, also that every whole hour was taken from
 * its merged row and exactly the chunks of the other hours were decoded.
 * Stale, read from chunks instead: every series' stale_hour, or with
 * stale_t set, the hour of the chunk at stale_t in that chunk's series. */
static void check_range(store_t *s, int64_t from, int64_t until, int merged, int64_t stale_hour,
                        int64_t stale_t)
{
	store_view_t *v;
	err_t err = {0};
	assert_int_equal(store_view_open(s, slice_cstr("default"), from, until, &v, &err), 0);
	assert_true(store_view_can_sum(v));
	expect_t want = {0};
	uint64_t used0 = atomic_load(&s->hours_used), chunks0 = atomic_load(&s->hours_chunks);
	for (uint32_t p = 0; p < store_view_partitions(v); p++) {
		const store_series_t *se;
		uint32_t n_se, n_h;
		assert_int_equal(store_view_series(v, p, &se, &n_se, &err), 0);
		uint32_t ids[16];
		assert_true(n_se <= 16);
		for (uint32_t i = 0; i < n_se; i++)
			ids[i] = se[i].local;
		const store_chunk_head_t *hh;
		assert_int_equal(store_view_heads(v, p, ids, n_se, &hh, &n_h, &err), 0);
		store_chunk_head_t *h = malloc((n_h + 1) * sizeof *h);
		if (n_h)
			memcpy(h, hh, n_h * sizeof *h);
		uint32_t stale_series = 0;
		for (uint32_t i = 0; stale_t && i < n_h; i++)
			if (h[i].t_ns == stale_t) {
				stale_series = h[i].series;
				stale_hour = local_hour(stale_t);
			}
		rows_t oracle = {0}, got = {0};
		for (uint32_t i = 0; i < n_h; i++) {
			const store_entry_t *e;
			uint32_t ne;
			assert_int_equal(store_view_entries(v, p, &h[i], &e, &ne, &err), 0);
			for (uint32_t k = 0; k < ne; k++)
				rows_add(&oracle, h[i].series, e[k].node, e[k].attrset, e[k].value);
			/* The prediction: a whole hour is one merged row per series
			 * (counted once, at its first chunk in time order), any other
			 * hour its chunks. */
			int64_t hour = local_hour(h[i].t_ns), day = time_day(h[i].t_ns);
			int late = stale_t && h[i].series == stale_series;
			int stale = hour == stale_hour && (!stale_t || late);
			int whole = hour * HOUR >= from && hour * HOUR + HOUR <= until && !stale;
			/* A day the range covers is one row per series (unless a late chunk made it stale).
			 */
			int whole_day =
			    day * NS_PER_DAY >= from && day * NS_PER_DAY + NS_PER_DAY <= until && !late;
			int first_in_day = 1, first_in_hour = 1;
			for (uint32_t j = 0; j < i; j++) {
				first_in_day &= h[j].series != h[i].series;
				first_in_hour &=
				    !(h[j].series == h[i].series && local_hour(h[j].t_ns) == hour);
			}
			if (merged && whole_day)
				want.used += first_in_day;
			else if (merged && whole)
				want.used += first_in_hour;
			else
				want.chunks++;
		}
		/* The heads again (the sums reuse what was listed last), then the sums. */
		assert_int_equal(store_view_heads(v, p, ids, n_se, &hh, &n_h, &err), 0);
		const store_sum_t *sum;
		uint32_t n_sum;
		assert_int_equal(store_view_sums(v, p, ids, n_se, &sum, &n_sum, &err), 0);
		for (uint32_t i = 0; i < n_sum; i++)
			rows_add(&got, sum[i].series, sum[i].node, sum[i].attrset, sum[i].value);
		rows_fold(&oracle);
		/* The engine answers one row per key already: folding must change nothing. */
		size_t n_got = got.n;
		rows_fold(&got);
		assert_int_equal(got.n, n_got);
		assert_int_equal(got.n, oracle.n);
		for (size_t i = 0; i < got.n; i++)
			if (row_cmp(&got.r[i], &oracle.r[i]) || got.r[i].value != oracle.r[i].value)
				fail_msg("range [%lld, %lld) partition %u row %zu: got (%u, %u, %u) = %lld, "
				         "chunks say "
				         "(%u, %u, %u) = %lld",
				         (long long)(from - T_FIRST) / NS_PER_SEC,
				         (long long)(until - T_FIRST) / NS_PER_SEC, p, i, got.r[i].series,
				         got.r[i].node, got.r[i].attrset, (long long)got.r[i].value,
				         oracle.r[i].series, oracle.r[i].node, oracle.r[i].attrset,
				         (long long)oracle.r[i].value);
		free(oracle.r);
		free(got.r);
		free(h);
	}
	store_view_close(v);
	assert_int_equal(atomic_load(&s->hours_used) - used0, want.used);
	assert_int_equal(atomic_load(&s->hours_chunks) - chunks0, want.chunks);
}

static const char *const STACKS[] = {"main;a;b", "main;a;c", "main;d", "main;d;e;f", "main;g", "main"};

/* n profiles at random times of [T_FIRST, T_FIRST + T_SPAN), two series
 * (pod-1, pod-2), random stacks, values (some negative) and attribute sets. */
static void push_random(store_t *s, unsigned *seed, int n)
{
	for (int k = 0; k < n; k++) {
		model_batch_t *b = model_batch_new(slice_cstr("default"));
		int64_t t = T_FIRST + (int64_t)(rand_r(seed) % (T_SPAN / NS_PER_SEC)) * NS_PER_SEC;
		model_profile_t *p =
		    test_profile(b, "cpu", "nanoseconds", t, rand_r(seed) % 2 ? "pod-1" : "pod-2");
		model_label_t l = {slice_cstr("span_name"), slice_cstr(rand_r(seed) % 2 ? "GET" : "POST")};
		uint32_t attr = rand_r(seed) % 3 ? 0 : model_attrset_intern(b, &l, 1);
		int m = 1 + rand_r(seed) % 6;
		for (int i = 0; i < m; i++) {
			int64_t v = 1 + rand_r(seed) % 1000000;
			model_sample_add(b, p, test_stack(b, STACKS[rand_r(seed) % 6]), i % 2 ? attr : 0,
			                 rand_r(seed) % 10 ? v : -v, 0);
		}
		model_profile_finish(b, p);
		write_ok(s, b);
	}
}

static void check_random_ranges(store_t *s, unsigned *seed, int n, int merged)
{
	/* Whole-hour edges half the time, any 10-minute edge otherwise, and the whole span. */
	check_range(s, T_FIRST - HOUR, T_FIRST + T_SPAN + HOUR, merged, INT64_MIN, 0);
	/* Whole days: the day before DAY0, DAY0, both, each with the other's edge. */
	check_range(s, DAY0 - NS_PER_DAY, DAY0, merged, INT64_MIN, 0);
	check_range(s, DAY0, DAY0 + NS_PER_DAY, merged, INT64_MIN, 0);
	check_range(s, DAY0 - NS_PER_DAY, DAY0 + NS_PER_DAY, merged, INT64_MIN, 0);
	check_range(s, DAY0 - NS_PER_DAY, DAY0 + 3 * HOUR + 600 * NS_PER_SEC, merged, INT64_MIN, 0);
	check_range(s, DAY0 - 2 * HOUR - 600 * NS_PER_SEC, DAY0 + NS_PER_DAY, merged, INT64_MIN, 0);
	for (int i = 0; i < n; i++) {
		int64_t step = rand_r(seed) % 2 ? HOUR : 600 * NS_PER_SEC;
		int64_t steps = (T_SPAN + 2 * HOUR) / step;
		int64_t a = rand_r(seed) % steps, b = rand_r(seed) % steps;
		if (a > b) {
			int64_t t = a;
			a = b;
			b = t;
		}
		check_range(s, T_FIRST - HOUR + a * step, T_FIRST - HOUR + b * step + step, merged, INT64_MIN,
		            0);
	}
}

static char *hours_file(const char *dir, int64_t day)
{
	char d[11], *p = malloc(strlen(dir) + 64);
	time_day_str(day, d);
	sprintf(p, "%s/default/%s.db.hours", dir, d);
	return p;
}

static void pass_ok(store_t *s)
{
	err_t err = {0};
	if (local_hours_pass(s, &err) != 0)
		fail_msg("local_hours_pass: %s", err.msg);
}

/* Chunks over [from, until) of the series that has a chunk at with_t (0: every series). */
static uint32_t chunks_in(store_t *s, int64_t from, int64_t until, int64_t with_t)
{
	store_view_t *v;
	err_t err = {0};
	assert_int_equal(store_view_open(s, slice_cstr("default"), from, until, &v, &err), 0);
	const store_series_t *se;
	const store_chunk_head_t *h;
	uint32_t n_se, n_h, ids[16], series = 0, n = 0;
	assert_int_equal(store_view_series(v, 0, &se, &n_se, &err), 0);
	assert_true(n_se <= 16);
	for (uint32_t i = 0; i < n_se; i++)
		ids[i] = se[i].local;
	assert_int_equal(store_view_heads(v, 0, ids, n_se, &h, &n_h, &err), 0);
	for (uint32_t i = 0; with_t && i < n_h; i++)
		if (h[i].t_ns == with_t)
			series = h[i].series;
	assert_true(!with_t || series);
	for (uint32_t i = 0; i < n_h; i++)
		n += !with_t || h[i].series == series;
	store_view_close(v);
	return n;
}

static void test_sums_exact(void **state)
{
	(void)state;
	char *dir = tmpdir_new();
	store_t *s = open_store(dir);
	unsigned seed = 15;
	push_random(s, &seed, 400);

	/* No merged hours yet (the compactor's first pass ran on an empty store). */
	check_random_ranges(s, &seed, 40, 0);

	/* Merged: 10 hours x 2 series, in two day files. */
	pass_ok(s);
	uint64_t written = atomic_load(&s->hours_written);
	assert_int_equal(written, 20);
	check_random_ranges(s, &seed, 60, 1);
	/* A second pass finds nothing new to merge. */
	pass_ok(s);
	assert_int_equal(atomic_load(&s->hours_written), written);

	/* A late chunk in a merged hour (DAY0 01:00): that (series, hour) is
	 * read chunk by chunk, the other series' row of that hour and every
	 * other hour merged. */
	int64_t t_late[] = {DAY0 + HOUR + 1234 * NS_PER_SEC};
	write_ok(s, test_batch_at("default", t_late, 1, 777));
	check_range(s, DAY0, DAY0 + 5 * HOUR, 1, INT64_MIN, t_late[0]);
	check_range(s, T_FIRST, T_FIRST + T_SPAN, 1, INT64_MIN, t_late[0]);
	check_range(s, DAY0 - NS_PER_DAY, DAY0 + NS_PER_DAY, 1, INT64_MIN, t_late[0]);
	{
		/* The hour with the late chunk: pod-1 decodes its chunks, pod-2 uses its row. */
		store_view_t *v;
		err_t err = {0};
		assert_int_equal(
		    store_view_open(s, slice_cstr("default"), DAY0 + HOUR, DAY0 + 2 * HOUR, &v, &err), 0);
		const store_series_t *se;
		uint32_t n_se, n_h, n_sum;
		assert_int_equal(store_view_series(v, 0, &se, &n_se, &err), 0);
		assert_int_equal(n_se, 2);
		uint32_t ids[2] = {1, 2};
		const store_chunk_head_t *h;
		assert_int_equal(store_view_heads(v, 0, ids, 2, &h, &n_h, &err), 0);
		uint32_t late_series = 0, late_chunks = 0;
		for (uint32_t i = 0; i < n_h; i++)
			if (h[i].t_ns == t_late[0])
				late_series = h[i].series;
		for (uint32_t i = 0; i < n_h; i++)
			late_chunks += h[i].series == late_series;
		assert_true(late_series != 0);
		uint64_t used0 = atomic_load(&s->hours_used), chunks0 = atomic_load(&s->hours_chunks);
		const store_sum_t *sum;
		assert_int_equal(store_view_sums(v, 0, ids, 2, &sum, &n_sum, &err), 0);
		assert_int_equal(atomic_load(&s->hours_used) - used0, 1);
		assert_int_equal(atomic_load(&s->hours_chunks) - chunks0, late_chunks);
		store_view_close(v);
	}
	/* The next pass merges that hour again (one row), then it is used again:
	 * its stored row plus the late chunk, the only chunk it decodes. */
	uint64_t merged = atomic_load(&s->hours_merged);
	pass_ok(s);
	assert_int_equal(atomic_load(&s->hours_written), written + 1);
	assert_int_equal(atomic_load(&s->hours_merged) - merged, 1);
	check_random_ranges(s, &seed, 20, 1);

	/* A stamp that no longer matches (as if the row came from other
	 * chunks), and a row whose sums do not decode: both hours are read from
	 * their chunks, exactly. */
	char *day0 = hours_file(dir, DAY0 / NS_PER_DAY);
	char sql[256];
	snprintf(sql, sizeof sql, "UPDATE hours SET hash = hash + 1 WHERE hour = %lld",
	         (long long)local_hour(DAY0 + 2 * HOUR));
	sql_exec(day0, sql);
	check_range(s, DAY0 + 2 * HOUR, DAY0 + 3 * HOUR, 1, local_hour(DAY0 + 2 * HOUR), 0);
	snprintf(sql, sizeof sql, "UPDATE hours SET sums = x'05ff' WHERE hour = %lld",
	         (long long)local_hour(DAY0 + 3 * HOUR));
	sql_exec(day0, sql);
	check_range(s, DAY0 + 3 * HOUR, DAY0 + 4 * HOUR, 1, local_hour(DAY0 + 3 * HOUR), 0);
	check_range(s, DAY0 + 4 * HOUR, DAY0 + 5 * HOUR, 1, INT64_MIN, 0); /* the others still merged */
	check_range(s, DAY0, DAY0 + NS_PER_DAY, 1, INT64_MIN, 0);          /* and the day rows */

	/* The compactor extends only a row it can trust. A late chunk in hour 3
	 * makes the next pass look at the day again: the rows of hour 2, whose
	 * stamps no longer match, are merged again from every chunk of the
	 * hour; the late chunk's series' row of hour 3, which does not decode,
	 * from every chunk of its hour. */
	int64_t t_late3[] = {DAY0 + 3 * HOUR + 99 * NS_PER_SEC};
	write_ok(s, test_batch_at("default", t_late3, 1, 5));
	merged = atomic_load(&s->hours_merged);
	pass_ok(s);
	assert_int_equal(atomic_load(&s->hours_merged) - merged,
	                 chunks_in(s, DAY0 + 2 * HOUR, DAY0 + 3 * HOUR, 0) +
	                     chunks_in(s, DAY0 + 3 * HOUR, DAY0 + 4 * HOUR, t_late3[0]));
	check_range(s, DAY0 + 2 * HOUR, DAY0 + 3 * HOUR, 1, INT64_MIN, 0);

	/* A damaged derived file: ignored by reads (every chunk decoded), then
	 * deleted and rebuilt by the compactor. */
	store_close(s);
	FILE *f = fopen(day0, "r+b");
	assert_non_null(f);
	for (int i = 0; i < 4096; i++)
		fputc(0xa5, f);
	fclose(f);
	s = open_store(dir);
	check_range(s, DAY0, DAY0 + 5 * HOUR, 0, INT64_MIN, 0);
	pass_ok(s);
	assert_int_equal(atomic_load(&s->hours_written),
	                 10); /* DAY0's 5 hours x 2 series; the day before's file was fine */
	check_random_ranges(s, &seed, 20, 1);

	/* Retention deletes the derived file with its day. */
	char *before = hours_file(dir, DAY0 / NS_PER_DAY - 1);
	struct stat st;
	assert_int_equal(stat(before, &st), 0);
	uint32_t deleted = 0;
	err_t err = {0};
	assert_int_equal(
	    store_retention_sweep(s, slice_cstr("default"), 1, DAY0 + NS_PER_DAY + HOUR, &deleted, &err), 0);
	assert_int_equal(deleted, 1);
	assert_int_equal(stat(before, &st), -1);
	assert_int_equal(stat(day0, &st), 0);
	check_range(s, T_FIRST, T_FIRST + T_SPAN, 1, INT64_MIN, 0);

	free(before);
	free(day0);
	store_close(s);
	tmpdir_free(dir);
}

/* A pass looks into a day file again only when it changed before the
 * cutoff: profiles written since into the hours not merged yet (live ones)
 * leave it alone; a late one, before the cutoff, has its hour merged again. */
static void test_live_writes_not_looked_at(void **state)
{
	(void)state;
	for (int attempt = 0;; attempt++) {
		char *dir = tmpdir_new();
		store_t *s = open_store(dir);
		int64_t now = time_now_ns(), hour = local_hour(now);
		int64_t t[] = {now - HOUR, now};
		write_ok(s, test_batch_at("default", t, 2, 5));
		pass_ok(s);
		uint64_t looked = atomic_load(&s->hours_looked), written = atomic_load(&s->hours_written);
		assert_true(looked >= 1 && written >= 1);

		int64_t live[] = {now + NS_PER_SEC};
		write_ok(s, test_batch_at("default", live, 1, 6));
		pass_ok(s);
		uint64_t looked_live = atomic_load(&s->hours_looked);
		uint64_t written_live = atomic_load(&s->hours_written);

		int64_t late[] = {now - HOUR + NS_PER_SEC};
		write_ok(s, test_batch_at("default", late, 1, 7));
		pass_ok(s);
		uint64_t looked_late = atomic_load(&s->hours_looked);
		uint64_t written_late = atomic_load(&s->hours_written);
		store_close(s);
		tmpdir_free(dir);
		/* The cutoff moved meanwhile (an hour began): every file is looked at again. */
		if (local_hour(time_now_ns()) != hour && attempt == 0)
			continue;
		assert_int_equal(looked_live, looked);
		assert_int_equal(written_live, written);
		assert_int_equal(looked_late, looked + 1);
		assert_int_equal(written_late, written + 1);
		break;
	}
}

/* The stored sums codec refuses what it did not write. */
static void test_sums_codec(void **state)
{
	(void)state;
	local_hsum_t in[] = {{0, 0, -5}, {0, 3, INT64_MAX}, {7, 1, INT64_MIN}, {9, 0, 1}};
	buf_t b;
	buf_init(&b, SIZE_MAX);
	void *zd = ZSTD_createDCtx(), *zc = ZSTD_createCCtx();
	uint8_t *tmp = NULL;
	size_t cap_tmp = 0;
	buf_t raw;
	buf_init(&raw, SIZE_MAX);
	local_sums_encode(in, 4, &raw);
	local_payload_pack(&raw, &b, zc);
	local_hsum_t *out = NULL;
	size_t cap = 0;
	uint32_t n;
	assert_int_equal(local_sums_decode(slice_make(b.p, b.n), 9, 3, zd, &tmp, &cap_tmp, &out, &cap, &n),
	                 0);
	assert_int_equal(n, 4);
	for (uint32_t i = 0; i < 4; i++) {
		assert_int_equal(out[i].node, in[i].node);
		assert_int_equal(out[i].attrset, in[i].attrset);
		assert_true(out[i].value == in[i].value);
	}
	assert_int_equal(local_sums_decode(slice_make(b.p, b.n), 8, 3, zd, &tmp, &cap_tmp, &out, &cap, &n),
	                 -1); /* node 9 > 8 */
	assert_int_equal(local_sums_decode(slice_make(b.p, b.n), 9, 2, zd, &tmp, &cap_tmp, &out, &cap, &n),
	                 -1); /* attrset 3 > 2 */
	assert_int_equal(
	    local_sums_decode(slice_make(b.p, b.n - 1), 9, 3, zd, &tmp, &cap_tmp, &out, &cap, &n), -1);
	local_hsum_t dup[] = {{2, 1, 1}, {2, 1, 2}};
	local_sums_encode(dup, 2, &raw);
	local_payload_pack(&raw, &b, zc);
	assert_int_equal(local_sums_decode(slice_make(b.p, b.n), 9, 3, zd, &tmp, &cap_tmp, &out, &cap, &n),
	                 -1); /* not increasing */
	/* A long row is stored compressed, and reads back the same. */
	local_hsum_t *many = calloc(5000, sizeof *many);
	for (uint32_t i = 0; i < 5000; i++)
		many[i] = (local_hsum_t){i / 2, i % 2, (int64_t)(i % 7) * 1000};
	local_sums_encode(many, 5000, &raw);
	local_payload_pack(&raw, &b, zc);
	assert_true(b.n < raw.n / 2);
	assert_int_equal(local_sums_decode(slice_make(b.p, b.n), 2500, 1, zd, &tmp, &cap_tmp, &out, &cap, &n),
	                 0);
	assert_int_equal(n, 5000);
	assert_memory_equal(out, many, 5000 * sizeof *many);
	assert_int_equal(
	    local_sums_decode(slice_make(b.p, b.n - 1), 2500, 1, zd, &tmp, &cap_tmp, &out, &cap, &n), -1);
	free(many);
	free(out);
	free(tmp);
	buf_free(&raw);
	buf_free(&b);
	ZSTD_freeDCtx(zd);
	ZSTD_freeCCtx(zc);
}

int main(void)
{
	/* Every past hour may be merged; the background pass stays out of the way. */
	setenv("KILN_TEST_HOURS_MARGIN_S", "0", 1);
	setenv("KILN_TEST_HOURS_MS", "86400000", 1);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sums_codec),
	    cmocka_unit_test(test_sums_exact),
	    cmocka_unit_test(test_live_writes_not_looked_at),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
