/* POST /v1development/profiles (SPEC S2.2): OTLP/HTTP in protobuf or JSON.
 * Content checks before the body is read; decode on a worker; 200 only once
 * the store reports the data durable; replies and errors in the request's
 * content type (ExportProfilesServiceResponse / google.rpc.Status). */
#include <stdatomic.h>
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
	api_ctx *api;
	api_caller caller;
	http_req *req;
	int json;
	ingest_otlp_req in;
	otlp_result res;
	kn_err err;
	int failed;
} otlp_job;

/* 1 = JSON, 0 = protobuf, -1 = neither. */
static int content_kind(const http_req *r)
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
static void otlp_reply_error(http_req *r, int json, const kn_err *err)
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
	http_respond(r, status, json ? "application/json" : "application/x-protobuf", extra[0] ? extra : NULL, body.p,
	             body.n);
	buf_free(&body);
}

void api_otlp_format_error(int status, const char *msg, buf_t *body, const char **content_type, void *ctx)
{
	/* Server-generated errors (oversized body, malformed HTTP): the Collector
	 * speaks protobuf by default, so answer in protobuf. */
	rpc_status_pb(grpc_code_of_http(status), msg, 0, body);
	*content_type = "application/x-protobuf";
}

static void otlp_reply(void *arg)
{
	otlp_job *j = arg;
	api_count(j->api, LISTENER_OTLP_HTTP, j->failed ? j->err.status : 200, j->req->body.n);
	if (j->failed) {
		otlp_reply_error(j->req, j->json, &j->err);
	} else {
		buf_t body;
		buf_init(&body, SIZE_MAX);
		if (j->json)
			otlp_response_json(&j->res, &body);
		else
			otlp_response_pb(&j->res, &body);
		http_respond(j->req, 200, j->json ? "application/json" : "application/x-protobuf", NULL, body.p, body.n);
		buf_free(&body);
	}
	atomic_fetch_sub(&j->api->_inflight, 1);
	free(j);
}

static void otlp_stored(void *arg, const kn_err *err)
{
	otlp_job *j = arg;
	if (err) {
		j->err = *err;
		j->failed = 1;
	} else {
		api_account_reason(j->api, &j->caller, j->res.samples, USAGE_OUT_OF_WINDOW, j->res.rejected_samples);
	}
	loop_post(j->api->loop, otlp_reply, j);
}

static void otlp_work(void *arg)
{
	otlp_job *j = arg;
	model_batch *b = NULL;
	if (ingest_otlp(&j->in, buf_slice(&j->req->body), &b, &j->res, &j->err) < 0) {
		api_account(j->api, &j->caller, 1, &j->err); /* sample count unknown: counts 1 */
		j->failed = 1;
		loop_post(j->api->loop, otlp_reply, j);
		return;
	}
	if (b->n_profiles == 0) { /* empty request, or everything out of the window */
		api_account_reason(j->api, &j->caller, 0, USAGE_OUT_OF_WINDOW, j->res.rejected_samples);
		model_batch_free(b);
		loop_post(j->api->loop, otlp_reply, j);
		return;
	}
	api_attribute_batch(j->api, j->req->peer, b); /* S2.1a */
	if (api_admit(j->api, &j->caller, j->res.samples, &j->err) < 0) {
		model_batch_free(b);
		j->failed = 1;
		loop_post(j->api->loop, otlp_reply, j);
		return;
	}
	store_submit(j->api->store, b, otlp_stored, j);
}

int api_otlp_on_headers(http_req *r, void *ctx)
{
	api_listener *l = ctx;
	api_caller c;
	int json = content_kind(r);
	kn_err err = {0};
	if (!slice_eq_cstr(r->path, OTLP_PATH)) {
		err_set(&err, 404, "no route %.*s on the OTLP/HTTP listener: POST " OTLP_PATH,
		        (int)(r->path.n > 128 ? 128 : r->path.n), (const char *)r->path.p);
	} else if (!slice_eq_cstr(r->method, "POST")) {
		err_set(&err, 405, "method %.*s not allowed: POST an ExportProfilesServiceRequest to " OTLP_PATH,
		        (int)(r->method.n > 16 ? 16 : r->method.n), (const char *)r->method.p);
	} else if (json < 0) {
		err_set(&err, 415,
		        "unsupported Content-Type: send application/x-protobuf or application/json (OTLP/HTTP)");
	} else if (api_identify(l, http_header(r, "x-kiln-key"), http_header(r, "authorization"), NULL,
	                        KEY_SCOPE_INGEST, &c, &err) == 0) {
		return 0;
	}
	api_count(l->api, LISTENER_OTLP_HTTP, err.status, 0);
	otlp_reply_error(r, json == 1, &err);
	return 1;
}

void api_otlp_on_request(http_req *r, void *ctx)
{
	api_listener *l = ctx;
	api_ctx *api = l->api;
	otlp_job *j = xcalloc(1, sizeof *j);
	j->api = api;
	atomic_fetch_add(&api->_inflight, 1);
	j->req = r;
	j->json = content_kind(r) == 1;
	if (api_identify(l, http_header(r, "x-kiln-key"), http_header(r, "authorization"), NULL, KEY_SCOPE_INGEST,
	                 &j->caller, &j->err) < 0) {
		j->failed = 1;
		otlp_reply(j);
		return;
	}
	const slice_t *ce = http_header(r, "content-encoding");
	j->in = (ingest_otlp_req){
	    .project = slice_cstr(j->caller.project),
	    .encoding = ce ? *ce : slice_make("", 0),
	    .json = j->json,
	    .max_rows = api->limits ? api->limits->max_rows : 0,
	    .retention_days = (uint32_t)api_retention_days(api, j->caller.project),
	    .now_ns = time_now_ns(),
	};
	pool_submit(api->pool, otlp_work, j);
}
