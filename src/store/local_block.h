/* Blocks of format-2 partitions (STORE: Next version of the embedded engine,
 * "4. Compact payloads: format 2 partitions"): the chunks of one series in
 * one UTC hour (at most LOCAL_BLOCK_MAX_CHUNKS) as two blobs.
 *
 * - head: the chunk headers column by column (id delta, t_ns delta,
 *   duration, entry count, total, scale); decoded alone, for heads and
 *   timelines, without touching data;
 * - data: the entries of every chunk column by column over all chunks (node
 *   deltas restarting at each chunk, attribute sets, values ÷ the chunk's
 *   scale, second offsets).
 *
 * Each blob is stored as local_payload_pack stores a payload: byte 0 = 0 raw
 * / 1 zstd (level 9, when smaller), then for zstd a varint raw length and the
 * frame. Pure functions over memory: no SQLite, no threads; sealing
 * (local_seal.c) encodes blocks, views (local_view.c) decode them. The decoders
 * treat their input as hostile: every count, id, length and sum is checked
 * (what local_payload_decode checks, per chunk), the raw size of a blob is
 * bounded by LIMIT_STORE_BLOCK_BYTES, and every failure is a 500 naming the
 * blob, the chunk where there is one, and the field ("block data: chunk 3:
 * node id out of range"); the caller names the file and the block
 * (err_prefix). */
#ifndef KILN_STORE_LOCAL_BLOCK_H
#define KILN_STORE_LOCAL_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/slice.h"
#include "store/engine.h"
#include "store/store.h"

#define LOCAL_BLOCK_MAX_CHUNKS 1024u /* chunks in one block (an hour of one series is split beyond) */

/* One chunk's header, as the chunks row holds it. */
typedef struct {
	int64_t id;   /* the chunk's local id: >= 1, strictly increasing within a block */
	int64_t t_ns; /* start */
	int64_t duration_ns;
	uint32_t n_entries; /* <= LIMIT_CHUNK_ENTRIES */
	int64_t total;      /* the sum of the values in entry order (saturating, or wrapping: old files) */
	int64_t scale;      /* >= 1, divides every value */
	uint32_t first;     /* decoded blocks: index of the chunk's first entry in local_block_t.entries */
} local_block_chunk_t;

/* One chunk given to the encoder: its header (first is not read) and its
 * entries, as store_entries_merge leaves them (sorted by node, attrset,
 * t_off), with the scale and total local_payload_raw computes for them. */
typedef struct {
	local_block_chunk_t head;
	const store_wentry_t *e; /* head.n_entries entries */
} local_block_in_t;

/* A decoded block: the chunks in the block's order, and every entry of
 * every chunk (chunk i's are entries[chunks[i].first .. + n_entries), as
 * local_payload_decode gives them: t_ns = the chunk's t_ns + the offset). */
typedef struct {
	uint32_t n;
	local_block_chunk_t *chunks;
	size_t cap_chunks;
	store_entry_t *entries;
	size_t n_entries, cap_entries; /* n_entries: 0 until local_block_decode_data */
} local_block_t;

/* Reusable working memory of the encoder and the decoders (one thread). */
typedef struct {
	buf_t raw;    /* the encoder's raw blob */
	uint8_t *tmp; /* the decoders' decompressed blob */
	size_t cap_tmp;
} local_block_scratch_t;

/* Values are stored ÷ scale, not as differences from the previous chunk's
 * value of the same (node, attrset) (§4's option 2): measured with
 * bench/block.c, that does not pay (STORE: Next version of the embedded
 * engine, §4, "Built (step 9, codec only)"). */

void local_block_scratch_init(local_block_scratch_t *s);
void local_block_scratch_free(local_block_scratch_t *s);
void local_block_free(local_block_t *b);

/* Encodes chunks in[0..n) (1 <= n <= LOCAL_BLOCK_MAX_CHUNKS) into head and
 * data (each reset first) with the caller's ZSTD_CCtx zc. Checks what a
 * decoder would refuse: ids >= 1 and increasing, scale >= 1 dividing every
 * value, nodes sorted, count and total as in the header, times in range, the
 * raw data within LIMIT_STORE_BLOCK_BYTES (a larger hour is split by the
 * caller); -1 with err 500 "block: …" otherwise, head and data then
 * unspecified. */
int local_block_encode(const local_block_in_t *in, uint32_t n, void *zc, local_block_scratch_t *s,
                       buf_t *head, buf_t *data, err_t *err);

/* Decodes a head blob into out->chunks / out->n (out->n_entries = 0) with
 * the caller's ZSTD_DCtx zd. -1 with err 500 "block head: …" on damage. */
int local_block_decode_head(slice_t head, void *zd, local_block_scratch_t *s, local_block_t *out, err_t *err);

/* Decodes the data blob of the block whose head b holds (local_block_decode_head)
 * into b->entries / b->n_entries: nodes <= max_node (0 is the root: samples
 * with an empty stack), attribute sets <= max_attrset, the entry count the
 * head gives, per chunk the values adding up to its total, value × scale and
 * times in range. -1 with err 500 "block data: …" on damage (b->n_entries 0). */
int local_block_decode_data(slice_t data, uint32_t max_node, uint32_t max_attrset, void *zd,
                            local_block_scratch_t *s, local_block_t *b, err_t *err);

#endif
