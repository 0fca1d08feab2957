/* libFuzzer target for the block decoders of format-2 partitions
 * (store/local_block.c): arbitrary bytes as a stored block. Input: varint
 * max node, varint max attribute set, varint head length, the head blob, the
 * data blob (the rest). A decode that fails must say which blob in a 500
 * ("block head: " / "block data: ") and leave no entries; one that succeeds
 * must hold only ids in range and chunk ranges inside the entries (walked
 * here, so ASan sees any that is not), and must be stable: its entries
 * encode (the encoder accepts everything the decoders accept), decode to the
 * same block, and encode to the same bytes again. Seeds
 * (tests/fuzz/corpus/local_block/) are blocks of the tests/data fixtures,
 * written by `build/bench/block --seeds DIR FILE...`, plus what the
 * libFuzzer runs added. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "base/alloc.h"
#include "base/num.h"
#include "store/local_block.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NS INT64_C(1000000000)

static void walk(const local_block_t *b, uint64_t max_node, uint64_t max_attrset)
{
	uint64_t n = 0;
	for (uint32_t k = 0; k < b->n; k++) {
		const local_block_chunk_t *c = &b->chunks[k];
		if (c->first != n || c->scale < 1 || (k && c->id <= b->chunks[k - 1].id))
			__builtin_trap();
		n += c->n_entries;
		for (uint32_t i = 0; i < c->n_entries; i++) {
			const store_entry_t *e = &b->entries[c->first + i];
			if (e->node > max_node || e->attrset > max_attrset || e->value % c->scale ||
			    (e->t_ns - c->t_ns) % NS)
				__builtin_trap();
		}
	}
	if (n != b->n_entries)
		__builtin_trap();
}

static int same(const local_block_t *a, const local_block_t *b)
{
	if (a->n != b->n || a->n_entries != b->n_entries)
		return 0;
	for (uint32_t k = 0; k < a->n; k++) {
		const local_block_chunk_t *x = &a->chunks[k], *y = &b->chunks[k];
		if (x->id != y->id || x->t_ns != y->t_ns || x->duration_ns != y->duration_ns ||
		    x->n_entries != y->n_entries || x->total != y->total || x->scale != y->scale ||
		    x->first != y->first)
			return 0;
	}
	return a->n_entries == 0 || memcmp(a->entries, b->entries, a->n_entries * sizeof *a->entries) == 0;
}

/* Encodes decoded block b back into head and data. */
static void encode(const local_block_t *b, ZSTD_CCtx *zc, local_block_scratch_t *s, buf_t *head, buf_t *data)
{
	store_wentry_t *w = xmalloc((b->n_entries + 1) * sizeof *w);
	local_block_in_t *in = xmalloc(b->n * sizeof *in);
	for (uint32_t k = 0; k < b->n; k++) {
		const local_block_chunk_t *c = &b->chunks[k];
		in[k] = (local_block_in_t){.head = *c, .e = w + c->first};
		for (uint32_t i = 0; i < c->n_entries; i++) {
			const store_entry_t *e = &b->entries[c->first + i];
			w[c->first + i] = (store_wentry_t){.node = e->node,
			                                   .attrset = e->attrset,
			                                   .t_off = (e->t_ns - c->t_ns) / NS,
			                                   .value = e->value};
		}
	}
	err_t err = {0};
	if (local_block_encode(in, b->n, zc, s, head, data, &err) < 0)
		__builtin_trap();
	free(w);
	free(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	uint64_t max_node, max_attrset, head_n;
	if (num_uvarint_get(&p, end, &max_node) < 0 || num_uvarint_get(&p, end, &max_attrset) < 0 ||
	    num_uvarint_get(&p, end, &head_n) < 0 || head_n > (uint64_t)(end - p))
		return 0;
	max_node = max_node > UINT32_MAX ? UINT32_MAX : max_node;
	max_attrset = max_attrset > UINT32_MAX ? UINT32_MAX : max_attrset;
	slice_t head = slice_make(p, (size_t)head_n),
	        body = slice_make(p + head_n, (size_t)(end - p - head_n));

	ZSTD_DCtx *zd = ZSTD_createDCtx();
	local_block_scratch_t s;
	local_block_scratch_init(&s);
	local_block_t b = {0}, b2 = {0};
	err_t err = {0};
	if (local_block_decode_head(head, zd, &s, &b, &err) < 0) {
		if (err.status != 500 || strncmp(err.msg, "block head: ", 12) != 0 || b.n || b.n_entries)
			__builtin_trap();
		goto out;
	}
	if (local_block_decode_data(body, (uint32_t)max_node, (uint32_t)max_attrset, zd, &s, &b, &err) < 0) {
		if (err.status != 500 || strncmp(err.msg, "block data: ", 12) != 0 || b.n_entries)
			__builtin_trap();
		goto out;
	}
	walk(&b, max_node, max_attrset);

	ZSTD_CCtx *zc = ZSTD_createCCtx();
	buf_t h1, d1, h2, d2;
	buf_init(&h1, SIZE_MAX);
	buf_init(&d1, SIZE_MAX);
	buf_init(&h2, SIZE_MAX);
	buf_init(&d2, SIZE_MAX);
	encode(&b, zc, &s, &h1, &d1);
	if (local_block_decode_head(buf_slice(&h1), zd, &s, &b2, &err) < 0 ||
	    local_block_decode_data(buf_slice(&d1), (uint32_t)max_node, (uint32_t)max_attrset, zd, &s, &b2,
	                            &err) < 0 ||
	    !same(&b, &b2))
		__builtin_trap();
	encode(&b2, zc, &s, &h2, &d2);
	if (h1.n != h2.n || d1.n != d2.n || memcmp(h1.p, h2.p, h1.n) != 0 || memcmp(d1.p, d2.p, d1.n) != 0)
		__builtin_trap();
	buf_free(&h1);
	buf_free(&d1);
	buf_free(&h2);
	buf_free(&d2);
	ZSTD_freeCCtx(zc);
out:
	local_block_free(&b);
	local_block_free(&b2);
	local_block_scratch_free(&s);
	ZSTD_freeDCtx(zd);
	return 0;
}
