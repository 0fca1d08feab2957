/* Small number codings every module shares, so that what must agree is
 * written once: saturating int64 arithmetic on sample values (values come
 * from the network, and a sum must neither overflow nor differ between the
 * ingest merge, the two store engines and the query), LEB128 varints (the
 * protobuf writer, the embedded engine's chunks, ClickHouse's RowBinary),
 * and hex digits (URL escapes, chunked sizes, OTLP/JSON ids, span ids).
 * Pure inline functions: no allocation, no state. */
#ifndef KILN_BASE_NUM_H
#define KILN_BASE_NUM_H

#include <stddef.h>
#include <stdint.h>

/* a + b, saturating at INT64_MAX / INT64_MIN. */
static inline int64_t num_sat_add(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* a * b, saturating at INT64_MAX / INT64_MIN (by the sign of the exact product). */
static inline int64_t num_sat_mul(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_mul_overflow(a, b, &r))
		return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
	return r;
}

/* A bijective mix of a 64-bit id (splitmix64's finalizer; 0 -> 0 only), so
 * ids chosen by a sender (pprof, JFR) do not pile into one probe run of a
 * u64map. Not a stored identity. */
static inline uint64_t num_mix64(uint64_t id)
{
	id ^= id >> 30;
	id *= 0xbf58476d1ce4e5b9ull;
	id ^= id >> 27;
	id *= 0x94d049bb133111ebull;
	id ^= id >> 31;
	return id;
}

/* Bytes of the longest varint: ceil(64 / 7). */
#define NUM_UVARINT_MAX 10

/* Writes v as an unsigned LEB128 varint (7 bits a byte, low first, high bit
 * = more follows) into out; returns its length, 1..NUM_UVARINT_MAX. */
static inline size_t num_uvarint_put(uint8_t out[NUM_UVARINT_MAX], uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

/* Reads one unsigned LEB128 varint at *p (never past end): 0 with *v set
 * and *p moved past it, or -1 with *p unchanged when it is truncated or
 * carries more than 64 bits (a 10th byte above 1, or an 11th byte).
 * Non-minimal forms ("\x80\x00" for 0) are accepted, as protobuf does. */
static inline int num_uvarint_get(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	const uint8_t *q = *p;
	uint64_t x = 0;
	for (unsigned i = 0; i < NUM_UVARINT_MAX; i++) {
		if (q >= end)
			return -1;
		uint8_t c = *q++;
		if (i == NUM_UVARINT_MAX - 1 && c > 1)
			return -1;
		x |= (uint64_t)(c & 0x7f) << (7 * i);
		if (!(c & 0x80)) {
			*p = q;
			*v = x;
			return 0;
		}
	}
	return -1; /* unreachable: the 10th byte ends or fails above */
}

/* The value of hex digit c (0-9, a-f, A-F), or -1 for any other byte. */
static inline int num_hex_digit(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#endif
