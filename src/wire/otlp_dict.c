/* The OTLP ProfilesDictionary: loading its tables as slices, checking every
 * entry and index, and turning locations and stacks into interned frames and
 * stack nodes on first use. Also the decoder's shared error and field
 * helpers. Requests, profiles and samples are otlp_decode.c's. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "wire/numtext.h"
#include "wire/otlp_int.h"

/* ---- Errors and fields --------------------------------------------------- */

static void path_str(const ot_path *p, char *out, size_t n)
{
	size_t at = 0;
	out[0] = 0;
	for (uint8_t i = 0; p && i < p->n && at < n; i++) {
		int k = p->ix[i] == OT_NOIX ? snprintf(out + at, n - at, "%s%s", i ? "." : "", p->name[i])
		                            : snprintf(out + at, n - at, "%s%s[%" PRIu32 "]", i ? "." : "",
		                                       p->name[i], p->ix[i]);
		if (k < 0)
			break;
		at += (size_t)k;
	}
}

int ot_fail(kn_err *err, int status, const ot_path *p, const char *field, const char *fmt, ...)
{
	char where[200], what[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	path_str(p, where, sizeof where);
	if (where[0] && field)
		return err_set(err, status, "%s.%s: %s", where, field, what);
	if (where[0] || field)
		return err_set(err, status, "%s: %s", where[0] ? where : field, what);
	return err_set(err, status, "%s", what);
}

static const char *const table_names[T_COUNT] = {"mapping_table", "location_table", "function_table",
                                                 "link_table",    "string_table",   "attribute_table",
                                                 "stack_table"};

int ot_check_index(const ot_dec *d, int64_t ix, int table, const ot_path *p, const char *field, kn_err *err)
{
	if (ix >= 0 && ix < (int64_t)d->n[table])
		return 0;
	return ot_fail(err, 400, p, field, "index %" PRId64 " out of range for %s (%" PRIu32 " entries)%s%s",
	               ix, table_names[table], d->n[table],
	               d->n[table] == 0 && ix == 0 ? ": its entry 0 must exist" : "", OT_INDEX_HINT);
}

static size_t off(const ot_dec *d, const uint8_t *at)
{
	return (size_t)(at - d->base);
}

static const char *kind_name(uint8_t kind)
{
	switch (kind) {
	case OT_VARINT:
		return "varint";
	case OT_LEN:
		return "length-delimited";
	case OT_I64:
		return "fixed64";
	case OT_PVARINT:
		return "varint or packed";
	default:
		return "fixed64 or packed";
	}
}

int ot_next_field_slow(const ot_dec *d, pb_reader *r, const ot_field *spec, size_t n_spec, const ot_path *p,
                       const ot_field **f, int *wt, kn_err *err)
{
	while (!pb_done(r)) {
		const uint8_t *at = r->p;
		uint32_t num;
		int w;
		if (pb_key(r, &num, &w) < 0)
			return ot_fail(
			    err, 400, p, NULL,
			    "malformed field key at byte %zu (truncated, field 0 or wire type 6/7)",
			    off(d, at));
		const ot_field *s = NULL;
		for (size_t i = 0; i < n_spec; i++)
			if (spec[i].num == num) {
				s = &spec[i];
				break;
			}
		if (!s) {
			if (pb_skip(r, w) < 0)
				return ot_fail(err, 400, p, NULL,
				               "unknown field %" PRIu32
				               " (wire type %d) at byte %zu is truncated or malformed",
				               num, w, off(d, at));
			continue;
		}
		int ok = ot_wire_ok(s->kind, w);
		if (!ok)
			return ot_fail(err, 400, p, s->name,
			               "wire type %d (%s), expected %s (field %" PRIu32 " at byte %zu)", w,
			               pb_wire_type_name(w), kind_name(s->kind), num, off(d, at));
		*f = s;
		*wt = w;
		return 1;
	}
	return 0;
}

int ot_read_varint(const ot_dec *d, pb_reader *r, uint64_t *v, const ot_path *p, const char *field,
                   kn_err *err)
{
	const uint8_t *at = r->p;
	if (pb_varint(r, v) < 0)
		return ot_fail(err, 400, p, field, "truncated or overlong varint at byte %zu", off(d, at));
	return 0;
}

int ot_read_len(const ot_dec *d, pb_reader *r, slice_t *s, const ot_path *p, const char *field, kn_err *err)
{
	const uint8_t *at = r->p;
	if (pb_bytes(r, s) < 0)
		return ot_fail(err, 400, p, field,
		               "length at byte %zu runs past the end of its message or is malformed",
		               off(d, at));
	return 0;
}

int ot_read_packed_varint(const ot_dec *d, pb_reader *r, int wt, uint64_t **arr, size_t *n, size_t *cap,
                          const ot_path *p, const char *field, kn_err *err)
{
	uint64_t v;
	if (wt == PB_VARINT) {
		if (ot_read_varint(d, r, &v, p, field, err) < 0)
			return -1;
		if (*n >= *cap)
			*arr = xgrow(*arr, cap, *n + 1, sizeof **arr);
		(*arr)[(*n)++] = v;
		return 0;
	}
	slice_t s;
	if (ot_read_len(d, r, &s, p, field, err) < 0)
		return -1;
	/* Each value takes at least one byte: room for all of them at once. */
	if (*n + s.n > *cap)
		*arr = xgrow(*arr, cap, *n + s.n, sizeof **arr);
	pb_reader pr = pb_reader_make(s);
	while (!pb_done(&pr)) {
		const uint8_t *at = pr.p;
		if (pb_varint(&pr, &v) < 0)
			return ot_fail(err, 400, p, field, "malformed packed varint at byte %zu", off(d, at));
		(*arr)[(*n)++] = v;
	}
	return 0;
}

/* ---- Loading ------------------------------------------------------------- */

static const ot_field dict_fields[] = {
    {1, OT_LEN, "mapping_table"}, {2, OT_LEN, "location_table"}, {3, OT_LEN, "function_table"},
    {4, OT_LEN, "link_table"},    {5, OT_LEN, "string_table"},   {6, OT_LEN, "attribute_table"},
    {7, OT_LEN, "stack_table"},
};

int ot_dict_load(ot_dec *d, const slice_t *dicts, uint32_t n_dicts, kn_err *err)
{
	ot_path root = ot_path_push((ot_path){0}, "dictionary", OT_NOIX);
	uint64_t count[T_COUNT] = {0};
	for (int pass = 0; pass < 2; pass++) {
		uint32_t fill[T_COUNT] = {0};
		for (uint32_t k = 0; k < n_dicts; k++) {
			pb_reader r = pb_reader_make(dicts[k]);
			const ot_field *f;
			int wt, rc;
			while ((rc = ot_next_field(d, &r, dict_fields, T_COUNT, &root, &f, &wt, err)) == 1) {
				int t = (int)f->num - 1;
				slice_t s;
				ot_path p = ot_path_push(root, f->name, pass ? fill[t] : (uint32_t)count[t]);
				if (ot_read_len(d, &r, &s, &p, NULL, err) < 0)
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
					return ot_fail(err, 413, &root, table_names[t], "%" PRIu64 " entries",
					               count[t]);
				d->n[t] = (uint32_t)count[t];
				d->tbl[t] =
				    arena_alloc(d->scratch, (count[t] ? count[t] : 1) * sizeof(slice_t));
			}
	}
	return 0;
}

/* ---- Attribute values ---------------------------------------------------- */

static const ot_field anyvalue_fields[] = {
    {1, OT_LEN, "string_value"}, {2, OT_VARINT, "bool_value"},
    {3, OT_VARINT, "int_value"}, {4, OT_I64, "double_value"},
    {5, OT_LEN, "array_value"},  {6, OT_LEN, "kvlist_value"},
    {7, OT_LEN, "bytes_value"},  {8, OT_VARINT, "string_value_strindex"},
};
static const ot_field values_fields[] = {{1, OT_LEN, "values"}};
static const ot_field keyvalue_fields[] = {
    {1, OT_LEN, "key"}, {2, OT_LEN, "value"}, {3, OT_VARINT, "key_strindex"}};
static const ot_field kvunit_fields[] = {
    {1, OT_VARINT, "key_strindex"}, {2, OT_LEN, "value"}, {3, OT_VARINT, "unit_strindex"}};

static int check_keyvalue(const ot_dec *d, slice_t msg, const ot_path *p, unsigned depth, kn_err *err);

/* Checks an AnyValue; *kind is the field number of the value it holds (0:
 * none) and *v its scalar payload / slice. */
static int read_anyvalue(const ot_dec *d, slice_t msg, const ot_path *p, unsigned depth, int *kind,
                         uint64_t *v, slice_t *s, kn_err *err)
{
	if (depth > LIMIT_OTLP_NESTING)
		return ot_fail(err, 400, p, NULL, "values nested deeper than %u levels", LIMIT_OTLP_NESTING);
	pb_reader r = pb_reader_make(msg);
	const ot_field *f;
	int wt, rc;
	*kind = 0;
	while ((rc = ot_next_field(d, &r, anyvalue_fields, 8, p, &f, &wt, err)) == 1) {
		if (f->kind == OT_LEN) {
			if (ot_read_len(d, &r, s, p, f->name, err) < 0)
				return -1;
			if (f->num == 5 || f->num == 6) {
				ot_path sub = ot_path_push(*p, f->name, OT_NOIX);
				pb_reader ar = pb_reader_make(*s);
				const ot_field *af;
				int awt, arc;
				uint32_t i = 0;
				while ((arc = ot_next_field(d, &ar, values_fields, 1, &sub, &af, &awt,
				                            err)) == 1) {
					slice_t e;
					ot_path ep = ot_path_push(sub, "values", i++);
					int k2;
					uint64_t v2;
					slice_t s2;
					if (ot_read_len(d, &ar, &e, &ep, NULL, err) < 0)
						return -1;
					if (f->num == 5
					        ? read_anyvalue(d, e, &ep, depth + 1, &k2, &v2, &s2, err)
					        : check_keyvalue(d, e, &ep, depth + 1, err))
						return -1;
				}
				if (arc < 0)
					return -1;
			}
		} else if (f->kind == OT_I64) {
			if (pb_fixed64(&r, v) < 0)
				return ot_fail(err, 400, p, f->name, "truncated fixed64");
		} else {
			if (ot_read_varint(d, &r, v, p, f->name, err) < 0)
				return -1;
			if (f->num == 8 && ot_check_index(d, (int64_t)*v, T_STRING, p, f->name, err) < 0)
				return -1;
		}
		*kind = (int)f->num;
	}
	return rc;
}

static int check_keyvalue(const ot_dec *d, slice_t msg, const ot_path *p, unsigned depth, kn_err *err)
{
	pb_reader r = pb_reader_make(msg);
	const ot_field *f;
	int wt, rc;
	while ((rc = ot_next_field(d, &r, keyvalue_fields, 3, p, &f, &wt, err)) == 1) {
		slice_t s;
		uint64_t v;
		int kind;
		if (f->num == 3) {
			if (ot_read_varint(d, &r, &v, p, f->name, err) < 0 ||
			    ot_check_index(d, (int64_t)v, T_STRING, p, f->name, err) < 0)
				return -1;
		} else if (ot_read_len(d, &r, &s, p, f->name, err) < 0) {
			return -1;
		} else if (f->num == 2) {
			ot_path vp = ot_path_push(*p, "value", OT_NOIX);
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

int ot_keyvalue(const ot_dec *d, slice_t msg, int table_entry, slice_t *key, slice_t *value, int *scalar,
                char text[32], const ot_path *p, kn_err *err)
{
	pb_reader r = pb_reader_make(msg);
	const ot_field *f;
	int wt, rc, kind = 0;
	uint64_t v = 0, key_ix = 0;
	slice_t s = {0}, val = {0};
	*key = slice_make(NULL, 0);
	while ((rc = ot_next_field(d, &r, table_entry ? kvunit_fields : keyvalue_fields, 3, p, &f, &wt,
	                           err)) == 1) {
		if (f->kind == OT_VARINT) {
			if (ot_read_varint(d, &r, &v, p, f->name, err) < 0 ||
			    ot_check_index(d, (int64_t)v, T_STRING, p, f->name, err) < 0)
				return -1;
			if (f->num == (table_entry ? 1u : 3u))
				key_ix = v;
			continue;
		}
		if (ot_read_len(d, &r, &s, p, f->name, err) < 0)
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
	ot_path vp = ot_path_push(*p, "value", OT_NOIX);
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

static const ot_field mapping_fields[] = {
    {1, OT_VARINT, "memory_start"},      {2, OT_VARINT, "memory_limit"},       {3, OT_VARINT, "file_offset"},
    {4, OT_VARINT, "filename_strindex"}, {5, OT_PVARINT, "attribute_indices"},
};
static const ot_field location_fields[] = {
    {1, OT_VARINT, "mapping_index"},
    {2, OT_VARINT, "address"},
    {3, OT_LEN, "lines"},
    {4, OT_PVARINT, "attribute_indices"},
};
static const ot_field line_fields[] = {
    {1, OT_VARINT, "function_index"}, {2, OT_VARINT, "line"}, {3, OT_VARINT, "column"}};
static const ot_field function_fields[] = {
    {1, OT_VARINT, "name_strindex"},
    {2, OT_VARINT, "system_name_strindex"},
    {3, OT_VARINT, "filename_strindex"},
    {4, OT_VARINT, "start_line"},
};
static const ot_field link_fields[] = {{1, OT_LEN, "trace_id"}, {2, OT_LEN, "span_id"}};
static const ot_field stack_fields[] = {{1, OT_PVARINT, "location_indices"}};

/* Reads a repeated index field occurrence and checks each value. */
static int check_indices(ot_dec *d, pb_reader *r, int wt, int table, const ot_path *p, const char *field,
                         kn_err *err)
{
	d->n_u64s = 0;
	int rc = ot_read_packed_varint(d, r, wt, &d->u64s, &d->n_u64s, &d->cap_u64s, p, field, err);
	for (size_t i = 0; rc == 0 && i < d->n_u64s; i++)
		rc = ot_check_index(d, (int64_t)d->u64s[i], table, p, field, err);
	return rc;
}

static int check_function(ot_dec *d, uint32_t i, kn_err *err)
{
	ot_path p = ot_path_push(ot_path_push((ot_path){0}, "dictionary", OT_NOIX), "function_table", i);
	pb_reader r = pb_reader_make(d->tbl[T_FUNCTION][i]);
	const ot_field *f;
	int wt, rc;
	uint64_t v, ix[5] = {0};
	while ((rc = ot_next_field(d, &r, function_fields, 4, &p, &f, &wt, err)) == 1) {
		if (ot_read_varint(d, &r, &v, &p, f->name, err) < 0)
			return -1;
		ix[f->num] = v;
	}
	if (rc < 0)
		return -1;
	for (uint32_t k = 1; k <= 3; k++)
		if (ot_check_index(d, (int64_t)ix[k], T_STRING, &p, function_fields[k - 1].name, err) < 0)
			return -1;
	ot_function *fn = &d->functions[i];
	fn->name = (uint32_t)(d->tbl[T_STRING][ix[1]].n ? ix[1] : ix[2]);
	fn->file = (uint32_t)ix[3];
	return 0;
}

static int check_mapping(ot_dec *d, uint32_t i, kn_err *err)
{
	ot_path p = ot_path_push(ot_path_push((ot_path){0}, "dictionary", OT_NOIX), "mapping_table", i);
	pb_reader r = pb_reader_make(d->tbl[T_MAPPING][i]);
	const ot_field *f;
	int wt, rc;
	uint64_t v, file = 0;
	while ((rc = ot_next_field(d, &r, mapping_fields, 5, &p, &f, &wt, err)) == 1) {
		if (f->num == 5) {
			if (check_indices(d, &r, wt, T_ATTRIBUTE, &p, f->name, err) < 0)
				return -1;
			continue;
		}
		if (ot_read_varint(d, &r, &v, &p, f->name, err) < 0)
			return -1;
		if (f->num == 4)
			file = v;
	}
	if (rc < 0 || ot_check_index(d, (int64_t)file, T_STRING, &p, "filename_strindex", err) < 0)
		return -1;
	d->mapping_file[i] = (uint32_t)file;
	return 0;
}

static int check_location(ot_dec *d, uint32_t i, kn_err *err)
{
	ot_path p = ot_path_push(ot_path_push((ot_path){0}, "dictionary", OT_NOIX), "location_table", i);
	pb_reader r = pb_reader_make(d->tbl[T_LOCATION][i]);
	const ot_field *f;
	int wt, rc;
	uint64_t v, mapping = 0;
	uint32_t n_lines = 0, named = 0;
	while ((rc = ot_next_field(d, &r, location_fields, 4, &p, &f, &wt, err)) == 1) {
		if (f->num == 4) {
			if (check_indices(d, &r, wt, T_ATTRIBUTE, &p, f->name, err) < 0)
				return -1;
			continue;
		}
		if (f->num == 3) {
			slice_t s;
			ot_path lp = ot_path_push(p, "lines", n_lines++);
			if (ot_read_len(d, &r, &s, &p, f->name, err) < 0)
				return -1;
			pb_reader lr = pb_reader_make(s);
			const ot_field *lf;
			int lwt, lrc;
			uint64_t fn = 0;
			while ((lrc = ot_next_field(d, &lr, line_fields, 3, &lp, &lf, &lwt, err)) == 1) {
				if (ot_read_varint(d, &lr, &v, &lp, lf->name, err) < 0)
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
		if (ot_read_varint(d, &r, &v, &p, f->name, err) < 0)
			return -1;
		if (f->num == 1)
			mapping = v;
	}
	if (rc < 0)
		return -1;
	ot_location *loc = &d->locations[i];
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

static int check_link(ot_dec *d, uint32_t i, kn_err *err)
{
	ot_path p = ot_path_push(ot_path_push((ot_path){0}, "dictionary", OT_NOIX), "link_table", i);
	pb_reader r = pb_reader_make(d->tbl[T_LINK][i]);
	const ot_field *f;
	int wt, rc;
	slice_t id[3] = {{0}};
	while ((rc = ot_next_field(d, &r, link_fields, 2, &p, &f, &wt, err)) == 1)
		if (ot_read_len(d, &r, &id[f->num], &p, f->name, err) < 0)
			return -1;
	if (rc < 0)
		return -1;
	if (i == 0 && all_zero(id[1]) && all_zero(id[2]))
		return 0; /* the "no link" entry: empty or all-zero ids */
	if (id[1].n != 16)
		return ot_fail(err, 400, &p, "trace_id", "%zu bytes; a trace id has 16", id[1].n);
	if (id[2].n != 8)
		return ot_fail(err, 400, &p, "span_id", "%zu bytes; a span id has 8", id[2].n);
	return 0;
}

static int check_stack(ot_dec *d, uint32_t i, uint32_t *used, kn_err *err)
{
	ot_path p = ot_path_push(ot_path_push((ot_path){0}, "dictionary", OT_NOIX), "stack_table", i);
	pb_reader r = pb_reader_make(d->tbl[T_STACK][i]);
	const ot_field *f;
	int wt, rc;
	ot_stack *st = &d->stacks[i];
	st->first = *used;
	st->node = OT_NOIX;
	uint64_t depth = 0;
	while ((rc = ot_next_field(d, &r, stack_fields, 1, &p, &f, &wt, err)) == 1) {
		uint64_t v;
		if (wt == PB_VARINT) {
			if (ot_read_varint(d, &r, &v, &p, f->name, err) < 0 ||
			    ot_check_index(d, (int64_t)v, T_LOCATION, &p, f->name, err) < 0)
				return -1;
			d->stack_locs[(*used)++] = (uint32_t)v;
			depth += d->locations[v].n_frames;
			continue;
		}
		slice_t s;
		if (ot_read_len(d, &r, &s, &p, f->name, err) < 0)
			return -1;
		pb_reader pr = pb_reader_make(s);
		while (!pb_done(&pr)) {
			const uint8_t *at = pr.p;
			if (pb_varint(&pr, &v) < 0)
				return ot_fail(err, 400, &p, f->name, "malformed packed varint at byte %zu",
				               off(d, at));
			if (ot_check_index(d, (int64_t)v, T_LOCATION, &p, f->name, err) < 0)
				return -1;
			d->stack_locs[(*used)++] = (uint32_t)v;
			depth += d->locations[v].n_frames;
		}
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

int ot_dict_check(ot_dec *d, kn_err *err)
{
	ot_path root = ot_path_push((ot_path){0}, "dictionary", OT_NOIX);
	if (d->n[T_STRING] && d->tbl[T_STRING][0].n != 0)
		return ot_fail(err, 400, &root, "string_table[0]", "must be the empty string (is %zu bytes)",
		               d->tbl[T_STRING][0].n);
	d->attr_code = arena_alloc(d->scratch, d->n[T_ATTRIBUTE] + 1);
	d->attr_value = arena_alloc(d->scratch, (d->n[T_ATTRIBUTE] + 1) * sizeof *d->attr_value);
	for (uint32_t i = 0; i < d->n[T_ATTRIBUTE]; i++) {
		ot_path p = ot_path_push(root, "attribute_table", i);
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
			d->attr_value[i] = value.p == (const uint8_t *)text ? arena_slice(d->scratch, value) : value;
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
static slice_t find_attr(const ot_dec *d, slice_t msg, uint32_t attr_field, uint8_t lo, uint8_t hi)
{
	slice_t best = {0};
	uint8_t best_code = UINT8_MAX;
	pb_reader r = pb_reader_make(msg);
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
		pb_reader pr = pb_reader_make(s);
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

static void loc_frame_push(ot_dec *d, uint32_t frame)
{
	if (d->n_loc_frames >= d->cap_loc_frames)
		d->loc_frames =
		    xgrow(d->loc_frames, &d->cap_loc_frames, d->n_loc_frames + 1, sizeof *d->loc_frames);
	d->loc_frames[d->n_loc_frames++] = frame;
}

/* Interns the frames of a checked location, leaf first. */
static void resolve_location(ot_dec *d, uint32_t li)
{
	ot_location *loc = &d->locations[li];
	if (loc->first != OT_NOIX)
		return;
	slice_t msg = d->tbl[T_LOCATION][li];
	model_frame fr = {0};
	fr.kind = find_attr(d, msg, 4, 0, 0);
	if (loc->mapping != OT_NOIX) {
		fr.binary = d->tbl[T_STRING][d->mapping_file[loc->mapping]];
		fr.build_id = find_attr(d, d->tbl[T_MAPPING][loc->mapping], 5, 1, 3);
	}
	loc->first = (uint32_t)d->n_loc_frames;
	uint32_t k = 0;
	pb_reader r = pb_reader_make(msg);
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

uint32_t ot_stack_node(ot_dec *d, uint32_t si)
{
	ot_stack *st = &d->stacks[si];
	if (st->node != OT_NOIX)
		return st->node;
	uint32_t n = 0;
	for (uint32_t k = 0; k < st->n && n < st->depth; k++) {
		uint32_t li = d->stack_locs[st->first + k];
		resolve_location(d, li);
		const ot_location *loc = &d->locations[li];
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

int ot_link_hex(ot_dec *d, uint32_t li)
{
	pb_reader r = pb_reader_make(d->tbl[T_LINK][li]);
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
