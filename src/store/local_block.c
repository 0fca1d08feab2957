/* Blocks of format-2 partitions: the encoder and the two decoders of
 * store/local_block.h (head: the chunk headers column by column; data: every
 * chunk's entries column by column). Raw forms, in varints (zz = zigzag):
 *
 *   head: n, then n of each column in turn: id − previous id (the first from
 *         0; >= 1), zz(t_ns − previous t_ns) (wrapping; the first from 0),
 *         zz(duration_ns), n_entries, zz(total), scale
 *   data: flags (1 attribute column, 2 time column), the entry count of
 *         the whole block, then over all chunks in order: node − previous
 *         node (restarting at 0 with each chunk), [attribute set],
 *         zz(value ÷ scale), [zz(second offset)]
 *
 * Each raw blob is packed by local_payload_pack (local_chunk.c). */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "base/num.h"
#include "store/local.h"
#include "store/local_block.h"

enum { BLOB_RAW = 0, BLOB_ZSTD = 1 };
enum { BF_ATTRS = 1, BF_TIMES = 2 };
#define HEAD_COLUMN_BYTES 60u /* six varints of <= 10 bytes per chunk */
#define ENTRY_BYTES 40u       /* four varints of <= 10 bytes per entry (the data bound) */
#define NS_PER_S INT64_C(1000000000)

static uint64_t zz(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t unzz(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

void local_block_scratch_init(local_block_scratch_t *s)
{
	memset(s, 0, sizeof *s);
	buf_init(&s->raw, SIZE_MAX);
}

void local_block_scratch_free(local_block_scratch_t *s)
{
	buf_free(&s->raw);
	free(s->tmp);
	memset(s, 0, sizeof *s);
}

void local_block_free(local_block_t *b)
{
	free(b->chunks);
	free(b->entries);
	memset(b, 0, sizeof *b);
}

/* ---- encoder ---- */

/* The checks of one chunk's entries that make sure a decoder reads back what went in. */
static int check_chunk(const local_block_in_t *c, uint32_t k, unsigned *flags, err_t *err)
{
	const local_block_chunk_t *h = &c->head;
	if (h->scale < 1)
		return err_set(err, 500, "block: chunk %u: bad value scale", k);
	if (h->n_entries > LIMIT_CHUNK_ENTRIES)
		return err_set(err, 500, "block: chunk %u: entry count out of range", k);
	int64_t sum = 0;
	uint64_t wrapped = 0;
	for (uint32_t i = 0; i < h->n_entries; i++) {
		const store_wentry_t *e = &c->e[i];
		int64_t off, t;
		if (i && e->node < c->e[i - 1].node)
			return err_set(err, 500, "block: chunk %u: entries not sorted by node", k);
		if (e->value % h->scale)
			return err_set(err, 500, "block: chunk %u: scale does not divide a value", k);
		if (__builtin_mul_overflow(e->t_off, NS_PER_S, &off) ||
		    __builtin_add_overflow(h->t_ns, off, &t))
			return err_set(err, 500, "block: chunk %u: sample time out of range", k);
		sum = num_sat_add(sum, e->value);
		wrapped += (uint64_t)e->value;
		*flags |= (e->attrset ? BF_ATTRS : 0) | (e->t_off ? BF_TIMES : 0);
	}
	if (sum != h->total && (int64_t)wrapped != h->total)
		return err_set(err, 500, "block: chunk %u: values do not add up to the chunk total", k);
	return 0;
}

int local_block_encode(const local_block_in_t *in, uint32_t n, void *zc, local_block_scratch_t *s,
                       buf_t *head, buf_t *data, err_t *err)
{
	if (n < 1 || n > LOCAL_BLOCK_MAX_CHUNKS)
		return err_set(err, 500, "block: chunk count %u out of range", n);
	unsigned flags = 0;
	uint64_t n_all = 0;
	for (uint32_t k = 0; k < n; k++) {
		if (in[k].head.id < 1 || (k && in[k].head.id <= in[k - 1].head.id))
			return err_set(err, 500, "block: chunk %u: chunk ids not increasing", k);
		if (check_chunk(&in[k], k, &flags, err) < 0)
			return -1;
		n_all += in[k].head.n_entries;
	}
	/* Each entry takes at least 2 raw bytes (node delta, value). */
	if (n_all > LIMIT_STORE_BLOCK_BYTES / 2)
		return err_set(err, 500, "block: larger than %u bytes", LIMIT_STORE_BLOCK_BYTES);

	buf_t *r = &s->raw;
	buf_reset(r);
	buf_put_uvarint(r, n);
	for (uint32_t k = 0; k < n; k++)
		buf_put_uvarint(r, (uint64_t)(in[k].head.id - (k ? in[k - 1].head.id : 0)));
	for (uint32_t k = 0; k < n; k++)
		buf_put_uvarint(
		    r, zz((int64_t)((uint64_t)in[k].head.t_ns - (uint64_t)(k ? in[k - 1].head.t_ns : 0))));
	for (uint32_t k = 0; k < n; k++)
		buf_put_uvarint(r, zz(in[k].head.duration_ns));
	for (uint32_t k = 0; k < n; k++)
		buf_put_uvarint(r, in[k].head.n_entries);
	for (uint32_t k = 0; k < n; k++)
		buf_put_uvarint(r, zz(in[k].head.total));
	for (uint32_t k = 0; k < n; k++)
		buf_put_uvarint(r, (uint64_t)in[k].head.scale);
	local_payload_pack(r, head, zc);

	buf_reset(r);
	buf_put_uvarint(r, flags);
	buf_put_uvarint(r, n_all);
	for (uint32_t k = 0; k < n; k++) {
		uint32_t prev = 0;
		for (uint32_t i = 0; i < in[k].head.n_entries; i++) {
			buf_put_uvarint(r, in[k].e[i].node - prev);
			prev = in[k].e[i].node;
		}
	}
	if (flags & BF_ATTRS)
		for (uint32_t k = 0; k < n; k++)
			for (uint32_t i = 0; i < in[k].head.n_entries; i++)
				buf_put_uvarint(r, in[k].e[i].attrset);
	for (uint32_t k = 0; k < n; k++)
		for (uint32_t i = 0; i < in[k].head.n_entries; i++)
			buf_put_uvarint(r, zz(in[k].e[i].value / in[k].head.scale));
	if (flags & BF_TIMES)
		for (uint32_t k = 0; k < n; k++)
			for (uint32_t i = 0; i < in[k].head.n_entries; i++)
				buf_put_uvarint(r, zz(in[k].e[i].t_off));
	if (r->n > LIMIT_STORE_BLOCK_BYTES)
		return err_set(err, 500, "block: larger than %u bytes", LIMIT_STORE_BLOCK_BYTES);
	local_payload_pack(r, data, zc);
	return 0;
}

/* ---- decoders ---- */

/* The raw form of a stored blob, of at most bound bytes: in itself (format
 * 0) or decompressed into s->tmp (format 1). */
static int unpack(slice_t in, uint64_t bound, void *zd, local_block_scratch_t *s, const char *blob,
                  slice_t *raw, err_t *err)
{
	if (in.n < 1)
		return err_set(err, 500, "block %s: empty", blob);
	if (in.p[0] == BLOB_RAW) {
		if (in.n - 1 > bound)
			return err_set(err, 500, "block %s: raw length out of range", blob);
		*raw = slice_make(in.p + 1, in.n - 1);
		return 0;
	}
	if (in.p[0] != BLOB_ZSTD)
		return err_set(err, 500, "block %s: unknown format", blob);
	const uint8_t *q = in.p + 1, *end = in.p + in.n;
	uint64_t raw_n;
	if (num_uvarint_get(&q, end, &raw_n) < 0 || raw_n > bound)
		return err_set(err, 500, "block %s: raw length out of range", blob);
	s->tmp = xgrow(s->tmp, &s->cap_tmp, raw_n ? (size_t)raw_n : 1, 1);
	size_t got = ZSTD_decompressDCtx(zd, s->tmp, (size_t)raw_n, q, (size_t)(end - q));
	if (ZSTD_isError(got) || got != raw_n)
		return err_set(err, 500, "block %s: does not decompress", blob);
	*raw = slice_make(s->tmp, (size_t)raw_n);
	return 0;
}

/* Reads one varint of column `what` of chunk k. */
#define GET(v, what, k)                                                                                      \
	do {                                                                                                 \
		if (num_uvarint_get(&p, end, &(v)) < 0)                                                      \
			return err_set(err, 500, "block %s: chunk %u: truncated %s column", blob, (k),       \
			               what);                                                                \
	} while (0)

int local_block_decode_head(slice_t head, void *zd, local_block_scratch_t *s, local_block_t *out, err_t *err)
{
	static const char blob[] = "head";
	slice_t raw;
	out->n = 0;
	out->n_entries = 0;
	if (unpack(head, 10 + (uint64_t)LOCAL_BLOCK_MAX_CHUNKS * HEAD_COLUMN_BYTES, zd, s, blob, &raw, err) <
	    0)
		return -1;
	const uint8_t *p = raw.p, *end = raw.p + raw.n;
	uint64_t n, v;
	if (num_uvarint_get(&p, end, &n) < 0 || n < 1 || n > LOCAL_BLOCK_MAX_CHUNKS)
		return err_set(err, 500, "block head: chunk count out of range");
	out->chunks = xgrow(out->chunks, &out->cap_chunks, (size_t)n, sizeof *out->chunks);
	local_block_chunk_t *c = out->chunks;
	int64_t id = 0;
	for (uint32_t k = 0; k < n; k++) {
		GET(v, "id", k);
		if (v < 1 || v > (uint64_t)(INT64_MAX - id))
			return err_set(err, 500, "block head: chunk %u: chunk id out of range", k);
		c[k].id = id += (int64_t)v;
	}
	uint64_t t = 0;
	for (uint32_t k = 0; k < n; k++) {
		GET(v, "time", k);
		t += (uint64_t)unzz(v);
		c[k].t_ns = (int64_t)t;
	}
	for (uint32_t k = 0; k < n; k++) {
		GET(v, "duration", k);
		c[k].duration_ns = unzz(v);
	}
	uint64_t n_all = 0;
	for (uint32_t k = 0; k < n; k++) {
		GET(v, "entry count", k);
		/* Each entry takes at least 2 raw bytes of data. */
		if (v > LIMIT_CHUNK_ENTRIES || n_all + v > LIMIT_STORE_BLOCK_BYTES / 2)
			return err_set(err, 500, "block head: chunk %u: entry count out of range", k);
		c[k].n_entries = (uint32_t)v;
		c[k].first = (uint32_t)n_all;
		n_all += v;
	}
	for (uint32_t k = 0; k < n; k++) {
		GET(v, "total", k);
		c[k].total = unzz(v);
	}
	for (uint32_t k = 0; k < n; k++) {
		GET(v, "scale", k);
		if (v < 1 || v > INT64_MAX)
			return err_set(err, 500, "block head: chunk %u: bad value scale", k);
		c[k].scale = (int64_t)v;
	}
	if (p != end)
		return err_set(err, 500, "block head: trailing bytes");
	out->n = (uint32_t)n;
	return 0;
}

/* The value column of chunk k into e[0..m) (nodes and attribute sets already
 * read), with its total checked. */
static int get_values(const uint8_t **pp, const uint8_t *end, const local_block_chunk_t *c, uint32_t k,
                      store_entry_t *e, err_t *err)
{
	static const char blob[] = "data";
	const uint8_t *p = *pp;
	uint32_t m = c->n_entries;
	int64_t sum = 0;
	uint64_t wrapped = 0, v;
	for (uint32_t i = 0; i < m; i++) {
		GET(v, "value", k);
		int64_t x;
		if (__builtin_mul_overflow(unzz(v), c->scale, &x))
			return err_set(err, 500, "block data: chunk %u: value out of range", k);
		e[i].value = x;
		sum = num_sat_add(sum, x);
		wrapped += (uint64_t)x;
	}
	if (sum != c->total && (int64_t)wrapped != c->total)
		return err_set(err, 500, "block data: chunk %u: values do not add up to the chunk total", k);
	*pp = p;
	return 0;
}

static int decode_data(slice_t data, uint32_t max_node, uint32_t max_attrset, void *zd,
                       local_block_scratch_t *s, local_block_t *b, err_t *err)
{
	static const char blob[] = "data";
	uint64_t n_head = 0;
	if (b->n < 1)
		return err_set(err, 500, "block data: no head");
	for (uint32_t k = 0; k < b->n; k++)
		n_head += b->chunks[k].n_entries;
	slice_t raw;
	uint64_t bound = 20 + n_head * ENTRY_BYTES;
	if (unpack(data, bound < LIMIT_STORE_BLOCK_BYTES ? bound : LIMIT_STORE_BLOCK_BYTES, zd, s, blob, &raw,
	           err) < 0)
		return -1;
	const uint8_t *p = raw.p, *end = raw.p + raw.n;
	uint64_t flags, n_all, v;
	if (num_uvarint_get(&p, end, &flags) < 0 || num_uvarint_get(&p, end, &n_all) < 0)
		return err_set(err, 500, "block data: truncated header");
	if (flags & ~(uint64_t)(BF_ATTRS | BF_TIMES))
		return err_set(err, 500, "block data: unknown flags");
	if (n_all != n_head)
		return err_set(err, 500, "block data: entry count differs from the head");
	if (n_all > (uint64_t)(end - p) / 2)
		return err_set(err, 500, "block data: shorter than its entry count");
	b->entries = xgrow(b->entries, &b->cap_entries, n_all ? (size_t)n_all : 1, sizeof *b->entries);
	for (uint32_t k = 0; k < b->n; k++) {
		store_entry_t *e = b->entries + b->chunks[k].first;
		uint64_t node = 0;
		for (uint32_t i = 0; i < b->chunks[k].n_entries; i++) {
			GET(v, "node", k);
			node += v;
			if (node > max_node || v > max_node) /* 0: the root (empty stacks) */
				return err_set(err, 500, "block data: chunk %u: node id out of range", k);
			e[i] = (store_entry_t){.node = (uint32_t)node, .t_ns = b->chunks[k].t_ns};
		}
	}
	if (flags & BF_ATTRS)
		for (uint32_t k = 0; k < b->n; k++) {
			store_entry_t *e = b->entries + b->chunks[k].first;
			for (uint32_t i = 0; i < b->chunks[k].n_entries; i++) {
				GET(v, "attribute", k);
				if (v > max_attrset)
					return err_set(err, 500,
					               "block data: chunk %u: attribute set id out of range",
					               k);
				e[i].attrset = (uint32_t)v;
			}
		}
	for (uint32_t k = 0; k < b->n; k++)
		if (get_values(&p, end, &b->chunks[k], k, b->entries + b->chunks[k].first, err) < 0)
			return -1;
	if (flags & BF_TIMES)
		for (uint32_t k = 0; k < b->n; k++) {
			store_entry_t *e = b->entries + b->chunks[k].first;
			for (uint32_t i = 0; i < b->chunks[k].n_entries; i++) {
				int64_t off;
				GET(v, "time", k);
				if (__builtin_mul_overflow(unzz(v), NS_PER_S, &off) ||
				    __builtin_add_overflow(b->chunks[k].t_ns, off, &e[i].t_ns))
					return err_set(err, 500,
					               "block data: chunk %u: sample time out of range", k);
			}
		}
	if (p != end)
		return err_set(err, 500, "block data: trailing bytes");
	b->n_entries = (size_t)n_all;
	return 0;
}

int local_block_decode_data(slice_t data, uint32_t max_node, uint32_t max_attrset, void *zd,
                            local_block_scratch_t *s, local_block_t *b, err_t *err)
{
	b->n_entries = 0;
	return decode_data(data, max_node, max_attrset, zd, s, b, err);
}
