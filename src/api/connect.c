/* Connect RPC on the upload and UI listeners, over HTTP/1.1 and h2c (API:
 * Push: push.v1.PusherService/Push (Pyroscope Connect)): the request view both
 * HTTP versions feed (api_call_t), the Connect error answer, and Pyroscope's
 * push.v1.PusherService/Push: unary, Content-Type application/proto or
 * application/json, Content-Encoding (or Connect-Content-Encoding) gzip,
 * run through the push job (ingest/push.h) with the Push decoder, so limits,
 * rate limits, usage and durability are /profiling/upload's. Success is an
 * empty PushResponse. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api.h"
#include "base/alloc.h"
#include "base/timeutil.h"
#include "wire/connect.h"

#define PUSH_SERVICE "/push.v1.PusherService/"
#define PUSH_PATH PUSH_SERVICE "Push"

/* ---- the request view ---- */

/* HTTP/1.1 and HTTP/2 requests name these fields alike. */
#define CALL_FROM(r)                                                                                         \
	(api_call_t)                                                                                         \
	{                                                                                                    \
		.method = (r)->method, .path = (r)->path, .peer = (r)->peer, .body = buf_slice(&(r)->body),  \
		.hdr_names = (r)->hdr_names, .hdr_values = (r)->hdr_values, .n_hdrs = (r)->n_hdrs            \
	}

void api_call_http(api_call_t *c, http_req_t *r)
{
	*c = CALL_FROM(r);
	c->_http = r;
}

void api_call_h2(api_call_t *c, h2_req_t *r)
{
	*c = CALL_FROM(r);
	c->_h2 = r;
}

const slice_t *api_call_header(const api_call_t *c, const char *lowercase_name)
{
	for (uint32_t i = 0; i < c->n_hdrs; i++)
		if (slice_eq_cstr(c->hdr_names[i], lowercase_name))
			return &c->hdr_values[i];
	return NULL;
}

slice_t api_media_type(const slice_t *ct)
{
	slice_t m = ct ? *ct : (slice_t){NULL, 0};
	for (size_t i = 0; i < m.n; i++)
		if (m.p[i] == ';' || m.p[i] == ' ') {
			m.n = i;
			break;
		}
	return m;
}

void api_call_respond(api_call_t *c, int status, const char *content_type, int retry_after_s,
                      const void *body, size_t n)
{
	char retry[16];
	snprintf(retry, sizeof retry, "%d", retry_after_s);
	if (c->_http) {
		char extra[48] = "";
		if (retry_after_s > 0)
			snprintf(extra, sizeof extra, "Retry-After: %s\r\n", retry);
		http_respond(c->_http, status, content_type, extra[0] ? extra : NULL, body, n);
	} else {
		h2_header_t h[2];
		size_t k = 0;
		if (content_type)
			h[k++] = (h2_header_t){"content-type", content_type};
		if (retry_after_s > 0)
			h[k++] = (h2_header_t){"retry-after", retry};
		h2_respond(c->_h2, status, h, k, body, n, NULL, 0);
	}
	c->_http = NULL;
	c->_h2 = NULL;
}

void api_connect_error(const api_listener_t *l, api_call_t *c, const err_t *err)
{
	int code = connect_code_of_status(err->status ? err->status : 500);
	int status = connect_http_status(code);
	buf_t body;
	buf_init(&body, SIZE_MAX);
	connect_error_json(code, err->msg, &body);
	api_count(l->api, l->listener, status, c->body.n);
	api_call_respond(c, status, "application/json", err->retry_after, body.p, body.n);
	buf_free(&body);
}

/* ---- push.v1.PusherService/Push ---- */

typedef struct {
	ingest_push_t push; /* first: the job's callbacks get &push */
	ingest_pyro_push_t pyro;
	const api_listener_t *l;
	api_call_t call;
} push_job_t;

int api_is_connect_path(slice_t path)
{
	size_t n = sizeof PUSH_SERVICE - 1;
	return (path.n >= n && memcmp(path.p, PUSH_SERVICE, n) == 0) || api_is_querier_path(path);
}

static int encoding_known(slice_t e)
{
	static const char *const known[] = {"identity", "gzip", "x-gzip", "zstd", "deflate"};
	if (!e.n)
		return 1;
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		if (e.n == strlen(known[i]) && strncasecmp((const char *)e.p, known[i], e.n) == 0)
			return 1;
	return 0;
}

static slice_t body_encoding(const api_call_t *c)
{
	const slice_t *e = api_call_header(c, "content-encoding");
	if (!e)
		e = api_call_header(c, "connect-content-encoding");
	return e ? *e : (slice_t){NULL, 0};
}

int api_connect_check(const api_call_t *c, int compressed, uint64_t max_body, err_t *err)
{
	if (!slice_eq_cstr(c->method, "POST"))
		return err_set(err, 405, "method %.*s not allowed: Connect unary calls are POST",
		               (int)(c->method.n > 16 ? 16 : c->method.n), (const char *)c->method.p);
	slice_t mt = api_media_type(api_call_header(c, "content-type"));
	if (!slice_eq_cstr(mt, "application/proto") && !slice_eq_cstr(mt, "application/json"))
		return err_set(err, 415,
		               "Content-Type %.*s is not supported: application/proto or application/json",
		               (int)(mt.n > 64 ? 64 : mt.n), (const char *)mt.p);
	slice_t enc = body_encoding(c);
	if (compressed && !encoding_known(enc))
		return err_set(err, 501,
		               "Content-Encoding %.*s is not supported: gzip, zstd, deflate or identity",
		               (int)(enc.n > 32 ? 32 : enc.n), (const char *)enc.p);
	if (!compressed && enc.n && !slice_eq_cstr(enc, "identity"))
		return err_set(err, 501, "Content-Encoding %.*s is not supported on queries: identity",
		               (int)(enc.n > 32 ? 32 : enc.n), (const char *)enc.p);
	const slice_t *v = api_call_header(c, "connect-protocol-version");
	if (v && !slice_eq_cstr(*v, "1"))
		return err_set(err, 400, "Connect-Protocol-Version %.*s is not supported: 1",
		               (int)(v->n > 16 ? 16 : v->n), (const char *)v->p);
	uint64_t length = api_length_value(api_call_header(c, "content-length"));
	if (length < c->body.n)
		length = c->body.n;
	if (length > max_body)
		return err_set(err, 413, "request body is %llu bytes; the limit is %llu %s",
		               (unsigned long long)length,
		               (unsigned long long)(max_body % (1u << 20) ? max_body >> 10 : max_body >> 20),
		               max_body % (1u << 20) ? "KiB" : "MiB");
	return 0;
}

/* What can be refused from the headers alone: the route, what
 * api_connect_check refuses, the caller. 0, or -1 + err. */
static int check_headers(const api_listener_t *l, const api_call_t *c, err_t *err)
{
	if (!slice_eq_cstr(c->path, PUSH_PATH))
		return err_set(err, 404,
		               "unknown method %.*s: this server implements push.v1.PusherService/Push",
		               (int)(c->path.n > 128 ? 128 : c->path.n), (const char *)c->path.p);
	if (api_connect_check(c, 1, LIMIT_BODY_BYTES, err) < 0)
		return -1;
	/* The key is checked before the body is read: a refused sender costs no upload. */
	ingest_caller_t who;
	return api_identify(l, api_call_header(c, "x-kiln-key"), api_call_header(c, "authorization"), NULL,
	                    api_call_header(c, "x-scope-orgid"), KEY_SCOPE_INGEST, &who, err);
}

/* 0: read the body; 1: answered. */
static int push_on_headers(const api_listener_t *l, api_call_t *c)
{
	if (l->listener == API_LISTENER_UI && api_is_querier_path(c->path))
		return api_querier_on_headers(l, c);
	err_t err = {0};
	if (check_headers(l, c, &err) == 0)
		return 0;
	api_connect_error(l, c, &err);
	return 1;
}

/* The request of push p (its caller known): project, row limit, now. */
static void pyro_req_init(const api_listener_t *l, const ingest_push_t *p, ingest_pyro_push_t *pp)
{
	pp->req = (ingest_pprof_req_t){
	    .project = slice_cstr(p->caller.project),
	    .max_rows = l->api->limits ? l->api->limits->max_rows : 0,
	    .now_ns = time_now_ns(),
	};
}

static void push_reply(ingest_push_t *p, const err_t *err)
{
	push_job_t *j = (push_job_t *)p;
	if (err) {
		api_connect_error(j->l, &j->call, err);
	} else {
		int json = j->pyro.json;
		api_count(j->l->api, j->l->listener, 200, j->call.body.n);
		api_call_respond(&j->call, 200, json ? "application/json" : "application/proto", 0,
		                 json ? "{}" : "", json ? 2 : 0);
	}
	free(j);
}

static void push_on_request(const api_listener_t *l, api_call_t *c)
{
	if (l->listener == API_LISTENER_UI && api_is_querier_path(c->path)) {
		api_querier_on_request(l, c);
		return;
	}
	push_job_t *j = xcalloc(1, sizeof *j);
	j->l = l;
	j->call = *c;
	j->push.ctx = &j->pyro;
	j->push.body = c->body;
	if (api_push_begin(l, &j->push, api_call_header(c, "x-kiln-key"), api_call_header(c, "authorization"),
	                   api_call_header(c, "x-scope-orgid"), c->peer, ingest_pyro_push_decode,
	                   push_reply) < 0)
		return;
	err_t err = {0};
	if (check_headers(l, c, &err) < 0) { /* on_headers passed it; a request is never run unchecked */
		ingest_push_refuse(&j->push, &err);
		return;
	}
	pyro_req_init(l, &j->push, &j->pyro);
	j->pyro.encoding = body_encoding(c);
	j->pyro.json = slice_eq_cstr(api_media_type(api_call_header(c, "content-type")), "application/json");
	ingest_push_start(&j->push);
}

/* ---- the same method as gRPC (the OTLP/gRPC listener) ---- */

typedef struct {
	ingest_push_t push; /* first: the job's callbacks get &push */
	ingest_pyro_push_t pyro;
	const api_listener_t *l;
	grpc_call_t *call;
} grpc_push_job_t;

/* Worker: the gRPC layer's decompression, then the Push decoder. */
static int grpc_push_decode(ingest_push_t *p, err_t *err)
{
	grpc_push_job_t *j = (grpc_push_job_t *)p;
	if (grpc_call_decode(j->call, err) != GRPC_OK)
		return -1;
	p->body = j->call->msg;
	return ingest_pyro_push_decode(p, err);
}

static void grpc_push_reply(ingest_push_t *p, const err_t *err)
{
	grpc_push_job_t *j = (grpc_push_job_t *)p;
	api_count(j->l->api, j->l->listener, err ? err->status : 200, j->call->wire.n);
	if (err)
		api_grpc_fail(j->call, err);
	else
		grpc_reply(j->call, "", 0); /* an empty PushResponse */
	free(j);
}

void api_grpc_push_handler(grpc_call_t *call, void *ctx)
{
	const api_listener_t *l = ctx;
	grpc_push_job_t *j = xcalloc(1, sizeof *j);
	j->l = l;
	j->call = call;
	j->push.ctx = &j->pyro;
	if (api_push_begin(l, &j->push, grpc_call_header(call, "x-kiln-key"),
	                   grpc_call_header(call, "authorization"), grpc_call_header(call, "x-scope-orgid"),
	                   call->peer, grpc_push_decode, grpc_push_reply) < 0)
		return;
	pyro_req_init(l, &j->push, &j->pyro);
	ingest_push_start(&j->push);
}

/* ---- HTTP/1.1 and HTTP/2 glue ---- */

int api_connect_on_headers(http_req_t *r, void *ctx)
{
	api_call_t c;
	api_call_http(&c, r);
	return push_on_headers(ctx, &c);
}

void api_connect_on_request(http_req_t *r, void *ctx)
{
	api_call_t c;
	api_call_http(&c, r);
	push_on_request(ctx, &c);
}

int api_h2_on_headers(h2_req_t *r, void *ctx)
{
	api_call_t c;
	api_call_h2(&c, r);
	return push_on_headers(ctx, &c);
}

/* A body past LIMIT_BODY_BYTES without a Content-Length: answered here, in
 * Connect's form, before the server's own ceiling resets the stream. */
int api_h2_on_data(h2_req_t *r, void *ctx)
{
	if (r->body.n <= LIMIT_BODY_BYTES)
		return 0;
	api_call_t c;
	api_call_h2(&c, r);
	err_t err = {0};
	err_set(&err, 413, "request body exceeds the %u MiB limit", LIMIT_BODY_BYTES >> 20);
	api_connect_error(ctx, &c, &err);
	return 1;
}

void api_h2_on_request(h2_req_t *r, void *ctx)
{
	api_call_t c;
	api_call_h2(&c, r);
	push_on_request(ctx, &c);
}
