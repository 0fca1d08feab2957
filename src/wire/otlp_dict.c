/* The OTLP ProfilesDictionary: loading its tables as slices, checking every
 * entry and index, and turning locations and stacks into interned frames and
 * stack nodes on first use. Also the decoder's shared index check and
 * packed-index reader (fields and error paths are wire/pb.h's). Requests,
 * profiles and samples are otlp_decode.c's. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "wire/numtext.h"
#include "wire/otlp_int.h"

/* ---- Errors and indices -------------------------------------------------- */

const pb_path_t ot_dictionary_path = {NULL, "dictionary", PB_NOIX};

static const char *const table_names[T_COUNT] = {"mapping_table", "location_table", "function_table",
                                                 "link_table",    "string_table",   "attribute_table",
                                                 "stack_table"};

int ot_check_index(const ot_dec_t *d, int64_t ix, int table, const pb_path_t *p, const char *field,
                   err_t *err)
{
	if (ix >= 0 && ix < (int64_t)d->n[table])
		return 0;
	return pb_fail(&d->src, err, 400, p, field,
	               "index %" PRId64 " out of range for %s (%" PRIu32 " entries)%s%s", ix,
	               table_names[table], d->n[table],
	               d->n[table] == 0 && ix == 0 ? ": its entry 0 must exist" : "", OT_INDEX_HINT);
}

int ot_read_packed_varint(const ot_dec_t *d, pb_reader_t *r, int wt, uint64_t **arr, size_t *n, size_t *cap,
                          const pb_path_t *p, const char *field, err_t *err)
{
	pb_reader_t vals;
	uint64_t v;
	int rc;
	if (pb_read_packable(&d->src, r, wt, &vals, p, field, err) < 0)
		return -1;
	/* Each value takes at least one byte: room for all of them at once. */
	size_t most = (size_t)(vals.end - vals.p);
	if (*n + most > *cap)
		*arr = xgrow(*arr, cap, *n + most, sizeof **arr);
	while ((rc = pb_next_packed(&d->src, &vals, &v, p, field, err)) == 1)
		(*arr)[(*n)++] = v;
	return rc;
}

/* ---- Loading ------------------------------------------------------------- */

PB_SPEC(dict_spec, {1, PB_F_LEN, "mapping_table"}, {2, PB_F_LEN, "location_table"},
        {3, PB_F_LEN, "function_table"}, {4, PB_F_LEN, "link_table"}, {5, PB_F_LEN, "string_table"},
        {6, PB_F_LEN, "attribute_table"}, {7, PB_F_LEN, "stack_table"});
_Static_assert(PB_COUNTOF(dict_spec_fields) == T_COUNT, "a dictionary field per table, in table order");

int ot_dict_load(ot_dec_t *d, const slice_t *dicts, uint32_t n_dicts, err_t *err)
{
	const pb_path_t *root = &ot_dictionary_path;
	uint64_t count[T_COUNT] = {0};
	for (int pass = 0; pass < 2; pass++) {
		uint32_t fill[T_COUNT] = {0};
		for (uint32_t k = 0; k < n_dicts; k++) {
			pb_reader_t r = pb_reader_make(dicts[k]);
			const pb_field_t *f;
			int wt, rc;
			while ((rc = pb_next(&d->src, &r, &dict_spec, root, &f, &wt, err)) == 1) {
				int t = (int)f->num - 1;
				slice_t s;
				pb_path_t p = {root, f->name, pass ? fill[t] : (uint32_t)count[t]};
				if (pb_read_len(&d->src, &r, &s, &p, NULL, err) < 0)
					return -1;
				if (pass == 0)
					count[t]++;
				else
					d->tbl[t][fill[t]++] = s;
			}
			if (rc < 0)
				return -1;
		}
		if (pass == 0)
			for (int t = 0; t < T_COUNT; t++) {
				/* Every entry takes at least two bytes of a body bounded by
				 * LIMIT_DECODED_BYTES, so this only guards the type. */
				if (count[t] > UINT32_MAX / 4)
					return pb_fail(&d->src, err, 413, root, table_names[t],
					               "%" PRIu64 " entries", count[t]);
				d->n[t] = (uint32_t)count[t];
				d->tbl[t] =
				    arena_alloc(d->scratch, (count[t] ? count[t] : 1) * sizeof(slice_t));
			}
	}
	return 0;
}

/* ---- Attribute values ---------------------------------------------------- */

PB_SPEC(anyvalue_spec, {1, PB_F_LEN, "string_value"}, {2, PB_F_VARINT, "bool_value"},
        {3, PB_F_VARINT, "int_value"}, {4, PB_F_I64, "double_value"}, {5, PB_F_LEN, "array_value"},
        {6, PB_F_LEN, "kvlist_value"}, {7, PB_F_LEN, "bytes_value"},
        {8, PB_F_VARINT, "string_value_strindex"});
PB_SPEC(values_spec, {1, PB_F_LEN, "values"});
PB_SPEC(keyvalue_spec, {1, PB_F_LEN, "key"}, {2, PB_F_LEN, "value"}, {3, PB_F_VARINT, "key_strindex"});
PB_SPEC(kvunit_spec, {1, PB_F_VARINT, "key_strindex"}, {2, PB_F_LEN, "value"},
        {3, PB_F_VARINT, "unit_strindex"});

static int check_keyvalue(const ot_dec_t *d, slice_t msg, const pb_path_t *p, unsigned depth, err_t *err);

/* Checks an AnyValue; *kind is the field number of the value it holds (0:
 * none) and *v its scalar payload / slice. */
static int read_anyvalue(const ot_dec_t *d, slice_t msg, const pb_path_t *p, unsigned depth, int *kind,
                         uint64_t *v, slice_t *s, err_t *err)
{
	if (depth > LIMIT_OTLP_NESTING)
		return pb_fail(&d->src, err, 400, p, NULL, "values nested deeper than %u levels",
		               LIMIT_OTLP_NESTING);
	pb_reader_t r = pb_reader_make(msg);
	const pb_field_t *f;
	int wt, rc;
	*kind = 0;
	while ((rc = pb_next(&d->src, &r, &anyvalue_spec, p, &f, &wt, err)) == 1) {
		if (f->kind == PB_F_LEN) {
			if (pb_read_len(&d->src, &r, s, p, f->name, err) < 0)
				return -1;
			if (f->num == 5 || f->num == 6) {
				pb_path_t sub = {p, f->name, PB_NOIX};
				pb_reader_t ar = pb_reader_make(*s);
				const pb_field_t *af;
				int awt, arc;
				uint32_t i = 0;
				while ((arc = pb_next(&d->src, &ar, &values_spec, &sub, &af, &awt, err)) ==
				       1) {
					slice_t e;
					pb_path_t ep = {&sub, "values", i++};
					int k2;
					uint64_t v2;
					slice_t s2;
					if (pb_read_len(&d->src, &ar, &e, &ep, NULL, err) < 0)
						return -1;
					if (f->num == 5
					        ? read_anyvalue(d, e, &ep, depth + 1, &k2, &v2, &s2, err)
					        : check_keyvalue(d, e, &ep, depth + 1, err))
						return -1;
				}
				if (arc < 0)
					return -1;
			}
		} else if (f->kind == PB_F_I64) {
			if (pb_read_fixed64(&d->src, &r, v, p, f->name, err) < 0)
				return -1;
		} else {
			if (pb_read_varint(&d->src, &r, v, p, f->name, err) < 0)
				return -1;
			if (f->num == 8 && ot_check_index(d, (int64_t)*v, T_STRING, p, f->name, err) < 0)
				return -1;
		}
		*kind = (int)f->num;
	}
	return rc;
}

static int check_keyvalue(const ot_dec_t *d, slice_t msg, const pb_path_t *p, unsigned depth, err_t *err)
{
	pb_reader_t r = pb_reader_make(msg);
	const pb_field_t *f;
	int wt, rc;
	while ((rc = pb_next(&d->src, &r, &keyvalue_spec, p, &f, &wt, err)) == 1) {
		slice_t s;
		uint64_t v;
		int kind;
		if (f->num == 3) {
			if (pb_read_varint(&d->src, &r, &v, p, f->name, err) < 0 ||
			    ot_check_index(d, (int64_t)v, T_STRING, p, f->name, err) < 0)
				return -1;
		} else if (pb_read_len(&d->src, &r, &s, p, f->name, err) < 0) {
			return -1;
		} else if (f->num == 2) {
			pb_path_t vp = {p, "value", PB_NOIX};
			if (read_anyvalue(d, s, &vp, depth + 1, &kind, &v, &s, err) < 0)
				return -1;
		}
	}
	return rc;
}

/* Shortest "%g" text that reads back as the same double. */
static slice_t render_double(double x, char text[32])
{
	int n = snprintf(text, 32, "%.15g", x);
	if (strtod(text, NULL) != x)
		n = snprintf(text, 32, "%.17g", x);
	return slice_make(text, (size_t)n);
}

int ot_keyvalue(const ot_dec_t *d, slice_t msg, int table_entry, slice_t *key, slice_t *value, int *scalar,
                char text[32], const pb_path_t *p, err_t *err)
{
	pb_reader_t r = pb_reader_make(msg);
	const pb_field_t *f;
	int wt, rc, kind = 0;
	uint64_t v = 0, key_ix = 0;
	slice_t s = {0}, val = {0};
	*key = slice_make(NULL, 0);
	while ((rc = pb_next(&d->src, &r, table_entry ? &kvunit_spec : &keyvalue_spec, p, &f, &wt, err)) ==
	       1) {
		if (f->kind == PB_F_VARINT) {
			if (pb_read_varint(&d->src, &r, &v, p, f->name, err) < 0 ||
			    ot_check_index(d, (int64_t)v, T_STRING, p, f->name, err) < 0)
				return -1;
			if (f->num == (table_entry ? 1u : 3u))
				key_ix = v;
			continue;
		}
		if (pb_read_len(&d->src, &r, &s, p, f->name, err) < 0)
			return -1;
		if (f->num == 1)
			*key = s;
		else
			val = s;
	}
	if (rc < 0)
		return -1;
	if (key_ix)
		*key = d->tbl[T_STRING][key_ix];
	pb_path_t vp = {p, "value", PB_NOIX};
	if (read_anyvalue(d, val, &vp, 1, &kind, &v, &s, err) < 0)
		return -1;
	*value = slice_make(NULL, 0);
	switch (kind) {
	case 1:
	case 7: /* bytes: not a label value */
		*value = kind == 1 ? s : slice_make(NULL, 0);
		break;
	case 8:
		*value = d->tbl[T_STRING][v];
		break;
	case 2:
		*value = slice_cstr(v ? "true" : "false");
		break;
	case 3:
		*value = wire_i64_text(text, (int64_t)v);
		break;
	case 4: {
		double x;
		memcpy(&x, &v, sizeof x);
		*value = render_double(x, text);
		break;
	}
	default:
		break;
	}
	*scalar = value->n > 0;
	return 0;
}

/* ---- Checking the tables -------------------------------------------------- */

PB_SPEC(mapping_spec, {1, PB_F_VARINT, "memory_start"}, {2, PB_F_VARINT, "memory_limit"},
        {3, PB_F_VARINT, "file_offset"}, {4, PB_F_VARINT, "filename_strindex"},
        {5, PB_F_PVARINT, "attribute_indices"});
PB_SPEC(location_spec, {1, PB_F_VARINT, "mapping_index"}, {2, PB_F_VARINT, "address"}, {3, PB_F_LEN, "lines"},
        {4, PB_F_PVARINT, "attribute_indices"});
PB_SPEC(line_spec, {1, PB_F_VARINT, "function_index"}, {2, PB_F_VARINT, "line"}, {3, PB_F_VARINT, "column"});
PB_SPEC(function_spec, {1, PB_F_VARINT, "name_strindex"}, {2, PB_F_VARINT, "system_name_strindex"},
        {3, PB_F_VARINT, "filename_strindex"}, {4, PB_F_VARINT, "start_line"});
PB_SPEC(link_spec, {1, PB_F_LEN, "trace_id"}, {2, PB_F_LEN, "span_id"});
PB_SPEC(stack_spec, {1, PB_F_PVARINT, "location_indices"});

/* Reads a repeated index field occurrence and checks each value. */
static int check_indices(ot_dec_t *d, pb_reader_t *r, int wt, int table, const pb_path_t *p,
                         const char *field, err_t *err)
{
	d->n_u64s = 0;
	int rc = ot_read_packed_varint(d, r, wt, &d->u64s, &d->n_u64s, &d->cap_u64s, p, field, err);
	for (size_t i = 0; rc == 0 && i < d->n_u64s; i++)
		rc = ot_check_index(d, (int64_t)d->u64s[i], table, p, field, err);
	return rc;
}

static int check_function(ot_dec_t *d, uint32_t i, err_t *err)
{
	pb_path_t p = {&ot_dictionary_path, "function_table", i};
	pb_reader_t r = pb_reader_make(d->tbl[T_FUNCTION][i]);
	const pb_field_t *f;
	int wt, rc;
	uint64_t v, ix[5] = {0};
	while ((rc = pb_next(&d->src, &r, &function_spec, &p, &f, &wt, err)) == 1) {
		if (pb_read_varint(&d->src, &r, &v, &p, f->name, err) < 0)
			return -1;
		ix[f->num] = v;
	}
	if (rc < 0)
		return -1;
	for (uint32_t k = 1; k <= 3; k++)
		if (ot_check_index(d, (int64_t)ix[k], T_STRING, &p, function_spec.f[k - 1].name, err) < 0)
			return -1;
	ot_function_t *fn = &d->functions[i];
	fn->name = (uint32_t)(d->tbl[T_STRING][ix[1]].n ? ix[1] : ix[2]);
	fn->file = (uint32_t)ix[3];
	return 0;
}

static int check_mapping(ot_dec_t *d, uint32_t i, err_t *err)
{
	pb_path_t p = {&ot_dictionary_path, "mapping_table", i};
	pb_reader_t r = pb_reader_make(d->tbl[T_MAPPING][i]);
	const pb_field_t *f;
	int wt, rc;
	uint64_t v, file = 0;
	while ((rc = pb_next(&d->src, &r, &mapping_spec, &p, &f, &wt, err)) == 1) {
		if (f->num == 5) {
			if (check_indices(d, &r, wt, T_ATTRIBUTE, &p, f->name, err) < 0)
				return -1;
			continue;
		}
		if (pb_read_varint(&d->src, &r, &v, &p, f->name, err) < 0)
			return -1;
		if (f->num == 4)
			file = v;
	}
	if (rc < 0 || ot_check_index(d, (int64_t)file, T_STRING, &p, "filename_strindex", err) < 0)
		return -1;
	d->mapping_file[i] = (uint32_t)file;
	return 0;
}

static int check_location(ot_dec_t *d, uint32_t i, err_t *err)
{
	pb_path_t p = {&ot_dictionary_path, "location_table", i};
	pb_reader_t r = pb_reader_make(d->tbl[T_LOCATION][i]);
	const pb_field_t *f;
	int wt, rc;
	uint64_t v, mapping = 0;
	uint32_t n_lines = 0, named = 0;
	while ((rc = pb_next(&d->src, &r, &location_spec, &p, &f, &wt, err)) == 1) {
		if (f->num == 4) {
			if (check_indices(d, &r, wt, T_ATTRIBUTE, &p, f->name, err) < 0)
				return -1;
			continue;
		}
		if (f->num == 3) {
			slice_t s;
			pb_path_t lp = {&p, "lines", n_lines++};
			if (pb_read_len(&d->src, &r, &s, &p, f->name, err) < 0)
				return -1;
			pb_reader_t lr = pb_reader_make(s);
			const pb_field_t *lf;
			int lwt, lrc;
			uint64_t fn = 0;
			while ((lrc = pb_next(&d->src, &lr, &line_spec, &lp, &lf, &lwt, err)) == 1) {
				if (pb_read_varint(&d->src, &lr, &v, &lp, lf->name, err) < 0)
					return -1;
				if (lf->num == 1)
					fn = v;
			}
			if (lrc < 0 ||
			    ot_check_index(d, (int64_t)fn, T_FUNCTION, &lp, "function_index", err) < 0)
				return -1;
			if (d->tbl[T_STRING][d->functions[fn].name].n)
				named++;
			continue;
		}
		if (pb_read_varint(&d->src, &r, &v, &p, f->name, err) < 0)
			return -1;
		if (f->num == 1)
			mapping = v;
	}
	if (rc < 0)
		return -1;
	ot_location_t *loc = &d->locations[i];
	loc->mapping = OT_NOIX;
	/* mapping_index 0 into an empty mapping_table means "no mapping". */
	if (mapping != 0 || d->n[T_MAPPING] != 0) {
		if (ot_check_index(d, (int64_t)mapping, T_MAPPING, &p, "mapping_index", err) < 0)
			return -1;
		loc->mapping = (uint32_t)mapping;
	}
	loc->n_frames = named ? named : 1;
	loc->first = OT_NOIX;
	return 0;
}

static int all_zero(slice_t s)
{
	for (size_t i = 0; i < s.n; i++)
		if (s.p[i])
			return 0;
	return 1;
}

static int check_link(ot_dec_t *d, uint32_t i, err_t *err)
{
	pb_path_t p = {&ot_dictionary_path, "link_table", i};
	pb_reader_t r = pb_reader_make(d->tbl[T_LINK][i]);
	const pb_field_t *f;
	int wt, rc;
	slice_t id[3] = {{0}};
	while ((rc = pb_next(&d->src, &r, &link_spec, &p, &f, &wt, err)) == 1)
		if (pb_read_len(&d->src, &r, &id[f->num], &p, f->name, err) < 0)
			return -1;
	if (rc < 0)
		return -1;
	if (i == 0 && all_zero(id[1]) && all_zero(id[2]))
		return 0; /* the "no link" entry: empty or all-zero ids */
	if (id[1].n != 16)
		return pb_fail(&d->src, err, 400, &p, "trace_id", "%zu bytes; a trace id has 16", id[1].n);
	if (id[2].n != 8)
		return pb_fail(&d->src, err, 400, &p, "span_id", "%zu bytes; a span id has 8", id[2].n);
	return 0;
}

static int check_stack(ot_dec_t *d, uint32_t i, uint32_t *used, err_t *err)
{
	pb_path_t p = {&ot_dictionary_path, "stack_table", i};
	pb_reader_t r = pb_reader_make(d->tbl[T_STACK][i]);
	const pb_field_t *f;
	int wt, rc;
	ot_stack_t *st = &d->stacks[i];
	st->first = *used;
	st->node = OT_NOIX;
	uint64_t depth = 0;
	while ((rc = pb_next(&d->src, &r, &stack_spec, &p, &f, &wt, err)) == 1) {
		pb_reader_t vals;
		uint64_t v;
		int vrc;
		if (pb_read_packable(&d->src, &r, wt, &vals, &p, f->name, err) < 0)
			return -1;
		while ((vrc = pb_next_packed(&d->src, &vals, &v, &p, f->name, err)) == 1) {
			if (ot_check_index(d, (int64_t)v, T_LOCATION, &p, f->name, err) < 0)
				return -1;
			d->stack_locs[(*used)++] = (uint32_t)v;
			depth += d->locations[v].n_frames;
		}
		if (vrc < 0)
			return -1;
	}
	if (rc < 0)
		return -1;
	st->n = *used - st->first;
	st->depth = depth < LIMIT_STACK_DEPTH ? (uint32_t)depth : LIMIT_STACK_DEPTH;
	return 0;
}

/* The attribute keys frames are built from: the frame type of a location,
 * the build ids of a mapping (in order of preference). */
static const char *const frame_keys[] = {"profile.frame.type", "process.executable.build_id.gnu",
                                         "process.executable.build_id.go",
                                         "process.executable.build_id.htlhash"};
#define N_FRAME_KEYS (sizeof frame_keys / sizeof frame_keys[0])

int ot_dict_check(ot_dec_t *d, err_t *err)
{
	const pb_path_t *root = &ot_dictionary_path;
	if (d->n[T_STRING] && d->tbl[T_STRING][0].n != 0)
		return pb_fail(&d->src, err, 400, root, "string_table[0]",
		               "must be the empty string (is %zu bytes)", d->tbl[T_STRING][0].n);
	d->attr_code = arena_alloc(d->scratch, d->n[T_ATTRIBUTE] + 1);
	d->attr_value = arena_alloc(d->scratch, (d->n[T_ATTRIBUTE] + 1) * sizeof *d->attr_value);
	for (uint32_t i = 0; i < d->n[T_ATTRIBUTE]; i++) {
		pb_path_t p = {root, "attribute_table", i};
		slice_t key, value;
		int scalar;
		char text[32];
		if (ot_keyvalue(d, d->tbl[T_ATTRIBUTE][i], 1, &key, &value, &scalar, text, &p, err) < 0)
			return -1;
		d->attr_code[i] = 0;
		for (size_t k = 0; scalar && k < N_FRAME_KEYS; k++)
			if (slice_eq_cstr(key, frame_keys[k]))
				d->attr_code[i] = (uint8_t)(k + 1);
		if (d->attr_code[i]) /* kept for find_attr; a rendered number needs a home */
			d->attr_value[i] =
			    value.p == (const uint8_t *)text ? arena_slice(d->scratch, value) : value;
	}
	d->functions = arena_alloc(d->scratch, (d->n[T_FUNCTION] + 1) * sizeof *d->functions);
	for (uint32_t i = 0; i < d->n[T_FUNCTION]; i++)
		if (check_function(d, i, err) < 0)
			return -1;
	d->mapping_file = arena_alloc(d->scratch, (d->n[T_MAPPING] + 1) * sizeof *d->mapping_file);
	for (uint32_t i = 0; i < d->n[T_MAPPING]; i++)
		if (check_mapping(d, i, err) < 0)
			return -1;
	d->locations = arena_alloc(d->scratch, (d->n[T_LOCATION] + 1) * sizeof *d->locations);
	for (uint32_t i = 0; i < d->n[T_LOCATION]; i++)
		if (check_location(d, i, err) < 0)
			return -1;
	for (uint32_t i = 0; i < d->n[T_LINK]; i++)
		if (check_link(d, i, err) < 0)
			return -1;
	/* Every location index takes at least one byte of its stack entry. */
	size_t max_locs = 0;
	for (uint32_t i = 0; i < d->n[T_STACK]; i++)
		max_locs += d->tbl[T_STACK][i].n;
	d->stack_locs = arena_alloc(d->scratch, (max_locs + 1) * sizeof *d->stack_locs);
	d->stacks = arena_alloc(d->scratch, (d->n[T_STACK] + 1) * sizeof *d->stacks);
	uint32_t used = 0;
	for (uint32_t i = 0; i < d->n[T_STACK]; i++)
		if (check_stack(d, i, &used, err) < 0)
			return -1;
	return 0;
}

/* ---- Frames and stacks ---------------------------------------------------- */

static const char native_kind[] = "native";

/* The value of the first attribute (of attribute_indices field attr_field
 * of a checked message) whose key is frame_keys[lo..hi], preferring lower
 * keys. */
static slice_t find_attr(const ot_dec_t *d, slice_t msg, uint32_t attr_field, uint8_t lo, uint8_t hi)
{
	slice_t best = {0};
	uint8_t best_code = UINT8_MAX;
	pb_reader_t r = pb_reader_make(msg);
	uint32_t num;
	int wt;
	while (!pb_done(&r) && pb_key(&r, &num, &wt) == 0) {
		if (num != attr_field) {
			if (pb_skip(&r, wt) < 0)
				break;
			continue;
		}
		uint64_t v;
		slice_t s = {0};
		if (wt == PB_VARINT) {
			const uint8_t *start = r.p;
			if (pb_varint(&r, &v) < 0)
				break;
			s = slice_make(start, (size_t)(r.p - start));
		} else if (wt != PB_LEN || pb_bytes(&r, &s) < 0) {
			break;
		}
		pb_reader_t pr = pb_reader_make(s);
		while (!pb_done(&pr) && pb_varint(&pr, &v) == 0) {
			if (v >= d->n[T_ATTRIBUTE])
				continue;
			uint8_t code = d->attr_code[v];
			if (code < lo + 1 || code > hi + 1 || code >= best_code)
				continue;
			best = d->attr_value[v]; /* scalar: ot_dict_check set a code only then */
			best_code = code;
		}
	}
	return best;
}

static void loc_frame_push(ot_dec_t *d, uint32_t frame)
{
	if (d->n_loc_frames >= d->cap_loc_frames)
		d->loc_frames =
		    xgrow(d->loc_frames, &d->cap_loc_frames, d->n_loc_frames + 1, sizeof *d->loc_frames);
	d->loc_frames[d->n_loc_frames++] = frame;
}

/* Interns the frames of a checked location, leaf first. */
static void resolve_location(ot_dec_t *d, uint32_t li)
{
	ot_location_t *loc = &d->locations[li];
	if (loc->first != OT_NOIX)
		return;
	slice_t msg = d->tbl[T_LOCATION][li];
	model_frame_t fr = {0};
	fr.kind = find_attr(d, msg, 4, 0, 0);
	if (loc->mapping != OT_NOIX) {
		fr.binary = d->tbl[T_STRING][d->mapping_file[loc->mapping]];
		fr.build_id = find_attr(d, d->tbl[T_MAPPING][loc->mapping], 5, 1, 3);
	}
	loc->first = (uint32_t)d->n_loc_frames;
	uint32_t k = 0;
	pb_reader_t r = pb_reader_make(msg);
	uint32_t num;
	int wt;
	while (!pb_done(&r) && pb_key(&r, &num, &wt) == 0) {
		slice_t s;
		if (num != 3 || wt != PB_LEN) {
			if (pb_skip(&r, wt) < 0)
				break;
			continue;
		}
		if (pb_bytes(&r, &s) < 0)
			break;
		uint64_t fn = pb_find_varint(s, 1); /* Line.function_index / function_id */
		if (fn >= d->n[T_FUNCTION])
			continue;
		slice_t name = d->tbl[T_STRING][d->functions[fn].name];
		if (!name.n)
			continue;
		fr.name = name;
		fr.file = d->tbl[T_STRING][d->functions[fn].file];
		loc_frame_push(d, model_frame_intern(d->b, &fr));
		k++;
	}
	if (k == 0) {
		fr.name = fr.file = slice_make(NULL, 0);
		if (!fr.kind.n)
			fr.kind = slice_make(native_kind, sizeof native_kind - 1);
		fr.unsymbolized = 1;
		loc_frame_push(d, model_frame_intern(d->b, &fr));
		k = 1;
	}
	loc->n_frames = k; /* equal to the count from checking, for checked input */
}

uint32_t ot_stack_node(ot_dec_t *d, uint32_t si)
{
	ot_stack_t *st = &d->stacks[si];
	if (st->node != OT_NOIX)
		return st->node;
	uint32_t n = 0;
	for (uint32_t k = 0; k < st->n && n < st->depth; k++) {
		uint32_t li = d->stack_locs[st->first + k];
		resolve_location(d, li);
		const ot_location_t *loc = &d->locations[li];
		for (uint32_t j = 0; j < loc->n_frames && n < st->depth; j++)
			d->stack_frames[n++] = d->loc_frames[loc->first + j];
	}
	uint32_t node = MODEL_NONE;
	while (n > 0)
		node = model_node_intern(d->b, node, d->stack_frames[--n]);
	st->node = node;
	return node;
}

static void hex(const uint8_t *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = 0;
}

int ot_link_hex(ot_dec_t *d, uint32_t li)
{
	pb_reader_t r = pb_reader_make(d->tbl[T_LINK][li]);
	slice_t id[3] = {{0}};
	uint32_t num;
	int wt;
	while (!pb_done(&r) && pb_key(&r, &num, &wt) == 0) {
		slice_t s;
		if (wt != PB_LEN) {
			if (pb_skip(&r, wt) < 0)
				break;
			continue;
		}
		if (pb_bytes(&r, &s) < 0)
			break;
		if (num == 1 || num == 2)
			id[num] = s;
	}
	if (id[1].n != 16 || id[2].n != 8 || (all_zero(id[1]) && all_zero(id[2])))
		return 0;
	hex(id[1].p, 16, d->link_hex[0]);
	hex(id[2].p, 8, d->link_hex[1]);
	return 1;
}
