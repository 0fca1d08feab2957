/* libFuzzer target for net/http1_parse.c, driven as http1.c drives it: the
 * input is a byte stream of pipelined requests, handed over in pieces (the
 * first byte sets the piece size) so that head scanning and chunked decoding
 * resume across boundaries. Heads are parsed, framing decided, targets split
 * and bodies read (Content-Length or chunked) with a small ceiling. It checks
 * for crashes, leaks and UB and that results stay inside what was given. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/limits.h"
#include "net/http1_parse.h"

#define MAX_BODY 4096u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int inside(slice_t s, const uint8_t *p, size_t n)
{
	return !s.n || (s.p >= p && s.p + s.n <= p + n);
}

/* One request from p[0..n): its length, or 0 to stop (error or incomplete). */
static size_t one_request(const uint8_t *p, size_t n, size_t piece)
{
	http_scan_t scan = {0};
	size_t head_n = 0, off = 0;
	size_t limit = n < LIMIT_HEADER_BYTES ? n : LIMIT_HEADER_BYTES;
	while (!head_n && off < limit) {
		size_t k = limit - off < piece ? limit - off : piece;
		head_n = http_scan_head(&scan, p + off, k);
		off += k;
	}
	if (head_n > limit)
		abort();
	if (!head_n)
		return 0;
	uint8_t *head = malloc(head_n); /* http1.c parses its own copy, in place */
	memcpy(head, p, head_n);
	http_head_t h;
	http_framing_t f;
	int status = 0;
	const char *msg = NULL;
	size_t used_total = 0;
	if (http_parse_head(head, head_n, &h, &status, &msg) < 0) {
		if (!msg || (status != 400 && status != 431 && status != 505))
			abort();
		free(head);
		return 0;
	}
	if (h.n > LIMIT_HEADER_FIELDS || !inside(h.method, head, head_n) || !inside(h.target, head, head_n))
		abort();
	for (uint32_t i = 0; i < h.n; i++)
		if (!inside(h.names[i], head, head_n) || !inside(h.values[i], head, head_n))
			abort();
	slice_t path, query;
	http_split_target(h.target, &path, &query);
	if ((!inside(path, head, head_n) && !slice_eq_cstr(path, "/")) || !inside(query, head, head_n))
		abort();
	if (http_framing_of(&h, &f, &status, &msg) < 0) {
		if (!msg || (status != 400 && status != 417 && status != 501))
			abort();
		goto out;
	}
	const uint8_t *b = p + head_n;
	size_t left = n - head_n;
	if (!f.chunked) {
		if (f.content_length > MAX_BODY || f.content_length > left)
			goto out;
		used_total = head_n + (size_t)f.content_length;
		goto out;
	}
	http_chunked_t c = {0};
	buf_t body;
	buf_init(&body, MAX_BODY);
	size_t at = 0;
	int rc = HTTP_MORE;
	while (rc == HTTP_MORE && at < left) {
		size_t k = left - at < piece ? left - at : piece, used = 0;
		rc = http_chunked_feed(&c, b + at, k, &body, MAX_BODY, &used, &msg);
		if (used > k || body.n > MAX_BODY || (rc == HTTP_BAD && !msg))
			abort();
		if (rc == HTTP_MORE && used != k)
			abort();
		at += used;
	}
	if (rc == HTTP_DONE)
		used_total = head_n + at;
	buf_free(&body);
out:
	free(h.names);
	free(head);
	return used_total;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t piece = 1 + data[0] % 64;
	if (data[0] >= 0xc0)
		piece = SIZE_MAX; /* all at once */
	const uint8_t *p = data + 1;
	size_t n = size - 1;
	for (int i = 0; i < 16 && n; i++) { /* pipelined requests */
		size_t used = one_request(p, n, piece);
		if (!used)
			break;
		p += used;
		n -= used;
	}
	return 0;
}
