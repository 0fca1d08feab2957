/* Tests of src/query/merge.c: the merged call tree (window sums, snapshot
 * averages, cpu_alias scaling, label filters, partitions, pruning) and the
 * pprof export of it. */
#include "fixture.h"

#include "wire/compress.h"
#include "wire/pprof.h"

typedef struct {
	arena_t *a;
	model_tree_t t;
} merged;

static void merge_or_fail(qfix *f, const query_params_t *q, merged *m)
{
	m->a = arena_new();
	err_t err = {0};
	if (query_merge(f->s, q, m->a, &m->t, &err) < 0)
		fail_msg("query_merge: %d %s", err.status, err.msg);
	/* The tree's shape: node 0 is the root, parents come first. */
	for (uint32_t i = 1; i < m->t.n_nodes; i++) {
		assert_true(m->t.parent[i] < i);
		assert_true(m->t.frame[i] < m->t.n_frames);
		assert_true(m->t.total[i] != 0);
	}
}

/* Node at the root-first path "main;f" (NULL when absent); "" is the root. */
static int64_t node_at(const model_tree_t *t, const char *path, int64_t *self)
{
	char *copy = strdup(path), *p = copy;
	uint32_t cur = 0;
	while (*p) {
		char *name = p, *semi = strchr(p, ';');
		if (semi) {
			*semi = 0;
			p = semi + 1;
		} else {
			p = p + strlen(p);
		}
		uint32_t found = 0;
		for (uint32_t i = cur + 1; i < t->n_nodes && !found; i++)
			if (t->parent[i] == cur && slice_eq_cstr(t->frames[t->frame[i]].name, name))
				found = i;
		if (!found) {
			free(copy);
			*self = -1;
			return -1;
		}
		cur = found;
	}
	free(copy);
	*self = t->self[cur];
	return t->total[cur];
}

static void expect_node(const model_tree_t *t, const char *path, int64_t total, int64_t self)
{
	int64_t s, tot = node_at(t, path, &s);
	if (tot != total || s != self)
		fail_msg("%s: total %lld self %lld, want %lld %lld", path, (long long)tot, (long long)s,
		         (long long)total, (long long)self);
}

/* Merges (service, type, [from_s, until_s)) and expects one node. */
static void expect_merged(qfix *f, const char *service, const char *type, int64_t from_s, int64_t until_s,
                          const char *path, int64_t total, int64_t self)
{
	query_params_t q = qfix_params(service, type, from_s, until_s);
	merged m;
	merge_or_fail(f, &q, &m);
	expect_node(&m.t, path, total, self);
	arena_free(m.a);
}

static void test_snapshots_average_per_series_then_sum(void **state)
{
	qfix *f = *state;
	qfix_put(f, "mem", "inuse_space:bytes", "pod=a", T0, "main;alloc 100\nmain 10");
	qfix_put(f, "mem", "inuse_space:bytes", "pod=a", T0 + 60, "main;alloc 300");
	qfix_put(f, "mem", "inuse_space:bytes", "pod=b", T0 + 30, "main;alloc 51");
	query_params_t q = qfix_params("mem", "inuse_space:bytes", T0 - 60, T0 + 120);
	merged m;
	merge_or_fail(f, &q, &m);
	/* pod=a: (100 + 300) / 2 and 10 / 2; pod=b: 51. */
	expect_node(&m.t, "", 256, 0);
	expect_node(&m.t, "main", 256, 5);
	expect_node(&m.t, "main;alloc", 251, 251);
	assert_true(slice_eq_cstr(m.t.sample_type, "inuse_space") && slice_eq_cstr(m.t.sample_unit, "bytes"));
	arena_free(m.a);
}

static void test_same_snapshot_twice_is_averaged(void **state)
{
	qfix *f = *state;
	qfix_put(f, "mem", "inuse_space:bytes", NULL, T0, "main;alloc 100");
	qfix_put(f, "mem", "inuse_space:bytes", NULL, T0, "main;alloc 100");
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0, "main;work 7");
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0, "main;work 7");
	expect_merged(f, "mem", "inuse_space:bytes", T0, T0 + 60, "main;alloc", 100, 100);
	expect_merged(f, "api", "cpu:nanoseconds", T0, T0 + 60, "main;work", 14, 14);
}

static void test_snapshot_averages_round_and_zero_nodes_are_pruned(void **state)
{
	qfix *f = *state;
	qfix_put(f, "mem", "inuse_space:bytes", NULL, T0, "main;half 1\nmain;tiny 1\nmain 30");
	qfix_put(f, "mem", "inuse_space:bytes", NULL, T0 + 10, "main;half 2\nmain 30");
	qfix_put(f, "mem", "inuse_space:bytes", NULL, T0 + 20, "main 30");
	query_params_t q = qfix_params("mem", "inuse_space:bytes", T0, T0 + 60);
	merged m;
	merge_or_fail(f, &q, &m);
	/* half: 3 / 3 = 1; tiny: 1 / 3 rounds to 0 and is dropped. */
	expect_node(&m.t, "main;half", 1, 1);
	expect_node(&m.t, "main;tiny", -1, -1);
	expect_node(&m.t, "main", 31, 30);
	assert_int_equal(m.t.n_nodes, 3);
	arena_free(m.a);
}

static void test_windows_sum_over_profiles_and_series(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "cpu:nanoseconds", "pod=a", T0, "main;f 10");
	qfix_put(f, "api", "cpu:nanoseconds", "pod=a", T0 + 10, "main;f 20");
	qfix_put(f, "api", "cpu:nanoseconds", "pod=b", T0 + 20, "main;f 30\nmain 1");
	qfix_put(f, "api", "cpu:nanoseconds", "pod=b", T0 + 500, "main;f 1000");
	query_params_t q = qfix_params("api", "cpu:nanoseconds", T0, T0 + 60);
	merged m;
	merge_or_fail(f, &q, &m);
	expect_node(&m.t, "main", 61, 1);
	expect_node(&m.t, "main;f", 60, 60);
	assert_true(slice_eq_cstr(m.t.period_type, "cpu"));
	assert_int_equal(m.t.time_ns, T0 * NS_PER_SEC);
	assert_int_equal(m.t.duration_ns, 60 * NS_PER_SEC);
	arena_free(m.a);
}

static void test_cpu_alias_scales_by_period(void **state)
{
	qfix *f = *state;
	qfix_write(f, &(qprof){"ebpf", "samples:count", NULL, T0, 50000000, 1}, "main;spin 3\nmain 1");
	qfix_put(f, "ebpf", "cpu:nanoseconds", "pod=x", T0, "main;spin 7");
	qfix_write(f, &(qprof){"plain", "samples:count", NULL, T0, 50000000, 0}, "main 9");
	query_params_t q = qfix_params("ebpf", "cpu:nanoseconds", T0, T0 + 60);
	merged m;
	merge_or_fail(f, &q, &m);
	expect_node(&m.t, "main;spin", 150000007, 150000007);
	expect_node(&m.t, "main", 200000007, 50000000);
	arena_free(m.a);

	expect_merged(f, "ebpf", "samples:count", T0, T0 + 60, "main", 4, 1);

	q = qfix_params("plain", "cpu:nanoseconds", T0, T0 + 60);
	merge_or_fail(f, &q, &m);
	assert_int_equal(m.t.n_nodes, 1);
	assert_int_equal(m.t.total[0], 0);
	arena_free(m.a);
}

static int64_t total_with(qfix *f, const char *labels)
{
	query_params_t q = qfix_params("api", "cpu:nanoseconds", T0, T0 + 60);
	model_label_t l[8];
	char *copy = strdup(labels);
	q.labels = l;
	q.n_labels = qfix_labels(copy, l, 8);
	merged m;
	merge_or_fail(f, &q, &m);
	int64_t total = m.t.total[0];
	arena_free(m.a);
	free(copy);
	return total;
}

static void test_label_filters_on_series_and_attributes(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "cpu:nanoseconds", "namespace=prod,pod=a", T0,
	         "main 1 thread=1\nmain;f 2 thread=2\nmain;g 4 thread=1,span_id=s1");
	qfix_put(f, "api", "cpu:nanoseconds", "namespace=prod,pod=b", T0, "main 8\nmain;f 16 thread=1");
	/* No pod series label here: pod= applies to the sample attributes. */
	qfix_put(f, "api", "cpu:nanoseconds", "namespace=dev", T0, "main 32 pod=a\nmain 64 pod=c");
	assert_int_equal(total_with(f, ""), 127);
	assert_int_equal(total_with(f, "pod=a"), 1 + 2 + 4 + 32);
	assert_int_equal(total_with(f, "pod=b"), 24);
	assert_int_equal(total_with(f, "namespace=prod"), 31);
	assert_int_equal(total_with(f, "pod=zzz"), 0);
	assert_int_equal(total_with(f, "thread=1"), 1 + 4 + 16);
	assert_int_equal(total_with(f, "thread=1,pod=a"), 5);
	assert_int_equal(total_with(f, "thread=1,span_id=s1"), 4);
	assert_int_equal(total_with(f, "thread=1,thread=2"), 0);
	assert_int_equal(total_with(f, "namespace=dev,pod=c"), 64);
}

static void test_two_partitions_merge(void **state)
{
	qfix *f = *state;
	int64_t day2 = T0 + 7200; /* the next UTC day */
	assert_int_equal(time_day(day2 * NS_PER_SEC), time_day(T0 * NS_PER_SEC) + 1);
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0, "main;f 5\nmain;g 1");
	qfix_put(f, "api", "cpu:nanoseconds", NULL, day2, "main;f 7\nmain;h 2");
	qfix_put(f, "mem", "inuse_space:bytes", NULL, T0, "main 10");
	qfix_put(f, "mem", "inuse_space:bytes", NULL, day2, "main 30");
	query_params_t q = qfix_params("api", "cpu:nanoseconds", T0, day2 + 60);
	merged m;
	merge_or_fail(f, &q, &m);
	expect_node(&m.t, "main", 15, 0);
	expect_node(&m.t, "main;f", 12, 12);
	expect_node(&m.t, "main;g", 1, 1);
	expect_node(&m.t, "main;h", 2, 2);
	assert_int_equal(m.t.n_nodes, 5);
	arena_free(m.a);

	/* One snapshot series over two days: averaged over both. */
	expect_merged(f, "mem", "inuse_space:bytes", T0, day2 + 60, "main", 20, 20);

	expect_merged(f, "api", "cpu:nanoseconds", T0, T0 + 60, "main", 6, 0);
}

static void test_frames_outlive_the_view(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0, "main@main.go;f#go 5");
	query_params_t q = qfix_params("api", "cpu:nanoseconds", T0, T0 + 60);
	merged m;
	merge_or_fail(f, &q, &m);
	assert_int_equal(m.t.n_frames, 2);
	const model_frame_t *fr = &m.t.frames[m.t.frame[2]];
	assert_true(slice_eq_cstr(fr->name, "f") && slice_eq_cstr(fr->kind, "go"));
	assert_true(slice_eq_cstr(m.t.frames[m.t.frame[1]].file, "main.go"));
	arena_free(m.a);
}

/* query_pprof of q (gzip), decoded again into a batch of one profile. */
static model_batch_t *export_decoded(qfix *f, const query_params_t *q)
{
	buf_t gz, raw;
	buf_init(&gz, SIZE_MAX);
	buf_init(&raw, 1 << 20);
	err_t err = {0};
	if (query_pprof(f->s, q, &gz, &err) < 0)
		fail_msg("query_pprof: %s", err.msg);
	assert_true(gz_is_gzip(buf_slice(&gz)));
	assert_int_equal(gz_inflate(buf_slice(&gz), &raw, &err), 0);
	model_batch_t *b = model_batch_new(slice_cstr("p"));
	pprof_decode_opts_t o = {.service = q->service, .now_ns = T0 * NS_PER_SEC, .max_rows = 1000};
	if (pprof_decode(buf_slice(&raw), &o, b, &err) < 0)
		fail_msg("pprof_decode: %s", err.msg);
	assert_int_equal(b->n_profiles, 1);
	buf_free(&gz);
	buf_free(&raw);
	return b;
}

static void test_pprof_round_trip(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0, "main;f 5\nmain;g 7\nmain 1");
	query_params_t q = qfix_params("api", "cpu:nanoseconds", T0, T0 + 60);
	model_batch_t *b = export_decoded(f, &q);
	int64_t sum = 0;
	for (uint32_t i = 0; i < b->n_samples; i++)
		sum += b->samples[i].value;
	assert_int_equal(sum, 13);
	assert_true(slice_eq_cstr(b->profiles[0].sample_type, "cpu"));
	model_batch_free(b);
}

/* A sample with an empty stack (a line with no frames: " 3") is the root's
 * own value, counted in every total as go tool pprof counts it: window sums,
 * snapshot averages, attribute filters, a partition holding nothing else. */
static void test_empty_stacks_are_the_roots_self(void **state)
{
	qfix *f = *state;
	int64_t day2 = T0 + 7200; /* the next UTC day */
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0, "main;f 5\n 3\n 4 thread=1");
	qfix_put(f, "api", "cpu:nanoseconds", NULL, day2, " 2");
	qfix_put(f, "go", "goroutine:count", NULL, T0, "main;park 3\n 1");
	qfix_put(f, "go", "goroutine:count", NULL, T0 + 10, "main;park 5\n 3");
	query_params_t q = qfix_params("api", "cpu:nanoseconds", T0, T0 + 60);
	merged m;
	merge_or_fail(f, &q, &m);
	expect_node(&m.t, "", 12, 7);
	expect_node(&m.t, "main", 5, 0);
	assert_int_equal(m.t.n_nodes, 3);
	arena_free(m.a);
	/* Only empty stacks in the second day's partition. */
	expect_merged(f, "api", "cpu:nanoseconds", T0, day2 + 60, "", 14, 9);
	expect_merged(f, "api", "cpu:nanoseconds", day2, day2 + 60, "", 2, 2);
	/* Snapshots: (3 + 5) / 2 under main;park, (1 + 3) / 2 at the root. */
	expect_merged(f, "go", "goroutine:count", T0, T0 + 60, "", 6, 2);
	expect_merged(f, "go", "goroutine:count", T0, T0 + 60, "main;park", 4, 4);
	/* A sample attribute filter keeps the empty stack that carries it. */
	model_label_t l = {slice_cstr("thread"), slice_cstr("1")};
	q.labels = &l;
	q.n_labels = 1;
	merge_or_fail(f, &q, &m);
	expect_node(&m.t, "", 4, 4);
	assert_int_equal(m.t.n_nodes, 1);
	arena_free(m.a);
}

/* The pprof export writes the root's self as a Sample with no location, so
 * a reader (go tool pprof; here our decoder) gets the same total. */
static void test_pprof_export_of_empty_stacks(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0, "main;f 5\n 3");
	query_params_t q = qfix_params("api", "cpu:nanoseconds", T0, T0 + 60);
	model_batch_t *b = export_decoded(f, &q);
	assert_int_equal(b->n_samples, 2);
	int64_t root = 0, sum = 0;
	for (uint32_t i = 0; i < b->n_samples; i++) {
		sum += b->samples[i].value;
		if (b->samples[i].node == MODEL_NONE)
			root += b->samples[i].value;
	}
	assert_int_equal(sum, 8);
	assert_int_equal(root, 3);
	model_batch_free(b);
}

static void test_empty_filter_key_is_400(void **state)
{
	qfix *f = *state;
	query_params_t q = qfix_params("api", "cpu:nanoseconds", T0, T0 + 60);
	model_label_t l = {slice_cstr(""), slice_cstr("x")};
	q.labels = &l;
	q.n_labels = 1;
	merged m;
	m.a = arena_new();
	err_t err = {0};
	assert_int_equal(query_merge(f->s, &q, m.a, &m.t, &err), -1);
	assert_int_equal(err.status, 400);
	arena_free(m.a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_snapshots_average_per_series_then_sum, qfix_setup,
	                                    qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_same_snapshot_twice_is_averaged, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_snapshot_averages_round_and_zero_nodes_are_pruned,
	                                    qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_windows_sum_over_profiles_and_series, qfix_setup,
	                                    qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_cpu_alias_scales_by_period, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_label_filters_on_series_and_attributes, qfix_setup,
	                                    qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_two_partitions_merge, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_frames_outlive_the_view, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_pprof_round_trip, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_empty_stacks_are_the_roots_self, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_pprof_export_of_empty_stacks, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_empty_filter_key_is_400, qfix_setup, qfix_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
