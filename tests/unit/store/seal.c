/* Sealing (store/local_seal.c): the hours of a format-2 partition become
 * blocks and every chunk reads back exactly as before; payloads that no
 * unsealed chunk uses go; a chunk arriving for a sealed hour is a row of its
 * own until the next seal; damaged blocks are found and the partition
 * skipped; format-1 files are never sealed. */
#include <stdio.h>
#include <string.h>

#include "base/hash.h"
#include "helpers.h"
#include "store/local.h"
#include "store/local_block.h"

#define HOUR (3600 * NS_PER_SEC)

typedef struct {
	uint64_t hash, n;
	uint32_t chunks;
} digest_t;

static void digest_heads(store_view_t *v, uint32_t p, const store_chunk_head_t *hs, uint32_t n_h, void *ctx)
{
	digest_t *d = ctx;
	store_chunk_head_t *copy = malloc((n_h ? n_h : 1) * sizeof *copy);
	memcpy(copy, hs, n_h * sizeof *copy);
	for (uint32_t i = 0; i < n_h; i++) {
		int64_t f[5] = {copy[i].chunk_id, copy[i].series, copy[i].t_ns, copy[i].duration_ns,
		                copy[i].total};
		d->hash = hash_pair(d->hash, hash_bytes(f, sizeof f, 0));
		const store_entry_t *e;
		uint32_t ne;
		err_t err = {0};
		if (store_view_entries(v, p, &copy[i], &e, &ne, &err) != 0)
			fail_msg("entries: %s", err.msg);
		assert_int_equal(ne, copy[i].n_entries);
		for (uint32_t k = 0; k < ne; k++) {
			int64_t g[4] = {e[k].node, e[k].attrset, e[k].value, e[k].t_ns};
			d->hash = hash_pair(d->hash, hash_bytes(g, sizeof g, 1));
		}
		d->n += ne;
	}
	d->chunks += n_h;
	free(copy);
}

/* Everything a view reads of project's partitions in [from, until): every
 * chunk's head and entries, in the view's order, folded into a hash; *n
 * counts the entries, *chunks the chunks. */
static uint64_t digest(store_t *s, const char *project, int64_t from, int64_t until, uint64_t *n,
                       uint32_t *chunks)
{
	digest_t d = {0, 0, 0};
	each_heads(s, project, from, until, digest_heads, &d);
	*n = d.n;
	*chunks = d.chunks;
	return d.hash;
}

/* A batch of two profiles (cpu and alloc) at t with stacks varying by i,
 * one sample with its own time (API: Frames) and one linked to a span. */
static model_batch_t *hour_batch(int64_t t, int i)
{
	model_batch_t *b = model_batch_new(slice_cstr("default"));
	char stack[64];
	snprintf(stack, sizeof stack, "main;work;leaf%d", i % 7);
	uint32_t s1 = test_stack(b, stack), s2 = test_stack(b, "main;idle");
	model_label_t l[1] = {{slice_cstr("span_id"), slice_cstr("00f067aa0ba902b7")}};
	uint32_t linked = model_attrset_intern(b, l, 1);
	model_profile_t *p = test_profile(b, "cpu", "nanoseconds", t, "pod-1");
	model_sample_add(b, p, s1, 0, 10 + i, 0);
	model_sample_add(b, p, s2, linked, 3, 0);
	model_sample_add(b, p, s2, 0, 5, t + 2 * NS_PER_SEC);
	model_profile_finish(b, p);
	p = test_profile(b, "alloc", "bytes", t, "pod-1");
	model_sample_add(b, p, s1, 0, 4096 * (1 + i % 3), 0);
	model_profile_finish(b, p);
	return b;
}

static int64_t count(const char *dir, const char *sql)
{
	char path[512];
	snprintf(path, sizeof path, "%s/default/2023-05-24.db", dir);
	return sql_int(path, sql);
}

static void corrupt(const char *dir, const char *sql)
{
	char path[512];
	snprintf(path, sizeof path, "%s/default/2023-05-24.db", dir);
	sql_exec(path, sql);
}

static void test_hours_become_blocks(void **state)
{
	store_fix *f = *state;
	/* 3 hours, a profile every 5 minutes: 36 batches, 72 chunks. */
	for (int i = 0; i < 36; i++)
		write_ok(f->s, hour_batch(DAY0 + i * 300 * NS_PER_SEC, i));
	uint64_t n0, n1;
	uint32_t c0, c1;
	uint64_t d0 = digest(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &n0, &c0);
	assert_int_equal(c0, 72);
	assert_int_equal(count(f->dir, "SELECT count(*) FROM blocks"), 0);
	assert_true(count(f->dir, "SELECT count(*) FROM payloads") > 0);

	local_seal_wait(f->s);
	/* One block per series and hour; no chunk left with a payload of its own, no payload left. */
	assert_int_equal(count(f->dir, "SELECT count(*) FROM blocks"), 2 * 3);
	assert_int_equal(count(f->dir, "SELECT count(DISTINCT series || '/' || hour) FROM blocks"), 6);
	assert_int_equal(count(f->dir, "SELECT count(*) FROM chunks WHERE payload > 0"), 0);
	assert_int_equal(count(f->dir, "SELECT count(*) FROM payloads"), 0);
	assert_int_equal(count(f->dir, "SELECT count(*) FROM chunks"), 72);
	store_stats_t st;
	store_get_stats(f->s, &st);
	assert_int_equal(st.sealed_blocks, 6);
	assert_int_equal(st.sealed_chunks, 72);
	uint64_t d1 = digest(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &n1, &c1);
	assert_int_equal(c1, c0);
	assert_int_equal(n1, n0);
	assert_int_equal(d1, d0);
	/* A range inside an hour reads the chunks of that part of its block. */
	uint64_t a0, a1;
	uint32_t ca, cb;
	(void)digest(f->s, "default", DAY0 + 1200 * NS_PER_SEC, DAY0 + 2400 * NS_PER_SEC, &a0, &ca);
	assert_int_equal(ca, 2 * 4);

	/* Reopened: the same. */
	store_close(f->s);
	f->s = open_store(f->dir);
	assert_int_equal(digest(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &a1, &cb), d0);
	assert_int_equal(a1, n0);

	/* A late chunk for a sealed hour: a row with its payload, read beside the block,
	 * then sealed into a second block of that hour. */
	write_ok(f->s, hour_batch(DAY0 + 10 * NS_PER_SEC, 100));
	assert_int_equal(count(f->dir, "SELECT count(*) FROM chunks WHERE payload > 0"), 2);
	uint64_t d2 = digest(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &n1, &c1);
	assert_int_equal(c1, 74);
	local_seal_wait(f->s);
	assert_int_equal(count(f->dir, "SELECT count(*) FROM blocks"), 8);
	assert_int_equal(count(f->dir, "SELECT count(*) FROM chunks WHERE payload > 0"), 0);
	assert_int_equal(digest(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &a1, &cb), d2);
	assert_int_equal(a1, n1);
	/* The file gave the payloads' pages back (auto_vacuum=INCREMENTAL). */
	assert_int_equal(count(f->dir, "PRAGMA freelist_count"), 0);
}

/* Equal payloads are stored once: one used by a chunk of a sealed hour and
 * by one of the current hour (not sealed) stays until both are sealed. */
static void test_shared_payload_stays_while_used(void **state)
{
	store_fix *f = *state;
	int64_t now = time_now_ns();
	write_ok(f->s, test_batch(DAY0 + 60 * NS_PER_SEC, 1));
	model_batch_t *b = test_batch(now, 1);
	write_ok(f->s, b);
	char today[11], path[512];
	time_day_str(time_day(now), today);
	snprintf(path, sizeof path, "%s/default/%s.db", f->dir, today);
	local_seal_wait(f->s);
	assert_int_equal(count(f->dir, "SELECT count(*) FROM blocks"), 1);
	assert_int_equal(count(f->dir, "SELECT count(*) FROM payloads"), 0);
	/* Today's chunk is in an hour that has not ended: not sealed. */
	assert_int_equal(sql_int(path, "SELECT count(*) FROM blocks"), 0);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM payloads"), 1);
	uint32_t chunks;
	assert_int_equal(sum_totals(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &chunks), 6);
	uint64_t n;
	(void)digest(f->s, "default", now - HOUR, now + HOUR, &n, &chunks);
	assert_int_equal(chunks, 1);
	assert_int_equal(n, 3);

	/* Within one hour of one partition, two chunks sharing a payload both
	 * seal into the block and the payload goes. */
	write_ok(f->s, test_batch(DAY0 + 2 * HOUR, 7));
	write_ok(f->s, test_batch(DAY0 + 2 * HOUR + 60 * NS_PER_SEC, 7));
	assert_int_equal(count(f->dir, "SELECT count(*) FROM payloads"), 1);
	local_seal_wait(f->s);
	assert_int_equal(count(f->dir, "SELECT count(*) FROM payloads"), 0);
	assert_int_equal(sum_totals(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &chunks), 6 + 2 * 42);
	(void)digest(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &n, &chunks);
	assert_int_equal(chunks, 3);
	assert_int_equal(n, 9);
}

/* An hour that profiles are still written into after it was due (here:
 * everything, times of 2023) waits until LOCAL_SEAL_QUIET_MS passed without
 * one: the partition's last late hour is left, the earlier ones sealed. */
static void test_late_hour_waits_until_quiet(void **state)
{
	store_fix *f = *state;
	for (int i = 0; i < 24; i++) /* hours 0 and 1, 5 min apart; hour 1 written last */
		write_ok(f->s, hour_batch(DAY0 + i * 300 * NS_PER_SEC, i));
	f->s->seal_wait_quiet = 1;
	local_seal_wait(f->s);
	assert_int_equal(count(f->dir, "SELECT count(*) FROM blocks"), 2);
	assert_int_equal(count(f->dir, "SELECT count(*) FROM blocks WHERE hour = "
	                               "1684886400000000000"),
	                 2);
	assert_int_equal(count(f->dir, "SELECT count(*) FROM chunks WHERE payload > 0"), 2 * 12);
	/* A late write into hour 0 (sealed) makes it the late one: hour 1 is sealed now. */
	write_ok(f->s, hour_batch(DAY0 + 10 * NS_PER_SEC, 99));
	local_seal_wait(f->s);
	assert_int_equal(count(f->dir, "SELECT count(*) FROM blocks WHERE hour = "
	                               "1684890000000000000"),
	                 2);
	assert_int_equal(count(f->dir, "SELECT count(*) FROM chunks WHERE payload > 0"), 2);
	/* Without the quiet rule (what local_seal_wait does by default), the rest too. */
	f->s->seal_wait_quiet = 0;
	local_seal_wait(f->s);
	assert_int_equal(count(f->dir, "SELECT count(*) FROM chunks WHERE payload > 0"), 0);
	assert_int_equal(count(f->dir, "SELECT count(*) FROM blocks"), 6);
}

/* After a restart, yesterday's hours are sealed without a write to that
 * day: the first step opens today's and yesterday's files. */
static void test_restart_seals_yesterday(void **state)
{
	store_fix *f = *state;
	int64_t day_n = time_day(time_now_ns()) - 1, yesterday = day_n * NS_PER_DAY;
	for (int i = 0; i < 4; i++)
		write_ok(f->s, hour_batch(yesterday + 3 * HOUR + i * 600 * NS_PER_SEC, i));
	/* Today's file holds only a profile of now, nothing to seal: the first
	 * step looks at it read-only and leaves it closed. */
	write_ok(f->s, hour_batch(time_now_ns(), 0));
	store_close(f->s);
	f->s = open_store(f->dir);
	char day[11], path[512];
	time_day_str(day_n, day);
	snprintf(path, sizeof path, "%s/default/%s.db", f->dir, day);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM blocks"), 0);
	local_seal_wait(f->s);
	assert_int_equal(f->s->part_opens, 1);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM blocks"), 2);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM chunks WHERE payload > 0"), 0);
	uint32_t chunks;
	assert_int_equal(sum_totals(f->s, "default", yesterday, yesterday + NS_PER_DAY, &chunks),
	                 (10 + 3 + 5) * 4 + 6 + 4096 * (1 + 2 + 3 + 1));
	assert_int_equal(chunks, 8);
}

/* An hour of one series with more chunks than a block holds: blocks of
 * LOCAL_BLOCK_MAX_CHUNKS in turn, each step going on after the last (their
 * chunks in id order inside), then a late chunk dated before all of them
 * gets a block of its own; every entry reads the same throughout. The
 * profiles are not in time order, so time order and id order differ. */
static void test_busy_hour_blocks(void **state)
{
	store_fix *f = *state;
	enum { N = 2 * LOCAL_BLOCK_MAX_CHUNKS + 100 };
	int64_t *t = malloc(N * sizeof *t);
	for (int i = 0; i < N; i++)
		t[i] = DAY0 + HOUR + 60 * NS_PER_SEC + (int64_t)((i * 7919) % N) * (NS_PER_SEC / 2);
	write_ok(f->s, test_batch_at("default", t, N, 3));
	uint64_t n0, n1, n2;
	uint32_t c0, c1, c2;
	uint64_t d0 = digest(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &n0, &c0);
	assert_int_equal(c0, N);
	local_seal_wait(f->s);
	assert_int_equal(count(f->dir, "SELECT count(*) FROM blocks"), 3);
	assert_int_equal(count(f->dir, "SELECT count(*) FROM chunks WHERE payload > 0"), 0);
	assert_int_equal(digest(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &n1, &c1), d0);
	assert_int_equal(c1, N);
	assert_int_equal(n1, n0);

	int64_t late[] = {DAY0 + HOUR};
	write_ok(f->s, test_batch_at("default", late, 1, 3));
	local_seal_wait(f->s);
	assert_int_equal(count(f->dir, "SELECT count(*) FROM blocks"), 4);
	assert_int_equal(count(f->dir, "SELECT count(*) FROM chunks WHERE payload > 0"), 0);
	uint64_t d2 = digest(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &n2, &c2);
	assert_int_equal(c2, N + 1);
	assert_int_equal(n2, n0 + 3);
	(void)d2;
	store_stats_t st;
	store_get_stats(f->s, &st);
	assert_int_equal(st.sealed_chunks, N + 1);
	free(t);
}

static void test_format_1_not_sealed(void **state)
{
	store_fix *f = *state;
	f->s->part_format = 1;
	write_ok(f->s, test_batch(DAY0 + 60 * NS_PER_SEC, 1));
	local_seal_wait(f->s);
	assert_int_equal(count(f->dir, "SELECT count(*) FROM payloads"), 1);
	assert_int_equal(count(f->dir, "SELECT count(*) FROM sqlite_schema WHERE name = 'blocks'"), 0);
	store_stats_t st;
	store_get_stats(f->s, &st);
	assert_int_equal(st.sealed_chunks, 0);
}

/* A damaged block, or a chunk whose block is missing or disagrees with
 * its row: the partition is reported and skipped, with what was wrong. */
static void test_damaged_blocks(void **state)
{
	store_fix *f = *state;
	static const struct {
		const char *sql, *msg;
	} damage[] = {
	    {"UPDATE blocks SET data = substr(data, 1, length(data) - 3)", "block 1: block data"},
	    {"UPDATE blocks SET head = x'00'", "block 1: block head"},
	    {"UPDATE chunks SET payload = -9", "block 9 missing"},
	    {"UPDATE chunks SET total = total + 1", "header differs from its block"},
	    {"UPDATE chunks SET local = local + 100", "not in its block"},
	};
	for (size_t i = 0; i < sizeof damage / sizeof *damage; i++) {
		store_close(f->s);
		tmpdir_free(f->dir);
		f->dir = tmpdir_new();
		f->s = open_store(f->dir);
		write_ok(f->s, test_batch(DAY0 + NS_PER_SEC, 1));
		write_ok(f->s, test_batch(DAY0 + 2 * NS_PER_SEC, 5));
		local_seal_wait(f->s);
		assert_int_equal(count(f->dir, "SELECT count(*) FROM blocks"), 1);
		corrupt(f->dir, damage[i].sql);
		store_view_t *v;
		err_t err = {0};
		assert_int_equal(
		    store_view_open(f->s, slice_cstr("default"), DAY0, DAY0 + NS_PER_DAY, &v, &err), 0);
		const store_series_t *se;
		uint32_t n_se, n_h;
		assert_int_equal(store_view_series(v, 0, &se, &n_se, &err), 0);
		uint32_t id = se[0].local;
		const store_chunk_head_t *h;
		assert_int_equal(store_view_heads(v, 0, &id, 1, &h, &n_h, &err), 0);
		assert_int_equal(n_h, 2);
		store_chunk_head_t copy = h[0];
		const store_entry_t *e;
		uint32_t ne = 99;
		char logged[4096];
		int saved = stderr_to_file();
		int rc = store_view_entries(v, 0, &copy, &e, &ne, &err);
		stderr_back(saved, logged, sizeof logged);
		/* Reported once and skipped: the read answers from the other partitions. */
		if (rc != 0 || ne != 0 || !store_view_skipped(v, 0) || !strstr(logged, damage[i].msg) ||
		    !strstr(logged, "store partition is damaged"))
			fail_msg("%s: rc %d n %u logged %s", damage[i].sql, rc, ne, logged);
		store_view_close(v);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_hours_become_blocks, store_fix_setup, store_fix_teardown),
	    cmocka_unit_test_setup_teardown(test_shared_payload_stays_while_used, store_fix_setup,
	                                    store_fix_teardown),
	    cmocka_unit_test_setup_teardown(test_late_hour_waits_until_quiet, store_fix_setup,
	                                    store_fix_teardown),
	    cmocka_unit_test_setup_teardown(test_restart_seals_yesterday, store_fix_setup,
	                                    store_fix_teardown),
	    cmocka_unit_test_setup_teardown(test_busy_hour_blocks, store_fix_setup, store_fix_teardown),
	    cmocka_unit_test_setup_teardown(test_format_1_not_sealed, store_fix_setup, store_fix_teardown),
	    cmocka_unit_test_setup_teardown(test_damaged_blocks, store_fix_setup, store_fix_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
