/* Private to wire/jfr*.c: what the JFR decoder's files share. jfr.c (the
 * chunk walk, values read by their metadata type, constant pools, the entry
 * points), jfr_meta.c (the metadata event into type and field tables),
 * jfr_events.c (stack traces and events into rows), and the decoder's symbol
 * renaming (jfr_symbols.c) and labels snapshot (jfr_labels.c). */
#ifndef KILN_WIRE_JFR_INT_H
#define KILN_WIRE_JFR_INT_H

#include <endian.h>
#include <inttypes.h>
#include <string.h>

#include "base/arena.h"
#include "base/limits.h"
#include "base/num.h"
#include "base/slice.h"
#include "base/u64map.h"
#include "wire/jfr.h"

/* A map from 64-bit ids (0 included) to 32-bit values: ids chosen by the
 * writer are mixed (a bijection, so they do not pile into one probe run;
 * only 0 mixes to 0, and the map keeps id 0 aside). */
typedef struct {
	u64map_t m; /* num_mix64(id) → value, for ids other than 0 */
	uint8_t has_zero;
	uint32_t zero; /* the value of id 0 */
} jf_idmap_t;

static inline int idmap_get(const jf_idmap_t *t, uint64_t id, uint32_t *v)
{
	if (id == 0) {
		*v = t->zero;
		return t->has_zero;
	}
	return u64map_get(&t->m, num_mix64(id), v);
}

static inline void idmap_put(jf_idmap_t *t, uint64_t id, uint32_t v)
{
	if (id == 0) {
		t->zero = v;
		t->has_zero = 1;
	} else {
		u64map_put(&t->m, num_mix64(id), v);
	}
}

static inline void idmap_clear(jf_idmap_t *t)
{
	u64map_clear(&t->m);
	t->has_zero = 0;
}

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

/* An event the converter reads (jfr_ev_tab, indexed by EV_*): its type
 * name and the field that holds its value (NULL: none). */
typedef struct {
	const char *event, *value;
	int kind;       /* the profile of the events other than cpu and wall: count 1 + value */
	int correlated; /* its contextId / spanId / spanName give sample attributes (as the reference) */
} jf_evdef_t;

/* The decoder's state: one recording, reset per chunk (jfr.c's chunk_reset). */
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

/* ---- Shared by jfr.c, jfr_meta.c and jfr_events.c ---------------------- */

/* jfr.c: errors and reading. Every reader below takes [*pos, end) within
 * d->data, moves *pos past what it read, and on bad input sets d->err
 * (jfr_fail_st) and returns -1; what names the value in the message. */

/* Sets d->err to status with "chunk N at offset O: " before the message; -1. */
__attribute__((format(printf, 4, 5))) int jfr_fail_st(jf_dec_t *d, int status, size_t off, const char *fmt,
                                                      ...);
#define jfr_fail(d, off, ...) jfr_fail_st(d, 400, off, __VA_ARGS__)
#define jfr_fail413(d, off, ...) jfr_fail_st(d, 413, off, __VA_ARGS__)

/* A JFR varint: LEB128, at most 9 bytes, the 9th carrying 8 bits (so any
 * 64-bit value fits). jfr_rd_u64 is its one-byte fast path. */
int jfr_rd_u64_slow(jf_dec_t *d, size_t *pos, size_t end, uint64_t *v, const char *what);

/* An n-byte big-endian integer. */
int jfr_rd_fixed(jf_dec_t *d, size_t *pos, size_t end, unsigned n, uint64_t *v, const char *what);

/* Bytes of a primitive P_* when integers are not compressed; the ones marked
 * in jfr_prim_varint are varints when they are. */
extern const uint8_t jfr_prim_bytes[P_STRING + 1];
extern const uint8_t jfr_prim_varint[P_STRING + 1];

/* An integer of primitive prim, compressed or fixed by the chunk's features. */
int jfr_rd_int(jf_dec_t *d, uint8_t prim, size_t *pos, size_t end, uint64_t *v, const char *what);

/* Keeps s in d->strs (for the string caches): its index. */
uint32_t jfr_keep_str(jf_dec_t *d, slice_t s);

/* A string value: encoding byte 0 (null) or 1 (empty), 2 (an id in the
 * java.lang.String pool; pooled = 0 inside that pool), 3 (UTF-8), 4 (char
 * array) or 5 (Latin-1). out NULL: only skipped. Char arrays and Latin-1
 * above 0x7f are re-encoded as UTF-8 into the chunk's arena. */
int jfr_rd_string(jf_dec_t *d, size_t *pos, size_t end, slice_t *out, int pooled, const char *what);

/* jfr.c: values by metadata type. */

/* Skips one value of field f (an array, a pool reference or an object of
 * its type), nested at most LIMIT_JFR_NESTING deep from depth. */
int jfr_skip_value(jf_dec_t *d, const jf_field_t *f, size_t *pos, size_t end, unsigned depth);

/* Reads field i of an object of class c at *pos: skips the fields before
 * it and leaves *pos at its value. 1; NO_IX or a field past the class: 0. */
int jfr_seek_field(jf_dec_t *d, uint32_t c, uint32_t i, size_t *pos, size_t end);

/* The index of the field of class c named name, NO_IX when none. */
uint32_t jfr_field_ix(const jf_dec_t *d, uint32_t c, const char *name);

/* jfr.c: constant pools. 1 and *off the offset of the value of entry id in
 * the pool of class cls; 0 when that pool or entry does not exist. */
int jfr_pool_find(const jf_dec_t *d, uint32_t cls, uint64_t id, size_t *off);

/* jfr_meta.c: the events the converter reads, by EV_*. */
extern const jf_evdef_t jfr_ev_tab[EV_SETTING + 1];

/* jfr_meta.c: the size and type of the metadata (type 0) or a checkpoint
 * (type 1) event at at: *pos after them, *end the event's end (within the
 * chunk); an error when the type is not want. */
int jfr_event_head(jf_dec_t *d, size_t at, uint64_t want, const char *what, size_t *pos, size_t *end);

/* jfr_meta.c: the chunk's metadata event at at into d's classes and fields:
 * field types resolved, primitives and events known, every type's minimum
 * size checked (no type nests in itself or reads as no bytes), the
 * converter's field indexes and the well-known classes (d->t_*) found. */
int jfr_parse_metadata(jf_dec_t *d, size_t at);

/* jfr_events.c: the chunk's events in file order (after its metadata and
 * constant pools), each one the converter reads resolved and added to
 * d->rows. */
int jfr_parse_events(jf_dec_t *d);

/* Readers used on every value, inline. */

static inline int jfr_rd_u64(jf_dec_t *d, size_t *pos, size_t end, uint64_t *v, const char *what)
{
	if (*pos < end && d->data.p[*pos] < 0x80) { /* most ids and values fit one byte */
		*v = d->data.p[(*pos)++];
		return 0;
	}
	return jfr_rd_u64_slow(d, pos, end, v, what);
}

/* A size, count, index or offset: a varint that ends within 9 bytes
 * (a 9th byte with its high bit set is the start of a 10-byte varint,
 * which no writer produces for these) and is at most max. */
static inline int jfr_rd_len(jf_dec_t *d, size_t *pos, size_t end, uint64_t max, uint64_t *v,
                             const char *what)
{
	size_t start = *pos;
	if (jfr_rd_u64(d, pos, end, v, what) < 0)
		return -1;
	if (*pos - start == 9 && (d->data.p[*pos - 1] & 0x80))
		return jfr_fail(d, start, "%s: varint of 10 or more bytes", what);
	if (*v > max)
		return jfr_fail(d, start, "%s %" PRIu64 " is out of range (at most %" PRIu64 ")", what, *v,
		                max);
	return 0;
}

/* Skips a value of a SK_VAR or SK_FIXED field. */
static inline int jfr_skip_simple(jf_dec_t *d, const jf_field_t *f, size_t *pos, size_t end)
{
	uint64_t v;
	if (f->skip == SK_FIXED)
		return jfr_rd_fixed(d, pos, end, f->width, &v, "value");
	const uint8_t *p = d->data.p;
	size_t q = *pos;
	if (end - q >= 8) { /* the first byte without its high bit ends it (or the 9th) */
		uint64_t w;
		memcpy(&w, p + q, 8);
		w = le64toh(~w) & 0x8080808080808080ull;
		*pos = q + (w ? (size_t)__builtin_ctzll(w) / 8 + 1 : 9);
		return *pos <= end
		           ? 0
		           : jfr_fail(d, q, "%s: varint truncated", f->cp ? "constant pool id" : "value");
	}
	for (unsigned i = 0; i < 9; i++) {
		if (q >= end)
			return jfr_fail(d, *pos, "%s: varint truncated",
			                f->cp ? "constant pool id" : "value");
		if (!(p[q++] & 0x80))
			break;
	}
	*pos = q;
	return 0;
}

/* A class or method symbol as grafana/jfr-parser's ProcessSymbols renames
 * it, so that the names of generated classes and of native libraries with
 * a random part merge across runs and JVMs (the reference's oracles show
 * them so): GeneratedMethodAccessor123 → GeneratedMethodAccessor_,
 * X$$Lambda$12/0x0123 (and X$$Lambda.0x.., X$$Lambda123) → X$$Lambda_,
 * X$$EnhancerBySpringCGLIB$$abc → X$$EnhancerBySpringCGLIB$$_, and the
 * extracted zstd-jni, Amazon Corretto Crypto Provider and async-profiler
 * libraries (optionally under /tmp/, optionally "(deleted)") → one name
 * each. The renaming rules are applied in that order, each to the result of
 * the one before. Returns s itself when no rule applies, else a string
 * allocated in a. */
slice_t jfr_symbol_merge(arena_t *a, slice_t s);

#endif
