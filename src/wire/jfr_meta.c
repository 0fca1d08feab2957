/* JFR's metadata event (wire/jfr_int.h: jfr_parse_metadata): the string
 * table and the element tree, whose class and field elements become the
 * decoder's type and field tables; then each field's type resolved, each
 * type's primitive kind and event known, how each field is skipped, and
 * every type's minimum size checked, so that a type that would nest in
 * itself or read as no bytes is refused before any value is read. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/arena.h"
#include "base/limits.h"
#include "wire/jfr.h"
#include "wire/jfr_int.h"

/* ---- Metadata ------------------------------------------------------------- */

typedef struct {
	slice_t name;
	uint64_t n_attrs, n_children;
	size_t attrs; /* offset of the first attribute */
} jf_elem_t;

static int read_elem(jf_dec_t *d, size_t *pos, size_t end, jf_elem_t *e)
{
	uint64_t ix, k, v;
	if (jfr_rd_len(d, pos, end, UINT32_MAX, &ix, "metadata element name") < 0)
		return -1;
	if (ix >= d->n_mstr)
		return jfr_fail(d, *pos,
		                "metadata: string index %" PRIu64 " out of range (%" PRIu32 " strings)", ix,
		                d->n_mstr);
	e->name = d->mstr[ix];
	if (jfr_rd_len(d, pos, end, end - *pos, &e->n_attrs, "metadata attribute count") < 0)
		return -1;
	e->attrs = *pos;
	for (uint64_t i = 0; i < e->n_attrs; i++) {
		if (jfr_rd_len(d, pos, end, UINT32_MAX, &k, "metadata attribute") < 0 ||
		    jfr_rd_len(d, pos, end, UINT32_MAX, &v, "metadata attribute") < 0)
			return -1;
		if (k >= d->n_mstr || v >= d->n_mstr)
			return jfr_fail(
			    d, *pos, "metadata: string index %" PRIu64 " out of range (%" PRIu32 " strings)",
			    k >= d->n_mstr ? k : v, d->n_mstr);
	}
	return jfr_rd_len(d, pos, end, end - *pos, &e->n_children, "metadata child count");
}

/* The value of attribute name of e (already checked by read_elem), empty when absent. */
static slice_t elem_attr(jf_dec_t *d, const jf_elem_t *e, const char *name)
{
	size_t pos = e->attrs;
	uint64_t k, v;
	for (uint64_t i = 0; i < e->n_attrs; i++) {
		jfr_rd_len(d, &pos, d->cend, UINT32_MAX, &k, "attribute");
		jfr_rd_len(d, &pos, d->cend, UINT32_MAX, &v, "attribute");
		if (slice_eq_cstr(d->mstr[k], name))
			return d->mstr[v];
	}
	return slice_make("", 0);
}

static int parse_u64(slice_t s, uint64_t *v)
{
	uint64_t x = 0;
	if (!s.n || s.n > 20)
		return -1;
	for (size_t i = 0; i < s.n; i++) {
		if (s.p[i] < '0' || s.p[i] > '9' || x > (UINT64_MAX - (uint64_t)(s.p[i] - '0')) / 10)
			return -1;
		x = x * 10 + (uint64_t)(s.p[i] - '0');
	}
	*v = x;
	return 0;
}

/* Skips an element's children (annotations, settings, regions), depth-bounded. */
static int skip_children(jf_dec_t *d, size_t *pos, size_t end, uint64_t n, unsigned depth)
{
	jf_elem_t e;
	if (n && depth >= LIMIT_JFR_META_DEPTH)
		return jfr_fail(d, *pos, "metadata elements nested deeper than %u", LIMIT_JFR_META_DEPTH);
	for (uint64_t i = 0; i < n; i++)
		if (read_elem(d, pos, end, &e) < 0 || skip_children(d, pos, end, e.n_children, depth + 1) < 0)
			return -1;
	return 0;
}

static int parse_class(jf_dec_t *d, size_t *pos, size_t end, const jf_elem_t *ce)
{
	size_t at = *pos;
	uint64_t id;
	slice_t name = elem_attr(d, ce, "name");
	if (parse_u64(elem_attr(d, ce, "id"), &id) < 0 || !name.n)
		return jfr_fail(d, at, "metadata: class without a numeric id or a name");
	if (d->n_cls >= LIMIT_JFR_TYPES)
		return jfr_fail413(d, at, "metadata: more than %u types", LIMIT_JFR_TYPES);
	uint32_t dup;
	if (idmap_get(&d->cls_ix, id, &dup))
		return jfr_fail(d, at, "metadata: type id %" PRIu64 " defined twice", id);
	idmap_put(&d->cls_ix, id, d->n_cls);
	d->cls = xgrow(d->cls, &d->cap_cls, d->n_cls + 1, sizeof *d->cls);
	jf_class_t *k = &d->cls[d->n_cls++];
	memset(k, 0, sizeof *k);
	k->id = id;
	k->name = name;
	k->first = d->n_fld;
	k->pool = NO_IX;
	for (uint64_t i = 0; i < ce->n_children; i++) {
		jf_elem_t fe;
		size_t fat = *pos;
		if (read_elem(d, pos, end, &fe) < 0)
			return -1;
		if (slice_eq_cstr(fe.name, "field")) {
			uint64_t type;
			slice_t fname = elem_attr(d, &fe, "name"), dim = elem_attr(d, &fe, "dimension");
			if (parse_u64(elem_attr(d, &fe, "class"), &type) < 0 || !fname.n)
				return jfr_fail(d, fat,
				                "metadata: field of %.*s without a numeric class or a name",
				                (int)(name.n > 64 ? 64 : name.n), (const char *)name.p);
			if (dim.n && !slice_eq_cstr(dim, "1"))
				return jfr_fail(
				    d, fat, "metadata: field %.*s has dimension %.*s (only 1 is supported)",
				    (int)(fname.n > 64 ? 64 : fname.n), (const char *)fname.p,
				    (int)(dim.n > 16 ? 16 : dim.n), (const char *)dim.p);
			if (d->n_fld >= LIMIT_JFR_FIELDS)
				return jfr_fail413(d, fat, "metadata: more than %u fields", LIMIT_JFR_FIELDS);
			d->fld = xgrow(d->fld, &d->cap_fld, d->n_fld + 1, sizeof *d->fld);
			d->fld[d->n_fld++] =
			    (jf_field_t){fname,      type,
			                 NO_IX,      slice_eq_cstr(elem_attr(d, &fe, "constantPool"), "true"),
			                 dim.n != 0, SK_SLOW,
			                 0};
			d->cls[d->n_cls - 1].n++;
		}
		if (skip_children(d, pos, end, fe.n_children, 3) < 0)
			return -1;
	}
	return 0;
}

static uint8_t prim_of(slice_t name)
{
	static const struct {
		const char *name;
		uint8_t prim;
	} t[] = {{"boolean", P_BOOL}, {"byte", P_BYTE},     {"short", P_SHORT},
	         {"int", P_INT},      {"long", P_LONG},     {"char", P_CHAR},
	         {"float", P_FLOAT},  {"double", P_DOUBLE}, {"java.lang.String", P_STRING}};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (slice_eq_cstr(name, t[i].name))
			return t[i].prim;
	return P_NONE;
}

/* The events the converter reads, and the field that holds each one's value. */
const jf_evdef_t jfr_ev_tab[EV_SETTING + 1] = {
    [EV_EXEC] = {"jdk.ExecutionSample", NULL, JFR_CPU, 1},
    [EV_WALL] = {"profiler.WallClockSample", "samples", JFR_WALL, 1},
    [EV_TLAB] = {"jdk.ObjectAllocationInNewTLAB", "tlabSize", JFR_ALLOC_IN_TLAB, 1},
    [EV_OUT_TLAB] = {"jdk.ObjectAllocationOutsideTLAB", "allocationSize", JFR_ALLOC_OUTSIDE_TLAB, 1},
    [EV_ALLOC_SAMPLE] = {"jdk.ObjectAllocationSample", "weight", JFR_ALLOC_SAMPLE, 0},
    [EV_MONITOR] = {"jdk.JavaMonitorEnter", "duration", JFR_LOCK, 1},
    [EV_PARK] = {"jdk.ThreadPark", "duration", JFR_PARK, 0},
    [EV_LIVE] = {"profiler.LiveObject", NULL, JFR_LIVE, 0},
    [EV_MALLOC] = {"profiler.Malloc", "size", JFR_MALLOC, 0},
    [EV_SETTING] = {"jdk.ActiveSetting", NULL, JFR_KINDS, 0}};

static uint8_t ev_of(slice_t name)
{
	for (uint8_t i = EV_EXEC; i <= EV_SETTING; i++)
		if (slice_eq_cstr(name, jfr_ev_tab[i].event))
			return i;
	return EV_NONE;
}

/* The least bytes a value of class c takes; 0 for a class with no fields.
 * A class that contains itself other than through an array or a pool
 * reference is an error (its values would never end). */
static int min_size(jf_dec_t *d, uint32_t c, unsigned depth, uint32_t *out)
{
	jf_class_t *k = &d->cls[c];
	if (k->state == 2) {
		*out = k->minsize;
		return 0;
	}
	if (depth > LIMIT_JFR_NESTING)
		return jfr_fail(d, d->meta_at, "metadata: type %.*s nests types more than %u deep",
		                (int)(k->name.n > 64 ? 64 : k->name.n), (const char *)k->name.p,
		                LIMIT_JFR_NESTING);
	if (k->state == 1)
		return jfr_fail(d, d->meta_at,
		                "metadata: type %.*s contains itself (recursion in nested types)",
		                (int)(k->name.n > 64 ? 64 : k->name.n), (const char *)k->name.p);
	k->state = 1;
	uint64_t sum = 0;
	if (k->prim)
		sum = d->compressed && jfr_prim_varint[k->prim] ? 1 : jfr_prim_bytes[k->prim];
	for (uint32_t i = 0; !k->prim && i < k->n; i++) {
		const jf_field_t *f = &d->fld[k->first + i];
		uint32_t m = 1;
		if (!f->array && !f->cp && min_size(d, f->type, depth + 1, &m) < 0)
			return -1;
		if (!f->array && !f->cp && m == 0)
			return jfr_fail(d, d->meta_at,
			                "metadata: field %.*s of %.*s has a type with no fields",
			                (int)(f->name.n > 64 ? 64 : f->name.n), (const char *)f->name.p,
			                (int)(k->name.n > 64 ? 64 : k->name.n), (const char *)k->name.p);
		sum += m;
	}
	k = &d->cls[c];
	k->minsize = sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
	k->state = 2;
	*out = k->minsize;
	return 0;
}

static uint32_t class_named(const jf_dec_t *d, const char *name)
{
	for (uint32_t i = 0; i < d->n_cls; i++)
		if (slice_eq_cstr(d->cls[i].name, name))
			return i;
	return NO_IX;
}

/* After the metadata: field types resolved, primitives and events known,
 * every type's minimum size checked. */
static int finish_metadata(jf_dec_t *d, size_t at)
{
	for (uint32_t i = 0; i < d->n_fld; i++) {
		jf_field_t *f = &d->fld[i];
		uint32_t c;
		if (!idmap_get(&d->cls_ix, f->type_id, &c))
			return jfr_fail(
			    d, at, "metadata: field %.*s has type %" PRIu64 ", which is not defined",
			    (int)(f->name.n > 64 ? 64 : f->name.n), (const char *)f->name.p, f->type_id);
		f->type = c;
	}
	for (uint32_t i = 0; i < d->n_cls; i++) {
		jf_class_t *k = &d->cls[i];
		k->prim = prim_of(k->name);
		k->ev = ev_of(k->name);
	}
	for (uint32_t i = 0; i < d->n_fld; i++) {
		jf_field_t *f = &d->fld[i];
		uint8_t prim = d->cls[f->type].prim;
		f->skip = SK_SLOW;
		if (f->array || (!f->cp && (prim == P_NONE || prim == P_STRING)))
			continue;
		f->skip = f->cp || (d->compressed && jfr_prim_varint[prim]) ? SK_VAR : SK_FIXED;
		f->width = f->skip == SK_FIXED ? jfr_prim_bytes[prim] : 0;
	}
	for (uint32_t i = 0; i < d->n_cls; i++) {
		uint32_t m;
		if (min_size(d, i, 0, &m) < 0)
			return -1;
		jf_class_t *k = &d->cls[i];
		k->f_stack = jfr_field_ix(d, i, "stackTrace");
		k->f_state = jfr_field_ix(d, i, "state");
		k->f_name = k->f_val2 = k->f_value = NO_IX;
		if (k->ev != EV_NONE && jfr_ev_tab[k->ev].value)
			k->f_value = jfr_field_ix(d, i, jfr_ev_tab[k->ev].value);
		if (k->ev == EV_SETTING) {
			k->f_name = jfr_field_ix(d, i, "name");
			k->f_val2 = jfr_field_ix(d, i, "value");
		}
		static const char *const corr[3] = {"contextId", "spanId", "spanName"};
		for (int j = 0; j < 3; j++)
			k->f_corr[j] = jfr_ev_tab[k->ev].correlated ? jfr_field_ix(d, i, corr[j]) : NO_IX;
	}
	memset(d->ev_cls, 0xff, sizeof d->ev_cls);
	for (uint32_t i = 0; i < d->n_cls; i++)
		if (d->cls[i].id < JF_DENSE_TYPES)
			d->ev_cls[d->cls[i].id] = i;
	d->t_string = class_named(d, "java.lang.String");
	d->t_state = class_named(d, "jdk.types.ThreadState");
	d->t_stack = class_named(d, "jdk.types.StackTrace");
	d->t_method = class_named(d, "jdk.types.Method");
	d->t_class = class_named(d, "java.lang.Class");
	d->t_symbol = class_named(d, "jdk.types.Symbol");
	d->t_ftype = class_named(d, "jdk.types.FrameType");
	d->t_chunkhdr = class_named(d, "jdk.types.ChunkHeader");
	return 0;
}

/* The size and type of the metadata (type 0) or a checkpoint (type 1)
 * event at at: *pos after them, *end the event's end (within the chunk). */
int jfr_event_head(jf_dec_t *d, size_t at, uint64_t want, const char *what, size_t *pos, size_t *end)
{
	uint64_t size, type;
	char what_size[40];
	snprintf(what_size, sizeof what_size, "%s size", what);
	*pos = at;
	if (jfr_rd_len(d, pos, d->cend, d->cend - at, &size, what_size) < 0)
		return -1;
	if (size == 0)
		return jfr_fail(d, at, "%s size is 0", what);
	*end = at + (size_t)size;
	if (jfr_rd_len(d, pos, *end, UINT32_MAX, &type, what) < 0)
		return -1;
	if (type != want)
		return jfr_fail(d, at, "%s has type %" PRIu64 ", expected %" PRIu64, what, type, want);
	return 0;
}

int jfr_parse_metadata(jf_dec_t *d, size_t at)
{
	size_t pos, end;
	uint64_t v, n;
	d->meta_at = at;
	if (jfr_event_head(d, at, 0, "metadata event", &pos, &end) < 0)
		return -1;
	for (int i = 0; i < 3; i++) /* start time, duration, metadata id */
		if (jfr_rd_u64(d, &pos, end, &v, "metadata event header") < 0)
			return -1;
	if (jfr_rd_len(d, &pos, end, LIMIT_JFR_META_STRINGS, &n, "metadata string count") < 0)
		return -1;
	if (n > end - pos)
		return jfr_fail(d, pos, "metadata string count %" PRIu64 " is more than the %zu bytes left",
		                n, end - pos);
	d->n_mstr = (uint32_t)n;
	d->mstr = arena_alloc(d->scratch, (size_t)n * sizeof *d->mstr + 1);
	for (uint32_t i = 0; i < d->n_mstr; i++)
		if (jfr_rd_string(d, &pos, end, &d->mstr[i], 0, "metadata string") < 0)
			return -1;
	jf_elem_t root, e;
	if (read_elem(d, &pos, end, &root) < 0)
		return -1;
	if (!slice_eq_cstr(root.name, "root"))
		return jfr_fail(d, at, "metadata: the first element is not 'root'");
	for (uint64_t i = 0; i < root.n_children; i++) {
		if (read_elem(d, &pos, end, &e) < 0)
			return -1;
		if (!slice_eq_cstr(e.name, "metadata")) {
			if (skip_children(d, &pos, end, e.n_children, 1) < 0)
				return -1;
			continue;
		}
		for (uint64_t j = 0; j < e.n_children; j++) {
			jf_elem_t ce;
			if (read_elem(d, &pos, end, &ce) < 0)
				return -1;
			if (!slice_eq_cstr(ce.name, "class")) {
				if (skip_children(d, &pos, end, ce.n_children, 2) < 0)
					return -1;
				continue;
			}
			if (parse_class(d, &pos, end, &ce) < 0)
				return -1;
		}
	}
	return finish_metadata(d, at);
}
