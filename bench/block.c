/* Bytes and speed of the format-2 block codec (store/local_block.c) against
 * today's per-chunk payloads (local_payload_raw + local_payload_pack), on
 * the chunks a partition would hold: node and attribute-set ids made dense
 * over all the input in order of appearance, a node's ancestors before it
 * (as a partition assigns local ids), entries merged by store_entries_merge, one series per profile type.
 *
 *   block [--seconds S] FILE...           the files in order are the series'
 *                                         chunks (e.g. gen_profiles' output)
 *   block [--seconds S] --heap N FILE     a heap stream: FILE's profiles N
 *          [--keep P]                     times; each inuse_* sample keeps its
 *                                         previous value with probability P %
 *                                         (default 90),
 *                                         else it and every alloc_* sample get
 *                                         the source's value × 1..15 / 8
 *   block --seeds DIR [--heap N] FILE...  writes a block of the first 4 chunks
 *                                         of each series as a seed of the
 *                                         local_block fuzz target
 *
 * Prints JSON lines: {"chunks","entries","today_b"} (B/chunk of today's
 * stored payloads, no payload shared); per block size 16, 64, 256, 360
 * {"block","head_b","data_b","total_b"} (B/chunk; the last block of a
 * series may be shorter); per series {"series","entries"} (a chunk, mean) and
 * at 360 {"block","data_b"};
 * {"what","ns_chunk","mb_s"} for today's pack and decode and for blocks of
 * 360 encoded and decoded (MB/s of decoded entries, 24 B each, 1 MB = 1e6
 * B). Values as differences from the previous chunk's (STORE: §4, option 2)
 * were measured with this program (commit 659ddd1) and not kept. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "base/num.h"
#include "base/timeutil.h"
#include "base/u64map.h"
#include "bench_file.h"
#include "model/model.h"
#include "store/local.h"
#include "store/local_block.h"
#include "wire/compress.h"
#include "wire/pprof.h"

#define MAX_SERIES 16
#define NS INT64_C(1000000000)

typedef struct {
	local_block_in_t *c;
	uint32_t n;
	size_t cap;
	char type[64]; /* sample type:unit */
} series_t;

typedef struct {
	series_t s[MAX_SERIES];
	uint32_t n_series;
	u64map_t nodes, sets; /* global id -> dense local id */
	uint32_t max_node, max_attrset;
	uint64_t entries, chunks;
	int64_t *prev; /* --heap: each sample's value in the last chunk */
	size_t cap_prev;
} input_t;

static uint64_t rng_state = 1;
static uint64_t keep_pct = 90; /* --keep: % of inuse_* samples unchanged from one heap chunk to the next */
static uint64_t rng(void)
{
	return num_mix64(rng_state += 0x9e3779b97f4a7c15ULL);
}

static model_batch_t *decode_pprof(const char *path)
{
	buf_t file, plain;
	if (bench_read_file(path, &file) < 0)
		return NULL;
	buf_init(&plain, LIMIT_DECODED_BYTES);
	err_t err = {0};
	model_batch_t *b = model_batch_new(slice_cstr("bench"));
	slice_t in = buf_slice(&file);
	pprof_decode_opts_t o = {
	    .service = slice_cstr("bench"), .now_ns = time_now_ns(), .max_rows = LIMIT_SAMPLE_ROWS};
	int gz = gz_is_gzip(in);
	if ((gz && gz_inflate(in, &plain, &err) < 0) ||
	    pprof_decode(gz ? buf_slice(&plain) : in, &o, b, &err) < 0) {
		fprintf(stderr, "%s: %s\n", path, err.msg);
		model_batch_free(b);
		b = NULL;
	}
	buf_free(&file);
	buf_free(&plain);
	return b;
}

static uint32_t dense(u64map_t *m, uint64_t id, uint32_t *max)
{
	if (id == 0)
		return 0;
	int inserted;
	uint32_t v = u64map_get_or_put(m, id, (uint32_t)m->len + 1, &inserted);
	if (v > *max)
		*max = v;
	return v;
}

/* The local id of batch node i as a partition gives it: its ancestors first,
 * each new node the next id (local_partition.c: resolve_node). */
static uint32_t node_local(input_t *in, const model_batch_t *b, uint32_t i)
{
	uint32_t v;
	if (i == MODEL_NONE)
		return 0;
	if (u64map_get(&in->nodes, b->nodes[i].id, &v))
		return v;
	node_local(in, b, b->nodes[i].parent);
	return dense(&in->nodes, b->nodes[i].id, &in->max_node);
}

/* Appends the chunk of profile p of b to its series (heap: k-th repetition, values varied). */
static void add_chunk(input_t *in, const model_batch_t *b, uint32_t p, int heap, uint32_t k, buf_t *raw)
{
	const model_profile_t *pr = &b->profiles[p];
	series_t *s = &in->s[p];
	snprintf(s->type, sizeof s->type, "%.*s:%.*s", (int)pr->sample_type.n,
	         (const char *)pr->sample_type.p, (int)pr->sample_unit.n, (const char *)pr->sample_unit.p);
	store_wentry_t *e = xmalloc(((size_t)pr->samples_count + 1) * sizeof *e);
	int inuse = slice_eq_cstr(slice_make(pr->sample_type.p, pr->sample_type.n < 5 ? 0 : 5), "inuse");
	for (uint32_t i = 0; i < pr->samples_count; i++) {
		uint32_t si = pr->samples_first + i;
		const model_sample_t *smp = &b->samples[si];
		int64_t v = smp->value;
		if (heap && k > 0) {
			if (inuse && rng() % 100 < keep_pct)
				v = in->prev[si];
			else
				v = smp->value * (int64_t)(1 + rng() % 15) / 8;
		}
		if (heap)
			in->prev[si] = v;
		e[i] = (store_wentry_t){.node = node_local(in, b, smp->node),
		                        .attrset =
		                            dense(&in->sets, b->attrsets[smp->attrset].id, &in->max_attrset),
		                        .t_off = store_second_offset(smp->time_ns, pr->time_ns),
		                        .value = v};
	}
	uint32_t n = store_entries_merge(e, pr->samples_count);
	s->c = xgrow(s->c, &s->cap, (size_t)s->n + 1, sizeof *s->c);
	local_block_in_t *c = &s->c[s->n++];
	*c = (local_block_in_t){.head = {.id = (int64_t)++in->chunks,
	                                 .t_ns = pr->time_ns + (heap ? (int64_t)k * NS : 0),
	                                 .duration_ns = pr->duration_ns,
	                                 .n_entries = n},
	                        .e = e};
	local_payload_raw(e, n, raw, &c->head.scale, &c->head.total);
	in->entries += n;
}

static int load(input_t *in, char **files, int n_files, uint32_t heap)
{
	buf_t raw;
	buf_init(&raw, SIZE_MAX);
	for (int f = 0; f < n_files; f++) {
		model_batch_t *b = decode_pprof(files[f]);
		if (!b)
			return -1;
		if (b->n_profiles > MAX_SERIES) {
			fprintf(stderr, "%s: more than %d profiles\n", files[f], MAX_SERIES);
			return -1;
		}
		if (b->n_profiles > in->n_series)
			in->n_series = b->n_profiles;
		in->prev = xgrow(in->prev, &in->cap_prev, (size_t)b->n_samples + 1, sizeof *in->prev);
		for (uint32_t k = 0; k < (heap ? heap : 1); k++)
			for (uint32_t p = 0; p < b->n_profiles; p++)
				add_chunk(in, b, p, heap > 0, k, &raw);
		model_batch_free(b);
	}
	buf_free(&raw);
	return 0;
}

typedef struct {
	ZSTD_CCtx *zc;
	ZSTD_DCtx *zd;
	local_block_scratch_t s;
	buf_t head, data, raw, packed;
	local_block_t b;
	store_entry_t *out;
	size_t cap_out;
	uint8_t *tmp;
	size_t cap_tmp;
} ctx_t;

static void die(const char *what, const err_t *err)
{
	fprintf(stderr, "%s: %s\n", what, err->msg);
	exit(1);
}

/* Today: every chunk's payload as the writer packs it; bytes, or decoded back when decode. */
static uint64_t today(ctx_t *x, const input_t *in, int decode)
{
	uint64_t bytes = 0;
	for (uint32_t s = 0; s < in->n_series; s++)
		for (uint32_t k = 0; k < in->s[s].n; k++) {
			const local_block_in_t *c = &in->s[s].c[k];
			int64_t scale, total;
			local_payload_raw(c->e, c->head.n_entries, &x->raw, &scale, &total);
			local_payload_pack(&x->raw, &x->packed, x->zc);
			bytes += x->packed.n;
			err_t err = {0};
			if (decode &&
			    local_payload_decode(buf_slice(&x->packed), c->head.t_ns, scale,
			                         c->head.n_entries, total, in->max_node, in->max_attrset,
			                         x->zd, &x->tmp, &x->cap_tmp, &x->out, &x->cap_out, &err) < 0)
				die("payload", &err);
		}
	return bytes;
}

/* Every series cut into blocks of size chunks: head and data bytes; decoded too when decode. */
static void blocks(ctx_t *x, const input_t *in, uint32_t size, int decode, uint64_t *head, uint64_t *data)
{
	*head = *data = 0;
	for (uint32_t s = 0; s < in->n_series; s++)
		for (uint32_t k = 0; k < in->s[s].n; k += size) {
			uint32_t n = in->s[s].n - k < size ? in->s[s].n - k : size;
			err_t err = {0};
			if (local_block_encode(in->s[s].c + k, n, x->zc, &x->s, &x->head, &x->data, &err) < 0)
				die("encode", &err);
			*head += x->head.n;
			*data += x->data.n;
			if (decode &&
			    (local_block_decode_head(buf_slice(&x->head), x->zd, &x->s, &x->b, &err) < 0 ||
			     local_block_decode_data(buf_slice(&x->data), in->max_node, in->max_attrset,
			                             x->zd, &x->s, &x->b, &err) < 0))
				die("decode", &err);
		}
}

enum { T_PACK, T_PAYLOAD_DECODE, T_ENCODE, T_DECODE };

/* ns for one pass of `what` over all the input, repeated until seconds have
 * passed; the decoders read blobs encoded once beforehand (blocks of size). */
static double timed(ctx_t *x, const input_t *in, int what, uint32_t size, double seconds)
{
	buf_t *heads = xcalloc(in->chunks, sizeof *heads), *datas = xcalloc(in->chunks, sizeof *datas);
	local_block_chunk_t *hs = xcalloc(in->chunks, sizeof *hs);
	uint32_t nb = 0;
	for (uint32_t s = 0; s < in->n_series; s++)
		for (uint32_t k = 0; k < in->s[s].n; k += what == T_PAYLOAD_DECODE ? 1 : size, nb++) {
			uint32_t n = in->s[s].n - k < size ? in->s[s].n - k : size;
			err_t err = {0};
			buf_init(&heads[nb], SIZE_MAX);
			buf_init(&datas[nb], SIZE_MAX);
			hs[nb] = in->s[s].c[k].head;
			if (what == T_PAYLOAD_DECODE) {
				local_payload_raw(in->s[s].c[k].e, hs[nb].n_entries, &x->raw, &hs[nb].scale,
				                  &hs[nb].total);
				local_payload_pack(&x->raw, &datas[nb], x->zc);
			} else if (local_block_encode(in->s[s].c + k, n, x->zc, &x->s, &heads[nb], &datas[nb],
			                              &err) < 0)
				die("encode", &err);
		}
	long reps = 0;
	uint64_t h, d;
	int64_t t0 = time_mono_ns(), t1;
	do {
		if (what == T_PACK)
			today(x, in, 0);
		else if (what == T_ENCODE)
			blocks(x, in, size, 0, &h, &d);
		for (uint32_t i = 0; what == T_PAYLOAD_DECODE && i < nb; i++) {
			err_t err = {0};
			if (local_payload_decode(buf_slice(&datas[i]), hs[i].t_ns, hs[i].scale,
			                         hs[i].n_entries, hs[i].total, in->max_node, in->max_attrset,
			                         x->zd, &x->tmp, &x->cap_tmp, &x->out, &x->cap_out, &err) < 0)
				die("payload", &err);
		}
		for (uint32_t i = 0; what == T_DECODE && i < nb; i++) {
			err_t err = {0};
			if (local_block_decode_head(buf_slice(&heads[i]), x->zd, &x->s, &x->b, &err) < 0 ||
			    local_block_decode_data(buf_slice(&datas[i]), in->max_node, in->max_attrset,
			                            x->zd, &x->s, &x->b, &err) < 0)
				die("decode", &err);
		}
		reps++;
	} while ((t1 = time_mono_ns()) - t0 < (int64_t)(seconds * 1e9));
	for (uint32_t i = 0; i < nb; i++) {
		buf_free(&heads[i]);
		buf_free(&datas[i]);
	}
	free(heads);
	free(datas);
	free(hs);
	return (double)(t1 - t0) / (double)reps;
}

static void speed(const char *what, const input_t *in, double ns_all)
{
	printf("{\"what\":\"%s\",\"ns_chunk\":%.0f,\"mb_s\":%.0f}\n", what, ns_all / (double)in->chunks,
	       (double)in->entries * sizeof(store_entry_t) / ns_all * 1e3);
}

static int write_seeds(ctx_t *x, const input_t *in, const char *dir)
{
	for (uint32_t s = 0; s < in->n_series; s++) {
		err_t err = {0};
		uint32_t n = in->s[s].n < 4 ? in->s[s].n : 4;
		if (local_block_encode(in->s[s].c, n, x->zc, &x->s, &x->head, &x->data, &err) < 0)
			die("encode", &err);
		/* The fuzz target's input: max node, max attribute set, head length, head, data. */
		buf_t seed;
		buf_init(&seed, SIZE_MAX);
		buf_put_uvarint(&seed, in->max_node);
		buf_put_uvarint(&seed, in->max_attrset);
		buf_put_uvarint(&seed, x->head.n);
		buf_append(&seed, x->head.p, x->head.n);
		buf_append(&seed, x->data.p, x->data.n);
		char path[1024];
		snprintf(path, sizeof path, "%s/seed-%u-%u", dir, in->max_node, s);
		FILE *f = fopen(path, "wb");
		if (!f || fwrite(seed.p, 1, seed.n, f) != seed.n || fclose(f) != 0) {
			perror(path);
			return -1;
		}
		buf_free(&seed);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *seeds = NULL;
	double seconds = 2.0;
	uint32_t heap = 0;
	int i = 1;
	for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		if (strcmp(argv[i], "--seeds") == 0)
			seeds = argv[i + 1];
		else if (strcmp(argv[i], "--seconds") == 0)
			seconds = atof(argv[i + 1]);
		else if (strcmp(argv[i], "--keep") == 0)
			keep_pct = (uint64_t)atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--heap") == 0)
			heap = (uint32_t)atoi(argv[i + 1]);
		else
			break;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: block [--seconds S] [--heap N [--keep P]] [--seeds DIR] FILE...\n");
		return 2;
	}
	input_t in = {0};
	u64map_init(&in.nodes);
	u64map_init(&in.sets);
	if (load(&in, argv + i, argc - i, heap) < 0)
		return 1;
	ctx_t x = {.zc = ZSTD_createCCtx(), .zd = ZSTD_createDCtx()};
	local_block_scratch_init(&x.s);
	buf_init(&x.head, SIZE_MAX);
	buf_init(&x.data, SIZE_MAX);
	buf_init(&x.raw, SIZE_MAX);
	buf_init(&x.packed, SIZE_MAX);
	if (seeds)
		return write_seeds(&x, &in, seeds) < 0;

	double per = (double)in.chunks;
	printf("{\"chunks\":%llu,\"entries\":%llu,\"today_b\":%.1f}\n", (unsigned long long)in.chunks,
	       (unsigned long long)in.entries, (double)today(&x, &in, 1) / per);
	static const uint32_t sizes[] = {16, 64, 256, 360};
	uint64_t h, d;
	for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
		blocks(&x, &in, sizes[z], 1, &h, &d);
		printf("{\"block\":%u,\"head_b\":%.1f,\"data_b\":%.1f,\"total_b\":%.1f}\n", sizes[z],
		       (double)h / per, (double)d / per, (double)(h + d) / per);
	}
	for (uint32_t k = 0; k < in.n_series; k++) {
		input_t one = in;
		one.s[0] = in.s[k];
		one.n_series = 1;
		one.chunks = in.s[k].n;
		blocks(&x, &one, 360, 1, &h, &d);
		uint64_t ne = 0;
		for (uint32_t c = 0; c < in.s[k].n; c++)
			ne += in.s[k].c[c].head.n_entries;
		printf("{\"series\":\"%s\",\"entries\":%.0f,\"block\":360,\"data_b\":%.1f}\n", in.s[k].type,
		       (double)ne / in.s[k].n, (double)d / in.s[k].n);
	}
	speed("today pack", &in, timed(&x, &in, T_PACK, 1, seconds));
	speed("today decode", &in, timed(&x, &in, T_PAYLOAD_DECODE, 1, seconds));
	speed("block 360 encode", &in, timed(&x, &in, T_ENCODE, 360, seconds));
	speed("block 360 decode", &in, timed(&x, &in, T_DECODE, 360, seconds));
	return 0;
}
