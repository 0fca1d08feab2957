/* Growable byte buffer with a ceiling (base/buf.h). */
#include "base/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/num.h"

int slice_cmp(slice_t a, slice_t b)
{
	size_t n = a.n < b.n ? a.n : b.n;
	int c = n ? memcmp(a.p, b.p, n) : 0;
	if (c)
		return c;
	return a.n < b.n ? -1 : a.n > b.n ? 1 : 0;
}

void buf_init(buf_t *b, size_t max)
{
	b->p = NULL;
	b->n = 0;
	b->cap = 0;
	b->max = max;
}

void buf_free(buf_t *b)
{
	free(b->p);
	b->p = NULL;
	b->n = b->cap = 0;
}

void buf_reset(buf_t *b)
{
	b->n = 0;
}

int buf_reserve(buf_t *b, size_t extra)
{
	if (extra > b->max || b->n > b->max - extra)
		return -1;
	size_t need = b->n + extra;
	if (need <= b->cap)
		return 0;
	size_t c = b->cap ? b->cap : 256;
	while (c < need)
		c = c > SIZE_MAX / 2 ? need : c * 2;
	if (c > b->max)
		c = b->max;
	b->p = xrealloc(b->p, c);
	b->cap = c;
	return 0;
}

int buf_append(buf_t *b, const void *p, size_t n)
{
	if (buf_reserve(b, n) < 0)
		return -1;
	if (n)
		memcpy(b->p + b->n, p, n);
	b->n += n;
	return 0;
}

int buf_putc(buf_t *b, uint8_t c)
{
	return buf_append(b, &c, 1);
}

int buf_put_uvarint(buf_t *b, uint64_t v)
{
	uint8_t tmp[NUM_UVARINT_MAX];
	return buf_append(b, tmp, num_uvarint_put(tmp, v));
}

int buf_puts(buf_t *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

int buf_vprintf(buf_t *b, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	char small[256];
	int len = vsnprintf(small, sizeof small, fmt, ap2);
	va_end(ap2);
	if (len < 0)
		return -1;
	if ((size_t)len < sizeof small)
		return buf_append(b, small, (size_t)len);
	if (buf_reserve(b, (size_t)len + 1) < 0)
		return -1;
	vsnprintf((char *)b->p + b->n, (size_t)len + 1, fmt, ap);
	b->n += (size_t)len;
	return 0;
}

int buf_printf(buf_t *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = buf_vprintf(b, fmt, ap);
	va_end(ap);
	return r;
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if invalid. */
static size_t utf8_len(const uint8_t *p, size_t n)
{
	uint8_t c = p[0];
	size_t len;
	uint32_t min;
	if (c < 0x80)
		return 1;
	if ((c & 0xE0) == 0xC0)
		len = 2, min = 0x80;
	else if ((c & 0xF0) == 0xE0)
		len = 3, min = 0x800;
	else if ((c & 0xF8) == 0xF0)
		len = 4, min = 0x10000;
	else
		return 0;
	if (len > n)
		return 0;
	uint32_t cp = c & (0x7F >> len);
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return len;
}

size_t utf8_valid_prefix(slice_t s)
{
	size_t i = 0, l;
	while (i < s.n && (l = utf8_len(s.p + i, s.n - i)) != 0)
		i += l;
	return i;
}

int buf_json_str(buf_t *b, slice_t s)
{
	static const char hex[] = "0123456789abcdef";
	if (buf_reserve(b, s.n + 2) < 0)
		return -1;
	b->p[b->n++] = '"';
	size_t i = 0;
	while (i < s.n) {
		size_t run = i;
		while (run < s.n && s.p[run] >= 0x20 && s.p[run] < 0x80 && s.p[run] != '"' && s.p[run] != '\\')
			run++;
		if (run > i && buf_append(b, s.p + i, run - i) < 0)
			return -1;
		i = run;
		if (i >= s.n)
			break;
		uint8_t c = s.p[i];
		char esc[8];
		if (c == '"' || c == '\\') {
			esc[0] = '\\', esc[1] = (char)c;
			if (buf_append(b, esc, 2) < 0)
				return -1;
			i++;
		} else if (c < 0x20) {
			esc[0] = '\\', esc[1] = 'u', esc[2] = '0', esc[3] = '0';
			esc[4] = hex[c >> 4], esc[5] = hex[c & 15];
			if (buf_append(b, esc, 6) < 0)
				return -1;
			i++;
		} else {
			size_t l = utf8_len(s.p + i, s.n - i);
			if (l == 0) { /* invalid byte: U+FFFD */
				if (buf_append(b, "\xEF\xBF\xBD", 3) < 0)
					return -1;
				i++;
			} else {
				if (buf_append(b, s.p + i, l) < 0)
					return -1;
				i += l;
			}
		}
	}
	return buf_putc(b, '"');
}

uint8_t *buf_steal(buf_t *b, size_t *n)
{
	uint8_t *p = b->p;
	*n = b->n;
	b->p = NULL;
	b->n = b->cap = 0;
	return p;
}
