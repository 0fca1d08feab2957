/* Folded stack text (wire/folded.h): Pyroscope's `groups` and `lines`
 * bodies, read one line at a time without allocating. Every error names
 * the 1-based line it is on. */
#include "wire/folded.h"

#include <string.h>

void folded_init(folded_reader_t *r, slice_t text, int format)
{
	r->n_frames = r->depth = r->line = 0;
	r->value = 0;
	r->_text = text;
	r->_pos = 0;
	r->_format = format;
}

static int is_blank(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* The count after the last space of a groups line; *stack is what precedes it. */
static int parse_count(folded_reader_t *r, slice_t line, slice_t *stack, err_t *err)
{
	const uint8_t *sp = memrchr(line.p, ' ', line.n);
	if (!sp)
		return err_set(err, 400,
		               "line %u: no count: a groups line is 'frame;frame;... COUNT' (format=lines "
		               "takes lines without counts)",
		               r->line);
	const uint8_t *c = sp + 1, *end = line.p + line.n; /* not empty: trailing blanks are trimmed */
	uint64_t v = 0;
	for (const uint8_t *q = c; q < end; q++) {
		if (*q < '0' || *q > '9')
			return err_set(err, 400, "line %u: count '%.*s' is not a non-negative integer",
			               r->line, (int)(end - c > 32 ? 32 : end - c), (const char *)c);
		if (v > ((uint64_t)INT64_MAX - (uint64_t)(*q - '0')) / 10)
			return err_set(err, 400, "line %u: count %.*s is above %lld", r->line,
			               (int)(end - c > 32 ? 32 : end - c), (const char *)c,
			               (long long)INT64_MAX);
		v = v * 10 + (uint64_t)(*q - '0');
	}
	size_t n = (size_t)(sp - line.p);
	while (n > 0 && is_blank(line.p[n - 1]))
		n--;
	if (n == 0)
		return err_set(err, 400, "line %u: no stack before the count", r->line);
	r->value = (int64_t)v;
	*stack = slice_make(line.p, n);
	return 0;
}

static int parse_line(folded_reader_t *r, slice_t line, err_t *err)
{
	for (size_t i = 0; i < line.n; i++)
		if (line.p[i] < 0x20 && line.p[i] != '\t')
			return err_set(err, 400, "line %u: control byte 0x%02x at column %zu", r->line,
			               line.p[i], i + 1);
	slice_t stack = line;
	r->value = 1;
	if (r->_format == FOLDED_GROUPS && parse_count(r, line, &stack, err) < 0)
		return -1;
	uint32_t depth = 1;
	for (const uint8_t *q = stack.p; (q = memchr(q, ';', (size_t)(stack.p + stack.n - q))); q++)
		depth++;
	uint32_t skip = depth > LIMIT_STACK_DEPTH ? depth - LIMIT_STACK_DEPTH : 0;
	r->depth = depth;
	r->n_frames = 0;
	const uint8_t *f = stack.p, *end = stack.p + stack.n;
	for (uint32_t k = 0; k < depth; k++) {
		const uint8_t *semi = memchr(f, ';', (size_t)(end - f));
		size_t n = (size_t)((semi ? semi : end) - f);
		if (n == 0)
			return err_set(err, 400,
			               "line %u: frame %u is empty (';;', or a ';' at the start or end of "
			               "the stack)",
			               r->line, k + 1);
		if (n > LIMIT_STRING_BYTES)
			return err_set(err, 413, "line %u: frame %u is %zu bytes; the limit is %u", r->line,
			               k + 1, n, LIMIT_STRING_BYTES);
		if (k >= skip)
			r->frames[r->n_frames++] = slice_make(f, n);
		f = semi ? semi + 1 : end;
	}
	return 0;
}

int folded_next(folded_reader_t *r, err_t *err)
{
	const uint8_t *t = r->_text.p;
	size_t n = r->_text.n;
	while (r->_pos < n) {
		size_t start = r->_pos;
		const uint8_t *nl = memchr(t + start, '\n', n - start);
		size_t end = nl ? (size_t)(nl - t) : n;
		r->_pos = nl ? end + 1 : n;
		r->line++;
		while (end > start && is_blank(t[end - 1]))
			end--;
		if (end > start)
			return parse_line(r, slice_make(t + start, end - start), err) < 0 ? -1 : 1;
	}
	return 0;
}

int folded_is_text(slice_t data)
{
	size_t n = data.n < 256 ? data.n : 256;
	for (size_t i = 0; i < n; i++)
		if (data.p[i] < 0x20 && data.p[i] != '\t' && data.p[i] != '\r' && data.p[i] != '\n')
			return 0;
	return n > 0;
}
