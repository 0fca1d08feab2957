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
 * (model nodes as keys), so a profile holds one row per stack.
 *
 * This file: the chunk walk and the entry points, reading values by their
 * metadata type, and the constant pools; the metadata event is read in
 * jfr_meta.c, stack traces and events in jfr_events.c (over jfr_int.h). */
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

/* ---- Errors and reading ------------------------------------------------ */

/* Sets err to status with "chunk N at offset O: " before the message; -1. */
__attribute__((format(printf, 4, 5))) int jfr_fail_st(jf_dec_t *d, int status, size_t off, const char *fmt,
                                                      ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return err_set(d->err, status, "chunk %" PRIu32 " at offset %zu: %s", d->chunk, off, msg);
}

/* A JFR varint: LEB128, at most 9 bytes, the 9th carrying 8 bits (so any
 * 64-bit value fits). what names the value in errors. */
int jfr_rd_u64_slow(jf_dec_t *d, size_t *pos, size_t end, uint64_t *v, const char *what)
{
	const uint8_t *p = d->data.p;
	size_t q = *pos;
	uint64_t x = 0;
	for (unsigned i = 0; i < 9; i++) {
		if (q >= end)
			return jfr_fail(d, *pos, "%s: varint truncated", what);
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

int jfr_rd_fixed(jf_dec_t *d, size_t *pos, size_t end, unsigned n, uint64_t *v, const char *what)
{
	if (end - *pos < n)
		return jfr_fail(d, *pos, "%s: truncated (%u bytes needed, %zu left)", what, n, end - *pos);
	uint64_t x = 0;
	for (unsigned i = 0; i < n; i++)
		x = x << 8 | d->data.p[*pos + i];
	*pos += n;
	*v = x;
	return 0;
}

/* Bytes of a primitive when integers are not compressed; the ones marked
 * in jfr_prim_varint are varints when they are. */
const uint8_t jfr_prim_bytes[P_STRING + 1] = {
    [P_BOOL] = 1, [P_BYTE] = 1,  [P_SHORT] = 2,  [P_INT] = 4,   [P_LONG] = 8,
    [P_CHAR] = 2, [P_FLOAT] = 4, [P_DOUBLE] = 8, [P_STRING] = 1};
const uint8_t jfr_prim_varint[P_STRING + 1] = {
    [P_SHORT] = 1, [P_INT] = 1, [P_LONG] = 1, [P_CHAR] = 1, [P_STRING] = 0};

int jfr_rd_int(jf_dec_t *d, uint8_t prim, size_t *pos, size_t end, uint64_t *v, const char *what)
{
	if (d->compressed && jfr_prim_varint[prim])
		return jfr_rd_u64(d, pos, end, v, what);
	return jfr_rd_fixed(d, pos, end, jfr_prim_bytes[prim], v, what);
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

/* Keeps s in d->strs (for the string caches): its index. */
uint32_t jfr_keep_str(jf_dec_t *d, slice_t s)
{
	d->strs = xgrow(d->strs, &d->cap_strs, d->n_strs + 1, sizeof *d->strs);
	d->strs[d->n_strs] = s;
	return d->n_strs++;
}

/* A string value: encoding byte 0 (null) or 1 (empty), 2 (an id in the
 * java.lang.String pool; pooled = 0 inside that pool), 3 (UTF-8), 4 (char
 * array) or 5 (Latin-1). out NULL: only skipped. Char arrays and Latin-1
 * above 0x7f are re-encoded as UTF-8 into the chunk's arena. */
int jfr_rd_string(jf_dec_t *d, size_t *pos, size_t end, slice_t *out, int pooled, const char *what)
{
	size_t start = *pos;
	if (*pos >= end)
		return jfr_fail(d, start, "%s: string truncated", what);
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
			return jfr_fail(d, start, "%s: a pooled string (encoding 2) where none may be", what);
		if (jfr_rd_u64(d, pos, end, &id, what) < 0)
			return -1;
		if (!out)
			return 0;
		uint32_t ix;
		if (idmap_get(&d->str_cache, id, &ix)) { /* each pooled string converted once */
			*out = d->strs[ix];
			return 0;
		}
		if (d->t_string == NO_IX || !jfr_pool_find(d, d->t_string, id, &off))
			return jfr_fail(d, start, "%s: string id %" PRIu64 " is not in the string pool", what,
			                id);
		if (jfr_rd_string(d, &off, d->cend, out, 0, what) < 0)
			return -1;
		idmap_put(&d->str_cache, id, jfr_keep_str(d, *out));
		return 0;
	}
	case 3:
	case 5:
		if (jfr_rd_len(d, pos, end, end - *pos, &n, "string length") < 0)
			return -1;
		if (n > end - *pos) /* the bound above counted the length's own bytes */
			return jfr_fail(d, start,
			                "%s: string of %" PRIu64 " bytes runs past the end (%zu left)", what,
			                n, end - *pos);
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
		if (jfr_rd_len(d, pos, end, end - *pos, &n, "string length") < 0)
			return -1;
		uint8_t *u = out ? arena_alloc(d->scratch, (size_t)n * 4 + 1) : NULL;
		size_t k = 0;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t c;
			if (jfr_rd_int(d, P_CHAR, pos, end, &c, what) < 0)
				return -1;
			if (u)
				put_utf8(u, &k, c);
		}
		if (out)
			*out = slice_make(u, k);
		return 0;
	}
	default:
		return jfr_fail(d, start, "%s: unknown string encoding %u", what, enc);
	}
}

/* ---- Values by metadata type --------------------------------------------- */

/* Skips one value of class c (not an array, not a pool reference). */
static int skip_object(jf_dec_t *d, uint32_t c, size_t *pos, size_t end, unsigned depth)
{
	const jf_class_t *k = &d->cls[c];
	uint64_t v;
	if (k->prim == P_STRING)
		return jfr_rd_string(d, pos, end, NULL, 1, "string");
	if (k->prim)
		return jfr_rd_int(d, k->prim, pos, end, &v, "value");
	if (depth >= LIMIT_JFR_NESTING)
		return jfr_fail(d, *pos, "values nested deeper than %u", LIMIT_JFR_NESTING);
	for (uint32_t i = 0; i < k->n; i++) {
		const jf_field_t *f = &d->fld[k->first + i];
		if ((f->skip != SK_SLOW ? jfr_skip_simple(d, f, pos, end)
		                        : jfr_skip_value(d, f, pos, end, depth + 1)) < 0)
			return -1;
	}
	return 0;
}

int jfr_skip_value(jf_dec_t *d, const jf_field_t *f, size_t *pos, size_t end, unsigned depth)
{
	uint64_t n = 1, v;
	if (f->skip != SK_SLOW) /* the common case: a pool reference or an integer */
		return jfr_skip_simple(d, f, pos, end);
	if (f->array && jfr_rd_len(d, pos, end, end - *pos, &n, "array length") < 0)
		return -1;
	for (uint64_t i = 0; i < n; i++) {
		if (f->cp) {
			if (jfr_rd_u64(d, pos, end, &v, "constant pool id") < 0)
				return -1;
		} else if (skip_object(d, f->type, pos, end, depth) < 0) {
			return -1;
		}
	}
	return 0;
}

/* Reads field i of an object of class c at *pos: skips the fields before
 * it and leaves *pos at its value. NO_IX or a field past the class: 0. */
int jfr_seek_field(jf_dec_t *d, uint32_t c, uint32_t i, size_t *pos, size_t end)
{
	const jf_class_t *k = &d->cls[c];
	if (i == NO_IX || i >= k->n)
		return 0;
	for (uint32_t j = 0; j < i; j++)
		if (jfr_skip_value(d, &d->fld[k->first + j], pos, end, 1) < 0)
			return -1;
	return 1;
}

/* The field of class c named name, NO_IX when none. */
uint32_t jfr_field_ix(const jf_dec_t *d, uint32_t c, const char *name)
{
	const jf_class_t *k = &d->cls[c];
	for (uint32_t i = 0; i < k->n; i++)
		if (slice_eq_cstr(d->fld[k->first + i].name, name))
			return i;
	return NO_IX;
}

/* ---- Constant pools ------------------------------------------------------- */

int jfr_pool_find(const jf_dec_t *d, uint32_t cls, uint64_t id, size_t *off)
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
	if (jfr_event_head(d, at, 1, "checkpoint event", &pos, &end) < 0)
		return -1;
	if (jfr_rd_u64(d, &pos, end, &v, "checkpoint start") < 0 ||
	    jfr_rd_u64(d, &pos, end, &v, "checkpoint duration") < 0 ||
	    jfr_rd_u64(d, &pos, end, &v, "checkpoint delta") < 0)
		return -1;
	*delta = (int64_t)v;
	if (jfr_rd_u64(d, &pos, end, &v, "checkpoint flags") < 0 ||
	    jfr_rd_len(d, &pos, end, end - pos, &n_pools, "constant pool count") < 0)
		return -1;
	for (uint64_t i = 0; i < n_pools; i++) {
		size_t tat = pos;
		uint64_t tid, count;
		uint32_t c;
		if (jfr_rd_u64(d, &pos, end, &tid, "constant pool type") < 0)
			return -1;
		if (!idmap_get(&d->cls_ix, tid, &c))
			return jfr_fail(
			    d, tat, "constant pool of type %" PRIu64 ", which the metadata does not define",
			    tid);
		if (c == d->t_chunkhdr) { /* async-profiler: a copy of the chunk header, no entries */
			if (end - pos < HEADER_BYTES)
				return jfr_fail(d, pos, "constant pool jdk.types.ChunkHeader: truncated");
			pos += HEADER_BYTES;
			continue;
		}
		if (jfr_rd_len(d, &pos, end, end - pos, &count, "constant pool entry count") < 0)
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
				return jfr_fail413(d, pos, "more than %u constant pool entries in one chunk",
				                   LIMIT_JFR_POOL_ENTRIES);
			if (jfr_rd_u64(d, &pos, end, &id, "constant pool id") < 0)
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
			if (jfr_skip_value(d, &self, &pos, end, 0) < 0)
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
			return jfr_fail413(d, pos, "more than %u checkpoints in one chunk",
			                   LIMIT_JFR_CHECKPOINTS);
		if (parse_checkpoint(d, pos, &delta, &entries) < 0)
			return -1;
		if (delta == 0)
			return 0;
		/* Each checkpoint points back to an earlier one: the chain ends. */
		if (delta > 0 || (uint64_t) - (delta + 1) >= pos - d->cstart - HEADER_BYTES)
			return jfr_fail(d, pos,
			                "checkpoint delta %" PRId64
			                " does not point to an earlier checkpoint in the chunk",
			                delta);
		pos -= (size_t)(-(delta + 1)) + 1;
	}
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
		return jfr_fail(d, pos, "chunk header truncated (%zu of %u bytes)", left, HEADER_BYTES);
	if (memcmp(h, "FLR\0", 4) != 0)
		return jfr_fail(d, pos, "not a JFR chunk: magic %02x %02x %02x %02x, expected 'FLR\\0'", h[0],
		                h[1], h[2], h[3]);
	unsigned major = (unsigned)h[4] << 8 | h[5], minor = (unsigned)h[6] << 8 | h[7];
	if (major != 2)
		return jfr_fail(d, pos + 4, "unsupported JFR version %u.%u (Kiln reads 2.x)", major, minor);
	uint64_t size = be64(h + 8), cp = be64(h + 16), meta = be64(h + 24);
	if (size < HEADER_BYTES)
		return jfr_fail(d, pos + 8, "chunk size %" PRIu64 " is smaller than its %u-byte header", size,
		                HEADER_BYTES);
	if (size > left)
		return jfr_fail(d, pos + 8,
		                "chunk size %" PRIu64 " runs past the end of the file (%zu bytes left)", size,
		                left);
	if (cp < HEADER_BYTES || cp >= size)
		return jfr_fail(d, pos + 16,
		                "constant pool offset %" PRIu64 " out of range (chunk of %" PRIu64 " bytes)",
		                cp, size);
	if (meta < HEADER_BYTES || meta >= size)
		return jfr_fail(d, pos + 24,
		                "metadata offset %" PRIu64 " out of range (chunk of %" PRIu64 " bytes)", meta,
		                size);
	d->cend = pos + (size_t)size;
	d->compressed = (h[67] & 1) != 0;
	chunk_reset(d);
	if (jfr_parse_metadata(d, pos + (size_t)meta) < 0 || parse_pools(d, pos + (size_t)cp) < 0)
		return -1;
	return jfr_parse_events(d);
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
			jfr_fail413(d, pos, "more than %u chunks", LIMIT_JFR_CHUNKS);
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
