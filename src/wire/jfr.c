/* JFR → the normalized batch (wire/jfr.h). One bounded pass per chunk:
 * the header, the metadata event (types and their fields, into tables), the
 * checkpoint chain (every constant-pool entry recorded as id → the offset
 * of its value, resolved only when an event needs it), then the events in
 * file order. Values are read by their metadata type: compressed or fixed
 * integers by the chunk's features, strings in their five encodings, nested
 * types field by field (depth LIMIT_JFR_NESTING); a type that would nest in
 * itself, or that reads as no bytes where it is a value, is refused when
 * the metadata is read, so every value read consumes input and the work is
 * linear in the file. Every error names the chunk, the byte offset in the
 * file and the problem. Distinct stacks are merged per kind as they come
 * (model nodes as keys), so a profile holds one row per stack. */
#include <endian.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/arena.h"
#include "base/limits.h"
#include "base/num.h"
#include "base/u64map.h"
#include "wire/jfr.h"
#include "wire/jfr_int.h"

const jfr_kind_t jfr_kinds[JFR_KINDS] = {
    [JFR_CPU] =
        {"jdk.ExecutionSample", "process_cpu", {"cpu", NULL}, {"nanoseconds", NULL}, "cpu", "nanoseconds"},
    [JFR_WALL] =
        {"profiler.WallClockSample", "wall", {"wall", NULL}, {"nanoseconds", NULL}, "wall", "nanoseconds"},
    [JFR_ALLOC_IN_TLAB] = {"jdk.ObjectAllocationInNewTLAB",
                           "memory",
                           {"alloc_in_new_tlab_objects", "alloc_in_new_tlab_bytes"},
                           {"count", "bytes"},
                           "space",
                           "bytes"},
    [JFR_ALLOC_OUTSIDE_TLAB] = {"jdk.ObjectAllocationOutsideTLAB",
                                "memory",
                                {"alloc_outside_tlab_objects", "alloc_outside_tlab_bytes"},
                                {"count", "bytes"},
                                "space",
                                "bytes"},
    [JFR_LOCK] = {"jdk.JavaMonitorEnter",
                  "mutex",
                  {"contentions", "delay"},
                  {"count", "nanoseconds"},
                  "mutex",
                  "count"},
    [JFR_PARK] =
        {"jdk.ThreadPark", "block", {"contentions", "delay"}, {"count", "nanoseconds"}, "block", "count"},
    [JFR_LIVE] = {"profiler.LiveObject", "memory", {"live", NULL}, {"count", NULL}, "objects", "count"},
    [JFR_ALLOC_SAMPLE] = {"jdk.ObjectAllocationSample",
                          "memory",
                          {"alloc_sample_objects", "alloc_sample_bytes"},
                          {"count", "bytes"},
                          "space",
                          "bytes"},
    [JFR_MALLOC] =
        {"profiler.Malloc", "memory", {"malloc_objects", "malloc_bytes"}, {"count", "bytes"}, "", ""},
};

#define HEADER_BYTES 68
#define JF_DENSE_TYPES 1024 /* type ids looked up in an array (writers number types from 0) */
#define NO_IX UINT32_MAX

/* Primitive kinds of metadata types, by name. */
enum { P_NONE, P_BOOL, P_BYTE, P_SHORT, P_INT, P_LONG, P_CHAR, P_FLOAT, P_DOUBLE, P_STRING };

/* The events the converter reads. */
enum {
	EV_NONE,
	EV_EXEC,
	EV_WALL,
	EV_TLAB,
	EV_OUT_TLAB,
	EV_ALLOC_SAMPLE,
	EV_MONITOR,
	EV_PARK,
	EV_LIVE,
	EV_MALLOC,
	EV_SETTING
};

typedef struct {
	slice_t name;
	uint64_t type_id;
	uint32_t type; /* class index */
	uint8_t cp, array;
	uint8_t skip, width; /* how a value is skipped: SK_*, and SK_FIXED's bytes */
} jf_field_t;

enum { SK_SLOW, SK_VAR, SK_FIXED };

typedef struct {
	size_t *off; /* value offsets, in entry order */
	uint32_t n;
	size_t cap;
	jf_idmap_t ix; /* id → entry index */
} jf_pool_t;

typedef struct {
	uint64_t id;
	slice_t name;
	uint32_t first, n; /* range in fields */
	uint8_t prim, ev;
	uint8_t state; /* minimum size: 0 not computed, 1 computing, 2 done */
	uint32_t minsize;
	uint32_t pool; /* index into pools, NO_IX when none */
	/* events: the field indexes the converter reads (NO_IX when absent) */
	uint32_t f_stack, f_state, f_value, f_name, f_val2;
	uint32_t f_corr[3]; /* contextId, spanId, spanName of the events the reference correlates */
} jf_class_t;

typedef struct {
	uint32_t *node, *attr;
	int64_t (*v)[2];
	uint32_t n;
	size_t cap;
	u64map_t ix; /* row_key(node, attr) → row */
} jf_rows_t;

typedef struct {
	slice_t data;
	const jfr_decode_opts_t *opts;
	model_batch_t *b;
	err_t *err;
	arena_t *scratch; /* one chunk's */
	uint32_t chunk;
	size_t cstart, cend;
	size_t meta_at; /* the chunk's metadata event */
	int compressed;

	slice_t *mstr;
	uint32_t n_mstr;
	jf_class_t *cls;
	uint32_t n_cls;
	size_t cap_cls;
	jf_field_t *fld;
	uint32_t n_fld;
	size_t cap_fld;
	jf_idmap_t cls_ix;               /* type id → class index */
	uint32_t ev_cls[JF_DENSE_TYPES]; /* the same for type ids below JF_DENSE_TYPES, NO_IX when none */
	jf_pool_t *pools;
	uint32_t n_pools;
	size_t cap_pools;
	uint32_t t_string, t_state, t_stack, t_method, t_class, t_symbol, t_ftype, t_chunkhdr;

	/* Per-chunk caches of resolved pool entries. */
	jf_idmap_t stack_cache;  /* stack trace id → node */
	jf_idmap_t method_cache; /* method id → index in names (NO_IX: not resolvable) */
	jf_idmap_t ftype_cache;  /* frame type id → index in frame_kinds */
	jf_idmap_t state_cache;  /* thread state id → resolve_state's answer */
	jf_idmap_t sym_cache;    /* symbol id → index in strs: its string, renamed */
	jf_idmap_t cls_cache;    /* class id → index in strs: its name (NO_IX: not in the pool) */
	jf_idmap_t str_cache;    /* java.lang.String pool id → index in strs */
	slice_t *strs;
	uint32_t n_strs;
	size_t cap_strs;
	slice_t *names;
	uint32_t (*name_frame)[3]; /* per name and frame kind: its model frame, NO_IX until interned */
	uint32_t n_names;
	size_t cap_names;
	uint32_t frames[LIMIT_STACK_DEPTH]; /* scratch: one stack's method name indexes, leaf first */
	uint8_t kinds[LIMIT_STACK_DEPTH];

	/* Sample attributes (the correlation of an event: contextId, spanId,
	 * spanName) → model attrset; the last one asked, and per context id
	 * for events without a span. */
	jf_idmap_t ctx_attr;
	uint64_t memo_corr[3];
	uint32_t memo_attr;
	int has_memo;
	model_label_t attr_labels[LIMIT_LABELS];
	char span_hex[17];

	int wall_setting; /* the `event` setting is "wall" */
	int64_t period;
	uint32_t max_rows;
	uint64_t frames_total;
	jf_rows_t rows[JFR_KINDS];
} jf_dec_t;

static const char *const frame_kinds[] = {"jvm", "native", "kernel"};

/* ---- Errors and reading ------------------------------------------------ */

/* Sets err to status with "chunk N at offset O: " before the message; -1. */
__attribute__((format(printf, 4, 5))) static int fail_st(jf_dec_t *d, int status, size_t off, const char *fmt,
                                                         ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return err_set(d->err, status, "chunk %" PRIu32 " at offset %zu: %s", d->chunk, off, msg);
}
#define fail(d, off, ...) fail_st(d, 400, off, __VA_ARGS__)
#define fail413(d, off, ...) fail_st(d, 413, off, __VA_ARGS__)

/* A JFR varint: LEB128, at most 9 bytes, the 9th carrying 8 bits (so any
 * 64-bit value fits). what names the value in errors. */
static int rd_u64_slow(jf_dec_t *d, size_t *pos, size_t end, uint64_t *v, const char *what)
{
	const uint8_t *p = d->data.p;
	size_t q = *pos;
	uint64_t x = 0;
	for (unsigned i = 0; i < 9; i++) {
		if (q >= end)
			return fail(d, *pos, "%s: varint truncated", what);
		uint8_t c = p[q++];
		if (i == 8) {
			x |= (uint64_t)c << 56;
			break;
		}
		x |= (uint64_t)(c & 0x7f) << (7 * i);
		if (!(c & 0x80))
			break;
	}
	*pos = q;
	*v = x;
	return 0;
}

static inline int rd_u64(jf_dec_t *d, size_t *pos, size_t end, uint64_t *v, const char *what)
{
	if (*pos < end && d->data.p[*pos] < 0x80) { /* most ids and values fit one byte */
		*v = d->data.p[(*pos)++];
		return 0;
	}
	return rd_u64_slow(d, pos, end, v, what);
}

/* A size, count, index or offset: a varint that ends within 9 bytes
 * (a 9th byte with its high bit set is the start of a 10-byte varint,
 * which no writer produces for these) and is at most max. */
static inline int rd_len(jf_dec_t *d, size_t *pos, size_t end, uint64_t max, uint64_t *v, const char *what)
{
	size_t start = *pos;
	if (rd_u64(d, pos, end, v, what) < 0)
		return -1;
	if (*pos - start == 9 && (d->data.p[*pos - 1] & 0x80))
		return fail(d, start, "%s: varint of 10 or more bytes", what);
	if (*v > max)
		return fail(d, start, "%s %" PRIu64 " is out of range (at most %" PRIu64 ")", what, *v, max);
	return 0;
}

static int rd_fixed(jf_dec_t *d, size_t *pos, size_t end, unsigned n, uint64_t *v, const char *what)
{
	if (end - *pos < n)
		return fail(d, *pos, "%s: truncated (%u bytes needed, %zu left)", what, n, end - *pos);
	uint64_t x = 0;
	for (unsigned i = 0; i < n; i++)
		x = x << 8 | d->data.p[*pos + i];
	*pos += n;
	*v = x;
	return 0;
}

/* Bytes of a primitive when integers are not compressed; the ones marked
 * in prim_varint are varints when they are. */
static const uint8_t prim_bytes[] = {[P_BOOL] = 1, [P_BYTE] = 1,  [P_SHORT] = 2,  [P_INT] = 4,   [P_LONG] = 8,
                                     [P_CHAR] = 2, [P_FLOAT] = 4, [P_DOUBLE] = 8, [P_STRING] = 1};
static const uint8_t prim_varint[] = {[P_SHORT] = 1, [P_INT] = 1, [P_LONG] = 1, [P_CHAR] = 1, [P_STRING] = 0};

static int rd_int(jf_dec_t *d, uint8_t prim, size_t *pos, size_t end, uint64_t *v, const char *what)
{
	if (d->compressed && prim_varint[prim])
		return rd_u64(d, pos, end, v, what);
	return rd_fixed(d, pos, end, prim_bytes[prim], v, what);
}

static void put_utf8(uint8_t *out, size_t *n, uint64_t c)
{
	if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		c = 0xfffd;
	if (c < 0x80) {
		out[(*n)++] = (uint8_t)c;
	} else if (c < 0x800) {
		out[(*n)++] = (uint8_t)(0xc0 | c >> 6);
		out[(*n)++] = (uint8_t)(0x80 | (c & 0x3f));
	} else if (c < 0x10000) {
		out[(*n)++] = (uint8_t)(0xe0 | c >> 12);
		out[(*n)++] = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
		out[(*n)++] = (uint8_t)(0x80 | (c & 0x3f));
	} else {
		out[(*n)++] = (uint8_t)(0xf0 | c >> 18);
		out[(*n)++] = (uint8_t)(0x80 | ((c >> 12) & 0x3f));
		out[(*n)++] = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
		out[(*n)++] = (uint8_t)(0x80 | (c & 0x3f));
	}
}

static int pool_find(const jf_dec_t *d, uint32_t cls, uint64_t id, size_t *off);

/* Keeps s in d->strs (for the string caches): its index. */
static uint32_t keep_str(jf_dec_t *d, slice_t s)
{
	d->strs = xgrow(d->strs, &d->cap_strs, d->n_strs + 1, sizeof *d->strs);
	d->strs[d->n_strs] = s;
	return d->n_strs++;
}

/* A string value: encoding byte 0 (null) or 1 (empty), 2 (an id in the
 * java.lang.String pool; pooled = 0 inside that pool), 3 (UTF-8), 4 (char
 * array) or 5 (Latin-1). out NULL: only skipped. Char arrays and Latin-1
 * above 0x7f are re-encoded as UTF-8 into the chunk's arena. */
static int rd_string(jf_dec_t *d, size_t *pos, size_t end, slice_t *out, int pooled, const char *what)
{
	size_t start = *pos;
	if (*pos >= end)
		return fail(d, start, "%s: string truncated", what);
	uint8_t enc = d->data.p[(*pos)++];
	uint64_t n, id;
	if (out)
		*out = slice_make("", 0);
	switch (enc) {
	case 0:
	case 1:
		return 0;
	case 2: {
		size_t off;
		if (!pooled)
			return fail(d, start, "%s: a pooled string (encoding 2) where none may be", what);
		if (rd_u64(d, pos, end, &id, what) < 0)
			return -1;
		if (!out)
			return 0;
		uint32_t ix;
		if (idmap_get(&d->str_cache, id, &ix)) { /* each pooled string converted once */
			*out = d->strs[ix];
			return 0;
		}
		if (d->t_string == NO_IX || !pool_find(d, d->t_string, id, &off))
			return fail(d, start, "%s: string id %" PRIu64 " is not in the string pool", what,
			            id);
		if (rd_string(d, &off, d->cend, out, 0, what) < 0)
			return -1;
		idmap_put(&d->str_cache, id, keep_str(d, *out));
		return 0;
	}
	case 3:
	case 5:
		if (rd_len(d, pos, end, end - *pos, &n, "string length") < 0)
			return -1;
		if (n > end - *pos) /* the bound above counted the length's own bytes */
			return fail(d, start, "%s: string of %" PRIu64 " bytes runs past the end (%zu left)",
			            what, n, end - *pos);
		if (out) {
			const uint8_t *s = d->data.p + *pos;
			size_t hi = 0;
			for (size_t i = 0; enc == 5 && i < n; i++)
				hi += s[i] >= 0x80;
			if (!hi) {
				*out = slice_make(s, (size_t)n);
			} else {
				uint8_t *u = arena_alloc(d->scratch, (size_t)n + hi);
				size_t k = 0;
				for (size_t i = 0; i < n; i++)
					put_utf8(u, &k, s[i]);
				*out = slice_make(u, k);
			}
		}
		*pos += (size_t)n;
		return 0;
	case 4: {
		if (rd_len(d, pos, end, end - *pos, &n, "string length") < 0)
			return -1;
		uint8_t *u = out ? arena_alloc(d->scratch, (size_t)n * 4 + 1) : NULL;
		size_t k = 0;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t c;
			if (rd_int(d, P_CHAR, pos, end, &c, what) < 0)
				return -1;
			if (u)
				put_utf8(u, &k, c);
		}
		if (out)
			*out = slice_make(u, k);
		return 0;
	}
	default:
		return fail(d, start, "%s: unknown string encoding %u", what, enc);
	}
}

/* ---- Values by metadata type --------------------------------------------- */

/* Skips a value of a SK_VAR or SK_FIXED field. */
static inline int skip_simple(jf_dec_t *d, const jf_field_t *f, size_t *pos, size_t end)
{
	uint64_t v;
	if (f->skip == SK_FIXED)
		return rd_fixed(d, pos, end, f->width, &v, "value");
	const uint8_t *p = d->data.p;
	size_t q = *pos;
	if (end - q >= 8) { /* the first byte without its high bit ends it (or the 9th) */
		uint64_t w;
		memcpy(&w, p + q, 8);
		w = le64toh(~w) & 0x8080808080808080ull;
		*pos = q + (w ? (size_t)__builtin_ctzll(w) / 8 + 1 : 9);
		return *pos <= end ? 0
		                   : fail(d, q, "%s: varint truncated", f->cp ? "constant pool id" : "value");
	}
	for (unsigned i = 0; i < 9; i++) {
		if (q >= end)
			return fail(d, *pos, "%s: varint truncated", f->cp ? "constant pool id" : "value");
		if (!(p[q++] & 0x80))
			break;
	}
	*pos = q;
	return 0;
}

static int skip_value(jf_dec_t *d, const jf_field_t *f, size_t *pos, size_t end, unsigned depth);

/* Skips one value of class c (not an array, not a pool reference). */
static int skip_object(jf_dec_t *d, uint32_t c, size_t *pos, size_t end, unsigned depth)
{
	const jf_class_t *k = &d->cls[c];
	uint64_t v;
	if (k->prim == P_STRING)
		return rd_string(d, pos, end, NULL, 1, "string");
	if (k->prim)
		return rd_int(d, k->prim, pos, end, &v, "value");
	if (depth >= LIMIT_JFR_NESTING)
		return fail(d, *pos, "values nested deeper than %u", LIMIT_JFR_NESTING);
	for (uint32_t i = 0; i < k->n; i++) {
		const jf_field_t *f = &d->fld[k->first + i];
		if ((f->skip != SK_SLOW ? skip_simple(d, f, pos, end)
		                        : skip_value(d, f, pos, end, depth + 1)) < 0)
			return -1;
	}
	return 0;
}

static int skip_value(jf_dec_t *d, const jf_field_t *f, size_t *pos, size_t end, unsigned depth)
{
	uint64_t n = 1, v;
	if (f->skip != SK_SLOW) /* the common case: a pool reference or an integer */
		return skip_simple(d, f, pos, end);
	if (f->array && rd_len(d, pos, end, end - *pos, &n, "array length") < 0)
		return -1;
	for (uint64_t i = 0; i < n; i++) {
		if (f->cp) {
			if (rd_u64(d, pos, end, &v, "constant pool id") < 0)
				return -1;
		} else if (skip_object(d, f->type, pos, end, depth) < 0) {
			return -1;
		}
	}
	return 0;
}

/* Reads field i of an object of class c at *pos: skips the fields before
 * it and leaves *pos at its value. NO_IX or a field past the class: 0. */
static int seek_field(jf_dec_t *d, uint32_t c, uint32_t i, size_t *pos, size_t end)
{
	const jf_class_t *k = &d->cls[c];
	if (i == NO_IX || i >= k->n)
		return 0;
	for (uint32_t j = 0; j < i; j++)
		if (skip_value(d, &d->fld[k->first + j], pos, end, 1) < 0)
			return -1;
	return 1;
}

/* The field of class c named name, NO_IX when none. */
static uint32_t field_ix(const jf_dec_t *d, uint32_t c, const char *name)
{
	const jf_class_t *k = &d->cls[c];
	for (uint32_t i = 0; i < k->n; i++)
		if (slice_eq_cstr(d->fld[k->first + i].name, name))
			return i;
	return NO_IX;
}

/* ---- Metadata ------------------------------------------------------------- */

typedef struct {
	slice_t name;
	uint64_t n_attrs, n_children;
	size_t attrs; /* offset of the first attribute */
} jf_elem_t;

static int read_elem(jf_dec_t *d, size_t *pos, size_t end, jf_elem_t *e)
{
	uint64_t ix, k, v;
	if (rd_len(d, pos, end, UINT32_MAX, &ix, "metadata element name") < 0)
		return -1;
	if (ix >= d->n_mstr)
		return fail(d, *pos, "metadata: string index %" PRIu64 " out of range (%" PRIu32 " strings)",
		            ix, d->n_mstr);
	e->name = d->mstr[ix];
	if (rd_len(d, pos, end, end - *pos, &e->n_attrs, "metadata attribute count") < 0)
		return -1;
	e->attrs = *pos;
	for (uint64_t i = 0; i < e->n_attrs; i++) {
		if (rd_len(d, pos, end, UINT32_MAX, &k, "metadata attribute") < 0 ||
		    rd_len(d, pos, end, UINT32_MAX, &v, "metadata attribute") < 0)
			return -1;
		if (k >= d->n_mstr || v >= d->n_mstr)
			return fail(d, *pos,
			            "metadata: string index %" PRIu64 " out of range (%" PRIu32 " strings)",
			            k >= d->n_mstr ? k : v, d->n_mstr);
	}
	return rd_len(d, pos, end, end - *pos, &e->n_children, "metadata child count");
}

/* The value of attribute name of e (already checked by read_elem), empty when absent. */
static slice_t elem_attr(jf_dec_t *d, const jf_elem_t *e, const char *name)
{
	size_t pos = e->attrs;
	uint64_t k, v;
	for (uint64_t i = 0; i < e->n_attrs; i++) {
		rd_len(d, &pos, d->cend, UINT32_MAX, &k, "attribute");
		rd_len(d, &pos, d->cend, UINT32_MAX, &v, "attribute");
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
		return fail(d, *pos, "metadata elements nested deeper than %u", LIMIT_JFR_META_DEPTH);
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
		return fail(d, at, "metadata: class without a numeric id or a name");
	if (d->n_cls >= LIMIT_JFR_TYPES)
		return fail413(d, at, "metadata: more than %u types", LIMIT_JFR_TYPES);
	uint32_t dup;
	if (idmap_get(&d->cls_ix, id, &dup))
		return fail(d, at, "metadata: type id %" PRIu64 " defined twice", id);
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
				return fail(d, fat,
				            "metadata: field of %.*s without a numeric class or a name",
				            (int)(name.n > 64 ? 64 : name.n), (const char *)name.p);
			if (dim.n && !slice_eq_cstr(dim, "1"))
				return fail(d, fat,
				            "metadata: field %.*s has dimension %.*s (only 1 is supported)",
				            (int)(fname.n > 64 ? 64 : fname.n), (const char *)fname.p,
				            (int)(dim.n > 16 ? 16 : dim.n), (const char *)dim.p);
			if (d->n_fld >= LIMIT_JFR_FIELDS)
				return fail413(d, fat, "metadata: more than %u fields", LIMIT_JFR_FIELDS);
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
static const struct {
	const char *event, *value;
	int kind;       /* the profile of the events other than cpu and wall: count 1 + value */
	int correlated; /* its contextId / spanId / spanName give sample attributes (as the reference) */
} ev_tab[] = {
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
		if (slice_eq_cstr(name, ev_tab[i].event))
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
		return fail(d, d->meta_at, "metadata: type %.*s nests types more than %u deep",
		            (int)(k->name.n > 64 ? 64 : k->name.n), (const char *)k->name.p,
		            LIMIT_JFR_NESTING);
	if (k->state == 1)
		return fail(d, d->meta_at, "metadata: type %.*s contains itself (recursion in nested types)",
		            (int)(k->name.n > 64 ? 64 : k->name.n), (const char *)k->name.p);
	k->state = 1;
	uint64_t sum = 0;
	if (k->prim)
		sum = d->compressed && prim_varint[k->prim] ? 1 : prim_bytes[k->prim];
	for (uint32_t i = 0; !k->prim && i < k->n; i++) {
		const jf_field_t *f = &d->fld[k->first + i];
		uint32_t m = 1;
		if (!f->array && !f->cp && min_size(d, f->type, depth + 1, &m) < 0)
			return -1;
		if (!f->array && !f->cp && m == 0)
			return fail(d, d->meta_at, "metadata: field %.*s of %.*s has a type with no fields",
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
			return fail(d, at, "metadata: field %.*s has type %" PRIu64 ", which is not defined",
			            (int)(f->name.n > 64 ? 64 : f->name.n), (const char *)f->name.p,
			            f->type_id);
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
		f->skip = f->cp || (d->compressed && prim_varint[prim]) ? SK_VAR : SK_FIXED;
		f->width = f->skip == SK_FIXED ? prim_bytes[prim] : 0;
	}
	for (uint32_t i = 0; i < d->n_cls; i++) {
		uint32_t m;
		if (min_size(d, i, 0, &m) < 0)
			return -1;
		jf_class_t *k = &d->cls[i];
		k->f_stack = field_ix(d, i, "stackTrace");
		k->f_state = field_ix(d, i, "state");
		k->f_name = k->f_val2 = k->f_value = NO_IX;
		if (k->ev != EV_NONE && ev_tab[k->ev].value)
			k->f_value = field_ix(d, i, ev_tab[k->ev].value);
		if (k->ev == EV_SETTING) {
			k->f_name = field_ix(d, i, "name");
			k->f_val2 = field_ix(d, i, "value");
		}
		static const char *const corr[3] = {"contextId", "spanId", "spanName"};
		for (int j = 0; j < 3; j++)
			k->f_corr[j] = ev_tab[k->ev].correlated ? field_ix(d, i, corr[j]) : NO_IX;
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
static int event_head(jf_dec_t *d, size_t at, uint64_t want, const char *what, size_t *pos, size_t *end)
{
	uint64_t size, type;
	char what_size[40];
	snprintf(what_size, sizeof what_size, "%s size", what);
	*pos = at;
	if (rd_len(d, pos, d->cend, d->cend - at, &size, what_size) < 0)
		return -1;
	if (size == 0)
		return fail(d, at, "%s size is 0", what);
	*end = at + (size_t)size;
	if (rd_len(d, pos, *end, UINT32_MAX, &type, what) < 0)
		return -1;
	if (type != want)
		return fail(d, at, "%s has type %" PRIu64 ", expected %" PRIu64, what, type, want);
	return 0;
}

static int parse_metadata(jf_dec_t *d, size_t at)
{
	size_t pos, end;
	uint64_t v, n;
	d->meta_at = at;
	if (event_head(d, at, 0, "metadata event", &pos, &end) < 0)
		return -1;
	for (int i = 0; i < 3; i++) /* start time, duration, metadata id */
		if (rd_u64(d, &pos, end, &v, "metadata event header") < 0)
			return -1;
	if (rd_len(d, &pos, end, LIMIT_JFR_META_STRINGS, &n, "metadata string count") < 0)
		return -1;
	if (n > end - pos)
		return fail(d, pos, "metadata string count %" PRIu64 " is more than the %zu bytes left", n,
		            end - pos);
	d->n_mstr = (uint32_t)n;
	d->mstr = arena_alloc(d->scratch, (size_t)n * sizeof *d->mstr + 1);
	for (uint32_t i = 0; i < d->n_mstr; i++)
		if (rd_string(d, &pos, end, &d->mstr[i], 0, "metadata string") < 0)
			return -1;
	jf_elem_t root, e;
	if (read_elem(d, &pos, end, &root) < 0)
		return -1;
	if (!slice_eq_cstr(root.name, "root"))
		return fail(d, at, "metadata: the first element is not 'root'");
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

/* ---- Constant pools ------------------------------------------------------- */

static int pool_find(const jf_dec_t *d, uint32_t cls, uint64_t id, size_t *off)
{
	uint32_t p = d->cls[cls].pool, e;
	if (p == NO_IX)
		return 0;
	if (!idmap_get(&d->pools[p].ix, id, &e))
		return 0;
	const jf_pool_t *pl = &d->pools[p];
	*off = pl->off[e];
	return 1;
}

static int parse_checkpoint(jf_dec_t *d, size_t at, int64_t *delta, uint64_t *entries)
{
	size_t pos, end;
	uint64_t v, n_pools;
	if (event_head(d, at, 1, "checkpoint event", &pos, &end) < 0)
		return -1;
	if (rd_u64(d, &pos, end, &v, "checkpoint start") < 0 ||
	    rd_u64(d, &pos, end, &v, "checkpoint duration") < 0 ||
	    rd_u64(d, &pos, end, &v, "checkpoint delta") < 0)
		return -1;
	*delta = (int64_t)v;
	if (rd_u64(d, &pos, end, &v, "checkpoint flags") < 0 ||
	    rd_len(d, &pos, end, end - pos, &n_pools, "constant pool count") < 0)
		return -1;
	for (uint64_t i = 0; i < n_pools; i++) {
		size_t tat = pos;
		uint64_t tid, count;
		uint32_t c;
		if (rd_u64(d, &pos, end, &tid, "constant pool type") < 0)
			return -1;
		if (!idmap_get(&d->cls_ix, tid, &c))
			return fail(d, tat,
			            "constant pool of type %" PRIu64 ", which the metadata does not define",
			            tid);
		if (c == d->t_chunkhdr) { /* async-profiler: a copy of the chunk header, no entries */
			if (end - pos < HEADER_BYTES)
				return fail(d, pos, "constant pool jdk.types.ChunkHeader: truncated");
			pos += HEADER_BYTES;
			continue;
		}
		if (rd_len(d, &pos, end, end - pos, &count, "constant pool entry count") < 0)
			return -1;
		jf_class_t *k = &d->cls[c];
		if (k->pool == NO_IX) {
			d->pools = xgrow(d->pools, &d->cap_pools, d->n_pools + 1, sizeof *d->pools);
			memset(&d->pools[d->n_pools], 0, sizeof *d->pools);
			u64map_init(&d->pools[d->n_pools].ix.m);
			k->pool = d->n_pools++;
		}
		jf_pool_t *pl = &d->pools[k->pool];
		jf_field_t self = {k->name, k->id, c, 0, 0, SK_SLOW, 0};
		for (uint64_t j = 0; j < count; j++) {
			uint64_t id;
			if (++*entries > LIMIT_JFR_POOL_ENTRIES)
				return fail413(d, pos, "more than %u constant pool entries in one chunk",
				               LIMIT_JFR_POOL_ENTRIES);
			if (rd_u64(d, &pos, end, &id, "constant pool id") < 0)
				return -1;
			if (j == 0) { /* room for the count announced, within what the bytes left can hold */
				uint64_t room = count < (1u << 16) ? count : (1u << 16);
				pl->off = xgrow(pl->off, &pl->cap, pl->n + room, sizeof *pl->off);
				u64map_reserve(&pl->ix.m, pl->ix.m.len + room);
			}
			pl->off = xgrow(pl->off, &pl->cap, pl->n + 1, sizeof *pl->off);
			pl->off[pl->n] = pos;
			idmap_put(&pl->ix, id, pl->n);
			pl->n++;
			if (skip_value(d, &self, &pos, end, 0) < 0)
				return -1;
		}
	}
	return 0;
}

/* The checkpoint chain from the header's offset back through each delta. */
static int parse_pools(jf_dec_t *d, size_t pos)
{
	uint64_t entries = 0;
	for (uint32_t n = 0;; n++) {
		int64_t delta = 0;
		if (n >= LIMIT_JFR_CHECKPOINTS)
			return fail413(d, pos, "more than %u checkpoints in one chunk",
			               LIMIT_JFR_CHECKPOINTS);
		if (parse_checkpoint(d, pos, &delta, &entries) < 0)
			return -1;
		if (delta == 0)
			return 0;
		/* Each checkpoint points back to an earlier one: the chain ends. */
		if (delta > 0 || (uint64_t) - (delta + 1) >= pos - d->cstart - HEADER_BYTES)
			return fail(d, pos,
			            "checkpoint delta %" PRId64
			            " does not point to an earlier checkpoint in the chunk",
			            delta);
		pos -= (size_t)(-(delta + 1)) + 1;
	}
}

/* ---- Symbols as the reference names them ------------------------------------ */

/* The string of symbol id, renamed as the reference does; empty when the
 * symbol is not in the pool (as the reference's GetSymbolString). */
static int symbol_string(jf_dec_t *d, uint64_t id, slice_t *out)
{
	size_t pos;
	uint32_t ix;
	if (idmap_get(&d->sym_cache, id, &ix)) { /* each symbol read and renamed once */
		*out = d->strs[ix];
		return 0;
	}
	*out = slice_make("", 0);
	if (d->t_symbol == NO_IX || !pool_find(d, d->t_symbol, id, &pos))
		return 0;
	uint32_t f = field_ix(d, d->t_symbol, "string");
	if (f == NO_IX || d->cls[d->fld[d->cls[d->t_symbol].first + f].type].prim != P_STRING ||
	    d->fld[d->cls[d->t_symbol].first + f].cp || d->fld[d->cls[d->t_symbol].first + f].array)
		return 0;
	if (seek_field(d, d->t_symbol, f, &pos, d->cend) < 0 ||
	    rd_string(d, &pos, d->cend, out, 1, "symbol") < 0)
		return -1;
	*out = jfr_symbol_merge(d->scratch, *out);
	idmap_put(&d->sym_cache, id, keep_str(d, *out));
	return 0;
}

/* ---- Stacks ------------------------------------------------------------------ */

/* Class.method of a method id, as an index into d->names; NO_IX when the
 * method or its class is not in the pools (the frame is left out). */
/* Reads an object of class c at *pos: ids[k] is the pool id of its
 * reference field named name[k] whose type is class type[k] (bit k of the
 * answer set when there is one); other fields are skipped. */
static int read_refs(jf_dec_t *d, uint32_t c, size_t *pos, const char *const name[2], const uint32_t type[2],
                     uint64_t ids[2], int *has)
{
	const jf_class_t *k = &d->cls[c];
	*has = 0;
	for (uint32_t i = 0; i < k->n; i++) {
		const jf_field_t *f = &d->fld[k->first + i];
		int r = !f->cp || f->array                                      ? -1
		        : f->type == type[0] && slice_eq_cstr(f->name, name[0]) ? 0
		        : f->type == type[1] && slice_eq_cstr(f->name, name[1]) ? 1
		                                                                : -1;
		if (r < 0 ? skip_value(d, f, pos, d->cend, 1) < 0
		          : rd_u64(d, pos, d->cend, &ids[r], name[r]) < 0)
			return -1;
		if (r >= 0)
			*has |= 1 << r;
	}
	return 0;
}

/* Class.method of a method id, as an index into d->names; NO_IX when the
 * method or its class is not in the pools (the frame is left out). */
static int resolve_method(jf_dec_t *d, uint64_t id, uint32_t *out)
{
	static const char *const method_refs[2] = {"type", "name"}, *const class_refs[2] = {"name", ""};
	uint64_t m[2] = {0}, c[2] = {0};
	int has_m, has_c;
	size_t pos;
	if (idmap_get(&d->method_cache, id, out))
		return 0;
	*out = NO_IX;
	if (d->t_method == NO_IX || !pool_find(d, d->t_method, id, &pos))
		goto done;
	if (read_refs(d, d->t_method, &pos, method_refs, (const uint32_t[2]){d->t_class, d->t_symbol}, m,
	              &has_m) < 0)
		return -1;
	uint32_t cix;
	slice_t cname = slice_make("", 0), mname = slice_make("", 0);
	if (!(has_m & 1))
		goto done;
	if (!idmap_get(&d->cls_cache, m[0], &cix)) { /* each class read once */
		cix = NO_IX;
		if (d->t_class != NO_IX && pool_find(d, d->t_class, m[0], &pos)) {
			if (read_refs(d, d->t_class, &pos, class_refs,
			              (const uint32_t[2]){d->t_symbol, NO_IX}, c, &has_c) < 0 ||
			    ((has_c & 1) && symbol_string(d, c[0], &cname) < 0))
				return -1;
			cix = keep_str(d, cname);
		}
		idmap_put(&d->cls_cache, m[0], cix);
	}
	if (cix == NO_IX)
		goto done;
	cname = d->strs[cix];
	if ((has_m & 2) && symbol_string(d, m[1], &mname) < 0)
		return -1;
	/* Class.method, cut at LIMIT_STRING_BYTES (so a long symbol costs its length once) */
	size_t cn = cname.n < LIMIT_STRING_BYTES ? cname.n : LIMIT_STRING_BYTES;
	size_t mn = mname.n < LIMIT_STRING_BYTES - cn ? mname.n : LIMIT_STRING_BYTES - cn;
	size_t n = cn + 1 + mn;
	uint8_t *s = arena_alloc(d->scratch, n);
	memcpy(s, cname.p, cn);
	s[cn] = '.';
	memcpy(s + cn + 1, mname.p, mn);
	if (d->n_names == d->cap_names) {
		d->names = xgrow(d->names, &d->cap_names, d->n_names + 1, sizeof *d->names);
		d->name_frame = xrealloc(d->name_frame, d->cap_names * sizeof *d->name_frame);
	}
	d->names[d->n_names] = slice_make(s, n > LIMIT_STRING_BYTES ? LIMIT_STRING_BYTES : n);
	memset(d->name_frame[d->n_names], 0xff, sizeof d->name_frame[0]);
	*out = d->n_names++;
done:
	idmap_put(&d->method_cache, id, *out);
	return 0;
}

/* Kind index (frame_kinds) of a frame type id. */
static int resolve_ftype(jf_dec_t *d, uint64_t id, uint8_t *kind)
{
	uint32_t v;
	size_t pos;
	if (idmap_get(&d->ftype_cache, id, &v)) {
		*kind = (uint8_t)v;
		return 0;
	}
	*kind = 0;
	if (d->t_ftype != NO_IX && pool_find(d, d->t_ftype, id, &pos)) {
		uint32_t f = field_ix(d, d->t_ftype, "description");
		slice_t s;
		if (f != NO_IX && d->fld[d->cls[d->t_ftype].first + f].type == d->t_string &&
		    !d->fld[d->cls[d->t_ftype].first + f].cp && !d->fld[d->cls[d->t_ftype].first + f].array) {
			if (seek_field(d, d->t_ftype, f, &pos, d->cend) < 0 ||
			    rd_string(d, &pos, d->cend, &s, 1, "frame type") < 0)
				return -1;
			if (slice_eq_cstr(s, "Native") || slice_eq_cstr(s, "C++"))
				*kind = 1;
			else if (slice_eq_cstr(s, "Kernel"))
				*kind = 2;
		}
	}
	idmap_put(&d->ftype_cache, id, *kind);
	return 0;
}

/* The model node of stack trace id (MODEL_NONE: an empty stack). */
static int resolve_stack(jf_dec_t *d, uint64_t id, size_t at, uint32_t *node)
{
	if (idmap_get(&d->stack_cache, id, node))
		return 0;
	size_t pos;
	if (d->t_stack == NO_IX || !pool_find(d, d->t_stack, id, &pos))
		return fail(d, at, "stack trace id %" PRIu64 " is not in the constant pool", id);
	const jf_class_t *st = &d->cls[d->t_stack];
	uint32_t n = 0;
	uint64_t depth = 0;
	for (uint32_t i = 0; i < st->n; i++) {
		const jf_field_t *f = &d->fld[st->first + i];
		const jf_class_t *fr = &d->cls[f->type];
		if (!(slice_eq_cstr(f->name, "frames") && f->array && !f->cp && !fr->prim)) {
			if (skip_value(d, f, &pos, d->cend, 1) < 0)
				return -1;
			continue;
		}
		if (rd_len(d, &pos, d->cend, d->cend - pos, &depth, "stack frame count") < 0)
			return -1;
		for (uint64_t j = 0; j < depth; j++) {
			static const char *const frame_refs[2] = {"method", "type"};
			uint64_t ids[2] = {0};
			int has;
			if (read_refs(d, f->type, &pos, frame_refs,
			              (const uint32_t[2]){d->t_method, d->t_ftype}, ids, &has) < 0)
				return -1;
			uint32_t name;
			uint8_t kind = 0;
			if (!(has & 1) || n >= LIMIT_STACK_DEPTH)
				continue;
			if (resolve_method(d, ids[0], &name) < 0 ||
			    ((has & 2) && resolve_ftype(d, ids[1], &kind) < 0))
				return -1;
			if (name == NO_IX)
				continue;
			d->frames[n] = name;
			d->kinds[n++] = kind;
		}
	}
	uint32_t parent = MODEL_NONE;
	for (uint32_t i = n; i-- > 0;) {
		uint32_t *fr = &d->name_frame[d->frames[i]][d->kinds[i]];
		if (*fr == NO_IX) {
			model_frame_t f = {0};
			f.name = d->names[d->frames[i]];
			f.kind = slice_cstr(frame_kinds[d->kinds[i]]);
			*fr = model_frame_intern(d->b, &f);
		}
		parent = model_node_intern(d->b, parent, *fr);
	}
	d->frames_total += n;
	if (d->frames_total > LIMIT_REQUEST_FRAMES)
		return err_set(d->err, 413,
		               "the recording's distinct stacks write out more than %u frames (the limit)",
		               LIMIT_REQUEST_FRAMES);
	*node = parent;
	idmap_put(&d->stack_cache, id, parent);
	return 0;
}

/* STATE_* of a thread state id: 1 sleeping, 2 runnable, 3 other, 0 not in the pool. */
static int resolve_state(jf_dec_t *d, uint64_t id, uint32_t *state)
{
	size_t pos;
	slice_t s;
	if (idmap_get(&d->state_cache, id, state))
		return 0;
	*state = 0;
	if (d->t_state != NO_IX && pool_find(d, d->t_state, id, &pos)) {
		uint32_t f = field_ix(d, d->t_state, "name");
		*state = 3;
		if (f != NO_IX && d->fld[d->cls[d->t_state].first + f].type == d->t_string &&
		    !d->fld[d->cls[d->t_state].first + f].cp && !d->fld[d->cls[d->t_state].first + f].array) {
			if (seek_field(d, d->t_state, f, &pos, d->cend) < 0 ||
			    rd_string(d, &pos, d->cend, &s, 1, "thread state") < 0)
				return -1;
			*state = slice_eq_cstr(s, "STATE_SLEEPING")   ? 1
			         : slice_eq_cstr(s, "STATE_RUNNABLE") ? 2
			                                              : 3;
		}
	}
	idmap_put(&d->state_cache, id, *state);
	return 0;
}

/* ---- Events ------------------------------------------------------------------- */

/* The map key of a row: node and attrset, mixed (never 0: the pair is
 * offset by 1 and the mix is a bijection that keeps only 0 at 0). */
static inline uint64_t row_key(uint32_t node, uint32_t attr)
{
	return num_mix64(((uint64_t)attr << 32 | node) + 1);
}

static int add_row(jf_dec_t *d, int kind, uint32_t node, uint32_t attr, int64_t v0, int64_t v1, size_t at)
{
	jf_rows_t *r = &d->rows[kind];
	int inserted;
	uint32_t row = u64map_get_or_put(&r->ix, row_key(node, attr), r->n, &inserted);
	if (inserted) {
		if (r->n >= d->max_rows)
			return fail413(
			    d, at,
			    "profile %s has more than %" PRIu32
			    " distinct stacks (the limit, receivers.profiles.maxDecodedSampleRows)",
			    jfr_kinds[kind].name, d->max_rows);
		r->node = xgrow(r->node, &r->cap, r->n + 1, sizeof *r->node);
		r->attr = xrealloc(r->attr, r->cap * sizeof *r->attr);
		r->v = xrealloc(r->v, r->cap * sizeof *r->v);
		r->node[r->n] = node;
		r->attr[r->n] = attr;
		r->v[r->n][0] = r->v[r->n][1] = 0;
		r->n++;
	}
	r->v[row][0] = num_sat_add(r->v[row][0], v0);
	r->v[row][1] = num_sat_add(r->v[row][1], v1);
	return 0;
}

/* The value of field i (an integer) of an event: 0 when the field is
 * absent or not an integer. *pos moves past it. */
static int event_int(jf_dec_t *d, const jf_field_t *f, size_t *pos, size_t end, int64_t *v)
{
	uint64_t x = 0;
	uint8_t prim = d->cls[f->type].prim;
	*v = 0;
	if (f->cp || f->array || prim == P_NONE || prim == P_STRING || prim == P_FLOAT || prim == P_DOUBLE)
		return skip_value(d, f, pos, end, 1);
	if (rd_int(d, prim, pos, end, &x, "event field") < 0)
		return -1;
	*v = (int64_t)x;
	return 0;
}

/* The attrset of an event's correlation (contextId, spanId, spanName):
 * wire/jfr.h's sample attributes; 0 when they come to no label. */
static uint32_t correlation_attr(jf_dec_t *d, const uint64_t corr[3])
{
	uint32_t n = jfr_labels_context(d->opts->snapshot, corr[0], d->attr_labels);
	slice_t name;
	if (corr[1]) {
		static const char hex[] = "0123456789abcdef";
		for (int i = 0; i < 16; i++)
			d->span_hex[i] = hex[(corr[1] >> (60 - 4 * i)) & 15];
		d->attr_labels[n++] = (model_label_t){slice_cstr("profile_id"), slice_make(d->span_hex, 16)};
	}
	if (corr[2] && jfr_labels_string(d->opts->snapshot, corr[2], &name) && name.n)
		d->attr_labels[n++] = (model_label_t){slice_cstr("span_name"), name};
	return model_attrset_intern(d->b, d->attr_labels, n);
}

/* The sample attrset of an event's correlation, cached: per context id
 * (events without a span) and the last correlation asked. */
static uint32_t sample_attr_of(jf_dec_t *d, const uint64_t corr[3])
{
	uint32_t a;
	if (d->has_memo && !memcmp(d->memo_corr, corr, sizeof d->memo_corr))
		return d->memo_attr;
	int plain = !corr[1] && !corr[2];
	if (!plain || !idmap_get(&d->ctx_attr, corr[0], &a)) {
		a = correlation_attr(d, corr);
		if (plain)
			idmap_put(&d->ctx_attr, corr[0], a);
	}
	memcpy(d->memo_corr, corr, sizeof d->memo_corr);
	d->memo_attr = a;
	d->has_memo = 1;
	return a;
}

static int parse_event(jf_dec_t *d, const jf_class_t *k, size_t at, size_t pos, size_t end)
{
	uint64_t stack = 0, state = 0, corr[3] = {0, 0, 0};
	int64_t value = 0;
	int has_stack = 0, has_state = 0;
	slice_t sname = {0}, svalue = {0};
	uint32_t last = 0;
	if (k->f_stack != NO_IX && k->f_stack + 1 > last)
		last = k->f_stack + 1;
	if (k->f_state != NO_IX && k->f_state + 1 > last)
		last = k->f_state + 1;
	if (k->f_value != NO_IX && k->f_value + 1 > last)
		last = k->f_value + 1;
	if (k->f_name != NO_IX && k->f_name + 1 > last)
		last = k->f_name + 1;
	if (k->f_val2 != NO_IX && k->f_val2 + 1 > last)
		last = k->f_val2 + 1;
	for (int j = 0; j < 3; j++)
		if (k->f_corr[j] != NO_IX && k->f_corr[j] + 1 > last)
			last = k->f_corr[j] + 1;
	for (uint32_t i = 0; i < last; i++) {
		const jf_field_t *f = &d->fld[k->first + i];
		int c = i == k->f_corr[0] ? 0 : i == k->f_corr[1] ? 1 : i == k->f_corr[2] ? 2 : -1;
		if (c >= 0) {
			int64_t v;
			if (event_int(d, f, &pos, end, &v) < 0)
				return -1;
			corr[c] = (uint64_t)v;
		} else if ((i == k->f_stack || i == k->f_state) && f->cp && !f->array) {
			uint64_t v;
			if (rd_u64(d, &pos, end, &v, i == k->f_stack ? "event stackTrace" : "event state") <
			    0)
				return -1;
			if (i == k->f_stack && f->type == d->t_stack) {
				stack = v;
				has_stack = 1;
			} else if (i == k->f_state && f->type == d->t_state) {
				state = v;
				has_state = 1;
			}
		} else if (i == k->f_value) {
			if (event_int(d, f, &pos, end, &value) < 0)
				return -1;
		} else if ((i == k->f_name || i == k->f_val2) && d->cls[f->type].prim == P_STRING && !f->cp &&
		           !f->array) {
			if (rd_string(d, &pos, end, i == k->f_name ? &sname : &svalue, 1, "setting") < 0)
				return -1;
		} else if ((f->skip != SK_SLOW ? skip_simple(d, f, &pos, end)
		                               : skip_value(d, f, &pos, end, 1)) < 0) {
			return -1;
		}
	}
	if (k->ev == EV_SETTING) {
		if (slice_eq_cstr(sname, "event"))
			d->wall_setting = slice_eq_cstr(svalue, "wall");
		return 0;
	}
	if (!has_stack || stack == 0) /* no stack: nothing to place */
		return 0;
	uint32_t node, st = 0, attr = 0;
	if (resolve_stack(d, stack, at, &node) < 0)
		return -1;
	if (corr[0] || corr[1] || corr[2])
		attr = sample_attr_of(d, corr);
	if (has_state && resolve_state(d, state, &st) < 0)
		return -1;
	switch (k->ev) {
	case EV_EXEC:
		if (st && st != 1 && add_row(d, JFR_CPU, node, attr, d->period, 0, at) < 0)
			return -1;
		if (d->wall_setting && add_row(d, JFR_WALL, node, attr, d->period, 0, at) < 0)
			return -1;
		return 0;
	case EV_WALL:
		if (st == 2 && d->wall_setting &&
		    add_row(d, JFR_CPU, node, attr, num_sat_mul(value, d->period), 0, at) < 0)
			return -1;
		return add_row(d, JFR_WALL, node, attr, num_sat_mul(value, d->period), 0, at);
	default: /* live objects count 1 (their value field is none) */
		return add_row(d, ev_tab[k->ev].kind, node, attr, 1, value, at);
	}
	return 0;
}

static int parse_events(jf_dec_t *d)
{
	size_t pos = d->cstart + HEADER_BYTES;
	while (pos < d->cend) {
		size_t at = pos;
		uint64_t size, type;
		uint32_t c;
		if (rd_len(d, &pos, d->cend, d->cend - at, &size, "event size") < 0)
			return -1;
		if (size == 0)
			return fail(d, at, "event size is 0");
		size_t end = at + (size_t)size;
		if (rd_u64(d, &pos, end, &type, "event type") < 0)
			return -1;
		if (type < JF_DENSE_TYPES)
			c = d->ev_cls[type];
		else if (!idmap_get(&d->cls_ix, type, &c))
			c = NO_IX;
		if (type > 1 && c != NO_IX && d->cls[c].ev != EV_NONE &&
		    parse_event(d, &d->cls[c], at, pos, end) < 0)
			return -1;
		pos = end;
	}
	return 0;
}

/* ---- Chunks -------------------------------------------------------------------- */

static uint64_t be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void chunk_reset(jf_dec_t *d)
{
	for (uint32_t i = 0; i < d->n_pools; i++) {
		u64map_free(&d->pools[i].ix.m);
		free(d->pools[i].off);
	}
	d->n_pools = 0;
	d->n_cls = d->n_fld = d->n_mstr = d->n_names = 0;
	idmap_clear(&d->cls_ix);
	idmap_clear(&d->stack_cache);
	idmap_clear(&d->method_cache);
	idmap_clear(&d->ftype_cache);
	idmap_clear(&d->state_cache);
	idmap_clear(&d->sym_cache);
	idmap_clear(&d->cls_cache);
	idmap_clear(&d->str_cache);
	d->n_strs = 0;
	if (d->scratch)
		arena_free(d->scratch);
	d->scratch = arena_new();
}

static int parse_chunk(jf_dec_t *d, size_t pos)
{
	const uint8_t *h = d->data.p + pos;
	size_t left = d->data.n - pos;
	d->cstart = pos;
	d->cend = d->data.n;
	if (left < HEADER_BYTES)
		return fail(d, pos, "chunk header truncated (%zu of %u bytes)", left, HEADER_BYTES);
	if (memcmp(h, "FLR\0", 4) != 0)
		return fail(d, pos, "not a JFR chunk: magic %02x %02x %02x %02x, expected 'FLR\\0'", h[0],
		            h[1], h[2], h[3]);
	unsigned major = (unsigned)h[4] << 8 | h[5], minor = (unsigned)h[6] << 8 | h[7];
	if (major != 2)
		return fail(d, pos + 4, "unsupported JFR version %u.%u (Kiln reads 2.x)", major, minor);
	uint64_t size = be64(h + 8), cp = be64(h + 16), meta = be64(h + 24);
	if (size < HEADER_BYTES)
		return fail(d, pos + 8, "chunk size %" PRIu64 " is smaller than its %u-byte header", size,
		            HEADER_BYTES);
	if (size > left)
		return fail(d, pos + 8,
		            "chunk size %" PRIu64 " runs past the end of the file (%zu bytes left)", size,
		            left);
	if (cp < HEADER_BYTES || cp >= size)
		return fail(d, pos + 16,
		            "constant pool offset %" PRIu64 " out of range (chunk of %" PRIu64 " bytes)", cp,
		            size);
	if (meta < HEADER_BYTES || meta >= size)
		return fail(d, pos + 24,
		            "metadata offset %" PRIu64 " out of range (chunk of %" PRIu64 " bytes)", meta,
		            size);
	d->cend = pos + (size_t)size;
	d->compressed = (h[67] & 1) != 0;
	chunk_reset(d);
	if (parse_metadata(d, pos + (size_t)meta) < 0 || parse_pools(d, pos + (size_t)cp) < 0)
		return -1;
	return parse_events(d);
}

static void emit_profiles(jf_dec_t *d)
{
	const jfr_decode_opts_t *o = d->opts;
	model_batch_t *b = d->b;
	for (int k = 0; k < JFR_KINDS; k++) {
		const jfr_kind_t *kd = &jfr_kinds[k];
		jf_rows_t *r = &d->rows[k];
		if (!r->n)
			continue;
		for (int t = 0; t < 2 && kd->type[t]; t++) {
			model_profile_t *p = model_profile_add(b);
			model_profile_set_type(b, p, slice_cstr(kd->type[t]), slice_cstr(kd->unit[t]),
			                       slice_cstr(kd->period_type), slice_cstr(kd->period_unit), 0);
			model_profile_set_service(b, p, o->service);
			for (uint32_t l = 0; l < o->n_labels; l++)
				model_profile_add_label(b, p, o->labels[l].key, o->labels[l].value);
			model_profile_add_label(b, p, slice_cstr(MODEL_PROFILE_NAME_KEY),
			                        slice_cstr(kd->name));
			p->time_ns = o->from_ns;
			p->duration_ns = o->until_ns - o->from_ns;
			for (uint32_t i = 0; i < r->n; i++)
				model_sample_add(b, p, r->node[i], r->attr[i], r->v[i][t], 0);
			model_profile_finish(b, p);
		}
	}
}

int jfr_is_jfr(slice_t data)
{
	return data.n >= 4 && memcmp(data.p, "FLR\0", 4) == 0;
}

int jfr_decode(slice_t data, const jfr_decode_opts_t *opts, model_batch_t *b, err_t *err)
{
	if (data.n == 0)
		return err_set(err, 400, "empty body: not a JFR recording");
	jf_dec_t *d = xcalloc(1, sizeof *d);
	d->data = data;
	d->opts = opts;
	d->b = b;
	d->err = err;
	d->period = 1000000000 / (opts->sample_rate > 0 ? opts->sample_rate : 100);
	d->max_rows = opts->max_rows ? opts->max_rows : LIMIT_SAMPLE_ROWS;
	d->frames_total = b->frames_written;
	u64map_init(&d->cls_ix.m);
	u64map_init(&d->stack_cache.m);
	u64map_init(&d->method_cache.m);
	u64map_init(&d->ftype_cache.m);
	u64map_init(&d->state_cache.m);
	u64map_init(&d->sym_cache.m);
	u64map_init(&d->cls_cache.m);
	u64map_init(&d->str_cache.m);
	u64map_init(&d->ctx_attr.m);
	for (int k = 0; k < JFR_KINDS; k++)
		u64map_init(&d->rows[k].ix);
	int rc = -1;
	size_t pos = 0;
	for (d->chunk = 0; pos < data.n; d->chunk++) {
		if (d->chunk >= LIMIT_JFR_CHUNKS) {
			fail413(d, pos, "more than %u chunks", LIMIT_JFR_CHUNKS);
			goto out;
		}
		if (parse_chunk(d, pos) < 0)
			goto out;
		pos = d->cend;
	}
	b->frames_written = d->frames_total;
	emit_profiles(d);
	rc = 0;
out:
	chunk_reset(d);
	arena_free(d->scratch);
	free(d->pools);
	free(d->cls);
	free(d->fld);
	free(d->names);
	free(d->name_frame);
	u64map_free(&d->cls_ix.m);
	u64map_free(&d->stack_cache.m);
	u64map_free(&d->method_cache.m);
	u64map_free(&d->ftype_cache.m);
	u64map_free(&d->state_cache.m);
	u64map_free(&d->sym_cache.m);
	u64map_free(&d->cls_cache.m);
	u64map_free(&d->str_cache.m);
	u64map_free(&d->ctx_attr.m);
	free(d->strs);
	for (int k = 0; k < JFR_KINDS; k++) {
		u64map_free(&d->rows[k].ix);
		free(d->rows[k].node);
		free(d->rows[k].attr);
		free(d->rows[k].v);
	}
	free(d);
	return rc;
}
