/* The batch codec (store/batch_codec.h): model_batch_t to bytes and back
 * for the write-ahead log. The layout, field by field, is in docs/STORE.md
 * (STORE: The batch encoding); in short: a version byte, the total of the
 * string bytes (u32, little-endian), the project, frames_written, the seven
 * counts, then frames, nodes, attribute labels, attribute sets (after the
 * implied empty set 0), series labels, samples and profiles. Ids are 8 bytes
 * little-endian (they are hashes: a varint would be longer), everything else
 * a LEB128 varint (signed values zigzag), strings a varint length and bytes
 * (version 2, after the project: 2 × length and bytes, or 2 × i + 1 for the
 * i-th non-empty string written whole before; the string total counts the
 * bytes written). The decoder checks every count against what is left of the record before
 * it allocates, so a record of N bytes never makes it allocate more than
 * 16 N (labels: 32-byte structs from 2 bytes; most elements ~6 N), plus
 * a temporary table of version 2's strings (16 bytes per 2 of record). */
#include "store/batch_codec.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "base/num.h"

/* Least encoded bytes of one element (all varints 1 byte, strings empty):
 * what a count is checked against before anything is allocated. */
enum {
	MIN_FRAME = 8 + 1 + 5,                       /* id, unsymbolized, 5 string lengths */
	MIN_NODE = 8 + 1 + 1,                        /* id, parent, frame */
	MIN_LABEL = 1 + 1,                           /* key, value lengths */
	MIN_ATTRSET = 8 + 1 + 1,                     /* id, first, count */
	MIN_SAMPLE = 1 + 1 + 1 + 1,                  /* node, attrset, value, time */
	MIN_PROFILE = 5 + 1 + 1 + 1 + 1 + 1 + 4 + 8, /* 5 strings, period, aggregation, cpu_alias,
	                                                time, duration, 4 ranges, series id */
};
/* Most encoded bytes of one element apart from its string bytes. */
enum {
	MAX_FRAME_HEAD = 8 + 1,
	MAX_NODE = 8 + 2 * NUM_UVARINT_MAX,
	MAX_ATTRSET = 8 + 2 * NUM_UVARINT_MAX,
	MAX_SAMPLE = 4 * NUM_UVARINT_MAX,
	MAX_PROFILE_TAIL = 1 + 2 + 2 * NUM_UVARINT_MAX + 4 * NUM_UVARINT_MAX + 8,
	MAX_HEAD = 1 + 4 + 9 * NUM_UVARINT_MAX,
};

static inline uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* ---- encoding ---- */

/* Version 2's strings already written (a batch repeats its mapping's file
 * name and build id on every frame, its files on many), found by content.
 * Open addressing from dedup_start's slot; once 3/4 full, later strings
 * are written whole (still numbered). A search gives up after DEDUP_PROBES
 * slots (the string is written whole and not remembered): the start slot
 * is a cheap hint that a crafted batch (strings of one length with the
 * same ends) could make collide, and the log thread must not compare each
 * string with hundreds of others. */
#define DEDUP_SLOTS 1024u
#define DEDUP_PROBES 16u
typedef struct {
	const uint8_t *p; /* NULL: empty slot */
	uint32_t n, idx;
} dedup_slot_t;

/* A write cursor into out's spare capacity; out->n is brought up to date
 * only when the buffer must grow and at the end. */
typedef struct {
	buf_t *out;
	uint8_t *w, *lim;
	int full;             /* the ceiling was reached: the encoding is abandoned */
	dedup_slot_t *dedup;  /* version 2 (NULL: version 1) */
	uint32_t n_lit, used; /* strings written whole so far; slots in use */
} enc_t;

static int enc_grow(enc_t *e, size_t need);

/* Makes room for need more bytes at the cursor: 1, or 0 when the ceiling
 * forbids it (the cursor is unchanged). Inline for the common case, where
 * there is room: it runs for every element and string. */
static inline int enc_room(enc_t *e, size_t need)
{
	if (e->w && (size_t)(e->lim - e->w) >= need)
		return 1;
	return enc_grow(e, need);
}

static int enc_grow(enc_t *e, size_t need)
{
	buf_t *b = e->out;
	if (e->w) /* else nothing was allocated yet, nor written */
		b->n = (size_t)(e->w - b->p);
	if (buf_reserve(b, need) < 0)
		return 0;
	e->w = b->p + b->n;
	e->lim = b->p + b->cap;
	return 1;
}

/* Where an element of at most worst bytes is written: the cursor when that
 * much room can be had, else tmp (near the ceiling: enc_end then appends
 * exactly what was written, or fails). */
static inline uint8_t *enc_begin(enc_t *e, size_t worst, uint8_t *tmp)
{
	return enc_room(e, worst) ? e->w : tmp;
}

static inline void enc_end(enc_t *e, uint8_t *start, uint8_t *end)
{
	if (start == e->w) {
		e->w = end;
		return;
	}
	size_t n = (size_t)(end - start);
	if (!enc_room(e, n)) {
		e->full = 1;
		return;
	}
	memcpy(e->w, start, n);
	e->w += n;
}

static inline uint8_t *put_uv(uint8_t *w, uint64_t v)
{
	return w + num_uvarint_put(w, v);
}

static inline uint8_t *put_u64(uint8_t *w, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		w[i] = (uint8_t)(v >> (8 * i));
	return w + 8;
}

/* Version 2: a string written before is its number, odd (2 i + 1); else
 * the string whole after its length, even (2 n), and it takes the next
 * number when not empty. The slot of an equal string written before, else
 * NULL (and s is remembered when there is room). */
/* The slot where a search for s starts. Only a hint (equal strings are
 * found by comparing bytes), so a few loads and a multiply do, not a full
 * pass: the length and the first and last 8 bytes, where a batch's
 * strings differ (function names and paths share their start, not their
 * end). XXH3 over every byte here was 1.6 % of the server's instructions
 * at ingest (bench/callgrind.sh ingest-cpu). */
static inline uint32_t dedup_start(slice_t s)
{
	uint64_t a = 0, b = 0;
	if (s.n >= 8) {
		memcpy(&a, s.p, 8);
		memcpy(&b, s.p + s.n - 8, 8);
	} else {
		memcpy(&a, s.p, s.n);
	}
	uint64_t h = num_mix64(a ^ num_mix64(b + s.n));
	return (uint32_t)(h >> 54); /* 10 bits: DEDUP_SLOTS */
}

static const dedup_slot_t *enc_seen(enc_t *e, slice_t s)
{
	uint32_t i = dedup_start(s);
	for (uint32_t k = 0; k < DEDUP_PROBES; k++, i = (i + 1) & (DEDUP_SLOTS - 1)) {
		dedup_slot_t *d = &e->dedup[i];
		if (!d->p) {
			if (e->used < DEDUP_SLOTS / 4 * 3) {
				*d = (dedup_slot_t){s.p, (uint32_t)s.n, e->n_lit};
				e->used++;
			}
			return NULL;
		}
		if (d->n == s.n && memcmp(d->p, s.p, s.n) == 0)
			return d;
	}
	return NULL;
}

static void enc_str(enc_t *e, slice_t s, uint64_t *total)
{
	uint64_t len = s.n;
	if (e->dedup && s.n) {
		const dedup_slot_t *d = s.n <= UINT32_MAX ? enc_seen(e, s) : NULL;
		if (d) {
			uint8_t ref[NUM_UVARINT_MAX];
			size_t k = num_uvarint_put(ref, 2 * (uint64_t)d->idx + 1);
			if (!enc_room(e, k)) {
				e->full = 1;
				return;
			}
			memcpy(e->w, ref, k);
			e->w += k;
			return;
		}
		e->n_lit++;
	}
	if (e->dedup)
		len = 2 * (uint64_t)s.n;
	*total += s.n;
	if (enc_room(e, NUM_UVARINT_MAX + s.n)) {
		e->w = put_uv(e->w, len);
		if (s.n)
			memcpy(e->w, s.p, s.n);
		e->w += s.n;
		return;
	}
	uint8_t lenb[NUM_UVARINT_MAX]; /* near the ceiling: exactly what it takes */
	size_t k = num_uvarint_put(lenb, len);
	if (!enc_room(e, k + s.n)) {
		e->full = 1;
		return;
	}
	memcpy(e->w, lenb, k);
	if (s.n)
		memcpy(e->w + k, s.p, s.n);
	e->w += k + s.n;
}

static void enc_labels(enc_t *e, const model_label_t *l, uint32_t n, uint64_t *total)
{
	for (uint32_t i = 0; i < n && !e->full; i++) {
		enc_str(e, l[i].key, total);
		enc_str(e, l[i].value, total);
	}
}

int batch_codec_encode(const model_batch_t *b, buf_t *out)
{
	return batch_codec_encode_version(b, out, BATCH_CODEC_VERSION);
}

int batch_codec_encode_version(const model_batch_t *b, buf_t *out, int version)
{
	size_t start = out->n;
	dedup_slot_t dedup[DEDUP_SLOTS];
	enc_t e = {out, NULL, NULL, 0, NULL, 0, 0};
	if (out->p) /* a buffer that never held a byte has no pointer to offset */
		e.w = out->p + out->n, e.lim = out->p + out->cap;
	uint64_t strings = 0;
	uint8_t tmp[MAX_HEAD], *w, *s;

	/* head: version, string total (patched at the end), project, frames_written, counts */
	uint32_t n_sets = b->n_attrsets ? b->n_attrsets - 1 : 0;
	w = s = enc_begin(&e, 1 + 4, tmp);
	*w++ = (uint8_t)version;
	memset(w, 0, 4);
	enc_end(&e, s, w + 4);
	enc_str(&e, b->project, &strings); /* the project is always whole, as in version 1 */
	if (version >= 2) {
		memset(dedup, 0, sizeof dedup);
		e.dedup = dedup;
	}
	w = s = enc_begin(&e, MAX_HEAD, tmp);
	w = put_uv(w, b->frames_written);
	w = put_uv(w, b->n_frames);
	w = put_uv(w, b->n_nodes);
	w = put_uv(w, b->n_attr_labels);
	w = put_uv(w, n_sets);
	w = put_uv(w, b->n_series_labels);
	w = put_uv(w, b->n_samples);
	w = put_uv(w, b->n_profiles);
	enc_end(&e, s, w);

	for (uint32_t i = 0; i < b->n_frames && !e.full; i++) {
		const model_frame_t *f = &b->frames[i];
		w = s = enc_begin(&e, MAX_FRAME_HEAD, tmp);
		w = put_u64(w, f->id);
		*w++ = f->unsymbolized != 0;
		enc_end(&e, s, w);
		enc_str(&e, f->name, &strings);
		enc_str(&e, f->file, &strings);
		enc_str(&e, f->binary, &strings);
		enc_str(&e, f->build_id, &strings);
		enc_str(&e, f->kind, &strings);
	}
	for (uint32_t i = 0; i < b->n_nodes && !e.full; i++) {
		const model_node_t *n = &b->nodes[i];
		w = s = enc_begin(&e, MAX_NODE, tmp);
		w = put_u64(w, n->id);
		w = put_uv(w, n->parent == MODEL_NONE ? 0 : (uint64_t)i - n->parent);
		w = put_uv(w, n->frame);
		enc_end(&e, s, w);
	}
	enc_labels(&e, b->attr_labels, b->n_attr_labels, &strings);
	for (uint32_t i = 1; i <= n_sets && !e.full; i++) {
		const model_attrset_t *a = &b->attrsets[i];
		w = s = enc_begin(&e, MAX_ATTRSET, tmp);
		w = put_u64(w, a->id);
		w = put_uv(w, a->first);
		w = put_uv(w, a->count);
		enc_end(&e, s, w);
	}
	enc_labels(&e, b->series_labels, b->n_series_labels, &strings);
	for (uint32_t i = 0; i < b->n_samples && !e.full; i++) {
		const model_sample_t *m = &b->samples[i];
		w = s = enc_begin(&e, MAX_SAMPLE, tmp);
		w = put_uv(w, m->node == MODEL_NONE ? 0 : (uint64_t)m->node + 1);
		w = put_uv(w, m->attrset);
		w = put_uv(w, zigzag(m->value));
		w = put_uv(w, zigzag(m->time_ns));
		enc_end(&e, s, w);
	}
	for (uint32_t i = 0; i < b->n_profiles && !e.full; i++) {
		const model_profile_t *p = &b->profiles[i];
		enc_str(&e, p->service, &strings);
		enc_str(&e, p->sample_type, &strings);
		enc_str(&e, p->sample_unit, &strings);
		enc_str(&e, p->period_type, &strings);
		enc_str(&e, p->period_unit, &strings);
		w = s = enc_begin(&e, MAX_PROFILE_TAIL, tmp);
		w = put_uv(w, zigzag(p->period));
		*w++ = p->aggregation != 0;
		*w++ = p->cpu_alias != 0;
		w = put_uv(w, zigzag(p->time_ns));
		w = put_uv(w, zigzag(p->duration_ns));
		w = put_uv(w, p->labels_first);
		w = put_uv(w, p->labels_count);
		w = put_uv(w, p->samples_first);
		w = put_uv(w, p->samples_count);
		w = put_u64(w, p->series_id);
		enc_end(&e, s, w);
	}
	if (e.full || strings > UINT32_MAX) {
		out->n = start;
		return -1;
	}
	out->n = (size_t)(e.w - out->p);
	for (int i = 0; i < 4; i++)
		out->p[start + 1 + i] = (uint8_t)(strings >> (8 * i));
	return 0;
}

/* ---- decoding ---- */

typedef struct {
	const uint8_t *start, *p, *end;
	uint8_t *str, *str_end; /* the arena's string bytes not yet used */
	err_t *err;
	int version;
	slice_t *lit; /* version 2: the strings written whole so far (malloc'd) */
	uint32_t n_lit;
	size_t cap_lit;
} dec_t;

/* Fails with "batch record: FIELD at byte AT: ...", FIELD formatted from
 * what and ix (what may hold one %u). */
static int __attribute__((format(printf, 5, 6)))
dec_fail(dec_t *d, const char *what, uint32_t ix, const uint8_t *at, const char *fmt, ...)
{
	char field[64], why[320];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(field, sizeof field, what, ix);
#pragma GCC diagnostic pop
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	return err_set(d->err, 500, "batch record: %s at byte %zu: %s", field, (size_t)(at - d->start), why);
}

static int dec_uv(dec_t *d, const char *what, uint32_t ix, uint64_t *v)
{
	if (__builtin_expect(d->p < d->end && *d->p < 0x80, 1)) {
		*v = *d->p++;
		return 0;
	}
	const uint8_t *at = d->p;
	if (num_uvarint_get(&d->p, d->end, v) == 0)
		return 0;
	/* truncated when every byte up to the end carries "more follows" */
	const uint8_t *q = at;
	while (q < d->end && (*q & 0x80) && q - at < NUM_UVARINT_MAX)
		q++;
	if (q == d->end)
		return dec_fail(d, what, ix, at, "truncated (the record ends at byte %zu)",
		                (size_t)(d->end - d->start));
	return dec_fail(d, what, ix, at, "varint longer than 64 bits");
}

/* A varint that is an index: < bound (the size of the array it points into, called NOUN in errors). */
static int dec_index(dec_t *d, const char *what, uint32_t ix, uint64_t bound, const char *noun, uint32_t *out)
{
	const uint8_t *at = d->p;
	uint64_t v;
	if (dec_uv(d, what, ix, &v) < 0)
		return -1;
	if (v >= bound)
		return dec_fail(d, what, ix, at, "%" PRIu64 " is not below the %" PRIu64 " %s", v, bound,
		                noun);
	*out = (uint32_t)v;
	return 0;
}

/* The first element of a range in an array of n: ≤ n (= n only for an empty range at the end). */
static int dec_first(dec_t *d, const char *what, uint32_t ix, uint32_t n, const char *noun, uint32_t *out)
{
	const uint8_t *at = d->p;
	uint64_t v;
	if (dec_uv(d, what, ix, &v) < 0)
		return -1;
	if (v > n)
		return dec_fail(d, what, ix, at, "%" PRIu64 " passes the %u %s", v, n, noun);
	*out = (uint32_t)v;
	return 0;
}

static int dec_u64(dec_t *d, const char *what, uint32_t ix, uint64_t *v)
{
	if (d->end - d->p < 8)
		return dec_fail(d, what, ix, d->p, "truncated (the record ends at byte %zu)",
		                (size_t)(d->end - d->start));
	uint64_t x = 0;
	for (int i = 0; i < 8; i++)
		x |= (uint64_t)d->p[i] << (8 * i);
	d->p += 8;
	*v = x;
	return 0;
}

static int dec_flag(dec_t *d, const char *what, uint32_t ix, uint8_t *v)
{
	if (d->p == d->end)
		return dec_fail(d, what, ix, d->p, "truncated (the record ends at byte %zu)",
		                (size_t)(d->end - d->start));
	if (*d->p > 1)
		return dec_fail(d, what, ix, d->p, "%u is not 0 or 1", *d->p);
	*v = *d->p++;
	return 0;
}

static int dec_str(dec_t *d, const char *what, uint32_t ix, slice_t *s)
{
	const uint8_t *at = d->p;
	uint64_t n;
	if (dec_uv(d, what, ix, &n) < 0)
		return -1;
	if (d->version >= 2) {
		if (n & 1) {
			if (n >> 1 >= d->n_lit)
				return dec_fail(d, what, ix, at,
				                "string %" PRIu64 " is not among the %u before it", n >> 1,
				                d->n_lit);
			*s = d->lit[n >> 1];
			return 0;
		}
		n >>= 1;
	}
	if (n > (uint64_t)(d->end - d->p))
		return dec_fail(d, what, ix, at,
		                "length %" PRIu64 " is truncated (the record ends at byte %zu)", n,
		                (size_t)(d->end - d->start));
	if (n > (uint64_t)(d->str_end - d->str))
		return dec_fail(d, what, ix, at, "length %" PRIu64 " passes the %zu string bytes left", n,
		                (size_t)(d->str_end - d->str));
	if (!n) {
		*s = slice_make("", 0);
		return 0;
	}
	memcpy(d->str, d->p, n);
	*s = slice_make(d->str, n);
	d->str += n;
	d->p += n;
	if (d->version >= 2) { /* at most one per 2 bytes of record */
		d->lit = xgrow(d->lit, &d->cap_lit, (size_t)d->n_lit + 1, sizeof *d->lit);
		d->lit[d->n_lit++] = *s;
	}
	return 0;
}

static int dec_labels(dec_t *d, const char *key, const char *value, model_label_t *l, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (dec_str(d, key, i, &l[i].key) < 0 || dec_str(d, value, i, &l[i].value) < 0)
			return -1;
	return 0;
}

static int dec_frames(dec_t *d, model_batch_t *b)
{
	for (uint32_t i = 0; i < b->n_frames; i++) {
		model_frame_t *f = &b->frames[i];
		if (dec_u64(d, "frames[%u].id", i, &f->id) < 0 ||
		    dec_flag(d, "frames[%u].unsymbolized", i, &f->unsymbolized) < 0 ||
		    dec_str(d, "frames[%u].name", i, &f->name) < 0 ||
		    dec_str(d, "frames[%u].file", i, &f->file) < 0 ||
		    dec_str(d, "frames[%u].binary", i, &f->binary) < 0 ||
		    dec_str(d, "frames[%u].build_id", i, &f->build_id) < 0 ||
		    dec_str(d, "frames[%u].kind", i, &f->kind) < 0)
			return -1;
	}
	return 0;
}

static int dec_nodes(dec_t *d, model_batch_t *b)
{
	for (uint32_t i = 0; i < b->n_nodes; i++) {
		model_node_t *n = &b->nodes[i];
		uint64_t back;
		if (dec_u64(d, "nodes[%u].id", i, &n->id) < 0)
			return -1;
		const uint8_t *at = d->p;
		if (dec_uv(d, "nodes[%u].parent", i, &back) < 0)
			return -1;
		if (back > i)
			return dec_fail(d, "nodes[%u].parent", i, at,
			                "%" PRIu64 " nodes back is before node 0", back);
		n->parent = back ? i - (uint32_t)back : MODEL_NONE;
		if (dec_index(d, "nodes[%u].frame", i, b->n_frames, "frames", &n->frame) < 0)
			return -1;
	}
	return 0;
}

static int dec_attrsets(dec_t *d, model_batch_t *b)
{
	b->attrsets[0] = (model_attrset_t){0, 0, 0};
	for (uint32_t i = 1; i < b->n_attrsets; i++) {
		model_attrset_t *a = &b->attrsets[i];
		if (dec_u64(d, "attrsets[%u].id", i, &a->id) < 0 ||
		    dec_first(d, "attrsets[%u].first", i, b->n_attr_labels, "attribute labels", &a->first) <
		        0)
			return -1;
		const uint8_t *at = d->p;
		uint64_t count;
		if (dec_uv(d, "attrsets[%u].count", i, &count) < 0)
			return -1;
		if (count > LIMIT_LABELS)
			return dec_fail(d, "attrsets[%u].count", i, at, "%" PRIu64 " labels; the limit is %u",
			                count, LIMIT_LABELS);
		a->count = (uint32_t)count;
		if ((uint64_t)a->first + a->count > b->n_attr_labels)
			return dec_fail(d, "attrsets[%u].count", i, at,
			                "labels %u..%u pass the %u attribute labels", a->first,
			                a->first + a->count, b->n_attr_labels);
	}
	return 0;
}

static int dec_samples(dec_t *d, model_batch_t *b)
{
	for (uint32_t i = 0; i < b->n_samples; i++) {
		model_sample_t *m = &b->samples[i];
		uint64_t node, v, t;
		const uint8_t *at = d->p;
		if (dec_uv(d, "samples[%u].node", i, &node) < 0)
			return -1;
		if (node > b->n_nodes)
			return dec_fail(d, "samples[%u].node", i, at, "%" PRIu64 " is not below the %u nodes",
			                node - 1, b->n_nodes);
		m->node = node ? (uint32_t)node - 1 : MODEL_NONE;
		if (dec_index(d, "samples[%u].attrset", i, b->n_attrsets, "attribute sets", &m->attrset) <
		        0 ||
		    dec_uv(d, "samples[%u].value", i, &v) < 0 || dec_uv(d, "samples[%u].time_ns", i, &t) < 0)
			return -1;
		m->value = unzigzag(v);
		m->time_ns = unzigzag(t);
	}
	return 0;
}

/* The count of a range [first, first + count) of an array of n, read at the cursor. */
static int dec_range(dec_t *d, const char *what, uint32_t ix, uint32_t first, uint32_t n, const char *noun,
                     uint32_t *count)
{
	const uint8_t *at = d->p;
	uint64_t v;
	if (dec_uv(d, what, ix, &v) < 0)
		return -1;
	if (v > (uint64_t)n - first)
		return dec_fail(d, what, ix, at, "%u + %" PRIu64 " pass the %u %s", first, v, n, noun);
	*count = (uint32_t)v;
	return 0;
}

static int dec_profiles(dec_t *d, model_batch_t *b)
{
	for (uint32_t i = 0; i < b->n_profiles; i++) {
		model_profile_t *p = &b->profiles[i];
		uint64_t period, t, dur;
		if (dec_str(d, "profiles[%u].service", i, &p->service) < 0 ||
		    dec_str(d, "profiles[%u].sample_type", i, &p->sample_type) < 0 ||
		    dec_str(d, "profiles[%u].sample_unit", i, &p->sample_unit) < 0 ||
		    dec_str(d, "profiles[%u].period_type", i, &p->period_type) < 0 ||
		    dec_str(d, "profiles[%u].period_unit", i, &p->period_unit) < 0 ||
		    dec_uv(d, "profiles[%u].period", i, &period) < 0 ||
		    dec_flag(d, "profiles[%u].aggregation", i, &p->aggregation) < 0 ||
		    dec_flag(d, "profiles[%u].cpu_alias", i, &p->cpu_alias) < 0 ||
		    dec_uv(d, "profiles[%u].time_ns", i, &t) < 0 ||
		    dec_uv(d, "profiles[%u].duration_ns", i, &dur) < 0 ||
		    dec_first(d, "profiles[%u].labels_first", i, b->n_series_labels, "series labels",
		              &p->labels_first) < 0 ||
		    dec_range(d, "profiles[%u].labels_count", i, p->labels_first, b->n_series_labels,
		              "series labels", &p->labels_count) < 0 ||
		    dec_first(d, "profiles[%u].samples_first", i, b->n_samples, "samples",
		              &p->samples_first) < 0 ||
		    dec_range(d, "profiles[%u].samples_count", i, p->samples_first, b->n_samples, "samples",
		              &p->samples_count) < 0 ||
		    dec_u64(d, "profiles[%u].series_id", i, &p->series_id) < 0)
			return -1;
		p->period = unzigzag(period);
		p->time_ns = unzigzag(t);
		p->duration_ns = unzigzag(dur);
	}
	return 0;
}

/* Carves an array of n elements of size sz from *mem (the one allocation). */
static void *carve(uint8_t **mem, uint32_t n, size_t sz)
{
	void *p = n ? *mem : NULL;
	*mem += (size_t)n * sz;
	return p;
}

int batch_codec_decode(slice_t in, arena_t *a, model_batch_t *out, err_t *err)
{
	memset(out, 0, sizeof *out);
	dec_t d = {in.p, in.p, in.p + in.n, NULL, NULL, err, 0, NULL, 0, 0};
	if (in.n == 0)
		return dec_fail(&d, "version", 0, d.p, "the record is empty");
	if (in.p[0] < 1 || in.p[0] > BATCH_CODEC_VERSION)
		return dec_fail(&d, "version", 0, d.p, "%u; this Kiln reads 1 to %u", in.p[0],
		                BATCH_CODEC_VERSION);
	d.version = in.p[0];
	d.p++;
	if (d.end - d.p < 4)
		return dec_fail(&d, "string_bytes", 0, d.p, "truncated (the record ends at byte %zu)", in.n);
	uint64_t strings = 0;
	for (int i = 0; i < 4; i++)
		strings |= (uint64_t)d.p[i] << (8 * i);
	d.p += 4;

	/* The project goes through the string budget too: a temporary one until
	 * the arena block exists (it is copied there below). */
	const uint8_t *at_project = d.p;
	uint64_t plen;
	if (dec_uv(&d, "project", 0, &plen) < 0)
		return -1;
	if (plen > (uint64_t)(d.end - d.p))
		return dec_fail(&d, "project", 0, at_project,
		                "length %" PRIu64 " is truncated (the record ends at byte %zu)", plen, in.n);
	if (plen > strings)
		return dec_fail(&d, "project", 0, at_project,
		                "length %" PRIu64 " passes the %" PRIu64 " string bytes left", plen, strings);
	const uint8_t *project = d.p;
	d.p += plen;

	static const char *const names[] = {"frames_written", "n_frames",        "n_nodes",   "n_attr_labels",
	                                    "n_attrsets",     "n_series_labels", "n_samples", "n_profiles"};
	static const uint32_t min[] = {0,           MIN_FRAME, MIN_NODE,   MIN_LABEL,
	                               MIN_ATTRSET, MIN_LABEL, MIN_SAMPLE, MIN_PROFILE};
	uint64_t c[8];
	const uint8_t *at[8];
	for (int i = 0; i < 8; i++) {
		at[i] = d.p;
		if (dec_uv(&d, names[i], 0, &c[i]) < 0)
			return -1;
	}
	/* Every element takes its least size; with the strings the whole must fit what is left. */
	uint64_t need = strings - plen, left = (uint64_t)(d.end - d.p);
	for (int i = 1; i < 8; i++) {
		if (c[i] > left || c[i] >= UINT32_MAX)
			return dec_fail(&d, names[i], 0, at[i],
			                "%" PRIu64 " cannot fit the %" PRIu64 " bytes left", c[i], left);
		need += c[i] * min[i];
	}
	if (need > left)
		return dec_fail(&d, "counts", 0, at[1],
		                "need at least %" PRIu64 " bytes, %" PRIu64 " are left", need, left);

	model_batch_t *b = out;
	b->frames_written = c[0];
	b->n_frames = (uint32_t)c[1];
	b->n_nodes = (uint32_t)c[2];
	b->n_attr_labels = (uint32_t)c[3];
	b->n_attrsets = (uint32_t)c[4] + 1;
	b->n_series_labels = (uint32_t)c[5];
	b->n_samples = (uint32_t)c[6];
	b->n_profiles = (uint32_t)c[7];
	size_t bytes = (size_t)b->n_frames * sizeof *b->frames + (size_t)b->n_nodes * sizeof *b->nodes +
	               ((size_t)b->n_attr_labels + b->n_series_labels) * sizeof(model_label_t) +
	               (size_t)b->n_attrsets * sizeof *b->attrsets +
	               (size_t)b->n_samples * sizeof *b->samples +
	               (size_t)b->n_profiles * sizeof *b->profiles + strings;
	uint8_t *mem = arena_alloc(a, bytes ? bytes : 1);
	b->arena = a;
	b->frames = carve(&mem, b->n_frames, sizeof *b->frames);
	b->nodes = carve(&mem, b->n_nodes, sizeof *b->nodes);
	b->attr_labels = carve(&mem, b->n_attr_labels, sizeof *b->attr_labels);
	b->attrsets = carve(&mem, b->n_attrsets, sizeof *b->attrsets);
	b->series_labels = carve(&mem, b->n_series_labels, sizeof *b->series_labels);
	b->samples = carve(&mem, b->n_samples, sizeof *b->samples);
	b->profiles = carve(&mem, b->n_profiles, sizeof *b->profiles);
	b->cap_frames = b->n_frames, b->cap_nodes = b->n_nodes, b->cap_attr_labels = b->n_attr_labels;
	b->cap_attrsets = b->n_attrsets, b->cap_series_labels = b->n_series_labels;
	b->cap_samples = b->n_samples, b->cap_profiles = b->n_profiles;
	d.str = mem;
	d.str_end = mem + strings;
	if (plen) {
		memcpy(d.str, project, plen);
		b->project = slice_make(d.str, plen);
		d.str += plen;
	} else {
		b->project = slice_make("", 0);
	}

	if (dec_frames(&d, b) < 0 || dec_nodes(&d, b) < 0 ||
	    dec_labels(&d, "attr_labels[%u].key", "attr_labels[%u].value", b->attr_labels, b->n_attr_labels) <
	        0 ||
	    dec_attrsets(&d, b) < 0 ||
	    dec_labels(&d, "series_labels[%u].key", "series_labels[%u].value", b->series_labels,
	               b->n_series_labels) < 0 ||
	    dec_samples(&d, b) < 0 || dec_profiles(&d, b) < 0)
		goto fail;
	if (d.str != d.str_end) {
		dec_fail(&d, "string_bytes", 0, in.p + 1, "%" PRIu64 " declared, %zu used", strings,
		         (size_t)(d.str - mem));
		goto fail;
	}
	if (d.p != d.end) {
		dec_fail(&d, "end", 0, d.p, "%zu bytes after the batch", (size_t)(d.end - d.p));
		goto fail;
	}
	free(d.lit);
	return 0;
fail:
	free(d.lit);
	memset(out, 0, sizeof *out);
	return -1;
}

/* ---- checking a batch in memory ---- */

static int chk_fail(err_t *err, const char *what, uint32_t i)
{
	return err_set(err, 500, "store: malformed batch (%s %u)", what, i);
}

int batch_codec_check(const model_batch_t *b, err_t *err)
{
	if (b->n_attrsets == 0 && b->n_samples)
		return chk_fail(err, "no attribute set 0 for samples", b->n_samples);
	for (uint32_t i = 0; i < b->n_nodes; i++) {
		const model_node_t *n = &b->nodes[i];
		if (n->parent != MODEL_NONE && n->parent >= i)
			return chk_fail(err, "node parent not before node", i);
		if (n->frame >= b->n_frames)
			return chk_fail(err, "frame index of node", i);
	}
	for (uint32_t i = 1; i < b->n_attrsets; i++) {
		const model_attrset_t *a = &b->attrsets[i];
		if (a->count > LIMIT_LABELS || (uint64_t)a->first + a->count > b->n_attr_labels)
			return chk_fail(err, "labels of attribute set", i);
	}
	for (uint32_t i = 0; i < b->n_samples; i++) {
		const model_sample_t *m = &b->samples[i];
		if (m->node != MODEL_NONE && m->node >= b->n_nodes)
			return chk_fail(err, "node index of sample", i);
		if (m->attrset >= b->n_attrsets)
			return chk_fail(err, "attribute set index of sample", i);
	}
	for (uint32_t i = 0; i < b->n_profiles; i++) {
		const model_profile_t *p = &b->profiles[i];
		if ((uint64_t)p->labels_first + p->labels_count > b->n_series_labels)
			return chk_fail(err, "series labels of profile", i);
		if ((uint64_t)p->samples_first + p->samples_count > b->n_samples)
			return chk_fail(err, "sample range of profile", i);
	}
	return 0;
}
