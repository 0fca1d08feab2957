/* pprof (profile.proto) → the normalized batch: one bounded pass over the top
 * level collects each sub-message as a slice, then tables are resolved and
 * every id and string index is checked. No libprotobuf and no per-message
 * allocation; it does not decompress (wire/compress.h) nor apply ingest rules.
 * Repeated mapping/location/function ids: the last one wins (go tool pprof
 * refuses them; real profilers never send them). Source line numbers are not
 * kept: a frame is a function. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/arena.h"
#include "base/limits.h"
#include "base/num.h"
#include "base/u64map.h"
#include "wire/numtext.h"
#include "wire/pb.h"
#include "wire/pprof.h"

typedef struct {
	slice_t file, build_id;
} pp_mapping_t;

/* Interning map entries reserved before the samples, at most (pprof_decode). */
#define PP_RESERVE_MAX 65536u

typedef struct {
	slice_t name, file;
	/* The frame this function gave with mapping frame_mapping, + 1 (0:
	 * none yet): a function's locations share it, without hashing its
	 * strings again (resolve_location). */
	uint32_t frame1, frame_mapping;
} pp_function_t;

typedef struct {
	uint32_t mapping; /* index into mappings, MODEL_NONE when none */
	uint32_t first;   /* range in loc_frames */
	uint32_t count;   /* frames: lines with a function, or 1 */
	uint32_t fn_lines;
	uint8_t resolved;
} pp_location_t;

/* id -> table index of one pprof table (mapping, function, location): a
 * dense array when the ids are small (Go and most producers number them
 * 1..N), else a map keyed by id_key(). */
typedef struct {
	uint32_t *dense; /* dense[id], MODEL_NONE when absent; NULL: use map */
	uint64_t n_dense;
	u64map_t map;
} pp_idtab_t;

typedef struct {
	pb_src_t src; /* the input; errors with no path name "profile" */
	arena_t *scratch;
	const pprof_decode_opts_t *opts;
	model_batch_t *b;

	slice_t *strings;
	uint32_t n_strings;
	slice_t *type_msgs, *sample_msgs, *mapping_msgs, *location_msgs, *function_msgs;
	uint32_t n_types, n_samples, n_mappings, n_locations, n_functions;
	slice_t period_type_msg;
	int64_t period, time_nanos, duration_nanos;

	slice_t *type_name, *type_unit;
	slice_t period_type, period_unit;

	pp_mapping_t *mappings;
	pp_function_t *functions;
	pp_location_t *locations;
	uint64_t *ids; /* scratch: the ids of one table while it is parsed */
	pp_idtab_t mapping_ix, function_ix, location_ix;
	/* Per location, its range [first, first + count): the function index
	 * of each line with a function (MODEL_NONE for a location without),
	 * as parse_location read them; resolve_location turns the range into
	 * frame indexes in place. */
	uint32_t *loc_frames;
	size_t n_loc_frames, cap_loc_frames;

	/* Per-sample results, shared by every sample type. */
	uint32_t *sample_node;
	uint32_t *sample_attrset;
	int64_t *values; /* n_samples x n_types */

	/* Scratch reused by every sample. */
	uint32_t *stack_locs;
	size_t cap_stack_locs;
	uint32_t *stack_frames; /* LIMIT_STACK_DEPTH entries */
	/* The previous sample's stack, root first: prev_frames[j] and the node
	 * that ends at it, prev_nodes[j] (LIMIT_STACK_DEPTH entries each).
	 * Consecutive samples share most of their root side; those nodes are
	 * taken from here instead of interned again. */
	uint32_t *prev_frames, *prev_nodes;
	uint32_t n_prev;
	model_label_t labels[LIMIT_LABELS];
	char label_nums[LIMIT_LABELS][24];

	uint64_t frames_total; /* b->frames_written + this profile's frames */
	int frames_over;
} pp_dec_t;

/* Calls fn for each value of a repeated varint field, packed or not.
 * Always inlined: fn is then a direct call the compiler inlines, which the
 * samples' location ids (most of a profile's varints) need. */
typedef int (*varint_fn)(pp_dec_t *d, void *ctx, uint32_t k, uint64_t v, err_t *err);
static inline __attribute__((always_inline)) int read_repeated(pp_dec_t *d, pb_reader_t *r, int wt,
                                                               uint32_t *k, varint_fn fn, void *ctx,
                                                               const pb_path_t *p, const char *field,
                                                               err_t *err)
{
	pb_reader_t vals;
	uint64_t v;
	int rc;
	if (pb_read_packable(&d->src, r, wt, &vals, p, field, err) < 0)
		return -1;
	while ((rc = pb_next_packed(&d->src, &vals, &v, p, field, err)) == 1)
		if (fn(d, ctx, (*k)++, v, err) < 0)
			return -1;
	return rc;
}

/* Map key of a pprof id. Ids are chosen by the sender, so they are mixed
 * first: ids in arithmetic runs do not pile into one probe run of the map.
 * Not a stored identity. A bijection with 0 -> 0, so never 0 for an id
 * (ids are never 0). */
static inline uint64_t id_key(uint64_t id)
{
	return num_mix64(id);
}

static void *scratch_array(pp_dec_t *d, size_t n, size_t elem);

/* Builds t from ids[0..n) (ids[i] is the id of entry i, never 0); the last
 * entry with an id wins. Dense when the largest id is at most 2n + 64, so
 * the array stays within a small multiple of the table's input bytes. */
static void idtab_build(pp_dec_t *d, pp_idtab_t *t, const uint64_t *ids, uint32_t n)
{
	uint64_t max = 0;
	for (uint32_t i = 0; i < n; i++)
		if (ids[i] > max)
			max = ids[i];
	if (max <= (uint64_t)n * 2 + 64) {
		t->n_dense = max + 1;
		t->dense = scratch_array(d, (size_t)t->n_dense, sizeof *t->dense);
		memset(t->dense, 0xff, (size_t)t->n_dense * sizeof *t->dense); /* MODEL_NONE */
		for (uint32_t i = 0; i < n; i++)
			t->dense[ids[i]] = i;
		return;
	}
	for (uint32_t i = 0; i < n; i++)
		u64map_put(&t->map, id_key(ids[i]), i);
}

/* 1 and *ix set when id (not 0) is in t. */
static inline int idtab_get(const pp_idtab_t *t, uint64_t id, uint32_t *ix)
{
	if (t->dense) {
		if (id >= t->n_dense || t->dense[id] == MODEL_NONE)
			return 0;
		*ix = t->dense[id];
		return 1;
	}
	return u64map_get(&t->map, id_key(id), ix);
}

static int string_at(const pp_dec_t *d, uint64_t raw, slice_t *out, const pb_path_t *p, const char *field,
                     err_t *err)
{
	int64_t ix = (int64_t)raw;
	if (ix < 0 || (uint64_t)ix >= d->n_strings)
		return pb_fail(&d->src, err, 400, p, field,
		               "string index %" PRId64 " out of range (string_table has %" PRIu32 " entries)",
		               ix, d->n_strings);
	*out = d->strings[ix];
	return 0;
}

/* ---- Top level ---------------------------------------------------------- */

PB_SPEC(profile_spec, {1, PB_F_LEN, "sample_type"}, {2, PB_F_LEN, "sample"}, {3, PB_F_LEN, "mapping"},
        {4, PB_F_LEN, "location"}, {5, PB_F_LEN, "function"}, {6, PB_F_LEN, "string_table"},
        {7, PB_F_VARINT, "drop_frames"}, {8, PB_F_VARINT, "keep_frames"}, {9, PB_F_VARINT, "time_nanos"},
        {10, PB_F_VARINT, "duration_nanos"}, {11, PB_F_LEN, "period_type"}, {12, PB_F_VARINT, "period"},
        {13, PB_F_PVARINT, "comment"}, {14, PB_F_VARINT, "default_sample_type"},
        {15, PB_F_VARINT, "doc_url"});

/* What the single pass over the top level collects: the sub-messages of
 * fields 1..6 (sample_type, sample, mapping, location, function,
 * string_table) as slices, grown as they come (malloc'd; pprof_decode frees
 * them), and their counts. */
typedef struct {
	size_t n[16];
	slice_t *msgs[7];
	size_t cap[7];
	int string_scalars; /* 1: fields 7, 8, 13, 14 or 15 seen: their string indexes still need checking */
} pp_top_t;

static int check_comment(pp_dec_t *d, void *ctx, uint32_t k, uint64_t v, err_t *err)
{
	slice_t s;
	char field[32];
	if ((int64_t)v >= 0 && v < d->n_strings)
		return 0;
	snprintf(field, sizeof field, "comment[%" PRIu32 "]", k);
	return string_at(d, v, &s, NULL, field, err);
}

/* Counts entry s of table field num (1..6) and keeps it below the limit. */
static inline void keep_table_entry(pp_top_t *top, uint32_t num, slice_t s, uint32_t max_rows)
{
	size_t k = top->n[num]++;
	size_t keep = num == 1 ? LIMIT_SAMPLE_TYPES : num == 2 ? max_rows : UINT32_MAX / 2;
	if (k >= keep)
		return;
	if (k >= top->cap[num])
		top->msgs[num] = xgrow(top->msgs[num], &top->cap[num], k + 1, sizeof(slice_t));
	top->msgs[num][k] = s;
}

/* One pass over the top level: checks the framing, collects the tables into
 * top and reads the scalars. Past the sample-type and row limits entries are
 * only counted (the caller refuses the profile), so what is kept stays
 * bounded by the limits, as the counting pass this replaced guaranteed.
 * String indexes of scalars are checked later (check_top_strings), once the
 * string table is complete. */
static int scan_top(pp_dec_t *d, slice_t data, pp_top_t *top, uint32_t max_rows, err_t *err)
{
	pb_reader_t r = pb_reader_make(data);
	const pb_field_t *f;
	int wt;
	int rc;
	uint64_t v;
	slice_t s;
	for (;;) {
		/* Fast path, most of a profile: a table entry (fields 1..6,
		 * length-delimited, a one-byte key) whose length is sound. */
		const uint8_t *q = r.p;
		if (q < r.end && (q[0] & 7) == PB_LEN && q[0] >= (1 << 3 | PB_LEN) &&
		    q[0] <= (6 << 3 | PB_LEN)) {
			r.p = q + 1;
			if (pb_bytes(&r, &s) == 0) {
				keep_table_entry(top, q[0] >> 3, s, max_rows);
				continue;
			}
			r.p = q; /* the general path reports it */
		}
		if ((rc = pb_next(&d->src, &r, &profile_spec, NULL, &f, &wt, err)) != 1)
			break;
		uint32_t num = f->num;
		if (num == 13) {
			if (pb_skip(&r, wt) < 0)
				return pb_fail(&d->src, err, 400, NULL, f->name,
				               "truncated or malformed value");
			top->string_scalars = 1;
			continue;
		}
		if (f->kind == PB_F_LEN) {
			pb_path_t p = {NULL, f->name, (uint32_t)top->n[num]};
			if (num == 11)
				p.ix = PB_NOIX;
			if (pb_read_len(&d->src, &r, &s, &p, NULL, err) < 0)
				return -1;
			if (num == 11) {
				d->period_type_msg = s;
				continue;
			}
			keep_table_entry(top, num, s, max_rows);
			continue;
		}
		if (pb_read_varint(&d->src, &r, &v, NULL, f->name, err) < 0)
			return -1;
		switch (num) {
		case 9:
			d->time_nanos = (int64_t)v;
			break;
		case 10:
			d->duration_nanos = (int64_t)v;
			break;
		case 12:
			d->period = (int64_t)v;
			break;
		default: /* 7, 8, 14, 15 */
			top->string_scalars = 1;
			break;
		}
	}
	return rc;
}

/* Second look at the top level, only when scan_top saw string-index scalars
 * (drop_frames, keep_frames, comment, default_sample_type, doc_url): checks
 * each occurrence in order. The framing was checked by scan_top. */
static int check_top_strings(pp_dec_t *d, slice_t data, err_t *err)
{
	pb_reader_t r = pb_reader_make(data);
	const pb_field_t *f;
	int wt;
	int rc;
	uint32_t n_comment = 0;
	uint64_t v;
	slice_t s;
	while ((rc = pb_next(&d->src, &r, &profile_spec, NULL, &f, &wt, err)) == 1) {
		switch (f->num) {
		case 13:
			if (read_repeated(d, &r, wt, &n_comment, check_comment, NULL, NULL, f->name, err) < 0)
				return -1;
			break;
		case 7:
		case 8:
		case 14:
		case 15:
			if (pb_read_varint(&d->src, &r, &v, NULL, f->name, err) < 0 ||
			    string_at(d, v, &s, NULL, f->name, err) < 0)
				return -1;
			break;
		default:
			if (pb_skip(&r, wt) < 0)
				return pb_fail(&d->src, err, 400, NULL, f->name,
				               "truncated or malformed value");
			break;
		}
	}
	return rc;
}

/* ---- Tables -------------------------------------------------------------- */

PB_SPEC(value_type_spec, {1, PB_F_VARINT, "type"}, {2, PB_F_VARINT, "unit"});

/* Reads a message whose known fields are all varints, numbered 1..n in
 * spec: vals[num] is the last value of field num, 0 when absent. vals has
 * room for n + 1. */
static int read_scalars(const pp_dec_t *d, slice_t msg, const pb_spec_t *spec, const pb_path_t *p,
                        uint64_t *vals, err_t *err)
{
	pb_reader_t r = pb_reader_make(msg);
	const pb_field_t *f;
	int wt, rc;
	for (;;) {
		/* Fast path, nearly every field of a Line or Function: a
		 * one-byte key of a known field, then its value. */
		const uint8_t *q = r.p;
		uint32_t num = q < r.end ? q[0] >> 3 : 0;
		if (q < r.end && (q[0] & 0x87) == PB_VARINT && num - 1 < spec->n) {
			r.p = q + 1;
			if (pb_varint(&r, &vals[num]) == 0)
				continue;
			r.p = q; /* the general path reports it */
		}
		if ((rc = pb_next(&d->src, &r, spec, p, &f, &wt, err)) != 1)
			return rc;
		if (pb_read_varint(&d->src, &r, &vals[f->num], p, f->name, err) < 0)
			return -1;
	}
}

static int parse_value_type(pp_dec_t *d, slice_t msg, const pb_path_t *p, slice_t *type, slice_t *unit,
                            err_t *err)
{
	uint64_t v[3] = {0};
	if (read_scalars(d, msg, &value_type_spec, p, v, err) < 0 ||
	    string_at(d, v[1], type, p, "type", err) < 0 || string_at(d, v[2], unit, p, "unit", err) < 0)
		return -1;
	return 0;
}

PB_SPEC(mapping_spec, {1, PB_F_VARINT, "id"}, {2, PB_F_VARINT, "memory_start"},
        {3, PB_F_VARINT, "memory_limit"}, {4, PB_F_VARINT, "file_offset"}, {5, PB_F_VARINT, "filename"},
        {6, PB_F_VARINT, "build_id"}, {7, PB_F_VARINT, "has_functions"}, {8, PB_F_VARINT, "has_filenames"},
        {9, PB_F_VARINT, "has_line_numbers"}, {10, PB_F_VARINT, "has_inline_frames"});

static int parse_mapping(pp_dec_t *d, uint32_t i, err_t *err)
{
	pb_path_t p = {NULL, "mapping", i};
	uint64_t v[11] = {0};
	pp_mapping_t *m = &d->mappings[i];
	if (read_scalars(d, d->mapping_msgs[i], &mapping_spec, &p, v, err) < 0 ||
	    string_at(d, v[5], &m->file, &p, "filename", err) < 0 ||
	    string_at(d, v[6], &m->build_id, &p, "build_id", err) < 0)
		return -1;
	if (v[1] == 0)
		return pb_fail(&d->src, err, 400, &p, "id", "mapping id 0 is reserved (ids start at 1)");
	d->ids[i] = v[1];
	return 0;
}

PB_SPEC(function_spec, {1, PB_F_VARINT, "id"}, {2, PB_F_VARINT, "name"}, {3, PB_F_VARINT, "system_name"},
        {4, PB_F_VARINT, "filename"}, {5, PB_F_VARINT, "start_line"});

static int parse_function(pp_dec_t *d, uint32_t i, err_t *err)
{
	pb_path_t p = {NULL, "function", i};
	uint64_t v[6] = {0};
	slice_t system_name;
	pp_function_t *fn = &d->functions[i];
	if (read_scalars(d, d->function_msgs[i], &function_spec, &p, v, err) < 0 ||
	    string_at(d, v[2], &fn->name, &p, "name", err) < 0 ||
	    string_at(d, v[3], &system_name, &p, "system_name", err) < 0 ||
	    string_at(d, v[4], &fn->file, &p, "filename", err) < 0)
		return -1;
	if (v[1] == 0)
		return pb_fail(&d->src, err, 400, &p, "id", "function id 0 is reserved (ids start at 1)");
	if (fn->name.n == 0)
		fn->name = system_name;
	d->ids[i] = v[1];
	return 0;
}

PB_SPEC(location_spec, {1, PB_F_VARINT, "id"}, {2, PB_F_VARINT, "mapping_id"}, {3, PB_F_VARINT, "address"},
        {4, PB_F_LEN, "line"}, {5, PB_F_VARINT, "is_folded"});
PB_SPEC(line_spec, {1, PB_F_VARINT, "function_id"}, {2, PB_F_VARINT, "line"}, {3, PB_F_VARINT, "column"});

/* Reads a Line; *fn = index into functions, or MODEL_NONE for function_id 0. */
static int parse_line(pp_dec_t *d, slice_t msg, const pb_path_t *p, uint32_t *fn, err_t *err)
{
	uint64_t v[4] = {0};
	if (read_scalars(d, msg, &line_spec, p, v, err) < 0)
		return -1;
	*fn = MODEL_NONE;
	if (v[1] && !idtab_get(&d->function_ix, v[1], fn))
		return pb_fail(&d->src, err, 400, p, "function_id",
		               "function id %" PRIu64 " not found (profile has %" PRIu32 " functions)", v[1],
		               d->n_functions);
	return 0;
}

static inline void loc_fn_push(pp_dec_t *d, uint32_t fn)
{
	if (d->n_loc_frames == d->cap_loc_frames)
		d->loc_frames =
		    xgrow(d->loc_frames, &d->cap_loc_frames, d->n_loc_frames + 1, sizeof *d->loc_frames);
	d->loc_frames[d->n_loc_frames++] = fn;
}

/* Checks a location, counts its frames and records the function of each
 * line; frames are interned only when a sample uses it (resolve_location). */
static int parse_location(pp_dec_t *d, uint32_t i, err_t *err)
{
	pb_path_t p = {NULL, "location", i};
	pp_location_t *loc = &d->locations[i];
	pb_reader_t r = pb_reader_make(d->location_msgs[i]);
	const pb_field_t *f;
	int wt, rc;
	uint64_t v, id = 0, mapping_id = 0;
	uint32_t n_lines = 0;
	loc->first = (uint32_t)d->n_loc_frames; /* each line is >= 2 input bytes: fits */
	while ((rc = pb_next(&d->src, &r, &location_spec, &p, &f, &wt, err)) == 1) {
		if (f->num == 4) {
			slice_t s;
			pb_path_t lp = {&p, "line", n_lines++};
			uint32_t fn;
			if (pb_read_len(&d->src, &r, &s, &p, f->name, err) < 0 ||
			    parse_line(d, s, &lp, &fn, err) < 0)
				return -1;
			if (fn != MODEL_NONE) {
				loc_fn_push(d, fn);
				loc->fn_lines++;
			}
			continue;
		}
		if (pb_read_varint(&d->src, &r, &v, &p, f->name, err) < 0)
			return -1;
		if (f->num == 1)
			id = v;
		else if (f->num == 2)
			mapping_id = v;
	}
	if (rc < 0)
		return -1;
	if (id == 0)
		return pb_fail(&d->src, err, 400, &p, "id", "location id 0 is reserved (ids start at 1)");
	loc->mapping = MODEL_NONE;
	if (mapping_id && !idtab_get(&d->mapping_ix, mapping_id, &loc->mapping))
		return pb_fail(&d->src, err, 400, &p, "mapping_id",
		               "mapping id %" PRIu64 " not found (profile has %" PRIu32 " mappings)",
		               mapping_id, d->n_mappings);
	loc->count = loc->fn_lines ? loc->fn_lines : 1;
	if (!loc->fn_lines)
		loc_fn_push(d, MODEL_NONE);
	d->ids[i] = id;
	return 0;
}

static const char native_kind[] = "native";

/* Turns a location's range of loc_frames from function indexes into frame
 * indexes (interned), leaf first. */
static void resolve_location(pp_dec_t *d, uint32_t li)
{
	pp_location_t *loc = &d->locations[li];
	if (loc->resolved)
		return;
	loc->resolved = 1;
	model_frame_t fr = {0};
	if (loc->mapping != MODEL_NONE) {
		fr.binary = d->mappings[loc->mapping].file;
		fr.build_id = d->mappings[loc->mapping].build_id;
	}
	uint32_t *out = &d->loc_frames[loc->first];
	if (loc->fn_lines == 0) {
		fr.kind = slice_make(native_kind, sizeof native_kind - 1);
		fr.unsymbolized = 1;
		out[0] = model_frame_intern(d->b, &fr);
		return;
	}
	for (uint32_t k = 0; k < loc->fn_lines; k++) {
		pp_function_t *func = &d->functions[out[k]];
		if (!func->frame1 || func->frame_mapping != loc->mapping) {
			fr.name = func->name;
			fr.file = func->file;
			func->frame1 = model_frame_intern(d->b, &fr) + 1;
			func->frame_mapping = loc->mapping;
		}
		out[k] = func->frame1 - 1;
	}
}

/* ---- Samples ------------------------------------------------------------- */

PB_SPEC(sample_spec, {1, PB_F_PVARINT, "location_id"}, {2, PB_F_PVARINT, "value"}, {3, PB_F_LEN, "label"});
PB_SPEC(label_spec, {1, PB_F_VARINT, "key"}, {2, PB_F_VARINT, "str"}, {3, PB_F_VARINT, "num"},
        {4, PB_F_VARINT, "num_unit"});

typedef struct {
	uint32_t index; /* sample index */
	uint32_t n_locs;
	uint64_t depth;
} pp_sample_ctx_t;

static __attribute__((cold, noinline)) int location_id_missing(pp_dec_t *d, uint32_t sample, uint32_t k,
                                                               uint64_t id, err_t *err)
{
	pb_path_t p = {NULL, "sample", sample};
	char field[40];
	snprintf(field, sizeof field, "location_id[%" PRIu32 "]", k);
	return pb_fail(&d->src, err, 400, &p, field,
	               "location id %" PRIu64 " not found (profile has %" PRIu32 " locations)", id,
	               d->n_locations);
}

static inline int add_location_id(pp_dec_t *d, void *ctx, uint32_t k, uint64_t id, err_t *err)
{
	pp_sample_ctx_t *c = ctx;
	uint32_t li;
	if (!id || !idtab_get(&d->location_ix, id, &li))
		return location_id_missing(d, c->index, k, id, err);
	if (c->n_locs >= d->cap_stack_locs)
		d->stack_locs =
		    xgrow(d->stack_locs, &d->cap_stack_locs, (size_t)c->n_locs + 1, sizeof *d->stack_locs);
	d->stack_locs[c->n_locs++] = li;
	c->depth += d->locations[li].count;
	return 0;
}

static inline int add_value(pp_dec_t *d, void *ctx, uint32_t k, uint64_t v, err_t *err)
{
	pp_sample_ctx_t *c = ctx;
	if (k < d->n_types)
		d->values[(size_t)c->index * d->n_types + k] = (int64_t)v;
	return 0;
}

/* Reads one Label into labels[*n] (when it carries a value). */
static int parse_label(pp_dec_t *d, slice_t msg, const pb_path_t *p, uint32_t *n, err_t *err)
{
	uint64_t v[5] = {0};
	slice_t key, str, unit;
	if (read_scalars(d, msg, &label_spec, p, v, err) < 0 || string_at(d, v[1], &key, p, "key", err) < 0 ||
	    string_at(d, v[2], &str, p, "str", err) < 0 || string_at(d, v[4], &unit, p, "num_unit", err) < 0)
		return -1;
	/* Go's rule: a string label when str is set, else numeric when num or
	 * num_unit is; a label with neither (or no key) carries nothing. */
	if (!v[1] || (!v[2] && !v[3] && !v[4]))
		return 0;
	if (*n >= LIMIT_LABELS) {
		(*n)++;
		return 0;
	}
	model_label_t *l = &d->labels[*n];
	l->key = key;
	if (v[2]) {
		l->value = str;
	} else {
		l->value = wire_i64_text(d->label_nums[*n], (int64_t)v[3]);
	}
	(*n)++;
	return 0;
}

static int parse_sample(pp_dec_t *d, uint32_t i, err_t *err)
{
	pb_path_t p = {NULL, "sample", i};
	pb_reader_t r = pb_reader_make(d->sample_msgs[i]);
	const pb_field_t *f;
	int wt, rc;
	pp_sample_ctx_t c = {i, 0, 0};
	uint32_t n_values = 0, n_loc_ids = 0, n_label_msgs = 0, n_labels = 0;
	while ((rc = pb_next(&d->src, &r, &sample_spec, &p, &f, &wt, err)) == 1) {
		if (f->num == 1) {
			if (read_repeated(d, &r, wt, &n_loc_ids, add_location_id, &c, &p, f->name, err) < 0)
				return -1;
		} else if (f->num == 2) {
			if (read_repeated(d, &r, wt, &n_values, add_value, &c, &p, f->name, err) < 0)
				return -1;
		} else {
			slice_t s;
			pb_path_t lp = {&p, "label", n_label_msgs++};
			if (pb_read_len(&d->src, &r, &s, &p, f->name, err) < 0 ||
			    parse_label(d, s, &lp, &n_labels, err) < 0)
				return -1;
		}
	}
	if (rc < 0)
		return -1;
	if (n_values != d->n_types)
		return pb_fail(&d->src, err, 400, &p, "value",
		               "%" PRIu32 " values but the profile has %" PRIu32 " sample types", n_values,
		               d->n_types);
	if (n_labels > LIMIT_LABELS)
		return pb_fail(&d->src, err, 413, &p, "label",
		               "sample has %" PRIu32 " labels; the limit is %u", n_labels, LIMIT_LABELS);

	uint64_t depth = c.depth < LIMIT_STACK_DEPTH ? c.depth : LIMIT_STACK_DEPTH;
	d->frames_total += depth;
	if (d->frames_total > LIMIT_REQUEST_FRAMES)
		d->frames_over = 1;
	d->sample_node[i] = MODEL_NONE;
	d->sample_attrset[i] = 0;
	if (d->frames_over)
		return 0; /* over the limit: only count on */

	/* Leaf-first frames of the whole stack, cut at the depth limit. No
	 * locations (Go's goroutine profile has such a sample): node MODEL_NONE,
	 * the empty stack, whose value counts at the root as go tool pprof
	 * counts it. A location always gives a frame (no lines: unsymbolized). */
	uint32_t n = 0;
	for (uint32_t k = 0; k < c.n_locs && n < depth; k++) {
		uint32_t li = d->stack_locs[k];
		resolve_location(d, li);
		const pp_location_t *loc = &d->locations[li];
		for (uint32_t j = 0; j < loc->count && n < depth; j++)
			d->stack_frames[n++] = d->loc_frames[loc->first + j];
	}
	/* Interned root first; the part shared with the previous sample's
	 * stack is that sample's nodes (a node is a function of its path). */
	uint32_t j = 0;
	while (j < n && j < d->n_prev && d->prev_frames[j] == d->stack_frames[n - 1 - j])
		j++;
	uint32_t node = j ? d->prev_nodes[j - 1] : MODEL_NONE;
	for (; j < n; j++) {
		uint32_t frame = d->stack_frames[n - 1 - j];
		node = model_node_intern(d->b, node, frame);
		d->prev_frames[j] = frame;
		d->prev_nodes[j] = node;
	}
	d->n_prev = n;
	d->sample_node[i] = node;
	d->sample_attrset[i] = n_labels ? model_attrset_intern(d->b, d->labels, n_labels) : 0;
	return 0;
}

/* ---- Profiles ------------------------------------------------------------ */

static int is_samples_count(slice_t type, slice_t unit)
{
	return (slice_eq_cstr(type, "samples") || slice_eq_cstr(type, "sample")) &&
	       slice_eq_cstr(unit, "count");
}

static void emit_profiles(pp_dec_t *d)
{
	const pprof_decode_opts_t *o = d->opts;
	model_batch_t *b = d->b;
	int has_cpu_ns = 0;
	for (uint32_t t = 0; t < d->n_types; t++)
		if (slice_eq_cstr(d->type_name[t], "cpu") && slice_eq_cstr(d->type_unit[t], "nanoseconds"))
			has_cpu_ns = 1;
	int64_t time_ns = o->time_ns ? o->time_ns : d->time_nanos ? d->time_nanos : o->now_ns;
	int64_t duration_ns = o->duration_ns ? o->duration_ns : d->duration_nanos;
	/* Every type has the same (node, attrset) keys: order the samples once,
	 * add them in that order, and model_profile_finish need not sort. */
	uint32_t n = d->n_samples;
	model_sample_t *keys = scratch_array(d, n, sizeof *keys);
	uint32_t *perm = scratch_array(d, n, sizeof *perm);
	for (uint32_t s = 0; s < n; s++)
		keys[s] = (model_sample_t){d->sample_node[s], d->sample_attrset[s], 0, 0};
	model_samples_order(keys, n, perm);
	for (uint32_t t = 0; t < d->n_types; t++) {
		model_profile_t *p = model_profile_add(b);
		model_profile_set_type(b, p, d->type_name[t], d->type_unit[t], d->period_type, d->period_unit,
		                       d->period);
		model_profile_set_service(b, p, o->service);
		for (uint32_t l = 0; l < o->n_labels; l++)
			model_profile_add_label(b, p, o->labels[l].key, o->labels[l].value);
		p->aggregation = model_aggregation_of(d->type_name[t]);
		p->cpu_alias = !has_cpu_ns && is_samples_count(d->type_name[t], d->type_unit[t]) &&
		               slice_eq_cstr(d->period_type, "cpu") &&
		               slice_eq_cstr(d->period_unit, "nanoseconds");
		p->time_ns = time_ns;
		p->duration_ns = duration_ns;
		/* Room for all of them at once: one allocation instead of a doubling chain. */
		b->samples = xgrow(b->samples, &b->cap_samples, (size_t)b->n_samples + n, sizeof *b->samples);
		for (uint32_t k = 0; k < n; k++) {
			uint32_t s = perm[k];
			model_sample_add(b, p, d->sample_node[s], d->sample_attrset[s],
			                 d->values[(size_t)s * d->n_types + t], 0);
		}
		model_profile_finish(b, p);
	}
}

static void *scratch_array(pp_dec_t *d, size_t n, size_t elem)
{
	return arena_calloc(d->scratch, (n ? n : 1) * elem);
}

/* ---- Scratch kept per thread ---------------------------------------------- */

/* What a decode needs besides the batch, kept by each thread between its
 * decodes: a steady stream of profiles then allocates none of it (the
 * allocations were ~45 a decode, a tenth of a worker's time with the
 * frees). Arrays that grew past PP_KEEP_BYTES in all are freed after the
 * decode that grew them, so one large profile does not pin its memory. */
#define PP_KEEP_BYTES (1u << 20)

typedef struct {
	arena_t *arena;   /* reset after each decode: one block kept */
	slice_t *msgs[7]; /* pp_top_t's tables */
	size_t cap[7];
	uint32_t *loc_frames, *stack_locs;
	size_t cap_loc_frames, cap_stack_locs;
	/* pp_dec_t's stack_frames, prev_frames, prev_nodes. */
	uint32_t stacks[3][LIMIT_STACK_DEPTH];
} pp_keep_t;

static pthread_key_t keep_key;
static pthread_once_t keep_once = PTHREAD_ONCE_INIT;

static void keep_arrays_free(pp_keep_t *k)
{
	for (int f = 0; f < 7; f++) {
		free(k->msgs[f]);
		k->msgs[f] = NULL;
		k->cap[f] = 0;
	}
	free(k->loc_frames);
	free(k->stack_locs);
	k->loc_frames = k->stack_locs = NULL;
	k->cap_loc_frames = k->cap_stack_locs = 0;
}

static void keep_free(void *p)
{
	pp_keep_t *k = p;
	keep_arrays_free(k);
	arena_free(k->arena);
	free(k);
}

static void keep_key_make(void)
{
	xpthread_key_create(&keep_key, keep_free);
}

/* This thread's scratch, made at its first decode, freed when it exits. */
static pp_keep_t *keep_get(void)
{
	pthread_once(&keep_once, keep_key_make);
	pp_keep_t *k = pthread_getspecific(keep_key);
	if (!k) {
		k = xcalloc(1, sizeof *k);
		k->arena = arena_new();
		xpthread_setspecific(keep_key, k);
	}
	return k;
}

/* Takes the arrays back from a finished decode. */
static void keep_put(pp_keep_t *k, pp_dec_t *d, pp_top_t *top)
{
	size_t bytes = (d->cap_loc_frames + d->cap_stack_locs) * sizeof(uint32_t);
	for (int f = 0; f < 7; f++) {
		k->msgs[f] = top->msgs[f];
		k->cap[f] = top->cap[f];
		bytes += k->cap[f] * sizeof(slice_t);
	}
	k->loc_frames = d->loc_frames;
	k->cap_loc_frames = d->cap_loc_frames;
	k->stack_locs = d->stack_locs;
	k->cap_stack_locs = d->cap_stack_locs;
	if (bytes > PP_KEEP_BYTES)
		keep_arrays_free(k);
	arena_reset(k->arena);
}

int pprof_decode(slice_t data, const pprof_decode_opts_t *opts, model_batch_t *b, err_t *err)
{
	pp_keep_t *k = keep_get();
	pp_dec_t dec = {0}, *d = &dec;
	d->src = (pb_src_t){data.p, "profile"};
	d->opts = opts;
	d->b = b;
	d->scratch = k->arena;
	d->loc_frames = k->loc_frames;
	d->cap_loc_frames = k->cap_loc_frames;
	d->stack_locs = k->stack_locs;
	d->cap_stack_locs = k->cap_stack_locs;
	u64map_init(&d->mapping_ix.map);
	u64map_init(&d->function_ix.map);
	u64map_init(&d->location_ix.map);
	int rc = -1;
	pp_top_t top;
	memset(&top, 0, sizeof top);
	for (int f = 0; f < 7; f++) {
		top.msgs[f] = k->msgs[f];
		top.cap[f] = k->cap[f];
	}
	uint32_t max_rows = opts->max_rows ? opts->max_rows : LIMIT_SAMPLE_ROWS;

	/* One pass; limits are checked before anything is sized from them. */
	if (scan_top(d, data, &top, max_rows, err) < 0)
		goto out;
	for (int f = 1; f <= 6; f++)
		if (top.n[f] > UINT32_MAX / 2) {
			err_set(err, 413, "profile has %zu %s entries", top.n[f], profile_spec.f[f - 1].name);
			goto out;
		}
	if (top.n[1] > LIMIT_SAMPLE_TYPES) {
		err_set(err, 413, "profile has %zu sample types; the limit is %u", top.n[1],
		        LIMIT_SAMPLE_TYPES);
		goto out;
	}
	if (top.n[2] > max_rows) {
		err_set(err, 413,
		        "profile has %zu sample rows; the limit is %" PRIu32 " (maxDecodedSampleRows)",
		        top.n[2], max_rows);
		goto out;
	}
	if (top.n[1] == 0) {
		err_set(err, 400, "profile has no sample_type: not a pprof profile, or an empty one");
		goto out;
	}
	if (top.n[6] == 0) {
		err_set(err, 400, "string_table is empty: its entry 0 must be the empty string");
		goto out;
	}
	d->n_types = (uint32_t)top.n[1];
	d->n_samples = (uint32_t)top.n[2];
	d->n_mappings = (uint32_t)top.n[3];
	d->n_locations = (uint32_t)top.n[4];
	d->n_functions = (uint32_t)top.n[5];
	d->n_strings = (uint32_t)top.n[6];
	d->type_msgs = top.msgs[1];
	d->sample_msgs = top.msgs[2];
	d->mapping_msgs = top.msgs[3];
	d->location_msgs = top.msgs[4];
	d->function_msgs = top.msgs[5];
	d->strings = top.msgs[6];

	/* The string table is complete: scalar string indexes can be checked. */
	if (top.string_scalars && check_top_strings(d, data, err) < 0)
		goto out;
	if (d->strings[0].n != 0) {
		err_set(err, 400, "string_table[0]: must be the empty string (is %zu bytes)",
		        d->strings[0].n);
		goto out;
	}

	d->type_name = scratch_array(d, d->n_types, sizeof(slice_t));
	d->type_unit = scratch_array(d, d->n_types, sizeof(slice_t));
	for (uint32_t t = 0; t < d->n_types; t++) {
		pb_path_t p = {NULL, "sample_type", t};
		if (parse_value_type(d, d->type_msgs[t], &p, &d->type_name[t], &d->type_unit[t], err) < 0)
			goto out;
	}
	if (d->period_type_msg.p) {
		pb_path_t p = {NULL, "period_type", PB_NOIX};
		if (parse_value_type(d, d->period_type_msg, &p, &d->period_type, &d->period_unit, err) < 0) {
			goto out;
		}
	}
	uint32_t max_table = d->n_mappings > d->n_functions ? d->n_mappings : d->n_functions;
	if (d->n_locations > max_table)
		max_table = d->n_locations;
	d->ids = scratch_array(d, max_table, sizeof *d->ids);
	d->mappings = scratch_array(d, d->n_mappings, sizeof *d->mappings);
	for (uint32_t i = 0; i < d->n_mappings; i++)
		if (parse_mapping(d, i, err) < 0)
			goto out;
	idtab_build(d, &d->mapping_ix, d->ids, d->n_mappings);
	d->functions = scratch_array(d, d->n_functions, sizeof *d->functions);
	for (uint32_t i = 0; i < d->n_functions; i++)
		if (parse_function(d, i, err) < 0)
			goto out;
	idtab_build(d, &d->function_ix, d->ids, d->n_functions);
	d->locations = scratch_array(d, d->n_locations, sizeof *d->locations);
	for (uint32_t i = 0; i < d->n_locations; i++)
		if (parse_location(d, i, err) < 0)
			goto out;
	idtab_build(d, &d->location_ix, d->ids, d->n_locations);
	uint64_t n_loc_frames = d->n_loc_frames;
	/* At most a frame per location line; nodes: as many, a guess (stacks
	 * share most of their nodes) that the map outgrows when wrong, and no
	 * more than the samples' stacks could make. Capped: a reservation
	 * only saves rehashes, and a small body must not claim a large map
	 * (8 M lines of one function are one frame). */
	uint64_t node_bound = (uint64_t)d->n_samples * LIMIT_STACK_DEPTH;
	uint64_t frames_want = n_loc_frames < PP_RESERVE_MAX ? n_loc_frames : PP_RESERVE_MAX;
	model_batch_reserve(b, frames_want, frames_want < node_bound ? frames_want : node_bound);

	d->sample_node = scratch_array(d, d->n_samples, sizeof *d->sample_node);
	d->sample_attrset = scratch_array(d, d->n_samples, sizeof *d->sample_attrset);
	d->values = scratch_array(d, (size_t)d->n_samples * d->n_types, sizeof *d->values);
	/* Written before read (parse_sample): not zeroed. */
	d->stack_frames = k->stacks[0];
	d->prev_frames = k->stacks[1];
	d->prev_nodes = k->stacks[2];
	d->frames_total = b->frames_written;
	for (uint32_t i = 0; i < d->n_samples; i++)
		if (parse_sample(d, i, err) < 0)
			goto out;
	if (d->frames_over) {
		err_set(err, 413,
		        "request writes out %" PRIu64 " frames; the limit is %u: lower the batch size",
		        d->frames_total, LIMIT_REQUEST_FRAMES);
		goto out;
	}
	b->frames_written = d->frames_total;
	emit_profiles(d);
	rc = 0;
out:
	u64map_free(&d->mapping_ix.map);
	u64map_free(&d->function_ix.map);
	u64map_free(&d->location_ix.map);
	keep_put(k, d, &top);
	return rc;
}

uint32_t pprof_sample_types(slice_t data, slice_t *types, uint32_t max)
{
	uint64_t idx[LIMIT_SAMPLE_TYPES];
	uint32_t n = 0, field;
	int wt;
	slice_t s;
	if (max > LIMIT_SAMPLE_TYPES)
		max = LIMIT_SAMPLE_TYPES;
	/* Pass 1: the string indices of sample_type (1) [ValueType.type (1)]. */
	pb_reader_t r = pb_reader_make(data);
	while (!pb_done(&r) && n < max && pb_key(&r, &field, &wt) == 0) {
		if (field == 1 && wt == PB_LEN) {
			if (pb_bytes(&r, &s) < 0)
				break;
			idx[n++] = pb_find_varint(s, 1);
		} else if (pb_skip(&r, wt) < 0) {
			break;
		}
	}
	for (uint32_t i = 0; i < n; i++)
		types[i] = (slice_t){NULL, 0};
	/* Pass 2: string_table (6) entries those indices name. */
	uint64_t k = 0;
	r = pb_reader_make(data);
	while (n && !pb_done(&r) && pb_key(&r, &field, &wt) == 0) {
		if (field == 6 && wt == PB_LEN) {
			if (pb_bytes(&r, &s) < 0)
				break;
			for (uint32_t i = 0; i < n; i++)
				if (idx[i] == k)
					types[i] = s;
			k++;
		} else if (pb_skip(&r, wt) < 0) {
			break;
		}
	}
	return n;
}
