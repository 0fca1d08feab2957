/* Generates N similar-but-different pprof profiles from one real Go CPU
 * profile, for the query, storage and memory benchmarks.
 *
 *   gen_profiles --in go-cpu-fib.pb.gz --out DIR --count 8640 [--t0 UNIX_S]
 *                [--step 10] [--seed 1] [--variants 50] [--drop 30]
 *                [--span-every N --span-group G --span-out FILE.tsv]
 *
 * Profile i (written as DIR/p%05d.pb.gz, time t0 + step*i, duration step):
 * every sample of the source's cpu:nanoseconds profile is dropped with
 * probability drop%, its value is scaled by a random factor in [0.5, 1.5)
 * (kept a positive multiple of the period), and its stack varies: one third
 * keep it, one third get an extra leaf frame, one third have the leaf frame
 * renamed, the extra/renamed leaf being one of `variants` functions
 * (main.variantNN) chosen with a skewed distribution so that some are hot.
 * Each profile goes through pprof_encode (one sample type) and gz_deflate.
 *
 * With --span-every N (0, the default: none) every Nth profile (i % N == 0)
 * is linked to trace spans the way Go programs label samples for tracing:
 * pprof sample labels `trace_id` (32 hex digits, one trace per profile) and
 * `span_id` (16 hex digits), the j-th Sample as pprof_encode wrote them
 * belonging to span j / G (--span-group, 4 samples a span). The ids are a
 * hash of (seed, profile index, span number), not drawn from the random
 * stream, so the samples, values and stacks are those of the same profile
 * without labels, and totals do not change. --span-out writes one line per
 * span: "index trace_id span_id samples total" (tab-separated; total = the
 * sum of the values written with that span's labels: what a span lookup must
 * answer).
 *
 * Prints one line of JSON on stdout: {"files","total","gz_bytes","raw_bytes",
 * "rows", …, "spans","span_total"}: total is the sum of every value written
 * (what a merge of all the files must show as its total); spans the number
 * of spans written, span_total the sum of their values. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/hash.h"
#include "base/limits.h"
#include "base/timeutil.h"
#include "base/num.h"
#include "base/u64map.h"
#include "model/model.h"
#include "wire/compress.h"
#include "wire/pb.h"
#include "wire/pprof.h"

static uint64_t rng_state;
static uint64_t rng(void) /* splitmix64 */
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}
static double rng01(void)
{
	return (double)(rng() >> 11) / 9007199254740992.0;
}

static int read_file(const char *path, buf_t *out)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	uint8_t tmp[65536];
	size_t n;
	while ((n = fread(tmp, 1, sizeof tmp, f)) > 0)
		buf_append(out, tmp, n);
	fclose(f);
	return 0;
}

/* The call tree of one generated profile: a trie keyed by (parent, frame). */
typedef struct {
	uint32_t n, cap;
	uint32_t *parent, *frame;
	int64_t *self, *total;
	u64map_t ix;
} trie;

static void trie_reset(trie *t)
{
	t->n = 1; /* node 0: the root */
	t->parent[0] = 0;
	t->frame[0] = 0;
	t->self[0] = t->total[0] = 0;
	u64map_clear(&t->ix);
}

static uint32_t trie_child(trie *t, uint32_t parent, uint32_t frame)
{
	uint64_t key = hash_pair((uint64_t)parent + 1, (uint64_t)frame + 1);
	uint32_t v;
	if (u64map_get(&t->ix, key, &v))
		return v;
	if (t->n == t->cap) {
		size_t c = t->cap;
		t->parent = xgrow(t->parent, &c, t->n + 1, sizeof *t->parent);
		c = t->cap;
		t->frame = xgrow(t->frame, &c, t->n + 1, sizeof *t->frame);
		c = t->cap;
		t->self = xgrow(t->self, &c, t->n + 1, sizeof *t->self);
		c = t->cap;
		t->total = xgrow(t->total, &c, t->n + 1, sizeof *t->total);
		t->cap = (uint32_t)c;
	}
	v = t->n++;
	t->parent[v] = parent;
	t->frame[v] = frame;
	t->self[v] = t->total[v] = 0;
	u64map_put(&t->ix, key, v);
	return v;
}

static void usage(void)
{
	fprintf(stderr, "usage: gen_profiles --in FILE.pb[.gz] --out DIR --count N [--t0 UNIX_S] [--step S] "
	                "[--seed N] [--variants N] [--drop PERCENT] [--span-every N] [--span-group G] "
	                "[--span-out FILE]\n");
	exit(2);
}

/* The ids' hash of (seed, profile, span), apart from the random stream so
 * labels leave the samples as they were. */
static uint64_t id_hash(uint64_t seed, uint64_t profile, uint64_t span)
{
	return num_mix64(seed * 0x9e3779b97f4a7c15ULL ^ (profile + 1) * 0xbf58476d1ce4e5b9ULL ^
	                 (span + 1) * 0x94d049bb133111ebULL);
}

/* The value of one encoded Sample (one sample type: its single value). */
static int sample_value(slice_t msg, int64_t *v)
{
	pb_reader_t r = pb_reader_make(msg);
	*v = 0;
	while (!pb_done(&r)) {
		uint32_t field;
		int wt;
		if (pb_key(&r, &field, &wt) < 0)
			return -1;
		if (field == 2 && wt == PB_LEN) {
			slice_t packed;
			uint64_t x;
			if (pb_bytes(&r, &packed) < 0)
				return -1;
			pb_reader_t pr = pb_reader_make(packed);
			while (!pb_done(&pr)) {
				if (pb_packed_varint_next(&pr, &x) < 0)
					return -1;
				*v += (int64_t)x;
			}
		} else if (field == 2 && wt == PB_VARINT) {
			uint64_t x;
			if (pb_varint(&r, &x) < 0)
				return -1;
			*v += (int64_t)x;
		} else if (pb_skip(&r, wt) < 0)
			return -1;
	}
	return 0;
}

/* Copies the encoded profile in to out with span labels on its Samples
 * (see the head comment); appends one TSV line per span to tsv. Returns
 * the number of spans, or -1 when in is not what pprof_encode writes. */
static long add_span_labels(slice_t in, buf_t *out, long index, uint64_t seed, long group, FILE *tsv,
                            int64_t *labelled_total)
{
	/* Pass 1: how many strings and Samples. */
	uint64_t n_strings = 0, n_samples = 0;
	pb_reader_t r = pb_reader_make(in);
	while (!pb_done(&r)) {
		uint32_t field;
		int wt;
		if (pb_key(&r, &field, &wt) < 0 || pb_skip(&r, wt) < 0)
			return -1;
		n_strings += field == 6;
		n_samples += field == 2;
	}
	long n_spans = (long)((n_samples + (uint64_t)group - 1) / (uint64_t)group);
	/* New strings, after the existing ones: "span_id", "trace_id", the
	 * trace, then span k at n_strings + 3 + k. */
	uint64_t k_span = n_strings, k_trace = n_strings + 1, s_trace = n_strings + 2;
	char trace[33];
	snprintf(trace, sizeof trace, "%016" PRIx64 "%016" PRIx64, id_hash(seed, (uint64_t)index, UINT64_MAX),
	         id_hash(seed, (uint64_t)index, UINT64_MAX - 1));
	int64_t *span_total = xcalloc((size_t)n_spans + 1, sizeof *span_total);
	long *span_samples = xcalloc((size_t)n_spans + 1, sizeof *span_samples);

	/* Pass 2: every field copied, Samples with two labels more. */
	uint64_t j = 0;
	r = pb_reader_make(in);
	while (!pb_done(&r)) {
		const uint8_t *start = r.p;
		uint32_t field;
		int wt;
		if (pb_key(&r, &field, &wt) < 0)
			return -1;
		if (field != 2 || wt != PB_LEN) {
			if (pb_skip(&r, wt) < 0)
				return -1;
			buf_append(out, start, (size_t)(r.p - start));
			continue;
		}
		slice_t msg;
		int64_t v;
		if (pb_bytes(&r, &msg) < 0 || sample_value(msg, &v) < 0)
			return -1;
		long k = (long)(j++ / (uint64_t)group);
		span_total[k] += v;
		span_samples[k]++;
		size_t m = pb_begin(out, 2);
		buf_append(out, msg.p, msg.n);
		size_t l = pb_begin(out, 3);
		pb_put_uint(out, 1, k_span);
		pb_put_uint(out, 2, n_strings + 3 + (uint64_t)k);
		pb_end(out, l);
		l = pb_begin(out, 3);
		pb_put_uint(out, 1, k_trace);
		pb_put_uint(out, 2, s_trace);
		pb_end(out, l);
		pb_end(out, m);
	}
	pb_put_bytes(out, 6, slice_cstr("span_id"));
	pb_put_bytes(out, 6, slice_cstr("trace_id"));
	pb_put_bytes(out, 6, slice_cstr(trace));
	for (long k = 0; k < n_spans; k++) {
		char span[17];
		snprintf(span, sizeof span, "%016" PRIx64, id_hash(seed, (uint64_t)index, (uint64_t)k));
		pb_put_bytes(out, 6, slice_cstr(span));
		if (tsv)
			fprintf(tsv, "%ld\t%s\t%s\t%ld\t%" PRId64 "\n", index, trace, span, span_samples[k],
			        span_total[k]);
		*labelled_total += span_total[k];
	}
	free(span_total);
	free(span_samples);
	return n_spans;
}

int main(int argc, char **argv)
{
	const char *in = NULL, *outdir = NULL;
	long count = 0, step = 10, variants = 50, drop = 30, span_every = 0, span_group = 4;
	const char *span_out = NULL;
	uint64_t seed = 1;
	int64_t t0 = time_now_ns() / NS_PER_SEC - 86400;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (i + 1 >= argc)
			usage();
		const char *v = argv[++i];
		if (!strcmp(a, "--in"))
			in = v;
		else if (!strcmp(a, "--out"))
			outdir = v;
		else if (!strcmp(a, "--count"))
			count = atol(v);
		else if (!strcmp(a, "--t0"))
			t0 = atoll(v);
		else if (!strcmp(a, "--step"))
			step = atol(v);
		else if (!strcmp(a, "--seed"))
			seed = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--variants"))
			variants = atol(v);
		else if (!strcmp(a, "--drop"))
			drop = atol(v);
		else if (!strcmp(a, "--span-every"))
			span_every = atol(v);
		else if (!strcmp(a, "--span-group"))
			span_group = atol(v);
		else if (!strcmp(a, "--span-out"))
			span_out = v;
		else
			usage();
	}
	if (!in || !outdir || count <= 0 || variants <= 0 || variants > 1000 || drop < 0 || drop > 95 ||
	    span_every < 0 || span_group <= 0)
		usage();
	FILE *tsv = NULL;
	if (span_out && !(tsv = fopen(span_out, "w"))) {
		perror(span_out);
		return 1;
	}
	if (mkdir(outdir, 0755) < 0 && errno != EEXIST) {
		perror(outdir);
		return 1;
	}

	buf_t raw, data;
	buf_init(&raw, LIMIT_BODY_BYTES);
	buf_init(&data, LIMIT_DECODED_BYTES);
	if (read_file(in, &raw) < 0) {
		perror(in);
		return 1;
	}
	err_t err = {0};
	slice_t body = buf_slice(&raw);
	if (gz_is_gzip(body)) {
		if (gz_inflate(body, &data, &err) < 0) {
			fprintf(stderr, "%s: %s\n", in, err.msg);
			return 1;
		}
		body = buf_slice(&data);
	}
	model_batch_t *b = model_batch_new(slice_cstr("bench"));
	pprof_decode_opts_t opts = {
	    .service = slice_cstr("gen"), .now_ns = time_now_ns(), .max_rows = LIMIT_SAMPLE_ROWS};
	if (pprof_decode(body, &opts, b, &err) < 0) {
		fprintf(stderr, "%s: %s\n", in, err.msg);
		return 1;
	}
	/* The cpu:nanoseconds profile, else the last one. */
	model_profile_t *src = &b->profiles[b->n_profiles - 1];
	for (uint32_t p = 0; p < b->n_profiles; p++)
		if (slice_eq_cstr(b->profiles[p].sample_type, "cpu"))
			src = &b->profiles[p];

	/* Frames: the source's, then the variants (same binary as the source's first frame). */
	uint32_t n_frames = b->n_frames + (uint32_t)variants;
	model_frame_t *frames = xcalloc(n_frames, sizeof *frames);
	memcpy(frames, b->frames, b->n_frames * sizeof *frames);
	for (long k = 0; k < variants; k++) {
		model_frame_t *f = &frames[b->n_frames + k];
		char name[64];
		snprintf(name, sizeof name, "main.variant%02ld", k);
		f->name = slice_cstr(xstrdup(name));
		f->file = slice_cstr("/src/bench/variants.go");
		f->binary = b->n_frames ? b->frames[0].binary : slice_cstr("");
		f->build_id = b->n_frames ? b->frames[0].build_id : slice_cstr("");
		f->kind = slice_cstr("go");
	}

	/* Source stacks as root-first frame paths. */
	uint32_t n_src = src->samples_count;
	uint32_t **paths = xcalloc(n_src ? n_src : 1, sizeof *paths);
	uint32_t *depth = xcalloc(n_src ? n_src : 1, sizeof *depth);
	int64_t *values = xcalloc(n_src ? n_src : 1, sizeof *values);
	for (uint32_t s = 0; s < n_src; s++) {
		const model_sample_t *sm = &b->samples[src->samples_first + s];
		uint32_t d = 0;
		for (uint32_t n = sm->node; n != MODEL_NONE; n = b->nodes[n].parent)
			d++;
		paths[s] = xmalloc((d + 1) * sizeof **paths);
		depth[s] = d;
		uint32_t k = d;
		for (uint32_t n = sm->node; n != MODEL_NONE; n = b->nodes[n].parent)
			paths[s][--k] = b->nodes[n].frame;
		values[s] = sm->value;
	}
	int64_t period = src->period > 0 ? src->period : 1;

	trie t = {0};
	t.cap = 1024;
	t.parent = xmalloc(t.cap * sizeof *t.parent);
	t.frame = xmalloc(t.cap * sizeof *t.frame);
	t.self = xmalloc(t.cap * sizeof *t.self);
	t.total = xmalloc(t.cap * sizeof *t.total);
	u64map_init(&t.ix);

	buf_t pb, gz, labelled;
	buf_init(&pb, SIZE_MAX);
	buf_init(&gz, SIZE_MAX);
	buf_init(&labelled, SIZE_MAX);
	int64_t grand_total = 0, span_total = 0;
	long n_spans = 0;
	uint64_t gz_bytes = 0, raw_bytes = 0, rows = 0;
	char path[4096];
	for (long i = 0; i < count; i++) {
		rng_state = seed * 0x100000001b3ULL + (uint64_t)i * 0x9e3779b97f4a7c15ULL;
		trie_reset(&t);
		for (uint32_t s = 0; s < n_src; s++) {
			if ((long)(rng() % 100) < drop)
				continue;
			int64_t ticks = (int64_t)((double)(values[s] / period) * (0.5 + rng01()) + 0.5);
			if (ticks <= 0)
				ticks = 1;
			int64_t v = ticks * period;
			uint32_t mode = (uint32_t)(rng() % 3);
			/* Skewed: variant = floor(variants * u^2) makes low numbers hot. */
			double u = rng01();
			uint32_t var = b->n_frames + (uint32_t)((double)variants * u * u);
			uint32_t node = 0;
			uint32_t d = depth[s];
			for (uint32_t k = 0; k < d; k++) {
				uint32_t fr = paths[s][k];
				if (k == d - 1 && mode == 2)
					fr = var; /* renamed leaf */
				node = trie_child(&t, node, fr);
			}
			if (mode == 1)
				node = trie_child(&t, node, var); /* extra leaf */
			if (t.self[node] == 0)
				rows++;
			t.self[node] += v;
			grand_total += v;
		}
		for (uint32_t n = t.n; n-- > 1;) {
			t.total[n] += t.self[n];
			t.total[t.parent[n]] += t.total[n];
		}
		model_tree_t tree = {
		    .n_nodes = t.n,
		    .parent = t.parent,
		    .frame = t.frame,
		    .self = t.self,
		    .total = t.total,
		    .frames = frames,
		    .n_frames = n_frames,
		    .sample_type = src->sample_type,
		    .sample_unit = src->sample_unit,
		    .period_type = src->period_type,
		    .period_unit = src->period_unit,
		    .period = src->period,
		    .time_ns = (t0 + step * i) * NS_PER_SEC,
		    .duration_ns = step * NS_PER_SEC,
		};
		buf_reset(&pb);
		buf_reset(&gz);
		if (pprof_encode(&tree, &pb, &err) < 0) {
			fprintf(stderr, "profile %ld: %s\n", i, err.msg);
			return 1;
		}
		buf_t *enc = &pb;
		if (span_every > 0 && i % span_every == 0) {
			buf_reset(&labelled);
			long n =
			    add_span_labels(buf_slice(&pb), &labelled, i, seed, span_group, tsv, &span_total);
			if (n < 0) {
				fprintf(stderr, "profile %ld: cannot read back the encoded profile\n", i);
				return 1;
			}
			n_spans += n;
			enc = &labelled;
		}
		if (gz_deflate(buf_slice(enc), 6, &gz) < 0) {
			fprintf(stderr, "profile %ld: gzip failed\n", i);
			return 1;
		}
		raw_bytes += enc->n;
		gz_bytes += gz.n;
		snprintf(path, sizeof path, "%s/p%05ld.pb.gz", outdir, i);
		FILE *f = fopen(path, "wb");
		if (!f || fwrite(gz.p, 1, gz.n, f) != gz.n || fclose(f) != 0) {
			perror(path);
			return 1;
		}
	}
	printf("{\"files\":%ld,\"total\":%" PRId64 ",\"gz_bytes\":%" PRIu64 ",\"raw_bytes\":%" PRIu64
	       ",\"rows\":%" PRIu64 ",\"t0\":%" PRId64 ",\"step\":%ld,\"type\":\"%.*s:%.*s\""
	       ",\"span_every\":%ld,\"span_group\":%ld,\"spans\":%ld,\"span_total\":%" PRId64 "}\n",
	       count, grand_total, gz_bytes, raw_bytes, rows, t0, step, (int)src->sample_type.n,
	       (const char *)src->sample_type.p, (int)src->sample_unit.n, (const char *)src->sample_unit.p,
	       span_every, span_group, n_spans, span_total);
	if (tsv && fclose(tsv) != 0) {
		perror(span_out);
		return 1;
	}
	return 0;
}
