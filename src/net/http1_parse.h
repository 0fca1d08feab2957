/* HTTP/1.1 request parsing over plain bytes, private to src/net: finding the end
 * of a request head, parsing it, deciding the body framing, and decoding a
 * chunked body. No sockets and no I/O here; http1.c feeds the bytes. */
#ifndef KILN_NET_HTTP1_PARSE_H
#define KILN_NET_HTTP1_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/limits.h"
#include "base/slice.h"

/* Finding the end of a head: state carried across calls as bytes arrive. */
typedef struct {
	size_t scanned; /* bytes seen so far */
	int st;
} http_scan_t;

/* Scans the next n bytes of a head (continuing at s->scanned). Returns the
 * length of the whole head, blank line included, once it ends within these
 * bytes; else 0. A line may end in "\r\n" or "\n". */
size_t http_scan_head(http_scan_t *s, const uint8_t *p, size_t n);

typedef struct {
	slice_t method, target;
	int minor;               /* HTTP/1.<minor> */
	slice_t *names, *values; /* one allocation: free(names) */
	uint32_t n;
} http_head_t;

/* Parses a whole head (n bytes, as measured by http_scan_head). Header names are
 * lowercased in place; slices point into p. Returns 0 (caller frees
 * h->names), or -1 with *status (400, 431, 505) and *msg (a static string). */
int http_parse_head(uint8_t *p, size_t n, http_head_t *h, int *status, const char **msg);

typedef struct {
	int chunked;
	uint64_t content_length; /* when !chunked; 0 if no body */
	int keep_alive;
	int expect_continue;
} http_framing_t;

/* Decides body framing and connection persistence from a parsed head.
 * Returns 0, or -1 with *status (400, 417, 501) and a static *msg. */
int http_framing_of(const http_head_t *h, http_framing_t *f, int *status, const char **msg);

/* Splits a target into path and query (absolute-form loses scheme and host). */
void http_split_target(slice_t target, slice_t *path, slice_t *query);

/* Chunked body decoder: state carried across calls. Zero-initialise. */
typedef struct {
	int st;
	uint64_t left;     /* chunk size being parsed, then bytes left in the chunk */
	uint32_t line;     /* bytes in the current chunk-size line */
	uint32_t trailers; /* bytes of trailer fields so far */
} http_chunked_t;

enum { HTTP_MORE = 0, HTTP_DONE = 1, HTTP_BAD = -1, HTTP_TOO_BIG = -2 };

/* Decodes n bytes, appending chunk data to body. *used = bytes consumed: on
 * HTTP_DONE it stops right after the body, so what follows is the next request.
 * HTTP_TOO_BIG when a chunk would take body past max_body (nothing of that chunk
 * is appended); HTTP_BAD with a static *msg on a syntax error. */
int http_chunked_feed(http_chunked_t *c, const uint8_t *p, size_t n, buf_t *body, size_t max_body,
                      size_t *used, const char **msg);

#endif
