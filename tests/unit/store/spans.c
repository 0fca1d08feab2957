/* Tests of the span index of store/local (API: Span links): rows written with their
 * chunk and rolled back with it, lookups by span_id with and without
 * trace_id and by trace_id alone, id encodings, files that predate the
 * index, and views that open partitions only when read. */
#include "helpers.h"
#include "store/local.h"

#define SPAN_A "00f067aa0ba902b7"
#define SPAN_B "b7ad6b7169203331"
#define TRACE_1 "4bf92f3577b34da6a3ce929d0e0e4736"
#define TRACE_2 "0af7651916cd43dd8448eb211c80319c"

/* Attribute set from "k=v,k2=v2" (empty string: the empty set). */
static uint32_t attrs(model_batch_t *b, const char *kv)
{
	model_label_t l[8];
	uint32_t n = 0;
	char *copy = strdup(kv), *save = NULL;
	for (char *tok = strtok_r(copy, ",", &save); tok && n < 8; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		*eq = 0;
		l[n].key = slice_cstr(tok);
		l[n].value = slice_cstr(eq + 1);
		n++;
	}
	uint32_t a = model_attrset_intern(b, l, n); /* copies the labels */
	free(copy);
	return a;
}

/* One cpu profile at t_ns whose samples carry the given attribute sets
 * (NULL-terminated), value 1, 2, 3, … on stacks main;f0, main;f1, … */
static model_batch_t *span_batch(int64_t t_ns, const char *const *sets)
{
	model_batch_t *b = model_batch_new(slice_cstr("default"));
	model_profile_t *p = test_profile(b, "cpu", "nanoseconds", t_ns, "pod-1");
	for (int i = 0; sets[i]; i++) {
		char stack[32];
		snprintf(stack, sizeof stack, "main;f%d", i);
		uint32_t leaf = test_stack(b, stack);
		p = &b->profiles[b->n_profiles - 1];
		model_sample_add(b, p, leaf, attrs(b, sets[i]), i + 1, 0);
	}
	model_profile_finish(b, &b->profiles[b->n_profiles - 1]);
	return b;
}

static void day_path(const store_fix *f, const char *day, char *out, size_t n)
{
	snprintf(out, n, "%s/default/%s.db", f->dir, day);
}

/* Sum of the values of the entries that the hits of (span, trace) point at, over partition p. */
static int64_t linked_value(store_view_t *v, uint32_t p, const char *span, const char *trace,
                            uint32_t *n_hits)
{
	const store_span_hit_t *hits;
	err_t err = {0};
	if (store_view_span_chunks(v, p, slice_cstr(span), slice_cstr(trace), &hits, n_hits, &err) != 0)
		fail_msg("span chunks: %s", err.msg);
	store_span_hit_t copy[64];
	assert_true(*n_hits <= 64);
	if (*n_hits)
		memcpy(copy, hits, *n_hits * sizeof *hits);
	int64_t sum = 0;
	for (uint32_t i = 0; i < *n_hits; i++) {
		const store_entry_t *e;
		uint32_t n;
		assert_int_equal(store_view_entries(v, p, &copy[i].head, &e, &n, &err), 0);
		for (uint32_t k = 0; k < n; k++)
			if (e[k].attrset == copy[i].attrset)
				sum += e[k].value;
	}
	return sum;
}

static store_view_t *view_day(store_t *s, int64_t from, int64_t until)
{
	store_view_t *v;
	err_t err = {0};
	if (store_view_open(s, slice_cstr("default"), from, until, &v, &err) != 0)
		fail_msg("view: %s", err.msg);
	return v;
}

static void test_lookup_by_span_and_trace(void **state)
{
	store_fix *f = *state;
	static const char *const sets[] = {
	    "span_id=" SPAN_A ",trace_id=" TRACE_1,        /* 1: OTLP link */
	    "span_id=" SPAN_A ",trace_id=" TRACE_1 ",k=v", /* 2: same span, other attributes */
	    "span_id=" SPAN_B ",trace_id=" TRACE_1,        /* 3: another span of the trace */
	    "span_id=" SPAN_A,                             /* 4: pprof label, no trace */
	    "span_id=" SPAN_A ",trace_id=" TRACE_2,        /* 5: same span id, other trace */
	    "k=v",                                         /* 6: no span */
	    "",                                            /* 7: no attributes */
	    NULL,
	};
	write_ok(f->s, span_batch(DAY0 + 60 * NS_PER_SEC, sets));
	write_ok(f->s, span_batch(DAY0 + 120 * NS_PER_SEC, sets));
	char path[512];
	day_path(f, "2023-05-24", path, sizeof path);
	/* One row per (chunk, attribute set with a span): 5 sets x 2 chunks. */
	assert_int_equal(sql_int(path, "SELECT count(*) FROM spans"), 10);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM spans WHERE trace IS NULL"), 2);
	/* Hex ids are stored as their bytes. */
	assert_int_equal(sql_int(path, "SELECT max(length(span)) FROM spans"), 8);
	assert_int_equal(sql_int(path, "SELECT max(length(trace)) FROM spans"), 16);

	/* The same answers from the chunks' payloads and, once the hour is
	 * sealed, from its block (the spans rows name chunks, which keep theirs). */
	for (int sealed = 0; sealed < 2; sealed++) {
		if (sealed) {
			local_seal_wait(f->s);
			assert_int_equal(sql_int(path, "SELECT count(*) FROM blocks"), 1);
			assert_int_equal(sql_int(path, "SELECT count(*) FROM chunks WHERE payload > 0"), 0);
		}
		store_view_t *v = view_day(f->s, DAY0, DAY0 + NS_PER_DAY);
		uint32_t n;
		/* Span A in trace 1: sets 1, 2 and the trace-less 4, in both chunks. */
		assert_int_equal(linked_value(v, 0, SPAN_A, TRACE_1, &n), 2 * (1 + 2 + 4));
		assert_int_equal(n, 6);
		/* Without a trace: every set with span A. */
		assert_int_equal(linked_value(v, 0, SPAN_A, "", &n), 2 * (1 + 2 + 4 + 5));
		/* Upper-case hex is the same id. */
		assert_int_equal(linked_value(v, 0, "00F067AA0BA902B7", "", &n), 2 * (1 + 2 + 4 + 5));
		assert_int_equal(linked_value(v, 0, SPAN_B, TRACE_2, &n), 0);
		assert_int_equal(n, 0);
		/* By trace alone: sets 1, 2, 3 (not the trace-less one). */
		assert_int_equal(linked_value(v, 0, "", TRACE_1, &n), 2 * (1 + 2 + 3));
		/* Neither: nothing. */
		assert_int_equal(linked_value(v, 0, "", "", &n), 0);

		/* Hits are sorted by time; the view's range applies to the chunk time. */
		const store_span_hit_t *hits;
		err_t err = {0};
		assert_int_equal(
		    store_view_span_chunks(v, 0, slice_cstr(SPAN_B), slice_cstr(""), &hits, &n, &err), 0);
		assert_int_equal(n, 2);
		assert_true(hits[0].head.t_ns == DAY0 + 60 * NS_PER_SEC &&
		            hits[1].head.t_ns == DAY0 + 120 * NS_PER_SEC);
		store_view_close(v);
		v = view_day(f->s, DAY0 + 100 * NS_PER_SEC, DAY0 + NS_PER_DAY);
		assert_int_equal(linked_value(v, 0, SPAN_B, "", &n), 3);
		assert_int_equal(n, 1);
		store_view_close(v);
	}
}

static void test_text_ids_and_limits(void **state)
{
	store_fix *f = *state;
	char long_id[80], long_set[120];
	memset(long_id, 'a', 65);
	long_id[65] = 0;
	snprintf(long_set, sizeof long_set, "span_id=%s", long_id);
	char long_trace[120];
	snprintf(long_trace, sizeof long_trace, "span_id=req-7,trace_id=%s", long_id);
	const char *const sets[] = {"span_id=req-42", long_set,       long_trace,
	                            "span_id=abc",    "span_id=0x12", NULL};
	write_ok(f->s, span_batch(DAY0 + 60 * NS_PER_SEC, sets));
	char path[512];
	day_path(f, "2023-05-24", path, sizeof path);
	/* The 65-byte span id is not indexed; the 65-byte trace id is indexed as absent. */
	assert_int_equal(sql_int(path, "SELECT count(*) FROM spans"), 4);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM spans WHERE trace IS NULL"), 4);
	store_view_t *v = view_day(f->s, DAY0, DAY0 + NS_PER_DAY);
	uint32_t n;
	assert_int_equal(linked_value(v, 0, "req-42", "", &n), 1);
	assert_int_equal(linked_value(v, 0, "REQ-42", "", &n), 0); /* text matches exactly */
	assert_int_equal(linked_value(v, 0, long_id, "", &n), 0);
	assert_int_equal(linked_value(v, 0, "req-7", TRACE_1, &n), 3);
	assert_int_equal(linked_value(v, 0, "abc", "", &n), 4);
	assert_int_equal(linked_value(v, 0, "0x12", "", &n), 5);
	/* "0x12" as text never equals the bytes of some hex id. */
	assert_int_equal(linked_value(v, 0, "30783132", "", &n), 0);
	store_view_close(v);
}

/* A batch that fails leaves no span rows; ids of the rolled-back
 * transaction are not reused by the next span rows. */
static void test_rolled_back_with_the_chunk(void **state)
{
	store_fix *f = *state;
	static const char *const sets[] = {"span_id=" SPAN_A ",trace_id=" TRACE_1, NULL};
	write_ok(f->s, span_batch(DAY0 + 60 * NS_PER_SEC, sets));
	model_batch_t *bad = span_batch(DAY0 + 120 * NS_PER_SEC, sets);
	model_profile_t *p = test_profile(bad, "cpu", "nanoseconds", DAY0 + 180 * NS_PER_SEC, "pod-2");
	model_sample_add(bad, p, test_stack(bad, "main;x"), attrs(bad, "span_id=" SPAN_B), 7, 0);
	model_sample_add(bad, p, 12345, 0, 5, 0); /* no such node: the batch fails after its spans */
	model_profile_finish(bad, &bad->profiles[bad->n_profiles - 1]);
	err_t err = {0};
	assert_int_equal(store_write_sync(f->s, bad, &err), -1);
	char path[512];
	day_path(f, "2023-05-24", path, sizeof path);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM spans"), 1);
	write_ok(f->s, span_batch(DAY0 + 240 * NS_PER_SEC, sets));
	assert_int_equal(sql_int(path, "SELECT count(*) FROM spans"), 2);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM spans s JOIN chunks c ON c.local = s.chunk"), 2);
	store_view_t *v = view_day(f->s, DAY0, DAY0 + NS_PER_DAY);
	uint32_t n;
	assert_int_equal(linked_value(v, 0, SPAN_A, TRACE_1, &n), 2);
	assert_int_equal(linked_value(v, 0, SPAN_B, "", &n), 0);
	store_view_close(v);
}

/* A format-1 file written before the index: readers find no hits; the
 * writer adds the table when it opens the file, and indexes from then on. */
static void test_partition_without_index(void **state)
{
	store_fix *f = *state;
	static const char *const sets[] = {"span_id=" SPAN_A, NULL};
	write_ok(f->s, span_batch(DAY0 + 60 * NS_PER_SEC, sets));
	store_close(f->s);
	char path[512];
	day_path(f, "2023-05-24", path, sizeof path);
	sql_exec(path, "DROP TABLE spans");
	f->s = open_store(f->dir);
	store_view_t *v = view_day(f->s, DAY0, DAY0 + NS_PER_DAY);
	uint32_t n;
	assert_int_equal(linked_value(v, 0, SPAN_A, "", &n), 0);
	store_view_close(v);
	write_ok(f->s, span_batch(DAY0 + 120 * NS_PER_SEC, sets));
	v = view_day(f->s, DAY0, DAY0 + NS_PER_DAY);
	assert_int_equal(linked_value(v, 0, SPAN_A, "", &n), 1);
	assert_int_equal(n, 1);
	store_view_close(v);
}

/* Partitions open on first use: a view over 15 days costs nothing until
 * read, and a damaged day is skipped by the reads that touch it. */
static void test_view_opens_partitions_lazily(void **state)
{
	store_fix *f = *state;
	static const char *const sets[] = {"span_id=" SPAN_A, NULL};
	for (int d = 0; d < 15; d++)
		write_ok(f->s, span_batch(DAY0 + d * NS_PER_DAY + 60 * NS_PER_SEC, sets));
	char path[512];
	day_path(f, "2023-05-25", path, sizeof path);
	store_close(f->s);
	char wal[600];
	snprintf(wal, sizeof wal, "%s-wal", path);
	unlink(wal);
	FILE *fp = fopen(path, "r+b");
	fwrite("garbage garbage garbage garbage", 1, 31, fp);
	fclose(fp);
	f->s = open_store(f->dir);
	store_view_t *v = view_day(f->s, DAY0, DAY0 + 15 * NS_PER_DAY);
	assert_int_equal(store_view_partitions(v), 15);
	uint32_t n;
	assert_int_equal(linked_value(v, 0, SPAN_A, "", &n), 1);
	assert_int_equal(linked_value(v, 14, SPAN_A, "", &n), 1);
	const store_span_hit_t *hits;
	err_t err = {0};
	/* The damaged day reads as empty (skipped, reported once), the others still read. */
	assert_int_equal(store_view_span_chunks(v, 1, slice_cstr(SPAN_A), slice_cstr(""), &hits, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_int_equal(store_view_skipped(v, 1), 1);
	assert_int_equal(store_view_skipped(v, 2), 0);
	assert_int_equal(store_view_span_chunks(v, 1, slice_cstr(SPAN_A), slice_cstr(""), &hits, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_int_equal(linked_value(v, 2, SPAN_A, "", &n), 1);
	store_stats_t st;
	store_get_stats(f->s, &st);
	assert_int_equal(st.damaged, 1);
	store_view_close(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_lookup_by_span_and_trace, store_fix_setup,
	                                    store_fix_teardown),
	    cmocka_unit_test_setup_teardown(test_text_ids_and_limits, store_fix_setup, store_fix_teardown),
	    cmocka_unit_test_setup_teardown(test_rolled_back_with_the_chunk, store_fix_setup,
	                                    store_fix_teardown),
	    cmocka_unit_test_setup_teardown(test_partition_without_index, store_fix_setup,
	                                    store_fix_teardown),
	    cmocka_unit_test_setup_teardown(test_view_opens_partitions_lazily, store_fix_setup,
	                                    store_fix_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
