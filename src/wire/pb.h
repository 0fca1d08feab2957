/* Protobuf wire format: a bounded reader (no allocation, every length checked)
 * and a writer into a buf_t. The reader is the hot path of every decoder. */
#ifndef KILN_WIRE_PB_H
#define KILN_WIRE_PB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/buf.h"
#include "base/slice.h"

enum { PB_VARINT = 0, PB_I64 = 1, PB_LEN = 2, PB_SGROUP = 3, PB_EGROUP = 4, PB_I32 = 5 };

typedef struct {
	const uint8_t *p;
	const uint8_t *end;
} pb_reader;

static inline pb_reader pb_reader_make(slice_t s)
{
	pb_reader r = {s.p, s.n ? s.p + s.n : s.p}; /* no arithmetic on a NULL empty slice */
	return r;
}
static inline int pb_done(const pb_reader *r)
{
	return r->p >= r->end;
}
/* Each returns 0 on success, -1 on truncation/overflow/invalid (reader state
 * then undefined). pb_key rejects field number 0 and wire types 6/7.
 * Inline: they are the inner loop of every decoder. */
#define PB_MAX_FIELD 0x1fffffffu /* 2^29 - 1 */

/* The general case of pb_varint: more than two bytes, or near the end. */
int pb_varint_slow(pb_reader *r, uint64_t *v);

static inline int pb_varint(pb_reader *r, uint64_t *v)
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

static inline int pb_key(pb_reader *r, uint32_t *field, int *wire_type)
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
static inline int pb_read_le(pb_reader *r, unsigned n, uint64_t *v)
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

static inline int pb_fixed64(pb_reader *r, uint64_t *v)
{
	return pb_read_le(r, 8, v);
}

static inline int pb_fixed32(pb_reader *r, uint32_t *v)
{
	uint64_t x;
	if (pb_read_le(r, 4, &x) < 0)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

/* Length-delimited. */
static inline int pb_bytes(pb_reader *r, slice_t *out)
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
static inline int pb_skip(pb_reader *r, int wire_type)
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
	pb_reader r = pb_reader_make(msg);
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
static inline int pb_packed_varint_next(pb_reader *packed, uint64_t *v)
{
	return pb_varint(packed, v);
}

void pb_put_varint(buf_t *b, uint64_t v);
void pb_put_key(buf_t *b, uint32_t field, int wire_type);
void pb_put_uint(buf_t *b, uint32_t field, uint64_t v);         /* omitted when 0 */
void pb_put_int64(buf_t *b, uint32_t field, int64_t v);         /* omitted when 0 */
void pb_put_bytes(buf_t *b, uint32_t field, slice_t s);         /* always written */
void pb_put_fixed64(buf_t *b, uint32_t field, uint64_t v);
/* Packed repeated varints. */
void pb_put_packed(buf_t *b, uint32_t field, const uint64_t *v, size_t n);
/* Nested message: pb_begin reserves room for the length; pb_end patches it. */
size_t pb_begin(buf_t *b, uint32_t field);
void pb_end(buf_t *b, size_t mark);

#endif
