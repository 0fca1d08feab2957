/* Private to the OTLP decoder (otlp_decode.c, otlp_dict.c): the decoder's
 * state, index checks and the dictionary. Not for other
 * modules: they use wire/otlp.h. */
#ifndef KILN_WIRE_OTLP_INT_H
#define KILN_WIRE_OTLP_INT_H

#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "base/limits.h"
#include "base/u64map.h"
#include "model/model.h"
#include "wire/otlp.h"
#include "wire/pb.h"

#define OT_SUPPORTED "the v1.10 wire format (Collector \xe2\x89\xa5 0.148)"
#define OT_INDEX_HINT                                                                                        \
	"; the sender's format version may differ from the one supported (v1.10 wire format, Collector "     \
	"\xe2\x89\xa5 0.148)"
#define OT_NOIX UINT32_MAX /* no entry (mapping, frames, node) */

/* Error paths, field specs and checked reads are wire/pb.h's; errors name
 * no root ("resource_profiles[0].scope_profiles[1].profiles[2].samples[3]"). */
extern const pb_path_t ot_dictionary_path; /* "dictionary" */

/* Dictionary tables, in field-number order (ProfilesDictionary 1..7). */
enum { T_MAPPING, T_LOCATION, T_FUNCTION, T_LINK, T_STRING, T_ATTRIBUTE, T_STACK, T_COUNT };

typedef struct {
	uint32_t mapping;  /* index into mapping_table, OT_NOIX for none */
	uint32_t n_frames; /* lines with a named function, or 1 */
	uint32_t first;    /* range in loc_frames once resolved; OT_NOIX before */
} ot_location_t;

typedef struct {
	uint32_t name; /* string index: name, else system_name */
	uint32_t file;
} ot_function_t;

typedef struct {
	uint32_t first; /* range in stack_locs */
	uint32_t n;
	uint32_t depth; /* frames written out, at most LIMIT_STACK_DEPTH */
	uint32_t node;  /* leaf node once resolved; OT_NOIX before, MODEL_NONE when empty */
} ot_stack_t;

typedef struct {
	pb_src_t src; /* the request: byte offsets in errors */
	arena_t *scratch;
	const otlp_decode_opts_t *o;
	model_batch_t *b;

	/* ProfilesDictionary: each table's entries as slices (tbl[T_STRING] are
	 * the strings themselves). */
	slice_t *tbl[T_COUNT];
	uint32_t n[T_COUNT];
	uint8_t *attr_code;  /* per attribute_table entry: 1 + index in the keys frames use, else 0 */
	slice_t *attr_value; /* per attribute_table entry with an attr_code: its value text */
	ot_function_t *functions;
	uint32_t *mapping_file; /* string index of each mapping's filename */
	ot_location_t *locations;
	ot_stack_t *stacks;
	uint32_t *stack_locs;
	uint32_t *loc_frames; /* frames of resolved locations, leaf first */
	size_t n_loc_frames, cap_loc_frames;

	/* Scratch reused per sample / per profile. */
	uint64_t *u64s; /* indices of one repeated field */
	size_t n_u64s, cap_u64s;
	uint64_t *attr_ix;
	size_t n_attr_ix, cap_attr_ix;
	uint64_t *values;
	size_t n_values, cap_values;
	uint64_t *stamps;
	size_t n_stamps, cap_stamps;
	model_sample_t *pending;
	size_t n_pending, cap_pending;
	uint32_t *stack_frames; /* LIMIT_STACK_DEPTH entries */
	model_label_t labels[LIMIT_LABELS + 2];
	char label_text[LIMIT_LABELS][32];
	char link_hex[2][33];
	u64map_t attrset_cache;

	uint64_t points;  /* sample points of the request (lenient count): room reserved in the batch */
	uint64_t abs_sum; /* sum of |value| over the current profile: merges cannot overflow */
	uint64_t frames_total;
	int frames_over;
} ot_dec_t;

/* 400 "index I out of range for TABLE (N entries)" plus the version hint,
 * unless 0 <= ix < n. */
int ot_check_index(const ot_dec_t *d, int64_t ix, int table, const pb_path_t *p, const char *field,
                   err_t *err);
/* Reads one occurrence of a packable varint field (wt from ot_next_field),
 * appending each value to *arr (grown; scratch owned by the caller). */
int ot_read_packed_varint(const ot_dec_t *d, pb_reader_t *r, int wt, uint64_t **arr, size_t *n, size_t *cap,
                          const pb_path_t *p, const char *field, err_t *err);

/* Counts and fills the dictionary tables from every `dictionary` field of
 * the request (dicts[0..n_dicts)). Only the framing is checked here. */
int ot_dict_load(ot_dec_t *d, const slice_t *dicts, uint32_t n_dicts, err_t *err);
/* Checks every entry of every table (indices, id lengths, string_table[0])
 * and precomputes functions, mappings, locations and stacks. */
int ot_dict_check(ot_dec_t *d, err_t *err);
/* A resource/scope KeyValue list entry, or an attribute_table entry:
 * resolves key and text value (string/int/bool/double; *scalar = 0 for
 * arrays, kvlists, bytes and empty values). text holds rendered numbers.
 * The entry was checked before, so this does not fail on checked input. */
int ot_keyvalue(const ot_dec_t *d, slice_t msg, int table_entry, slice_t *key, slice_t *value, int *scalar,
                char text[32], const pb_path_t *p, err_t *err);
/* The leaf node of stack si (interned on first use); MODEL_NONE when empty. */
uint32_t ot_stack_node(ot_dec_t *d, uint32_t si);
/* Label text of link li into d->link_hex: 0 when it carries no ids. */
int ot_link_hex(ot_dec_t *d, uint32_t li);

#endif
