/* The batch codec: one model_batch_t as a compact, pointer-free byte string
 * and back, for the embedded engine's write-ahead log (STORE: The log: files
 * and record format; the exact layout is in STORE: The batch encoding).
 * Encoding is on the ack path, so it is one pass of varints and copies
 * (and one hash pass over the strings, to write repeats as numbers);
 * decoding is for replay, so it treats its input as hostile: every length,
 * count and index is checked, and a damaged record is an error
 * naming the field and its byte offset, never a crash and never an
 * allocation larger than a small multiple of the record.
 * Pure functions over memory: no files, no locks; thread-safe for distinct
 * arguments. */
#ifndef KILN_STORE_BATCH_CODEC_H
#define KILN_STORE_BATCH_CODEC_H

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/slice.h"
#include "model/model.h"

/* The version byte every encoding starts with: what this Kiln writes; it
 * reads 1 to this. Version 2 writes a string seen before in the record (by
 * content: one hash pass over its bytes) as its number instead of its
 * bytes: 23,913 → 10,560 bytes for go-cpu-fib. */
#define BATCH_CODEC_VERSION 2

/* Appends b's encoding to out: what a partition write reads (project,
 * frames, nodes, attribute sets and their labels, series labels, samples,
 * profiles with their series ids) and frames_written; the interning maps are
 * not encoded. Flags (unsymbolized, aggregation, cpu_alias) are written as 0
 * or 1. b must be well formed as the model builds it (attrsets[0] the empty
 * set; every index in range): the encoder does not check it.
 * Returns 0, or -1 when out's ceiling would be passed, with out unchanged. */
int batch_codec_encode(const model_batch_t *b, buf_t *out);
/* The same in an older version (1 to BATCH_CODEC_VERSION): tests and tools
 * that check what older Kilns wrote still replays. */
int batch_codec_encode_version(const model_batch_t *b, buf_t *out, int version);

/* The checks batch_codec_decode makes, on a batch in memory, so that what is
 * encoded always decodes and a partition write cannot fail on the batch's
 * shape: a node's parent before it and its frame in range, attrsets[1..]
 * within attr_labels and at most LIMIT_LABELS, a sample's node and attrset in
 * range, a profile's label and sample ranges within the batch. 0, or -1 with
 * a 500 "store: malformed batch (what i)". */
int batch_codec_check(const model_batch_t *b, err_t *err);

/* Rebuilds in *out the batch whose encoding is in (exactly one encoding, no
 * trailing bytes). Every array and string is allocated in arena a, in one
 * piece sized from the record's counts after checking that the record can
 * hold them (so at most 16 bytes of arena per byte of input); out->arena =
 * a, and out borrows nothing from in. The result is read-only: its arrays
 * are not malloc'd (never model_batch_free it, never intern into it; free
 * the arena), and its interning maps are empty.
 * Checks: the version; every varint (≤ 64 bits) and count (fits what is
 * left); strings within the record and their declared total; flags 0 or 1;
 * a node's parent earlier than itself and its frame < n_frames; attrsets[0]
 * the empty set, every other one ≤ LIMIT_LABELS labels within attr_labels;
 * a sample's node < n_nodes (or MODEL_NONE) and attrset < n_attrsets; a
 * profile's label and sample ranges within the batch; nothing after the end.
 * Returns 0, or -1 with err = 500 "batch record: FIELD at byte N: what"
 * (out is then zeroed; what was allocated stays in the arena). */
int batch_codec_decode(slice_t in, arena_t *a, model_batch_t *out, err_t *err);

#endif
