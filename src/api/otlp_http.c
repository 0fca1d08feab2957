/* POST /v1development/profiles (API: Push: OTLP profiles over HTTP): OTLP/HTTP in protobuf or JSON.
 * Content checks before the body is read; then the push job (ingest/push.h)
 * with the OTLP decoder; 200 only once the store reports the data durable; replies and errors in the
 * request's content type (ExportProfilesServiceResponse / google.rpc.Status). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/alloc.h"
#include "base/timeutil.h"
#include "ingest/ingest.h"
#include "wire/rpc_status.h"

#define OTLP_PATH "/v1development/profiles"

typedef struct {
	ingest_push_t push; /* first: the job's callbacks get &push */
	ingest_otlp_push_t otlp;
	api_ctx_t *api;
	http_req_t *req;
	int json;
} otlp_job_t;

/* 1 = JSON, 0 = protobuf, -1 = neither. */
static int content_kind(const http_req_t *r)
{
	const slice_t *ct = http_header(r, "content-type");
	if (!ct)
		return -1;
	slice_t t = *ct;
	size_t n = 0;
	while (n < t.n && t.p[n] != ';' && t.p[n] != ' ')
		n++;
	t.n = n;
	if (slice_eq_cstr(t, "application/x-protobuf") || slice_eq_cstr(t, "application/protobuf"))
		return 0;
	if (slice_eq_cstr(t, "application/json"))
		return 1;
	return -1;
}

/* google.rpc.Status in the request's content type, with Retry-After for 429/503. */
static void otlp_reply_error(http_req_t *r, int json, const err_t *err)
{
	buf_t body;
	buf_init(&body, SIZE_MAX);
	int status = err->status ? err->status : 500;
	int code = grpc_code_of_http(status);
	int retry = (status == 429 || status == 503) ? (err->retry_after > 0 ? err->retry_after : 1) : 0;
	if (json)
		rpc_status_json(code, err->msg, retry, &body);
	else
		rpc_status_pb(code, err->msg, retry, &body);
	char extra[64] = "";
	if (retry)
		snprintf(extra, sizeof extra, "Retry-After: %d\r\n", retry);
	http_respond(r, status, json ? "application/json" : "application/x-protobuf", extra[0] ? extra : NULL,
	             body.p, body.n);
	buf_free(&body);
}

void api_otlp_format_error(int status, const char *msg, buf_t *body, const char **content_type, void *ctx)
{
	/* Server-generated errors (oversized body, malformed HTTP): the Collector
	 * speaks protobuf by default, so answer in protobuf. */
	rpc_status_pb(grpc_code_of_http(status), msg, 0, body);
	*content_type = "application/x-protobuf";
}

static void otlp_reply(ingest_push_t *p, const err_t *err)
{
	otlp_job_t *j = (otlp_job_t *)p;
	api_count(j->api, API_LISTENER_OTLP_HTTP, err ? err->status : 200, j->req->body.n);
	if (err) {
		otlp_reply_error(j->req, j->json, err);
	} else {
		buf_t body;
		buf_init(&body, SIZE_MAX);
		if (j->json)
			otlp_response_json(&j->otlp.res, &body);
		else
			otlp_response_pb(&j->otlp.res, &body);
		http_respond(j->req, 200, j->json ? "application/json" : "application/x-protobuf", NULL,
		             body.p, body.n);
		buf_free(&body);
	}
	free(j);
}

int api_otlp_on_headers(http_req_t *r, void *ctx)
{
	api_listener_t *l = ctx;
	ingest_caller_t c;
	int json = content_kind(r);
	err_t err = {0};
	if (!slice_eq_cstr(r->path, OTLP_PATH)) {
		err_set(&err, 404, "no route %.*s on the OTLP/HTTP listener: POST " OTLP_PATH,
		        (int)(r->path.n > 128 ? 128 : r->path.n), (const char *)r->path.p);
	} else if (!slice_eq_cstr(r->method, "POST")) {
		err_set(&err, 405,
		        "method %.*s not allowed: POST an ExportProfilesServiceRequest to " OTLP_PATH,
		        (int)(r->method.n > 16 ? 16 : r->method.n), (const char *)r->method.p);
	} else if (json < 0) {
		err_set(
		    &err, 415,
		    "unsupported Content-Type: send application/x-protobuf or application/json (OTLP/HTTP)");
	} else if (api_identify(l, http_header(r, "x-kiln-key"), http_header(r, "authorization"), NULL,
	                        http_header(r, "x-scope-orgid"), KEY_SCOPE_INGEST, &c, &err) == 0) {
		return 0;
	}
	api_count(l->api, API_LISTENER_OTLP_HTTP, err.status, 0);
	otlp_reply_error(r, json == 1, &err);
	return 1;
}

void api_otlp_on_request(http_req_t *r, void *ctx)
{
	api_listener_t *l = ctx;
	api_ctx_t *api = l->api;
	otlp_job_t *j = xcalloc(1, sizeof *j);
	j->api = api;
	j->req = r;
	j->json = content_kind(r) == 1;
	j->push.ctx = &j->otlp;
	j->push.body = buf_slice(&r->body);
	if (api_push_begin(l, &j->push, http_header(r, "x-kiln-key"), http_header(r, "authorization"),
	                   http_header(r, "x-scope-orgid"), r->peer, ingest_otlp_decode, otlp_reply) < 0)
		return;
	const slice_t *ce = http_header(r, "content-encoding");
	j->otlp.req = (ingest_otlp_req_t){
	    .project = slice_cstr(j->push.caller.project),
	    .encoding = ce ? *ce : slice_make("", 0),
	    .json = j->json,
	    .max_rows = api->limits ? api->limits->max_rows : 0,
	    .retention_days = (uint32_t)api_retention_days(api, j->push.caller.project),
	    .now_ns = time_now_ns(),
	};
	ingest_push_start(&j->push);
}
