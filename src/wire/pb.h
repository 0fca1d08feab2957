/* Protobuf wire format: a bounded reader (no allocation, every length checked),
 * the message layer every decoder is written with (field specs, error paths,
 * checked reads), and a writer into a buf_t. The reader is the hot path of
 * every decoder.
 *
 * Decoding a message (pprof_decode.c and the OTLP decoder use it; so should
 * the next ones: Pyroscope Push, Connect RPC requests, the JFR labels
 * snapshot):
 *
 *   PB_SPEC(label_spec, {1, PB_F_VARINT, "key"}, {2, PB_F_LEN, "str"},
 *           {3, PB_F_PVARINT, "ids"});               // fields 1..n in order
 *   pb_src_t src = {input.p, "profile"};               // offsets; what an empty path names
 *   pb_path_t sp = {NULL, "sample", i}, lp = {&sp, "label", k};   // "sample[i].label[k]"
 *   const pb_field_t *f; int wt, rc;
 *   while ((rc = pb_next(&src, &r, &label_spec, &lp, &f, &wt, err)) == 1)
 *           switch (f->num) {
 *           case 1: if (pb_read_varint(&src, &r, &v, &lp, f->name, err) < 0) return -1; ...
 *           case 3: pb_read_packable(...) then pb_next_packed(...) per value
 *           }
 *   if (rc < 0) return -1;                           // err: 400 naming the path
 *
 * pb_next skips unknown fields and refuses a known field with the wrong
 * wire type. Its errors and the checked reads' are 400s "<path>.<field>:
 * <what>" (pb_fail; decoders use it for their own checks too), most with
 * the byte offset from src.base. A table's length is never typed by hand:
 * PB_SPEC counts it, PB_COUNTOF counts any array. */
#ifndef KILN_WIRE_PB_H
#define KILN_WIRE_PB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/slice.h"

enum { PB_VARINT = 0, PB_I64 = 1, PB_LEN = 2, PB_SGROUP = 3, PB_EGROUP = 4, PB_I32 = 5 };

typedef struct {
	const uint8_t *p;
	const uint8_t *end;
} pb_reader_t;

static inline pb_reader_t pb_reader_make(slice_t s)
{
	pb_reader_t r = {s.p, s.n ? s.p + s.n : s.p}; /* no arithmetic on a NULL empty slice */
	return r;
}
static inline int pb_done(const pb_reader_t *r)
{
	return r->p >= r->end;
}
/* Each returns 0 on success, -1 on truncation/overflow/invalid (reader state
 * then undefined). pb_key rejects field number 0 and wire types 6/7.
 * Inline: they are the inner loop of every decoder. */
#define PB_MAX_FIELD 0x1fffffffu /* 2^29 - 1 */

/* The general case of pb_varint: more than two bytes, or near the end. */
int pb_varint_slow(pb_reader_t *r, uint64_t *v);

static inline int pb_varint(pb_reader_t *r, uint64_t *v)
{
	const uint8_t *p = r->p;
	if (p < r->end && !(p[0] & 0x80)) {
		*v = p[0];
		r->p = p + 1;
		return 0;
	}
	if (r->end - p >= 2 && !(p[1] & 0x80)) {
		*v = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
		r->p = p + 2;
		return 0;
	}
	return pb_varint_slow(r, v);
}

static inline int pb_key(pb_reader_t *r, uint32_t *field, int *wire_type)
{
	uint64_t k;
	if (pb_varint(r, &k) < 0)
		return -1;
	uint64_t f = k >> 3;
	int wt = (int)(k & 7);
	if (f == 0 || f > PB_MAX_FIELD || wt == 6 || wt == 7)
		return -1;
	*field = (uint32_t)f;
	*wire_type = wt;
	return 0;
}

/* Little-endian fixed-width value of n (4 or 8) bytes. */
static inline int pb_read_le(pb_reader_t *r, unsigned n, uint64_t *v)
{
	if (r->end - r->p < (ptrdiff_t)n)
		return -1;
	uint64_t x;
	if (n == 8) {
		memcpy(&x, r->p, 8);
	} else {
		uint32_t y;
		memcpy(&y, r->p, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		y = __builtin_bswap32(y);
#endif
		x = y;
	}
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	if (n == 8)
		x = __builtin_bswap64(x);
#endif
	r->p += n;
	*v = x;
	return 0;
}

static inline int pb_fixed64(pb_reader_t *r, uint64_t *v)
{
	return pb_read_le(r, 8, v);
}

static inline int pb_fixed32(pb_reader_t *r, uint32_t *v)
{
	uint64_t x;
	if (pb_read_le(r, 4, &x) < 0)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

/* Length-delimited. */
static inline int pb_bytes(pb_reader_t *r, slice_t *out)
{
	uint64_t len;
	if (pb_varint(r, &len) < 0)
		return -1;
	/* Compare against what is left, never compute p + len first. */
	if (len > (uint64_t)(r->end - r->p))
		return -1;
	out->p = r->p;
	out->n = (size_t)len;
	r->p += len;
	return 0;
}

/* Groups are refused. */
static inline int pb_skip(pb_reader_t *r, int wire_type)
{
	uint64_t v;
	slice_t s;
	switch (wire_type) {
	case PB_VARINT:
		return pb_varint(r, &v);
	case PB_I64:
		return pb_read_le(r, 8, &v);
	case PB_LEN:
		return pb_bytes(r, &s);
	case PB_I32:
		return pb_read_le(r, 4, &v);
	default:
		return -1; /* groups (3/4) and invalid types */
	}
}

/* The last value of varint field `field` in message msg (0 when absent);
 * stops quietly at malformed bytes (callers have validated msg or accept
 * the value read so far). For small sub-messages such as pprof/OTLP Line. */
static inline uint64_t pb_find_varint(slice_t msg, uint32_t field)
{
	pb_reader_t r = pb_reader_make(msg);
	uint64_t found = 0, v;
	uint32_t num;
	int wt;
	while (!pb_done(&r)) {
		if (pb_key(&r, &num, &wt) < 0 || (wt == PB_VARINT ? pb_varint(&r, &v) : pb_skip(&r, wt)) < 0)
			break;
		if (num == field && wt == PB_VARINT)
			found = v;
	}
	return found;
}

/* "varint", "fixed64", "length-delimited", "fixed32" or "group", for messages. */
const char *pb_wire_type_name(int wire_type);
/* Iterates a packed repeated varint field's payload. */
static inline int pb_packed_varint_next(pb_reader_t *packed, uint64_t *v)
{
	return pb_varint(packed, v);
}

/* ---- Messages: field specs, error paths, checked reads ------------------ */

#define PB_COUNTOF(a) (sizeof(a) / sizeof((a)[0]))

/* What a field may arrive as: varint, length-delimited, fixed64, repeated
 * scalars that may be packed (length-delimited) or come one by one, or any
 * wire type (the caller checks it). */
enum { PB_F_VARINT, PB_F_LEN, PB_F_I64, PB_F_PVARINT, PB_F_PI64, PB_F_ANY };

typedef struct {
	uint32_t num;
	uint8_t kind; /* PB_F_* */
	const char *name;
} pb_field_t;

/* The known fields of a message, numbered 1..n in order (pb_next's fast
 * path looks field num up as f[num - 1]; a gap still works, slower). */
typedef struct {
	const pb_field_t *f;
	uint32_t n;
} pb_spec_t;

/* Defines the static pb_spec_t `name` over the pb_field_t initialisers given. */
#define PB_SPEC(name, ...)                                                                                   \
	static const pb_field_t name##_fields[] = {__VA_ARGS__};                                             \
	static const pb_spec_t name = {name##_fields, (uint32_t)PB_COUNTOF(name##_fields)}

/* Where in the input an error is: a chain of elements from the innermost
 * up, each "name" or, when repeated, "name[ix]"; NULL is the message
 * itself. Elements live on the decoder's stack:
 *   pb_path_t rp = {NULL, "resource_profiles", 0}, res = {&rp, "resource", PB_NOIX};
 * Errors show the outermost PB_PATH_SHOWN elements. */
#define PB_NOIX UINT32_MAX
#define PB_PATH_SHOWN 8
typedef struct pb_path {
	const struct pb_path *up;
	const char *name;
	uint32_t ix; /* PB_NOIX: not repeated */
} pb_path_t;

/* The input a decoder reads: base for byte offsets in errors, and what an
 * error with neither path nor field names ("profile" for pprof; NULL: the
 * message alone). */
typedef struct {
	const uint8_t *base;
	const char *root;
} pb_src_t;

/* Sets err to "<path>.<field>: <message>" (field may be NULL; without a
 * path "<field>: ", without either "<root>: " or nothing). Returns -1. */
int pb_fail(const pb_src_t *s, err_t *err, int status, const pb_path_t *p, const char *field, const char *fmt,
            ...) __attribute__((format(printf, 6, 7), cold));

/* "varint", "length-delimited", "varint or packed", ...: what kind expects. */
const char *pb_kind_name(uint8_t kind);

static inline int pb_kind_ok(uint8_t kind, int w)
{
	/* Bit w of entry kind: wire type w fits kind. A table, not a switch:
	 * it is in every decoder's inner loop (pb_next), where the switch's
	 * indirect jump cost ~3 % of a pprof decode. */
	static const uint8_t fits[] = {
	    [PB_F_VARINT] = 1u << PB_VARINT,
	    [PB_F_LEN] = 1u << PB_LEN,
	    [PB_F_I64] = 1u << PB_I64,
	    [PB_F_PVARINT] = 1u << PB_VARINT | 1u << PB_LEN,
	    [PB_F_PI64] = 1u << PB_I64 | 1u << PB_LEN,
	    [PB_F_ANY] = 0xff,
	};
	return kind < sizeof fits && (unsigned)w < 8 && (fits[kind] >> w) & 1;
}

/* The general case of pb_next (pb.c). */
int pb_next_slow(const pb_src_t *s, pb_reader_t *r, const pb_spec_t *spec, const pb_path_t *p,
                 const pb_field_t **f, int *wt, err_t *err);

/* Advances to the next known field of the message r reads, skipping
 * unknown ones. 1: *f and *wt are set and the value is next; 0: end of
 * message; -1: err set (malformed key, truncated unknown field, wrong wire
 * type). Inline: the common case (a one-byte key, field num is
 * spec->f[num - 1] and its wire type fits) is every decoder's inner loop;
 * anything else goes to pb_next_slow from the key. */
static inline int pb_next(const pb_src_t *s, pb_reader_t *r, const pb_spec_t *spec, const pb_path_t *p,
                          const pb_field_t **f, int *wt, err_t *err)
{
	if (pb_done(r))
		return 0;
	/* A one-byte key (fields 1..15): field 0 wraps num - 1 past spec->n,
	 * wire types 6 and 7 fit no kind. */
	uint8_t key = r->p[0];
	uint32_t num = key >> 3;
	int w = key & 7;
	if (key < 0x80 && num - 1 < spec->n && spec->f[num - 1].num == num &&
	    pb_kind_ok(spec->f[num - 1].kind, w)) {
		r->p++;
		*f = &spec->f[num - 1];
		*wt = w;
		return 1;
	}
	return pb_next_slow(s, r, spec, p, f, wt, err);
}

static inline size_t pb_offset(const pb_src_t *s, const uint8_t *at)
{
	return (size_t)(at - s->base);
}

/* Checked reads of the value of field `field` (of message p): 0, or -1 with
 * a 400 naming the path and the byte offset. */
static inline int pb_read_varint(const pb_src_t *s, pb_reader_t *r, uint64_t *v, const pb_path_t *p,
                                 const char *field, err_t *err)
{
	const uint8_t *at = r->p;
	if (pb_varint(r, v) < 0) {
		pb_fail(s, err, 400, p, field, "truncated or overlong varint at byte %zu", pb_offset(s, at));
		return -1;
	}
	return 0;
}

static inline int pb_read_len(const pb_src_t *s, pb_reader_t *r, slice_t *out, const pb_path_t *p,
                              const char *field, err_t *err)
{
	const uint8_t *at = r->p;
	if (pb_bytes(r, out) < 0) {
		pb_fail(s, err, 400, p, field,
		        "length at byte %zu runs past the end of its message or is malformed",
		        pb_offset(s, at));
		return -1;
	}
	return 0;
}

static inline int pb_read_fixed64(const pb_src_t *s, pb_reader_t *r, uint64_t *v, const pb_path_t *p,
                                  const char *field, err_t *err)
{
	if (pb_fixed64(r, v) < 0) {
		pb_fail(s, err, 400, p, field, "truncated fixed64");
		return -1;
	}
	return 0;
}

/* One occurrence of a PB_F_PVARINT field (wt from pb_next): *vals reads its
 * values, the packed payload or the single varint, with pb_next_packed. */
static inline int pb_read_packable(const pb_src_t *s, pb_reader_t *r, int wt, pb_reader_t *vals,
                                   const pb_path_t *p, const char *field, err_t *err)
{
	if (wt == PB_LEN) {
		slice_t v;
		if (pb_read_len(s, r, &v, p, field, err) < 0)
			return -1;
		*vals = pb_reader_make(v);
		return 0;
	}
	uint64_t x;
	const uint8_t *at = r->p;
	if (pb_read_varint(s, r, &x, p, field, err) < 0)
		return -1;
	vals->p = at;
	vals->end = r->p;
	return 0;
}

/* 1 and *v: the next value of vals; 0: no more; -1: err set. */
static inline int pb_next_packed(const pb_src_t *s, pb_reader_t *vals, uint64_t *v, const pb_path_t *p,
                                 const char *field, err_t *err)
{
	if (pb_done(vals))
		return 0;
	const uint8_t *at = vals->p;
	if (pb_varint(vals, v) < 0) {
		pb_fail(s, err, 400, p, field, "malformed packed varint at byte %zu", pb_offset(s, at));
		return -1;
	}
	return 1;
}

/* ---- Writer --------------------------------------------------------------- */

void pb_put_varint(buf_t *b, uint64_t v);
void pb_put_key(buf_t *b, uint32_t field, int wire_type);
void pb_put_uint(buf_t *b, uint32_t field, uint64_t v); /* omitted when 0 */
void pb_put_int64(buf_t *b, uint32_t field, int64_t v); /* omitted when 0 */
void pb_put_bytes(buf_t *b, uint32_t field, slice_t s); /* always written */
void pb_put_fixed64(buf_t *b, uint32_t field, uint64_t v);
/* Packed repeated varints. */
void pb_put_packed(buf_t *b, uint32_t field, const uint64_t *v, size_t n);
/* Nested message: pb_begin reserves room for the length; pb_end patches it. */
size_t pb_begin(buf_t *b, uint32_t field);
void pb_end(buf_t *b, size_t mark);

#endif
