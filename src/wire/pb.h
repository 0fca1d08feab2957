/* Protobuf wire format: a bounded reader (no allocation, every length checked)
 * and a writer into a buf_t. The reader is the hot path of every decoder. */
#ifndef KILN_WIRE_PB_H
#define KILN_WIRE_PB_H

#include <stdint.h>

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
 * then undefined). pb_key rejects field number 0 and wire types 6/7. */
int pb_varint(pb_reader *r, uint64_t *v);
int pb_key(pb_reader *r, uint32_t *field, int *wire_type);
int pb_fixed64(pb_reader *r, uint64_t *v);
int pb_fixed32(pb_reader *r, uint32_t *v);
int pb_bytes(pb_reader *r, slice_t *out);          /* length-delimited */
int pb_skip(pb_reader *r, int wire_type);           /* groups are refused */
/* Iterates a packed repeated varint field's payload. */
int pb_packed_varint_next(pb_reader *packed, uint64_t *v);

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
