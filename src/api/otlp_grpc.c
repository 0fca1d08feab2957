/* ProfilesService/Export over gRPC (SPEC S2.3): decompress and decode on a
 * worker, commit through the store writer, reply once durable. Errors map to
 * gRPC codes (S2.3) with a google.rpc.Status in grpc-status-details-bin. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "base/alloc.h"
#include "base/timeutil.h"
#include "ingest/ingest.h"
#include "wire/rpc_status.h"

typedef struct {
	api_ctx *api;
	api_caller caller;
	grpc_call *call;
	ingest_otlp_req in;
	otlp_result res;
	kn_err err;
	int failed;
} grpc_job;

static void grpc_job_reply(void *arg)
{
	grpc_job *j = arg;
	buf_t out;
	buf_init(&out, SIZE_MAX);
	api_count(j->api, LISTENER_OTLP_GRPC, j->failed ? j->err.status : 200, j->call->wire.n);
	if (j->failed) {
		int status = j->err.status ? j->err.status : 500;
		int code = grpc_code_of_http(status);
		/* RetryInfo only for what is worth retrying: rate limits (S2.3). A
		 * 413 is permanent: RESOURCE_EXHAUSTED without RetryInfo. */
		int retry = status == 429 ? (j->err.retry_after > 0 ? j->err.retry_after : 1) : 0;
		rpc_status_pb(code, j->err.msg, retry, &out);
		grpc_fail(j->call, code, j->err.msg, out.p, out.n);
	} else {
		otlp_response_pb(&j->res, &out);
		grpc_reply(j->call, out.p, out.n);
	}
	buf_free(&out);
	atomic_fetch_sub(&j->api->_inflight, 1);
	free(j);
}

static void grpc_job_stored(void *arg, const kn_err *err)
{
	grpc_job *j = arg;
	if (err) {
		j->err = *err;
		j->failed = 1;
	} else {
		api_account_reason(j->api, &j->caller, j->res.samples, USAGE_OUT_OF_WINDOW, j->res.rejected_samples);
	}
	loop_post(j->api->loop, grpc_job_reply, j);
}

static void grpc_job_work(void *arg)
{
	grpc_job *j = arg;
	model_batch *b = NULL;
	if (grpc_call_decode(j->call, &j->err) != GRPC_OK ||
	    ingest_otlp(&j->in, j->call->msg, &b, &j->res, &j->err) < 0) {
		api_account(j->api, &j->caller, 1, &j->err); /* sample count unknown: counts 1 */
		j->failed = 1;
		loop_post(j->api->loop, grpc_job_reply, j);
		return;
	}
	if (b->n_profiles == 0) {
		api_account_reason(j->api, &j->caller, 0, USAGE_OUT_OF_WINDOW, j->res.rejected_samples);
		model_batch_free(b);
		loop_post(j->api->loop, grpc_job_reply, j);
		return;
	}
	api_attribute_batch(j->api, j->call->peer, b); /* S2.1a */
	if (api_admit(j->api, &j->caller, j->res.samples, &j->err) < 0) {
		model_batch_free(b);
		j->failed = 1;
		loop_post(j->api->loop, grpc_job_reply, j);
		return;
	}
	store_submit(j->api->store, b, grpc_job_stored, j);
}

static void export_handler(grpc_call *call, void *ctx)
{
	api_listener *l = ctx;
	api_ctx *api = l->api;
	grpc_job *j = xcalloc(1, sizeof *j);
	j->api = api;
	atomic_fetch_add(&api->_inflight, 1);
	j->call = call;
	if (api_identify(l, grpc_call_header(call, "x-kiln-key"), grpc_call_header(call, "authorization"), NULL,
	                 KEY_SCOPE_INGEST, &j->caller, &j->err) < 0) {
		j->failed = 1;
		grpc_job_reply(j);
		return;
	}
	j->in = (ingest_otlp_req){
	    .project = slice_cstr(j->caller.project),
	    .max_rows = api->limits ? api->limits->max_rows : 0,
	    .retention_days = (uint32_t)api_retention_days(api, j->caller.project),
	    .now_ns = time_now_ns(),
	};
	pool_submit(api->pool, grpc_job_work, j);
}

const grpc_method api_grpc_methods[] = {
    {"/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export", export_handler},
};
const size_t api_grpc_n_methods = sizeof api_grpc_methods / sizeof *api_grpc_methods;
