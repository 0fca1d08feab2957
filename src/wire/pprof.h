/* Google pprof (profile.proto) decoding into the normalized batch, and
 * encoding of a merged call tree back into pprof. */
#ifndef KILN_WIRE_PPROF_H
#define KILN_WIRE_PPROF_H

#include "base/buf.h"
#include "base/err.h"
#include "model/model.h"

typedef struct {
	slice_t service;             /* service.name of every profile */
	const model_label_t *labels; /* series labels for every profile (namespace, pod, ...) */
	uint32_t n_labels;
	int64_t time_ns;     /* 0 = the pprof's time_nanos, or now when that is 0 too */
	int64_t duration_ns; /* 0 = the pprof's duration_nanos */
	int64_t now_ns;
	uint32_t max_rows; /* decoded sample rows limit; 0 = LIMIT_SAMPLE_ROWS */
} pprof_decode_opts_t;

/* Decodes an uncompressed pprof into b: one model_profile_t per sample type,
 * finished (model_profile_finish). On error returns -1 with err set (400 for
 * malformed input with the field path, 413 for limits) and b may hold a
 * partial decode: the caller frees it.
 * Frames: one per Line (line[0] is the leaf), symbolized ones with an empty
 * kind; a location none of whose lines names a function is one unsymbolized
 * "native" frame of its mapping's file. Sample labels become the sample's
 * attrset (numeric ones as decimal strings). Stacks deeper than
 * LIMIT_STACK_DEPTH keep the frames nearest the leaf; samples without
 * locations keep node MODEL_NONE, the empty stack (model/model.h: their value
 * is the root's); b->frames_written grows by each sample's depth and
 * may not pass LIMIT_REQUEST_FRAMES. Repeated ids: the last definition wins.
 * data is only borrowed: every string kept is copied into b. */
int pprof_decode(slice_t data, const pprof_decode_opts_t *opts, model_batch_t *b, err_t *err);

/* The names of data's sample types (Profile.sample_type[i].type resolved in
 * the string table), in order, into types[0..max): their count. A scan of
 * the top level only, for callers that need the names before decoding (the
 * Pyroscope profile name, wire/sample_type_config.h); it never fails:
 * malformed input or an index out of range ends the list early or gives an
 * empty name (pprof_decode reports such input). The slices point into data. */
uint32_t pprof_sample_types(slice_t data, slice_t *types, uint32_t max);

/* Encodes t as an uncompressed pprof (one sample type) appended to out: one
 * Sample per node with self != 0 (the root's self: a Sample with no
 * location, so go tool pprof reads the same total), one Location/Function per frame used (an
 * unsymbolized frame is named after its binary's base name, or "unknown"),
 * one Mapping per (binary, build id). 413 when out's ceiling is too small
 * (out unchanged), 500 when t is inconsistent. */
int pprof_encode(const model_tree_t *t, buf_t *out, err_t *err);

#endif
