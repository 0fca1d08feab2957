/* Decimal text of integers for label values, without snprintf: decoders
 * format a numeric label per sample. Private to wire/. */
#ifndef KILN_WIRE_NUMTEXT_H
#define KILN_WIRE_NUMTEXT_H

#include <stdint.h>

#include "base/slice.h"

/* Writes what "%" PRId64 prints into out (at least 21 bytes, not
 * NUL-terminated) and returns it as a slice of out. */
static inline slice_t wire_i64_text(char *out, int64_t v)
{
	char tmp[24], *p = tmp + sizeof tmp;
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	size_t n = (size_t)(tmp + sizeof tmp - p);
	for (size_t i = 0; i < n; i++)
		out[i] = p[i];
	return slice_make(out, n);
}

#endif
