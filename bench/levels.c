/* The CPU cost of Pyroscope's flame graph encoding (query/levels.c) on a
 * merged tree, single-threaded and without the store: what a
 * SelectMergeStacktraces or /pyroscope/render answer adds to the merge
 * (issue 17's target: max_nodes=16384 on a 50,000-node tree ≤ 20 ms extra).
 *
 *   levels [NODES] [REPS]     (defaults 50000 and 30)
 * The tree is synthetic and deterministic: NODES nodes, most under one of
 * the 64 nodes made just before them, one in 8 under any earlier node
 * (printed: its depth in "levels"), names from a pool of NODES/2 functions,
 * self values skewed (6 in 10 nodes have none). Times, per run, the min and median over REPS
 * of: levels without a cut, levels with max_nodes=16384, and the flamebearer
 * JSON of the cut graph. Prints one line of JSON:
 * {"nodes","shown","kept","levels","reps","uncut_ms","cut_ms","json_ms",
 *  "json_bytes","cut_plus_json_ms","minor_faults_per_rep"} (min over the
 * reps; *_median_ms too). Each rep's memory is fresh (freed memory goes back
 * to the kernel); glibc's MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_
 * set high keep it and show the cost without page faults. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/limits.h"
#include "base/timeutil.h"
#include "model/model.h"
#include "query/levels.h"

static long minor_faults(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* min and median of v[0..n) (sorts v), in ms. */
static void stats(int64_t *v, int n, double *min_ms, double *med_ms)
{
	qsort(v, (size_t)n, sizeof *v, cmp_i64);
	*min_ms = (double)v[0] / 1e6;
	*med_ms = (double)v[n / 2] / 1e6;
}

static model_tree_t make_tree(arena_t *a, uint32_t n)
{
	model_tree_t t = {.n_nodes = n, .n_frames = n / 2 + 1};
	t.parent = arena_calloc(a, n * sizeof *t.parent);
	t.frame = arena_calloc(a, n * sizeof *t.frame);
	t.self = arena_calloc(a, n * sizeof *t.self);
	t.total = arena_calloc(a, n * sizeof *t.total);
	t.frames = arena_calloc(a, t.n_frames * sizeof *t.frames);
	for (uint32_t f = 0; f < t.n_frames; f++) {
		char name[64];
		int len =
		    snprintf(name, sizeof name, "github.com/acme/service/pkg%u.(*Handler).Func%u", f % 97, f);
		t.frames[f].name = arena_slice(a, slice_make((const uint8_t *)name, (size_t)len));
	}
	uint64_t r = 0x9e3779b97f4a7c15ULL;
	for (uint32_t i = 1; i < n; i++) {
		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		/* Mostly under a node made just before (deep stacks), sometimes
		 * under any earlier one (new branches near the root). */
		uint32_t back = (uint32_t)(r % 64) + 1;
		t.parent[i] = (r >> 6) % 8 == 0 ? (uint32_t)((r >> 10) % i) : i > back ? i - back : 0;
		t.frame[i] = (uint32_t)((r >> 8) % t.n_frames);
		uint64_t v = (r >> 24) % 1000;
		t.self[i] = (r >> 40) % 10 < 6 ? 0 : (int64_t)(v * v / 10 + 1) * 10000000;
		t.total[i] = t.self[i];
	}
	for (uint32_t i = n; i-- > 1;)
		t.total[t.parent[i]] += t.total[i];
	return t;
}

int main(int argc, char **argv)
{
	uint32_t n = argc > 1 ? (uint32_t)atol(argv[1]) : 50000;
	int reps = argc > 2 ? atoi(argv[2]) : 30;
	if (n < 2 || reps < 1) {
		fprintf(stderr, "usage: levels [NODES ≥ 2] [REPS ≥ 1]\n");
		return 2;
	}
	arena_t *ta = arena_new();
	model_tree_t t = make_tree(ta, n);
	int64_t *uncut = malloc((size_t)reps * sizeof *uncut), *cut = malloc((size_t)reps * sizeof *cut),
	        *json = malloc((size_t)reps * sizeof *json);
	uint32_t shown = 0, kept = 0, levels = 0;
	size_t bytes = 0;
	long faults = minor_faults();
	for (int k = 0; k < reps; k++) {
		arena_t *a = arena_new();
		query_levels_t l;
		int64_t t0 = time_mono_ns();
		query_levels_single(&t, 0, a, &l);
		int64_t t1 = time_mono_ns();
		shown = l.n_nodes;
		arena_free(a);
		a = arena_new();
		int64_t t2 = time_mono_ns();
		query_levels_single(&t, LIMIT_FLAME_NODES, a, &l);
		int64_t t3 = time_mono_ns();
		buf_t b;
		buf_init(&b, SIZE_MAX);
		if (query_flamebearer_head(&b, &l, slice_cstr("cpu"), slice_cstr("nanoseconds")) < 0 ||
		    query_flamebearer_tail(&b, &l) < 0)
			return 1;
		int64_t t4 = time_mono_ns();
		kept = l.n_nodes;
		levels = l.n_levels;
		bytes = b.n;
		buf_free(&b);
		arena_free(a);
		uncut[k] = t1 - t0;
		cut[k] = t3 - t2;
		json[k] = t4 - t3;
	}
	faults = minor_faults() - faults;
	int64_t *sum = malloc((size_t)reps * sizeof *sum);
	for (int k = 0; k < reps; k++)
		sum[k] = cut[k] + json[k];
	double u, um, c, cm, j, jm, s, sm;
	stats(uncut, reps, &u, &um);
	stats(cut, reps, &c, &cm);
	stats(json, reps, &j, &jm);
	stats(sum, reps, &s, &sm);
	printf("{\"nodes\":%u,\"shown\":%u,\"kept\":%u,\"levels\":%u,\"reps\":%d,\"uncut_ms\":%.2f,\"uncut_"
	       "median_ms\":%.2f,"
	       "\"cut_ms\":%.2f,\"cut_median_ms\":%.2f,\"json_ms\":%.2f,\"json_median_ms\":%.2f,\"json_"
	       "bytes\":%zu,"
	       "\"cut_plus_json_ms\":%.2f,\"cut_plus_json_median_ms\":%.2f,\"minor_faults_per_rep\":%ld}\n",
	       n, shown, kept, levels, reps, u, um, c, cm, j, jm, bytes, s, sm, faults / reps);
	free(uncut);
	free(cut);
	free(json);
	free(sum);
	arena_free(ta);
	return 0;
}
