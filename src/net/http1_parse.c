/* HTTP/1.1 request parsing over plain bytes (http1_parse.h): head scanning,
 * head parsing, body framing rules and the chunked decoder. Strict where
 * leniency lets requests be smuggled; no I/O and no policy on limits of bodies. */
#include "net/http1_parse.h"

#include <stdlib.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "base/num.h"

enum { SCAN_TEXT, SCAN_LF, SCAN_LF_CR };

size_t http_scan_head(http_scan_t *s, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t c = p[i];
		if (c == '\n') {
			if (s->st != SCAN_TEXT) {
				s->scanned += i + 1;
				s->st = SCAN_TEXT;
				return s->scanned;
			}
			s->st = SCAN_LF;
		} else if (c == '\r' && s->st == SCAN_LF) {
			s->st = SCAN_LF_CR;
		} else {
			s->st = SCAN_TEXT;
		}
	}
	s->scanned += n;
	return 0;
}

static int is_tchar(uint8_t c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		return 1;
	switch (c) {
	case '!':
	case '#':
	case '$':
	case '%':
	case '&':
	case '\'':
	case '*':
	case '+':
	case '-':
	case '.':
	case '^':
	case '_':
	case '`':
	case '|':
	case '~':
		return 1;
	default:
		return 0;
	}
}

static uint8_t lower(uint8_t c)
{
	return c >= 'A' && c <= 'Z' ? (uint8_t)(c + 32) : c;
}

static int slice_ieq(slice_t a, const char *s)
{
	size_t n = strlen(s);
	if (a.n != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (lower(a.p[i]) != (uint8_t)s[i])
			return 0;
	return 1;
}

static int fail(int *status, const char **msg, int st, const char *m)
{
	*status = st;
	*msg = m;
	return -1;
}

/* Next line of [*pos, n): without its "\n" or "\r\n". -1 on a bare CR inside. */
static int next_line(const uint8_t *p, size_t n, size_t *pos, slice_t *line)
{
	size_t start = *pos, i = start;
	while (i < n && p[i] != '\n')
		i++;
	size_t end = i;
	if (end > start && p[end - 1] == '\r')
		end--;
	for (size_t k = start; k < end; k++)
		if (p[k] == '\r')
			return -1;
	*line = slice_make(p + start, end - start);
	*pos = i < n ? i + 1 : n;
	return 0;
}

static int parse_request_line(slice_t l, http_head_t *h, int *status, const char **msg)
{
	size_t i = 0;
	while (i < l.n && is_tchar(l.p[i]))
		i++;
	if (i == 0 || i >= l.n || l.p[i] != ' ')
		return fail(status, msg, 400,
		            "malformed request line: expected METHOD SP target SP HTTP/1.x");
	h->method = slice_make(l.p, i);
	size_t t = ++i;
	while (i < l.n && l.p[i] > 0x20 && l.p[i] < 0x7f)
		i++;
	if (i == t || i >= l.n || l.p[i] != ' ')
		return fail(status, msg, 400, "malformed request line: bad request target");
	h->target = slice_make(l.p + t, i - t);
	slice_t v = slice_make(l.p + i + 1, l.n - i - 1);
	if (v.n == 8 && memcmp(v.p, "HTTP/1.", 7) == 0 && (v.p[7] == '0' || v.p[7] == '1')) {
		h->minor = v.p[7] - '0';
		return 0;
	}
	if (v.n == 8 && memcmp(v.p, "HTTP/", 5) == 0 && v.p[5] >= '0' && v.p[5] <= '9' && v.p[6] == '.' &&
	    v.p[7] >= '0' && v.p[7] <= '9')
		return fail(status, msg, 505, "HTTP version not supported; use HTTP/1.1");
	return fail(status, msg, 400, "malformed request line: bad HTTP version");
}

static int parse_field(uint8_t *p, slice_t l, slice_t *name, slice_t *value, int *status, const char **msg)
{
	if (l.p[0] == ' ' || l.p[0] == '\t')
		return fail(status, msg, 400, "obsolete header line folding is not allowed");
	size_t off = (size_t)(l.p - p), i = 0;
	while (i < l.n && is_tchar(l.p[i])) {
		p[off + i] = lower(p[off + i]);
		i++;
	}
	if (i == 0 || i >= l.n || l.p[i] != ':')
		return fail(status, msg, 400, "malformed header field (expected name: value)");
	*name = slice_make(l.p, i);
	size_t a = i + 1, b = l.n;
	while (a < b && (l.p[a] == ' ' || l.p[a] == '\t'))
		a++;
	while (b > a && (l.p[b - 1] == ' ' || l.p[b - 1] == '\t'))
		b--;
	for (size_t k = a; k < b; k++) {
		uint8_t c = l.p[k];
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return fail(status, msg, 400, "control character in a header value");
	}
	*value = slice_make(l.p + a, b - a);
	return 0;
}

int http_parse_head(uint8_t *p, size_t n, http_head_t *h, int *status, const char **msg)
{
	memset(h, 0, sizeof *h);
	size_t pos = 0, lines = 0;
	for (size_t i = 0; i < n; i++)
		lines += p[i] == '\n';
	slice_t l;
	if (next_line(p, n, &pos, &l) < 0)
		return fail(status, msg, 400, "bare CR in the request line");
	if (parse_request_line(l, h, status, msg) < 0)
		return -1;
	_Static_assert(LIMIT_HEADER_FIELDS == 256, "the 431 message below names the limit");
	if (lines > LIMIT_HEADER_FIELDS + 2)
		return fail(status, msg, 431, "too many header fields (the limit is 256)");
	size_t cap = lines ? lines : 1;
	h->names = xmalloc(2 * cap * sizeof(slice_t));
	h->values = h->names + cap;
	while (pos < n) {
		if (next_line(p, n, &pos, &l) < 0) {
			free(h->names);
			return fail(status, msg, 400, "bare CR in a header line");
		}
		if (l.n == 0)
			break;
		if (parse_field(p, l, &h->names[h->n], &h->values[h->n], status, msg) < 0) {
			free(h->names);
			return -1;
		}
		h->n++;
	}
	return 0;
}

/* Calls fn on each comma-separated token of every `name` header; stops on nonzero. */
static int each_token(const http_head_t *h, const char *name, int (*fn)(slice_t tok, void *arg), void *arg)
{
	for (uint32_t i = 0; i < h->n; i++) {
		if (!slice_eq_cstr(h->names[i], name))
			continue;
		slice_t v = h->values[i];
		size_t a = 0;
		while (a <= v.n) {
			size_t b = a;
			while (b < v.n && v.p[b] != ',')
				b++;
			size_t s = a, e = b;
			while (s < e && (v.p[s] == ' ' || v.p[s] == '\t'))
				s++;
			while (e > s && (v.p[e - 1] == ' ' || v.p[e - 1] == '\t'))
				e--;
			int r = fn(slice_make(v.p + s, e - s), arg);
			if (r)
				return r;
			a = b + 1;
		}
	}
	return 0;
}

static int conn_token(slice_t tok, void *arg)
{
	int *flags = arg;
	if (slice_ieq(tok, "close"))
		*flags |= 1;
	else if (slice_ieq(tok, "keep-alive"))
		*flags |= 2;
	return 0;
}

static int parse_length(slice_t v, uint64_t *out)
{
	if (v.n == 0 || v.n > 18)
		return -1;
	uint64_t x = 0;
	for (size_t i = 0; i < v.n; i++) {
		if (v.p[i] < '0' || v.p[i] > '9')
			return -1;
		x = x * 10 + (uint64_t)(v.p[i] - '0');
	}
	*out = x;
	return 0;
}

int http_framing_of(const http_head_t *h, http_framing_t *f, int *status, const char **msg)
{
	memset(f, 0, sizeof *f);
	int conn = 0, n_te = 0, n_cl = 0;
	const slice_t *te = NULL;
	each_token(h, "connection", conn_token, &conn);
	f->keep_alive = h->minor == 1 ? !(conn & 1) : (conn & 2) && !(conn & 1);
	for (uint32_t i = 0; i < h->n; i++) {
		slice_t name = h->names[i], v = h->values[i];
		if (slice_eq_cstr(name, "transfer-encoding")) {
			n_te++;
			te = &h->values[i];
		} else if (slice_eq_cstr(name, "content-length")) {
			uint64_t x;
			if (parse_length(v, &x) < 0)
				return fail(status, msg, 400, "invalid Content-Length");
			if (n_cl++ && x != f->content_length)
				return fail(status, msg, 400, "conflicting Content-Length headers");
			f->content_length = x;
		} else if (slice_eq_cstr(name, "expect") && h->minor == 1) {
			if (!slice_ieq(v, "100-continue"))
				return fail(status, msg, 417,
				            "unsupported Expect value; only 100-continue is supported");
			f->expect_continue = 1;
		}
	}
	if (n_te) {
		if (h->minor == 0)
			return fail(status, msg, 400,
			            "Transfer-Encoding is not allowed in an HTTP/1.0 request");
		if (n_cl)
			return fail(status, msg, 400,
			            "request has both Content-Length and Transfer-Encoding");
		if (n_te > 1 || !slice_ieq(*te, "chunked"))
			return fail(status, msg, 501, "only the chunked Transfer-Encoding is supported");
		f->chunked = 1;
	}
	return 0;
}

void http_split_target(slice_t t, slice_t *path, slice_t *query)
{
	size_t start = 0;
	if (t.n > 0 && t.p[0] != '/' && t.p[0] != '*') {
		/* absolute-form: scheme "://" authority path */
		for (size_t i = 0; i + 2 < t.n; i++) {
			if (t.p[i] == ':' && t.p[i + 1] == '/' && t.p[i + 2] == '/') {
				size_t k = i + 3;
				while (k < t.n && t.p[k] != '/' && t.p[k] != '?')
					k++;
				start = k;
				break;
			}
		}
	}
	size_t q = start;
	while (q < t.n && t.p[q] != '?')
		q++;
	*path = slice_make(t.p + start, q - start);
	if (path->n == 0)
		*path = slice_cstr("/");
	*query = q < t.n ? slice_make(t.p + q + 1, t.n - q - 1) : slice_make(t.p + t.n, 0);
}

enum {
	CH_SIZE0,   /* first hex digit of a chunk size */
	CH_SIZE,    /* more hex digits, or the end of the size */
	CH_BWS,     /* spaces after the size: ';' or CR next */
	CH_EXT,     /* chunk extension up to CR */
	CH_SIZE_LF, /* LF ending the size line */
	CH_DATA,    /* chunk data */
	CH_DATA_CR, /* CRLF after chunk data */
	CH_DATA_LF,
	CH_TR_START, /* start of a trailer line, or the final CRLF */
	CH_TR,       /* inside a trailer line */
	CH_TR_LF,
	CH_END_LF, /* LF of the final CRLF */
	CH_DONE,
};

static int chunk_bad(size_t i, size_t *used, const char **msg, const char *m)
{
	*used = i;
	*msg = m;
	return HTTP_BAD;
}

int http_chunked_feed(http_chunked_t *c, const uint8_t *p, size_t n, buf_t *body, size_t max_body,
                      size_t *used, const char **msg)
{
	size_t i = 0;
	while (i < n) {
		uint8_t b = p[i];
		if (c->st == CH_DATA) {
			size_t k = n - i < c->left ? n - i : (size_t)c->left;
			if (buf_append(body, p + i, k) < 0) {
				*used = i;
				return HTTP_TOO_BIG;
			}
			i += k;
			c->left -= k;
			if (c->left == 0)
				c->st = CH_DATA_CR;
			continue;
		}
		if (c->st <= CH_EXT && ++c->line > LIMIT_CHUNK_LINE_BYTES)
			return chunk_bad(i, used, msg, "chunk size line too long");
		switch (c->st) {
		case CH_SIZE0:
		case CH_SIZE: {
			int d = num_hex_digit(b);
			if (d >= 0) {
				c->left = c->left * 16 + (uint64_t)d;
				c->st = CH_SIZE;
				size_t room = max_body - (body->n < max_body ? body->n : max_body);
				if (c->left > room) {
					*used = i;
					return HTTP_TOO_BIG;
				}
			} else if (c->st == CH_SIZE0) {
				return chunk_bad(i, used, msg, "malformed chunk size");
			} else if (b == ' ' || b == '\t') {
				c->st = CH_BWS;
			} else if (b == ';') {
				c->st = CH_EXT;
			} else if (b == '\r') {
				c->st = CH_SIZE_LF;
			} else {
				return chunk_bad(i, used, msg, "malformed chunk size");
			}
			break;
		}
		case CH_BWS:
			if (b == ';')
				c->st = CH_EXT;
			else if (b == '\r')
				c->st = CH_SIZE_LF;
			else if (b != ' ' && b != '\t')
				return chunk_bad(i, used, msg, "malformed chunk size");
			break;
		case CH_EXT:
			if (b == '\r')
				c->st = CH_SIZE_LF;
			else if ((b < 0x20 && b != '\t') || b == 0x7f)
				return chunk_bad(i, used, msg, "control character in a chunk extension");
			break;
		case CH_SIZE_LF:
			if (b != '\n')
				return chunk_bad(i, used, msg, "chunk size line must end in CRLF");
			c->line = 0;
			c->st = c->left ? CH_DATA : CH_TR_START;
			break;
		case CH_DATA_CR:
			if (b != '\r')
				return chunk_bad(i, used, msg, "chunk data must be followed by CRLF");
			c->st = CH_DATA_LF;
			break;
		case CH_DATA_LF:
			if (b != '\n')
				return chunk_bad(i, used, msg, "chunk data must be followed by CRLF");
			c->st = CH_SIZE0;
			break;
		case CH_TR_START:
		case CH_TR:
			if (++c->trailers > LIMIT_HEADER_BYTES)
				return chunk_bad(i, used, msg, "chunked trailer fields too large");
			if (b == '\r')
				c->st = c->st == CH_TR_START ? CH_END_LF : CH_TR_LF;
			else if (b == '\n' || b == 0)
				return chunk_bad(i, used, msg, "malformed chunked trailer");
			else
				c->st = CH_TR;
			break;
		case CH_TR_LF:
			if (b != '\n')
				return chunk_bad(i, used, msg, "malformed chunked trailer");
			c->st = CH_TR_START;
			break;
		case CH_END_LF:
			if (b != '\n')
				return chunk_bad(i, used, msg, "chunked body must end in CRLF");
			c->st = CH_DONE;
			*used = i + 1;
			return HTTP_DONE;
		default:
			*used = i;
			return HTTP_DONE;
		}
		i++;
	}
	*used = i;
	return HTTP_MORE;
}
