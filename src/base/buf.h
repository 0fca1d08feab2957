/* Growable byte buffer with a ceiling fixed at init: the ceiling is the most
 * outside input can make it hold. Appends past the ceiling fail (-1) and
 * leave the buffer unchanged. */
#ifndef KILN_BASE_BUF_H
#define KILN_BASE_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "base/slice.h"

typedef struct {
	uint8_t *p;
	size_t n;
	size_t cap;
	size_t max; /* ceiling; SIZE_MAX for buffers Kiln itself fills */
} buf_t;

void buf_init(buf_t *b, size_t max);
void buf_free(buf_t *b);
void buf_reset(buf_t *b); /* n = 0, keeps memory */
/* Ensures room for extra more bytes; -1 if that would pass the ceiling. */
int buf_reserve(buf_t *b, size_t extra);
int buf_append(buf_t *b, const void *p, size_t n);
int buf_putc(buf_t *b, uint8_t c);
int buf_puts(buf_t *b, const char *s);
int buf_printf(buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_vprintf(buf_t *b, const char *fmt, va_list ap);
/* Appends v as an unsigned LEB128 varint (base/num.h). */
int buf_put_uvarint(buf_t *b, uint64_t v);
/* Appends s as a JSON string literal, quotes included (UTF-8 passed through,
 * invalid bytes and control characters escaped). */
int buf_json_str(buf_t *b, slice_t s);
/* Length of the longest valid UTF-8 prefix of s (s.n when all of it is). */
size_t utf8_valid_prefix(slice_t s);
static inline slice_t buf_slice(const buf_t *b)
{
	return slice_make(b->p, b->n);
}
/* Hands the bytes to the caller (who frees them) and resets the buffer. */
uint8_t *buf_steal(buf_t *b, size_t *n);

#endif
