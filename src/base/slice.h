/* Length-carrying byte slices: how bytes from the network travel through Kiln.
 * Never NUL-terminated; a slice borrows memory owned by someone else. */
#ifndef KILN_BASE_SLICE_H
#define KILN_BASE_SLICE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
	const uint8_t *p;
	size_t n;
} slice_t;

static inline slice_t slice_make(const void *p, size_t n)
{
	slice_t s = {(const uint8_t *)p, n};
	return s;
}

static inline slice_t slice_cstr(const char *s)
{
	return slice_make(s, s ? strlen(s) : 0);
}

static inline int slice_eq(slice_t a, slice_t b)
{
	return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

static inline int slice_eq_cstr(slice_t a, const char *s)
{
	return slice_eq(a, slice_cstr(s));
}

/* Three-way byte comparison (shorter prefix sorts first). */
int slice_cmp(slice_t a, slice_t b);

#endif
