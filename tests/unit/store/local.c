/* Tests of store/local (src/store/local_*.c): write batches built with the
 * model API, read them back through views (entries, totals, series, labels,
 * nodes, frames, attribute sets), partitions per day, reopening, concurrent
 * readers, damaged files, group commit from several threads. */
#include <dirent.h>
#include <pthread.h>

#include "base/hash.h"
#include "helpers.h"
#include "store/batch_codec.h"
#include "store/local.h"
#include "store/local_wal.h"

static store_view_t *view_or_fail(store_t *s, const char *project, int64_t from, int64_t until)
{
	store_view_t *v;
	err_t err = {0};
	if (store_view_open(s, slice_cstr(project), from, until, &v, &err) != 0)
		fail_msg("view: %s", err.msg);
	return v;
}

/* "main;a;b" for a node, built from the view's nodes and frames. */
static void node_path(store_view_t *v, uint32_t p, uint32_t node, char *out, size_t n)
{
	store_nodes_t nodes;
	const model_frame_t *frames;
	uint32_t n_frames;
	err_t err = {0};
	assert_int_equal(store_view_nodes(v, p, &nodes, &err), 0);
	assert_int_equal(store_view_frames(v, p, &frames, &n_frames, &err), 0);
	const char *parts[64];
	int depth = 0;
	for (uint32_t k = node; k; k = nodes.parent[k]) {
		assert_true(k <= nodes.n && depth < 64);
		assert_true(nodes.parent[k] < k);
		const model_frame_t *f = &frames[nodes.frame[k]];
		parts[depth++] = strndup((const char *)f->name.p, f->name.n);
	}
	out[0] = 0;
	for (int i = depth - 1; i >= 0; i--) {
		strncat(out, parts[i], n - strlen(out) - 1);
		if (i)
			strncat(out, ";", n - strlen(out) - 1);
		free((void *)parts[i]);
	}
}

static const store_series_t *find_series(const store_series_t *se, uint32_t n, const char *type)
{
	for (uint32_t i = 0; i < n; i++)
		if (slice_eq_cstr(se[i].type, type))
			return &se[i];
	return NULL;
}

static void test_roundtrip(void **state)
{
	store_fix *f = *state;
	int64_t t = DAY0 + 3600 * NS_PER_SEC;
	model_batch_t *b = model_batch_new(slice_cstr("default"));
	uint32_t s1 = test_stack(b, "main;a;b"), s2 = test_stack(b, "main;a;c"), s3 = test_stack(b, "main;d");
	model_label_t span[2] = {{slice_cstr("span_id"), slice_cstr("00f067aa0ba902b7")},
	                         {slice_cstr("trace_id"), slice_cstr("4bf92f3577b34da6a3ce929d0e0e4736")}};
	uint32_t attrs = model_attrset_intern(b, span, 2);
	model_profile_t *p = test_profile(b, "samples", "count", t, "pod-1");
	model_sample_add(b, p, s1, 0, 5, 0);
	model_sample_add(b, p, s2, attrs, 7, 0);
	model_sample_add(b, p, s3, 0, 1, t + 4 * NS_PER_SEC + 300000000); /* 4.3 s into the profile */
	model_sample_add(b, p, s1, 0, 2, 0);                               /* merges with the first */
	model_profile_finish(b, p);
	p = test_profile(b, "cpu", "nanoseconds", t, "pod-1");
	model_sample_add(b, p, s1, 0, 70000000, 0);
	model_sample_add(b, p, s2, attrs, 70000000, 0);
	model_profile_finish(b, p);
	write_ok(f->s, b);

	store_view_t *v = view_or_fail(f->s, "default", t - NS_PER_SEC, t + NS_PER_SEC);
	err_t err = {0};
	assert_int_equal(store_view_partitions(v), 1);
	const store_series_t *se;
	uint32_t n_se;
	assert_int_equal(store_view_series(v, 0, &se, &n_se, &err), 0);
	assert_int_equal(n_se, 2);
	const store_series_t *cnt = find_series(se, n_se, "samples:count");
	const store_series_t *cpu = find_series(se, n_se, "cpu:nanoseconds");
	assert_non_null(cnt);
	assert_non_null(cpu);
	assert_true(slice_eq_cstr(cnt->service, "svc"));
	assert_true(slice_eq_cstr(cnt->period_type, "cpu") && slice_eq_cstr(cnt->period_unit, "nanoseconds"));
	assert_int_equal(cnt->period, 10000000);
	assert_int_equal(cpu->aggregation, MODEL_WINDOW);
	assert_int_equal(cnt->n_labels, 2);
	assert_true(slice_eq_cstr(cnt->labels[0].key, "namespace") && slice_eq_cstr(cnt->labels[0].value, "prod"));
	assert_true(slice_eq_cstr(cnt->labels[1].key, "pod") && slice_eq_cstr(cnt->labels[1].value, "pod-1"));

	const store_chunk_head_t *h;
	uint32_t n_h;
	assert_int_equal(store_view_heads(v, 0, &cnt->local, 1, &h, &n_h, &err), 0);
	assert_int_equal(n_h, 1);
	assert_int_equal(h[0].series, cnt->local);
	assert_int_equal(h[0].t_ns, t);
	assert_int_equal(h[0].duration_ns, 10 * NS_PER_SEC);
	assert_int_equal(h[0].n_entries, 3);
	assert_int_equal(h[0].total, 15);
	const store_entry_t *e;
	uint32_t n_e;
	store_chunk_head_t head = h[0];
	assert_int_equal(store_view_entries(v, 0, &head, &e, &n_e, &err), 0);
	assert_int_equal(n_e, 3);
	const model_attrset_t *sets;
	const model_label_t *labels;
	uint32_t n_sets;
	assert_int_equal(store_view_attrsets(v, 0, &sets, &labels, &n_sets, &err), 0);
	assert_int_equal(n_sets, 1);
	assert_int_equal(sets[1].count, 2);
	assert_true(slice_eq_cstr(labels[sets[1].first].key, "span_id"));
	assert_true(slice_eq_cstr(labels[sets[1].first + 1].value, "4bf92f3577b34da6a3ce929d0e0e4736"));
	int seen = 0;
	for (uint32_t i = 0; i < n_e; i++) {
		char path[256];
		node_path(v, 0, e[i].node, path, sizeof path);
		if (i)
			assert_true(e[i].node >= e[i - 1].node);
		if (strcmp(path, "main;a;b") == 0) {
			assert_int_equal(e[i].value, 7);
			assert_int_equal(e[i].attrset, 0);
			assert_int_equal(e[i].t_ns, t);
			seen |= 1;
		} else if (strcmp(path, "main;a;c") == 0) {
			assert_int_equal(e[i].value, 7);
			assert_int_equal(e[i].attrset, 1);
			seen |= 2;
		} else if (strcmp(path, "main;d") == 0) {
			assert_int_equal(e[i].value, 1);
			assert_int_equal(e[i].t_ns, t + 4 * NS_PER_SEC);
			seen |= 4;
		} else {
			fail_msg("unexpected stack %s", path);
		}
	}
	assert_int_equal(seen, 7);

	/* The cpu chunk shares the count chunk's keys; values keep their unit. */
	assert_int_equal(store_view_heads(v, 0, &cpu->local, 1, &h, &n_h, &err), 0);
	assert_int_equal(n_h, 1);
	assert_int_equal(h[0].total, 140000000);
	head = h[0];
	assert_int_equal(store_view_entries(v, 0, &head, &e, &n_e, &err), 0);
	assert_int_equal(n_e, 2);
	assert_int_equal(e[0].value, 70000000);
	assert_int_equal(e[1].value, 70000000);

	store_nodes_t nodes;
	assert_int_equal(store_view_nodes(v, 0, &nodes, &err), 0);
	assert_int_equal(nodes.n, 5); /* main, a, b, c, d */
	for (uint32_t i = 1; i <= nodes.n; i++) {
		assert_true(nodes.parent[i] < i);
		assert_true(nodes.id[i] != 0);
	}
	store_view_close(v);

	/* Outside the time range: the partition is listed, no heads. */
	v = view_or_fail(f->s, "default", t + NS_PER_SEC, t + 2 * NS_PER_SEC);
	assert_int_equal(store_view_partitions(v), 1);
	uint32_t ids[2] = {1, 2};
	assert_int_equal(store_view_heads(v, 0, ids, 2, &h, &n_h, &err), 0);
	assert_int_equal(n_h, 0);
	store_view_close(v);
	/* Another project sees nothing. */
	v = view_or_fail(f->s, "other", 0, t + NS_PER_DAY);
	assert_int_equal(store_view_partitions(v), 0);
	store_view_close(v);
}

static void test_two_days_two_partitions(void **state)
{
	store_fix *f = *state;
	model_batch_t *b = model_batch_new(slice_cstr("team_a/x"));
	uint32_t leaf = test_stack(b, "main;work");
	for (int d = 0; d < 2; d++) {
		model_profile_t *p =
		    test_profile(b, "cpu", "nanoseconds", DAY0 + d * NS_PER_DAY + 60 * NS_PER_SEC, "p");
		model_sample_add(b, p, leaf, 0, 10 + d, 0);
		model_profile_finish(b, p);
	}
	write_ok(f->s, b);
	char path[512];
	snprintf(path, sizeof path, "%s/team__a_2fx/2023-05-24.db", f->dir);
	assert_int_equal(access(path, F_OK), 0);
	snprintf(path, sizeof path, "%s/team__a_2fx/2023-05-25.db", f->dir);
	assert_int_equal(access(path, F_OK), 0);

	uint32_t chunks;
	assert_int_equal(sum_totals(f->s, "team_a/x", DAY0, DAY0 + 2 * NS_PER_DAY, &chunks), 21);
	assert_int_equal(chunks, 2);
	assert_int_equal(sum_totals(f->s, "team_a/x", DAY0, DAY0 + NS_PER_DAY, &chunks), 10);
	assert_int_equal(chunks, 1);
	store_view_t *v = view_or_fail(f->s, "team_a/x", DAY0 + NS_PER_DAY, DAY0 + NS_PER_DAY + 1);
	assert_int_equal(store_view_partitions(v), 1);
	store_view_close(v);
	v = view_or_fail(f->s, "team_a/x", DAY0 - NS_PER_DAY, DAY0 + 3 * NS_PER_DAY);
	assert_int_equal(store_view_partitions(v), 2);
	store_view_close(v);
}

static int64_t count_rows(const char *path, const char *table)
{
	char sql[128];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
	return sql_int(path, sql);
}

/* Stack nodes of a partition: rows of format 1's nodes, or format 2's node_runs counts. */
static int64_t count_nodes(const char *path)
{
	return sql_int(path, "SELECT value FROM meta WHERE key = 'format'") == 1
	           ? count_rows(path, "nodes")
	           : sql_int(path, "SELECT coalesce(sum(n), 0) FROM node_runs");
}

static void test_reopen_and_dedupe(void **state)
{
	store_fix *f = *state;
	for (int i = 0; i < 3; i++)
		write_ok(f->s, test_batch(DAY0 + i * 10 * NS_PER_SEC, 100));
	store_close(f->s);
	f->s = open_store(f->dir);
	uint32_t chunks;
	assert_int_equal(sum_totals(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &chunks), 3 * 600);
	assert_int_equal(chunks, 3);
	/* After reopening, known frames and nodes are found, not added again. */
	write_ok(f->s, test_batch(DAY0 + 30 * NS_PER_SEC, 100));
	write_ok(f->s, test_batch(DAY0 + 40 * NS_PER_SEC, 1));
	assert_int_equal(sum_totals(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &chunks), 4 * 600 + 6);
	char path[512];
	snprintf(path, sizeof path, "%s/default/2023-05-24.db", f->dir);
	store_close(f->s);
	f->s = open_store(f->dir);
	assert_int_equal(count_rows(path, "frames"), 5);
	assert_int_equal(count_nodes(path), 5);
	assert_int_equal(count_rows(path, "series"), 1);
	assert_int_equal(count_rows(path, "chunks"), 5);
	/* Equal payloads are stored once: values 100/200/300 and 1/2/3 differ only by the scale. */
	assert_int_equal(count_rows(path, "payloads"), 1);
}

/* The nodes, frames and node ids a view gives for project's partition of DAY0. */
static void view_nodes(store_t *s, const char *project, store_view_t **v, store_nodes_t *nodes)
{
	err_t err = {0};
	*v = view_or_fail(s, project, DAY0, DAY0 + NS_PER_DAY);
	assert_int_equal(store_view_partitions(*v), 1);
	if (store_view_nodes(*v, 0, nodes, &err) != 0)
		fail_msg("%s", err.msg);
}

/* Format 1 files (made by a Kiln before format 2) are written on as format 1
 * and read beside format 2 ones; both give the same node ids (format 2
 * recomputes them from parent and frame), so answers do not depend on
 * the format. */
static void test_formats_1_and_2(void **state)
{
	store_fix *f = *state;
	f->s->part_format = 1;
	model_batch_t *b = test_batch(DAY0 + NS_PER_SEC, 1);
	b->project = slice_cstr("one");
	write_ok(f->s, b);
	store_close(f->s);
	f->s = open_store(f->dir); /* part_format back to 2 */
	for (int k = 0; k < 2; k++) {
		b = test_batch(DAY0 + 2 * NS_PER_SEC, 10);
		model_profile_t *p = test_profile(b, "cpu", "nanoseconds", DAY0 + 2 * NS_PER_SEC, "pod-1");
		model_sample_add(b, p, test_stack(b, "main;e;f"), 0, 100, 0);
		model_profile_finish(b, p);
		b->project = slice_cstr(k ? "two" : "one");
		write_ok(f->s, b);
	}
	char one[512], two[512];
	snprintf(one, sizeof one, "%s/one/2023-05-24.db", f->dir);
	snprintf(two, sizeof two, "%s/two/2023-05-24.db", f->dir);
	assert_int_equal(sql_int(one, "SELECT value FROM meta WHERE key = 'format'"), 1);
	assert_int_equal(sql_int(two, "SELECT value FROM meta WHERE key = 'format'"), 2);
	assert_int_equal(count_nodes(one), 7);
	assert_int_equal(count_nodes(two), 7);
	uint32_t chunks;
	assert_int_equal(sum_totals(f->s, "one", DAY0, DAY0 + NS_PER_DAY, &chunks), 6 + 60 + 100);
	assert_int_equal(chunks, 3); /* a profile per write, and main;e;f's */
	assert_int_equal(sum_totals(f->s, "two", DAY0, DAY0 + NS_PER_DAY, &chunks), 60 + 100);
	assert_int_equal(chunks, 2);
	/* Both files were given the same stacks in the same order: same local
	 * ids, and the same ids, the model's (stored in format 1). */
	store_view_t *v1, *v2;
	store_nodes_t n1, n2;
	view_nodes(f->s, "one", &v1, &n1);
	view_nodes(f->s, "two", &v2, &n2);
	assert_int_equal(n1.n, 7);
	assert_int_equal(n2.n, 7);
	for (uint32_t k = 1; k <= 7; k++) {
		assert_int_equal(n1.id[k], n2.id[k]);
		assert_int_equal(n1.parent[k], n2.parent[k]);
		assert_int_equal(n1.frame[k], n2.frame[k]);
	}
	b = test_batch(DAY0, 1);
	uint32_t leaf = test_stack(b, "main;e;f");
	assert_int_equal(n2.id[7], b->nodes[leaf].id);
	model_batch_free(b);
	store_view_close(v1);
	store_view_close(v2);
}

/* A clean stop leaves each day as one file: the writer's connections copy
 * their -wal in as they close and the checkpointer's last round syncs the
 * files and deletes what it opened again; everything reads back. */
static void test_clean_stop_leaves_db_files_only(void **state)
{
	store_fix *f = *state;
	for (int d = 0; d < 2; d++)
		for (int i = 0; i < 3; i++)
			write_ok(f->s, test_batch(DAY0 + d * NS_PER_DAY + i * 10 * NS_PER_SEC, 100));
	store_close(f->s);
	f->s = NULL;
	for (int d = 0; d < 2; d++)
		for (int k = 0; k < 3; k++) {
			static const char *const suffix[] = {"", "-wal", "-shm"};
			char path[512];
			snprintf(path, sizeof path, "%s/default/2023-05-2%d.db%s", f->dir, 4 + d, suffix[k]);
			assert_int_equal(access(path, F_OK) == 0, k == 0);
		}
	f->s = open_store(f->dir);
	uint32_t chunks;
	assert_int_equal(sum_totals(f->s, "default", DAY0, DAY0 + 2 * NS_PER_DAY, &chunks), 6 * 600);
	assert_int_equal(chunks, 6);
}

/* Size of DIR/default/2023-05-24.db + suffix, -1 when missing. */
static off_t day0_size(const store_fix *f, const char *suffix)
{
	char path[512];
	snprintf(path, sizeof path, "%s/default/2023-05-24.db%s", f->dir, suffix);
	struct stat st;
	return stat(path, &st) == 0 ? st.st_size : -1;
}

/* A hash of DIR/default/2023-05-24.db's bytes: SQLite changes them only when
 * a checkpoint copies the -wal in. */
static uint64_t day0_hash(const store_fix *f)
{
	char path[512];
	snprintf(path, sizeof path, "%s/default/2023-05-24.db", f->dir);
	size_t n;
	unsigned char *p = read_file_or_fail(path, &n);
	uint64_t h = hash_bytes(p, n, 0);
	free(p);
	return h;
}

static void round_ok(store_t *s)
{
	err_t err = {0};
	if (local_log_checkpoint(s, &err) < 0)
		fail_msg("checkpoint: %s", err.msg);
}

/* With many partitions written (ckpt_sync_any here), a checkpoint round
 * syncs a partition's small -wal and leaves it (the .db
 * keeps its bytes: SQLite writes only the -wal); the next round, the file
 * not written since, copies it in. A -wal past LOCAL_CKPT_COPY_FRAMES is
 * copied in the round that finds it, though the file is still written. */
static void test_round_copies_idle_or_large_wal(void **state)
{
	store_fix *f = *state;
	f->s->ckpt_sync_any = 1; /* as with more than LOCAL_CKPT_SYNC_ABOVE partitions */
	write_ok(f->s, test_batch(DAY0, 100));
	local_read_barrier(f->s);
	uint64_t made = day0_hash(f);
	round_ok(f->s);
	assert_true(day0_hash(f) == made);
	assert_true(day0_size(f, "-wal") > 0);
	uint32_t chunks;
	assert_int_equal(sum_totals(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &chunks), 600);
	round_ok(f->s); /* idle since the last round */
	uint64_t copied = day0_hash(f);
	assert_true(copied != made);

	write_ok(f->s, test_batch(DAY0 + NS_PER_SEC, 100));
	local_read_barrier(f->s);
	round_ok(f->s); /* written, a few frames: synced only */
	assert_true(day0_hash(f) == copied);
	int n = 1;
	/* Each commit writes a few frames (4 KiB pages with a 24-byte header
	 * each, after the -wal's 32-byte header); the -wal starts over only
	 * after a copy. */
	while (day0_size(f, "-wal") < 32 + (off_t)LOCAL_CKPT_COPY_FRAMES * (4096 + 24)) {
		n++;
		write_ok(f->s, test_batch(DAY0 + n * NS_PER_SEC, 100 + n));
		local_read_barrier(f->s);
	}
	round_ok(f->s);
	assert_true(day0_hash(f) != copied);
	int64_t want = 0;
	for (int i = 0; i <= n; i++)
		want += 6 * (i < 2 ? 100 : 100 + i);
	assert_int_equal(sum_totals(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &chunks), want);
	assert_int_equal(chunks, n + 1);
	store_close(f->s);
	f->s = open_store(f->dir);
	assert_int_equal(sum_totals(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &chunks), want);
	/* One partition written (not more than LOCAL_CKPT_SYNC_ABOVE): copied at once. */
	uint64_t before = day0_hash(f);
	write_ok(f->s, test_batch(DAY0 + (n + 1) * NS_PER_SEC, 100));
	local_read_barrier(f->s);
	round_ok(f->s);
	assert_true(day0_hash(f) != before);
}

/* With nothing written after it, a -wal that a round only synced is
 * copied by a later round all the same: a store that stopped being
 * written keeps no frames in its -wal files (readers would look them up). */
static void test_idle_wal_copied_without_writes(void **state)
{
	store_fix *f = *state;
	f->s->ckpt_sync_any = 1;
	f->s->ckpt_ms = 50;
	write_ok(f->s, test_batch(DAY0, 100));
	local_read_barrier(f->s);
	uint64_t made = day0_hash(f);
	int64_t t0 = time_mono_ns();
	while (day0_hash(f) == made && time_mono_ns() - t0 < 10 * NS_PER_SEC)
		usleep(20000);
	assert_true(day0_hash(f) != made);
	uint32_t chunks;
	assert_int_equal(sum_totals(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &chunks), 600);
}

/* DIR/_wal deleted after a clean stop (nothing in it to replay): the new log
 * numbers its records above the LSNs the partitions recorded from the old
 * one, so a later write is applied, not skipped as already held. */
static void test_log_deleted_after_clean_stop(void **state)
{
	store_fix *f = *state;
	for (int i = 0; i < 3; i++)
		write_ok(f->s, test_batch(DAY0 + i * 10 * NS_PER_SEC, 100));
	store_close(f->s);
	char wal[512];
	snprintf(wal, sizeof wal, "%s/_wal", f->dir);
	tmpdir_free(strdup(wal));
	f->s = open_store(f->dir);
	write_ok(f->s, test_batch(DAY0 + 30 * NS_PER_SEC, 100));
	uint32_t chunks;
	assert_int_equal(sum_totals(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &chunks), 4 * 600);
	assert_int_equal(chunks, 4);
	store_close(f->s);
	f->s = open_store(f->dir);
	assert_int_equal(sum_totals(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &chunks), 4 * 600);
	assert_int_equal(chunks, 4);
}

/* A log written by a Kiln before batch codec version 2 (its records in
 * version 1) replays: the group is put in by hand, as that Kiln left it. */
static void test_log_of_version_1_replays(void **state)
{
	store_fix *f = *state;
	store_close(f->s);
	f->s = NULL;
	local_wal_t *w;
	err_t err = {0};
	if (local_wal_open(f->dir, NULL, &w, &err) != 0)
		fail_msg("open: %s", err.msg);
	local_wal_rec_t rec;
	while (local_wal_replay_next(w, &rec, &err) == 1)
		;
	model_batch_t *b = test_batch(DAY0 + 5 * NS_PER_SEC, 100);
	buf_t r;
	buf_init(&r, SIZE_MAX);
	uint8_t len[4] = {0};
	buf_append(&r, len, 4);
	assert_int_equal(batch_codec_encode_version(b, &r, 1), 0);
	assert_int_equal(r.p[4], 1);
	for (int i = 0; i < 4; i++)
		r.p[i] = (uint8_t)((r.n - 4) >> (8 * i));
	uint64_t lsn;
	if (local_wal_append(w, LOCAL_WAL_GROUP, 1, buf_slice(&r), &lsn, &err) != 0)
		fail_msg("append: %s", err.msg);
	local_wal_close(w);
	buf_free(&r);
	model_batch_free(b);
	f->s = open_store(f->dir);
	uint32_t chunks;
	assert_int_equal(sum_totals(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &chunks), 600);
	assert_int_equal(chunks, 1);
}

typedef struct {
	store_t *s;
	int n, base;
	volatile int done;
} writer_arg;

static void *writer_thread(void *arg)
{
	writer_arg *w = arg;
	for (int i = 0; i < w->n; i++)
		write_ok(w->s, test_batch(DAY0 + (int64_t)(w->base + i) * NS_PER_SEC, 1));
	w->done = 1;
	return NULL;
}

static void test_reader_during_writes(void **state)
{
	store_fix *f = *state;
	writer_arg w = {f->s, 300, 0, 0};
	pthread_t th;
	pthread_create(&th, NULL, writer_thread, &w);
	int reads = 0;
	uint32_t last = 0;
	while (!w.done || reads < 3) {
		store_view_t *v = view_or_fail(f->s, "default", DAY0, DAY0 + NS_PER_DAY);
		for (uint32_t p = 0; p < store_view_partitions(v); p++) {
			err_t err = {0};
			const store_series_t *se;
			uint32_t n_se, n_h;
			assert_int_equal(store_view_series(v, p, &se, &n_se, &err), 0);
			if (!n_se)
				continue;
			const store_chunk_head_t *h;
			assert_int_equal(store_view_heads(v, p, &se[0].local, 1, &h, &n_h, &err), 0);
			assert_true(n_h >= last); /* a snapshot never goes back */
			last = n_h;
			store_chunk_head_t *copy = malloc((n_h ? n_h : 1) * sizeof *copy);
			memcpy(copy, h, n_h * sizeof *copy);
			store_nodes_t nodes;
			assert_int_equal(store_view_nodes(v, p, &nodes, &err), 0);
			for (uint32_t i = 0; i < n_h; i++) {
				const store_entry_t *e;
				uint32_t n_e;
				if (store_view_entries(v, p, &copy[i], &e, &n_e, &err) != 0)
					fail_msg("entries: %s", err.msg);
				assert_int_equal(n_e, 3);
				for (uint32_t k = 0; k < n_e; k++)
					assert_true(e[k].node >= 1 && e[k].node <= nodes.n);
			}
			free(copy);
		}
		store_view_close(v);
		reads++;
	}
	pthread_join(th, NULL);
	uint32_t chunks;
	assert_int_equal(sum_totals(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &chunks), 300 * 6);
	assert_int_equal(chunks, 300);
}

static void corrupt(const char *dir, const char *sql)
{
	char path[512];
	snprintf(path, sizeof path, "%s/default/2023-05-24.db", dir);
	sql_exec(path, sql);
}

/* Reads every chunk of the partition; returns the first error status (0 if none). */
/* Reads every series, node, head and entry of the day: the status of the
 * first failure, or 0; *skipped tells whether the partition turned out
 * damaged (and was skipped). */
static int read_all(store_t *s, err_t *err, int *skipped)
{
	store_view_t *v;
	*skipped = 0;
	if (store_view_open(s, slice_cstr("default"), DAY0, DAY0 + NS_PER_DAY, &v, err) != 0)
		return err->status;
	int st = 0;
	const store_series_t *se;
	uint32_t n_se, n_h;
	store_nodes_t nodes;
	if (store_view_series(v, 0, &se, &n_se, err) != 0 || store_view_nodes(v, 0, &nodes, err) != 0) {
		st = err->status;
		goto out;
	}
	const store_chunk_head_t *h;
	uint32_t ids[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	if (store_view_heads(v, 0, ids, 8, &h, &n_h, err) != 0) {
		st = err->status;
		goto out;
	}
	for (uint32_t i = 0; i < n_h && !st; i++) {
		const store_entry_t *e;
		uint32_t n_e;
		if (store_view_entries(v, 0, &h[i], &e, &n_e, err) != 0)
			st = err->status;
	}
out:
	*skipped = store_view_skipped(v, 0);
	store_view_close(v);
	return st;
}

static uint64_t damaged_count(store_t *s)
{
	store_stats_t st;
	store_get_stats(s, &st);
	return st.damaged;
}

/* Files DIR/default/2023-05-24.db.damaged-<seconds>: DAY0's moved aside. */
static int moved_aside(const char *dir)
{
	char path[600];
	snprintf(path, sizeof path, "%s/default", dir);
	DIR *d = opendir(path);
	assert_non_null(d);
	int found = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		found += strncmp(de->d_name, "2023-05-24.db.damaged-", 22) == 0 && !strchr(de->d_name + 22, '-');
	closedir(d);
	return found;
}

/* Damage of every kind is found, reported once and skipped by reads (never
 * an error, never a crash); the writer moves a file SQLite cannot read aside
 * and starts the day afresh. */
static void test_damaged_partition_is_skipped(void **state)
{
	store_fix *f = *state;
	write_ok(f->s, test_batch(DAY0 + NS_PER_SEC, 1));
	write_ok(f->s, test_batch(DAY0 + 2 * NS_PER_SEC, 5));
	err_t err = {0};
	int skipped;
	assert_int_equal(read_all(f->s, &err, &skipped), 0);
	assert_int_equal(skipped, 0);
	assert_int_equal(damaged_count(f->s), 0);
	/* The file's format, the damage, what the reader says. Format 2's one
	 * node run holds 5 nodes as (local - parent, frame): 01 01, 01 02 ... */
	static const struct {
		int format;
		const char *sql, *msg;
	} damage[] = {
		{2, "UPDATE payloads SET data = substr(data, 1, length(data) - 2)", "truncated value column"},
		{2, "UPDATE payloads SET data = x'01ff7f28b52ffd'", "bad payload length"},
		{2, "UPDATE payloads SET data = x'00030011ff'", "node id out of range"},
		{2, "UPDATE payloads SET data = x'0003000102030406080c'", "node id out of range"},
		{2, "UPDATE payloads SET data = x'02'", "unknown payload format"},
		{2, "UPDATE payloads SET data = zeroblob(0)", "empty payload"},
		{2, "UPDATE chunks SET n_entries = 1000000000", "chunk header out of range"},
		{2, "UPDATE chunks SET total = total + 1", "values do not add up to the chunk total"},
		{2, "UPDATE chunks SET payload = 99", "chunk payload missing"},
		{1, "UPDATE nodes SET parent = local + 1 WHERE local = 2", "node parent or frame out of range"},
		{1, "UPDATE nodes SET frame = 1000 WHERE local = 2", "node parent or frame out of range"},
		{1, "DELETE FROM nodes WHERE local = 2", "local ids are not dense"},
		{2, "UPDATE node_runs SET data = x'0201' || substr(data, 3)", "node parent out of range"},
		{2, "UPDATE node_runs SET data = x'01e807' || substr(data, 3)", "node frame out of range"},
		{2, "UPDATE node_runs SET data = substr(data, 1, length(data) - 1)", "node run truncated"},
		{2, "UPDATE node_runs SET data = data || x'0101'", "node run longer than its count"},
		{2, "UPDATE node_runs SET n = n + 1", "node run truncated"},
		{2, "UPDATE node_runs SET first = 2", "node runs are not dense"},
		{2, "DELETE FROM node_runs", "node id out of range"},
		{2, "UPDATE meta SET value = 7", "partition format 7"},
		{1, "UPDATE meta SET value = 0", "partition format 0"},
	};
	for (size_t i = 0; i < sizeof damage / sizeof *damage; i++) {
		store_close(f->s);
		tmpdir_free(f->dir);
		f->dir = tmpdir_new();
		f->s = open_store(f->dir);
		f->s->part_format = damage[i].format;
		write_ok(f->s, test_batch(DAY0 + NS_PER_SEC, 1));
		write_ok(f->s, test_batch(DAY0 + 2 * NS_PER_SEC, 5));
		corrupt(f->dir, damage[i].sql);
		memset(&err, 0, sizeof err);
		char logged[4096];
		int saved = stderr_to_file();
		int st = read_all(f->s, &err, &skipped);
		stderr_back(saved, logged, sizeof logged);
		if (st != 0 || !skipped || damaged_count(f->s) != 1 || !strstr(logged, damage[i].msg) ||
		    !strstr(logged, "store partition is damaged"))
			fail_msg("%s: status %d skipped %d damaged %llu msg %s logged %s", damage[i].sql, st, skipped,
			         (unsigned long long)damaged_count(f->s), err.msg, logged);
		/* Reported once per file: a second read skips it silently. */
		assert_int_equal(read_all(f->s, &err, &skipped), 0);
		assert_int_equal(skipped, 1);
		assert_int_equal(damaged_count(f->s), 1);
	}
	/* A file that is not a database at all. */
	char path[512];
	snprintf(path, sizeof path, "%s/default/2023-05-24.db", f->dir);
	store_close(f->s);
	FILE *fp = fopen(path, "r+b");
	fwrite("garbage garbage garbage garbage", 1, 31, fp);
	fclose(fp);
	char wal[600];
	snprintf(wal, sizeof wal, "%s-wal", path);
	unlink(wal);
	f->s = open_store(f->dir);
	memset(&err, 0, sizeof err);
	assert_int_equal(read_all(f->s, &err, &skipped), 0);
	assert_int_equal(skipped, 1);
	/* Writing to that day moves the file aside and starts a new one. */
	write_ok(f->s, test_batch(DAY0 + NS_PER_SEC, 1));
	assert_int_equal(read_all(f->s, &err, &skipped), 0);
	assert_int_equal(skipped, 0);
	assert_int_equal(moved_aside(f->dir), 1);
}

/* Format 2's writer needs every node of a partition (no index on their
 * ids): node runs it cannot load make the file damaged, moved aside when
 * the day is next written, and the write goes to a fresh file. */
static void test_damaged_node_runs_moved_aside(void **state)
{
	store_fix *f = *state;
	write_ok(f->s, test_batch(DAY0 + NS_PER_SEC, 1));
	store_close(f->s);
	corrupt(f->dir, "UPDATE node_runs SET data = x'0201' || substr(data, 3)");
	f->s = open_store(f->dir);
	char logged[4096];
	int saved = stderr_to_file();
	write_ok(f->s, test_batch(DAY0 + 2 * NS_PER_SEC, 5));
	stderr_back(saved, logged, sizeof logged);
	assert_non_null(strstr(logged, "is damaged: node parent out of range"));
	assert_int_equal(moved_aside(f->dir), 1);
	uint32_t chunks;
	assert_int_equal(sum_totals(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &chunks), 30);
	assert_int_equal(chunks, 1);
}

typedef struct {
	pthread_mutex_t mu;
	int ok, failed;
} counter;

static void count_done(void *ctx, const err_t *err)
{
	counter *c = ctx;
	pthread_mutex_lock(&c->mu);
	if (err)
		c->failed++;
	else
		c->ok++;
	pthread_mutex_unlock(&c->mu);
}

typedef struct {
	store_t *s;
	counter *c;
	int base;
} submit_arg;

static void *submit_thread(void *arg)
{
	submit_arg *a = arg;
	for (int i = 0; i < 100; i++)
		store_submit(a->s, test_batch(DAY0 + (int64_t)(a->base + i) * NS_PER_SEC, 1), count_done, a->c);
	return NULL;
}

static void test_group_commit_many_threads(void **state)
{
	store_fix *f = *state;
	counter c = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
	pthread_t th[4];
	submit_arg args[4];
	for (int i = 0; i < 4; i++) {
		args[i] = (submit_arg){f->s, &c, i * 1000};
		pthread_create(&th[i], NULL, submit_thread, &args[i]);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	/* store_close drains: every callback has run when it returns. */
	store_close(f->s);
	assert_int_equal(c.ok, 400);
	assert_int_equal(c.failed, 0);
	f->s = open_store(f->dir);
	assert_int_equal(store_queue_depth(f->s), 0);
	uint32_t chunks;
	assert_int_equal(sum_totals(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &chunks), 400 * 6);
	assert_int_equal(chunks, 400);
}

/* A bad batch in a group fails alone; the others commit, and ids cached for
 * the rolled-back transaction are not reused. */
static void test_bad_batch_fails_alone(void **state)
{
	store_fix *f = *state;
	store_close(f->s);
	store_config_t cfg = {.dir = f->dir, .commit_interval_ms = 50};
	err_t err = {0};
	f->s = store_open(&cfg, &err);
	counter c = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
	store_submit(f->s, test_batch(DAY0 + NS_PER_SEC, 1), count_done, &c);
	model_batch_t *bad = model_batch_new(slice_cstr("default"));
	uint32_t leaf = test_stack(bad, "main;new;frames");
	model_profile_t *p = test_profile(bad, "cpu", "nanoseconds", DAY0 + 2 * NS_PER_SEC, "pod-2");
	model_sample_add(bad, p, leaf, 0, 5, 0);
	model_sample_add(bad, p, 12345, 0, 5, 0); /* no such node */
	model_profile_finish(bad, p);
	store_submit(f->s, bad, count_done, &c);
	store_submit(f->s, test_batch(DAY0 + 3 * NS_PER_SEC, 1), count_done, &c);
	/* Day-spanning batch whose second day is fine: all of it commits. */
	model_batch_t *two = test_batch(DAY0 + 4 * NS_PER_SEC, 1);
	p = test_profile(two, "cpu", "nanoseconds", DAY0 + NS_PER_DAY, "pod-1");
	model_sample_add(two, p, 0, 0, 9, 0);
	model_profile_finish(two, p);
	store_submit(f->s, two, count_done, &c);
	store_close(f->s);
	assert_int_equal(c.ok, 3);
	assert_int_equal(c.failed, 1);
	f->s = open_store(f->dir);
	uint32_t chunks;
	assert_int_equal(sum_totals(f->s, "default", DAY0, DAY0 + 2 * NS_PER_DAY, &chunks), 3 * 6 + 9);
	assert_int_equal(chunks, 4);
	write_ok(f->s, test_batch(DAY0 + 5 * NS_PER_SEC, 1));
	err_t e2 = {0};
	int skipped;
	assert_int_equal(read_all(f->s, &e2, &skipped), 0);
	assert_int_equal(skipped, 0);
	char path[512];
	snprintf(path, sizeof path, "%s/default/2023-05-24.db", f->dir);
	assert_int_equal(count_nodes(path), 5);
	assert_int_equal(count_rows(path, "series"), 1);
}

static void test_project_names(void **state)
{
	store_fix *f = *state;
	err_t err = {0};
	store_view_t *v;
	char long_name[100];
	memset(long_name, 'x', 99);
	long_name[99] = 0;
	assert_int_equal(store_view_open(f->s, slice_cstr(long_name), 0, DAY0, &v, &err), -1);
	assert_int_equal(err.status, 400);
	assert_int_equal(store_view_open(f->s, slice_cstr("../etc"), 0, DAY0, &v, &err), 0);
	assert_int_equal(store_view_partitions(v), 0);
	store_view_close(v);
	model_batch_t *b = test_batch(DAY0, 1);
	b->project = slice_cstr("../../etc");
	write_ok(f->s, b);
	char path[512];
	snprintf(path, sizeof path, "%s/_2e_2e_2f_2e_2e_2fetc/2023-05-24.db", f->dir);
	assert_int_equal(access(path, F_OK), 0);
}

/* Values near the int64 limits: merging (model_profile_finish, the store's
 * normalization) and chunk totals saturate instead of overflowing, and the
 * decoder accepts what the writer wrote. */
static void test_huge_values_saturate(void **state)
{
	store_fix *f = *state;
	int64_t t = DAY0 + 60 * NS_PER_SEC;
	model_batch_t *b = model_batch_new(slice_cstr("default"));
	uint32_t s1 = test_stack(b, "main;a"), s2 = test_stack(b, "main;b");
	model_profile_t *p = test_profile(b, "cpu", "nanoseconds", t, "pod-1");
	model_sample_add(b, p, s1, 0, INT64_MAX, 0);
	model_sample_add(b, p, s1, 0, INT64_MAX, 0); /* merges: saturates */
	model_sample_add(b, p, s2, 0, INT64_MAX - 1, 0);
	model_profile_finish(b, p);
	assert_int_equal(b->samples[p->samples_first].value, INT64_MAX);
	p = test_profile(b, "cpu", "nanoseconds", t, "pod-2");
	model_sample_add(b, p, s1, 0, INT64_MIN, 0);
	model_sample_add(b, p, s1, 0, -5, 0);
	model_sample_add(b, p, s2, 0, INT64_MIN, 0);
	model_profile_finish(b, p);
	write_ok(f->s, b);

	store_view_t *v = view_or_fail(f->s, "default", t, t + 1);
	err_t err = {0};
	const store_series_t *se;
	uint32_t n_se, n_h, n_e;
	assert_int_equal(store_view_series(v, 0, &se, &n_se, &err), 0);
	assert_int_equal(n_se, 2);
	uint32_t ids[2] = {1, 2};
	const store_chunk_head_t *h;
	assert_int_equal(store_view_heads(v, 0, ids, 2, &h, &n_h, &err), 0);
	assert_int_equal(n_h, 2);
	store_chunk_head_t heads[2] = {h[0], h[1]};
	for (int i = 0; i < 2; i++) {
		const store_entry_t *e;
		if (store_view_entries(v, 0, &heads[i], &e, &n_e, &err) != 0)
			fail_msg("entries: %s", err.msg);
		assert_int_equal(n_e, 2);
		int pos = heads[i].total > 0;
		assert_int_equal(heads[i].total, pos ? INT64_MAX : INT64_MIN);
		assert_int_equal(e[0].value, pos ? INT64_MAX : INT64_MIN);
		assert_int_equal(e[1].value, pos ? INT64_MAX - 1 : INT64_MIN);
	}
	store_view_close(v);
}

/* One kiln process per data directory: a second store_open is refused while
 * the first is open, and allowed again once it is closed. */
static void test_data_dir_is_locked(void **state)
{
	store_fix *f = *state;
	store_config_t cfg = {.dir = f->dir};
	err_t err = {0};
	assert_null(store_open(&cfg, &err));
	assert_int_equal(err.status, 503);
	assert_non_null(strstr(err.msg, "is in use by another kiln process"));
	store_close(f->s);
	f->s = store_open(&cfg, &err);
	assert_non_null(f->s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_roundtrip, store_fix_setup, store_fix_teardown),
		cmocka_unit_test_setup_teardown(test_two_days_two_partitions, store_fix_setup, store_fix_teardown),
		cmocka_unit_test_setup_teardown(test_reopen_and_dedupe, store_fix_setup, store_fix_teardown),
		cmocka_unit_test_setup_teardown(test_clean_stop_leaves_db_files_only, store_fix_setup, store_fix_teardown),
		cmocka_unit_test_setup_teardown(test_round_copies_idle_or_large_wal, store_fix_setup, store_fix_teardown),
		cmocka_unit_test_setup_teardown(test_idle_wal_copied_without_writes, store_fix_setup, store_fix_teardown),
		cmocka_unit_test_setup_teardown(test_formats_1_and_2, store_fix_setup, store_fix_teardown),
		cmocka_unit_test_setup_teardown(test_damaged_node_runs_moved_aside, store_fix_setup, store_fix_teardown),
		cmocka_unit_test_setup_teardown(test_log_deleted_after_clean_stop, store_fix_setup, store_fix_teardown),
		cmocka_unit_test_setup_teardown(test_log_of_version_1_replays, store_fix_setup, store_fix_teardown),
		cmocka_unit_test_setup_teardown(test_reader_during_writes, store_fix_setup, store_fix_teardown),
		cmocka_unit_test_setup_teardown(test_damaged_partition_is_skipped, store_fix_setup, store_fix_teardown),
		cmocka_unit_test_setup_teardown(test_group_commit_many_threads, store_fix_setup, store_fix_teardown),
		cmocka_unit_test_setup_teardown(test_bad_batch_fails_alone, store_fix_setup, store_fix_teardown),
		cmocka_unit_test_setup_teardown(test_project_names, store_fix_setup, store_fix_teardown),
		cmocka_unit_test_setup_teardown(test_huge_values_saturate, store_fix_setup, store_fix_teardown),
		cmocka_unit_test_setup_teardown(test_data_dir_is_locked, store_fix_setup, store_fix_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
