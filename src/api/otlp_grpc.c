/* ProfilesService/Export over gRPC (API: Push: OTLP profiles over gRPC): the push job (ingest/push.h)
 * with the gRPC decoder (decompress, then OTLP) on a worker, commit through
 * the store writer, reply once durable. Errors map to
 * gRPC codes (API: Push: OTLP profiles over gRPC) with a google.rpc.Status in grpc-status-details-bin. */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/alloc.h"
#include "base/timeutil.h"
#include "ingest/ingest.h"
#include "wire/rpc_status.h"

typedef struct {
	ingest_push_t push; /* first: the job's callbacks get &push */
	api_grpc_push_t grpc;
	api_ctx_t *api;
} grpc_job_t;

int api_grpc_decode(ingest_push_t *p, err_t *err)
{
	api_grpc_push_t *g = p->ctx;
	if (grpc_call_decode(g->call, err) != GRPC_OK)
		return -1;
	p->body = g->call->msg;
	return ingest_otlp_decode(p, err);
}

void api_grpc_fail(grpc_call_t *call, const err_t *err)
{
	int status = err->status ? err->status : 500;
	int code = grpc_code_of_http(status);
	/* RetryInfo only for what is worth retrying: rate limits (API: Push: OTLP profiles over
	 * gRPC). A 413 is permanent: RESOURCE_EXHAUSTED without RetryInfo. */
	int retry = status == 429 ? (err->retry_after > 0 ? err->retry_after : 1) : 0;
	buf_t out;
	buf_init(&out, SIZE_MAX);
	rpc_status_pb(code, err->msg, retry, &out);
	grpc_fail(call, code, err->msg, out.p, out.n);
	buf_free(&out);
}

static void grpc_job_reply(ingest_push_t *p, const err_t *err)
{
	grpc_job_t *j = (grpc_job_t *)p;
	grpc_call_t *call = j->grpc.call;
	api_count(j->api, API_LISTENER_OTLP_GRPC, err ? err->status : 200, call->wire.n);
	if (err) {
		api_grpc_fail(call, err);
	} else {
		buf_t out;
		buf_init(&out, SIZE_MAX);
		otlp_response_pb(&j->grpc.otlp.res, &out);
		grpc_reply(call, out.p, out.n);
		buf_free(&out);
	}
	free(j);
}

static void export_handler(grpc_call_t *call, void *ctx)
{
	api_listener_t *l = ctx;
	api_ctx_t *api = l->api;
	grpc_job_t *j = xcalloc(1, sizeof *j);
	j->api = api;
	j->grpc.call = call;
	j->push.ctx = &j->grpc;
	if (api_push_begin(l, &j->push, grpc_call_header(call, "x-kiln-key"),
	                   grpc_call_header(call, "authorization"), grpc_call_header(call, "x-scope-orgid"),
	                   call->peer, api_grpc_decode, grpc_job_reply) < 0)
		return;
	j->grpc.otlp.req = (ingest_otlp_req_t){
	    .project = slice_cstr(j->push.caller.project),
	    .max_rows = api->limits ? api->limits->max_rows : 0,
	    .retention_days = (uint32_t)api_retention_days(api, j->push.caller.project),
	    .now_ns = time_now_ns(),
	};
	ingest_push_start(&j->push);
}

const grpc_method_t api_grpc_methods[] = {
    {"/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export", export_handler},
    {"/push.v1.PusherService/Push", api_grpc_push_handler},
};
const size_t api_grpc_n_methods = sizeof api_grpc_methods / sizeof *api_grpc_methods;
