/* Unary gRPC on the HTTP/2 server (grpc.h): checks a call's headers before
 * its body, watches the message prefix as DATA arrives, decompresses on
 * request (gzip and zstd via wire/compress, bounded) and writes replies. */
#include "net/grpc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "wire/compress.h"

#define PREFIX_BYTES 5u
#define MAX_MSG_CHARS 2048u /* grpc-message text before encoding */
#define ACCEPT_ENCODINGS "identity,gzip,zstd"

struct grpc_server {
	h2_server_t *h2;
	grpc_opts_t o;
	grpc_method_t *methods;
};

static const char *const ctype_hdr = "application/grpc";

/* ---- helpers ---- */

/* "32 MiB" or "1000 bytes". */
static void format_limit(size_t n, char *out, size_t cap)
{
	if (n >= (1u << 20) && n % (1u << 20) == 0)
		snprintf(out, cap, "%zu MiB", n >> 20);
	else
		snprintf(out, cap, "%zu bytes", n);
}

void grpc_percent_encode(slice_t in, buf_t *out)
{
	static const char hex[] = "0123456789ABCDEF";
	for (size_t i = 0; i < in.n; i++) {
		uint8_t b = in.p[i];
		if (b >= 0x20 && b <= 0x7e && b != '%') {
			buf_putc(out, b);
		} else {
			char e[3] = {'%', hex[b >> 4], hex[b & 15]};
			buf_append(out, e, 3);
		}
	}
}

/* A trailers-only answer: :status http_status, grpc-status, grpc-message,
 * grpc-status-details-bin, and one optional extra header. Frees r. */
static void respond_status(h2_req_t *r, int http_status, int code, const char *message, const void *details,
                           size_t n, const h2_header_t *extra)
{
	char code_s[12];
	snprintf(code_s, sizeof code_s, "%d", code);
	h2_header_t h[5];
	size_t k = 0;
	h[k++] = (h2_header_t){"content-type", ctype_hdr};
	h[k++] = (h2_header_t){"grpc-status", code_s};
	buf_t msg, b64;
	buf_init(&msg, SIZE_MAX);
	buf_init(&b64, SIZE_MAX);
	if (message && *message) {
		size_t len = strlen(message);
		grpc_percent_encode(slice_make(message, len < MAX_MSG_CHARS ? len : MAX_MSG_CHARS), &msg);
		buf_putc(&msg, 0);
		h[k++] = (h2_header_t){"grpc-message", (const char *)msg.p};
	}
	if (details && n) {
		buf_reserve(&b64, 4 * ((n + 2) / 3) + 1);
		int len = EVP_EncodeBlock(b64.p, details, (int)n);
		while (len > 0 && b64.p[len - 1] == '=')
			len--; /* gRPC's -bin headers are unpadded */
		b64.p[len] = 0;
		h[k++] = (h2_header_t){"grpc-status-details-bin", (const char *)b64.p};
	}
	if (extra)
		h[k++] = *extra;
	h2_respond(r, http_status, h, k, NULL, 0, NULL, 0);
	buf_free(&msg);
	buf_free(&b64);
}

static void fail_req(h2_req_t *r, int code, const char *message)
{
	respond_status(r, 200, code, message, NULL, 0, NULL);
}

static const grpc_method_t *find_method(const grpc_server_t *s, slice_t path)
{
	for (size_t i = 0; i < s->o.n_methods; i++)
		if (slice_eq_cstr(path, s->methods[i].path))
			return &s->methods[i];
	return NULL;
}

/* application/grpc or application/grpc+proto, parameters allowed. */
static int grpc_content_type(const slice_t *ct)
{
	if (!ct)
		return 0;
	size_t n = ct->n;
	for (size_t i = 0; i < ct->n; i++)
		if (ct->p[i] == ';') {
			n = i;
			break;
		}
	while (n && (ct->p[n - 1] == ' ' || ct->p[n - 1] == '\t'))
		n--;
	slice_t base = slice_make(ct->p, n);
	return slice_eq_cstr(base, "application/grpc") || slice_eq_cstr(base, "application/grpc+proto");
}

/* "identity" also for an absent header; NULL slice pointer if unsupported. */
static int encoding_known(const slice_t *e)
{
	return !e || slice_eq_cstr(*e, "identity") || slice_eq_cstr(*e, "gzip") || slice_eq_cstr(*e, "zstd");
}

static uint32_t prefix_len(const uint8_t *p)
{
	return (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
}

/* grpc-timeout: 1 to 8 digits and a unit (H M S m u n); 0 if absent or bad. */
static int64_t deadline_of(const slice_t *t)
{
	if (!t || t->n < 2 || t->n > 9)
		return 0;
	uint64_t v = 0;
	for (size_t i = 0; i + 1 < t->n; i++) {
		if (t->p[i] < '0' || t->p[i] > '9')
			return 0;
		v = v * 10 + (t->p[i] - '0');
	}
	double ms;
	switch (t->p[t->n - 1]) {
	case 'H':
		ms = (double)v * 3600e3;
		break;
	case 'M':
		ms = (double)v * 60e3;
		break;
	case 'S':
		ms = (double)v * 1e3;
		break;
	case 'm':
		ms = (double)v;
		break;
	case 'u':
		ms = (double)v / 1e3;
		break;
	case 'n':
		ms = (double)v / 1e6;
		break;
	default:
		return 0;
	}
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + (int64_t)ms + 1;
}

/* ---- the h2 callbacks ---- */

static int on_headers(h2_req_t *r, void *ctx)
{
	grpc_server_t *s = ctx;
	char m[MAX_MSG_CHARS + 128];
	if (!slice_eq_cstr(r->method, "POST")) {
		snprintf(m, sizeof m, "gRPC calls use POST, not %.*s",
		         (int)(r->method.n < 16 ? r->method.n : 16), (const char *)r->method.p);
		respond_status(r, 405, GRPC_UNIMPLEMENTED, m, NULL, 0, NULL);
		return 1;
	}
	const slice_t *ct = h2_header_get(r, "content-type");
	if (!grpc_content_type(ct)) {
		snprintf(m, sizeof m, "content-type \"%.*s\" is not application/grpc",
		         (int)(ct ? (ct->n < 64 ? ct->n : 64) : 0), ct ? (const char *)ct->p : "");
		respond_status(r, 415, GRPC_INVALID_ARGUMENT, m, NULL, 0, NULL);
		return 1;
	}
	if (!find_method(s, r->path)) {
		snprintf(m, sizeof m, "unknown method %.*s", (int)(r->path.n < 256 ? r->path.n : 256),
		         (const char *)r->path.p);
		fail_req(r, GRPC_UNIMPLEMENTED, m);
		return 1;
	}
	const slice_t *enc = h2_header_get(r, "grpc-encoding");
	if (!encoding_known(enc)) {
		snprintf(m, sizeof m, "grpc-encoding \"%.*s\" is not supported; use identity, gzip or zstd",
		         (int)(enc->n < 64 ? enc->n : 64), (const char *)enc->p);
		h2_header_t accept = {"grpc-accept-encoding", ACCEPT_ENCODINGS};
		respond_status(r, 200, GRPC_UNIMPLEMENTED, m, NULL, 0, &accept);
		return 1;
	}
	return 0;
}

int grpc_frame_check(slice_t body, int complete, size_t max, grpc_frame_t *f, char *m, size_t cap)
{
	*f = (grpc_frame_t){0};
	if (body.n < PREFIX_BYTES) {
		if (!complete)
			return GRPC_OK;
		snprintf(m, cap, "the request has %zu bytes; a gRPC message needs a 5-byte prefix", body.n);
		return GRPC_INVALID_ARGUMENT;
	}
	uint8_t flag = body.p[0];
	uint32_t len = prefix_len(body.p);
	f->len = len;
	if (len > max) {
		char lim[32];
		format_limit(max, lim, sizeof lim);
		snprintf(m, cap, "grpc message is %" PRIu32 " bytes; the limit is %s", len, lim);
		return GRPC_RESOURCE_EXHAUSTED;
	}
	if (body.n > PREFIX_BYTES + (size_t)len) {
		snprintf(m, cap, "a unary call carries one message; more data followed it");
		return GRPC_INVALID_ARGUMENT;
	}
	if (!complete)
		return GRPC_OK;
	if (body.n != PREFIX_BYTES + (size_t)len) {
		snprintf(m, cap, "grpc message truncated: its prefix says %" PRIu32 " bytes, %zu arrived", len,
		         body.n - PREFIX_BYTES);
		return GRPC_INVALID_ARGUMENT;
	}
	if (flag > 1) {
		snprintf(m, cap, "grpc message compressed-flag is %u; only 0 and 1 exist", flag);
		return GRPC_INVALID_ARGUMENT;
	}
	f->compressed = flag;
	f->msg = slice_make(body.p + PREFIX_BYTES, len);
	f->whole = 1;
	return GRPC_OK;
}

/* Checks the prefix as soon as it is there: a message over the limit is
 * refused before the rest arrives, and a second message is refused at once. */
static int on_data(h2_req_t *r, void *ctx)
{
	grpc_server_t *s = ctx;
	grpc_frame_t f;
	char m[160];
	int code = grpc_frame_check(buf_slice(&r->body), 0, s->o.max_message, &f, m, sizeof m);
	if (code != GRPC_OK) {
		fail_req(r, code, m);
		return 1;
	}
	size_t len = f.len;
	if (r->body.n >= PREFIX_BYTES && r->body.cap < PREFIX_BYTES + len)
		buf_reserve(&r->body, PREFIX_BYTES + len - r->body.n); /* one allocation, not doublings */
	return 0;
}

static void on_request(h2_req_t *r, void *ctx)
{
	grpc_server_t *s = ctx;
	char m[160];
	grpc_frame_t f;
	int code = grpc_frame_check(buf_slice(&r->body), 1, s->o.max_message, &f, m, sizeof m);
	if (code != GRPC_OK) {
		fail_req(r, code, m);
		return;
	}
	const slice_t *enc = h2_header_get(r, "grpc-encoding");
	if (f.compressed && (!enc || slice_eq_cstr(*enc, "identity"))) {
		fail_req(r, GRPC_INTERNAL,
		         "grpc message is marked compressed but grpc-encoding names no compression");
		return;
	}
	grpc_call_t *c = xcalloc(1, sizeof *c);
	c->_req = r;
	c->_max = s->o.max_message;
	buf_init(&c->_inflated, s->o.max_message);
	c->method = r->path;
	c->peer = r->peer;
	c->encoding = enc ? *enc : slice_cstr("identity");
	c->compressed = f.compressed;
	c->wire = f.msg;
	c->msg = f.compressed ? slice_make(NULL, 0) : c->wire;
	c->deadline_ms = deadline_of(h2_header_get(r, "grpc-timeout"));
	r->user = c;
	find_method(s, r->path)->handler(c, s->o.ctx);
}

/* ---- decoding ---- */

int grpc_call_decode(grpc_call_t *c, err_t *err)
{
	if (!c->compressed || c->msg.p)
		return GRPC_OK;
	buf_reset(&c->_inflated);
	err_t e = {0};
	int rc = slice_eq_cstr(c->encoding, "gzip") ? gz_inflate(c->wire, &c->_inflated, &e)
	                                            : zstd_inflate(c->wire, &c->_inflated, &e);
	if (rc == 0) {
		c->msg = buf_slice(&c->_inflated);
		if (!c->msg.p)
			c->msg = slice_make("", 0);
		return GRPC_OK;
	}
	if (e.status == 413) {
		char lim[32];
		format_limit(c->_max, lim, sizeof lim);
		err_set(err, 413, "grpc message decompresses to more than %s; the limit is %s", lim, lim);
		return GRPC_RESOURCE_EXHAUSTED;
	}
	err_set(err, 400, "grpc message (grpc-encoding %.*s): %s", (int)c->encoding.n,
	        (const char *)c->encoding.p, e.msg);
	return GRPC_INVALID_ARGUMENT;
}

/* ---- replies ---- */

static void call_free(grpc_call_t *c)
{
	buf_free(&c->_inflated);
	free(c);
}

const slice_t *grpc_call_header(const grpc_call_t *c, const char *lowercase_name)
{
	return h2_header_get(c->_req, lowercase_name);
}

void grpc_reply(grpc_call_t *c, const void *msg, size_t n)
{
	uint8_t *framed = xmalloc(PREFIX_BYTES + n);
	framed[0] = 0;
	framed[1] = (uint8_t)(n >> 24);
	framed[2] = (uint8_t)(n >> 16);
	framed[3] = (uint8_t)(n >> 8);
	framed[4] = (uint8_t)n;
	if (n)
		memcpy(framed + PREFIX_BYTES, msg, n);
	h2_header_t h[] = {{"content-type", ctype_hdr}};
	h2_header_t t[] = {{"grpc-status", "0"}};
	h2_respond(c->_req, 200, h, 1, framed, PREFIX_BYTES + n, t, 1);
	free(framed);
	call_free(c);
}

void grpc_fail(grpc_call_t *c, int code, const char *message, const void *details, size_t n)
{
	respond_status(c->_req, 200, code, message, details, n, NULL);
	call_free(c);
}

/* ---- the server ---- */

grpc_server_t *grpc_server_new(struct event_base *base, const char *addr, const grpc_opts_t *o, err_t *err)
{
	grpc_server_t *s = xcalloc(1, sizeof *s);
	s->o = *o;
	if (!s->o.max_message)
		s->o.max_message = LIMIT_DECODED_BYTES;
	s->methods = xcalloc(o->n_methods + 1, sizeof *s->methods);
	if (o->n_methods)
		memcpy(s->methods, o->methods, o->n_methods * sizeof *s->methods);
	h2_opts_t h = o->h2;
	h.name = h.name ? h.name : "grpc";
	h.max_body =
	    s->o.max_message + PREFIX_BYTES + (64u << 10); /* a DATA frame past the prefix's length */
	h.on_headers = on_headers;
	h.on_data = on_data;
	h.on_request = on_request;
	h.ctx = s;
	s->h2 = h2_server_new(base, addr, &h, err);
	if (!s->h2) {
		free(s->methods);
		free(s);
		return NULL;
	}
	return s;
}

int grpc_server_port(const grpc_server_t *s)
{
	return h2_server_port(s->h2);
}

uint32_t grpc_server_conns(const grpc_server_t *s)
{
	return h2_server_conns(s->h2);
}

void grpc_server_stop_accepting(grpc_server_t *s)
{
	h2_server_stop_accepting(s->h2);
}

void grpc_server_free(grpc_server_t *s)
{
	if (!s)
		return;
	h2_server_free(s->h2);
	free(s->methods);
	free(s);
}
