/* The OTLP push path (API: Push: OTLP profiles over HTTP, over gRPC): body → bounded decompression →
 * (OTLP/JSON → protobuf) → OTLP decode into a batch, with the time window of
 * API: Frames, and the push job's OTLP decoder. Shared by the HTTP and gRPC
 * listeners; knows neither. */
#include <string.h>

#include "base/buf.h"
#include "base/limits.h"
#include "ingest/ingest.h"
#include "ingest/push.h"
#include "wire/compress.h"

int ingest_otlp(const ingest_otlp_req_t *r, slice_t body, model_batch_t **out, otlp_result_t *res, err_t *err)
{
	*out = NULL;
	memset(res, 0, sizeof *res);
	if (body.n > LIMIT_BODY_BYTES)
		return err_set(err, 413, "request body is %zu bytes; the limit is %u MiB", body.n,
		               LIMIT_BODY_BYTES >> 20);
	buf_t plain, pb;
	buf_init(&plain, LIMIT_DECODED_BYTES);
	buf_init(&pb, LIMIT_DECODED_BYTES);
	model_batch_t *b = NULL;
	slice_t data = body;
	if (r->encoding.n && !slice_eq_cstr(r->encoding, "identity")) {
		if (body_decode(r->encoding, body, &plain, err) < 0)
			goto fail;
		data = buf_slice(&plain);
	}
	if (r->json) {
		if (data.n == 0) {
			err_set(err, 400,
			        "empty JSON body: send an ExportProfilesServiceRequest object ({} is an "
			        "empty request)");
			goto fail;
		}
		if (otlp_json_to_pb(data, &pb, err) < 0)
			goto fail;
		data = buf_slice(&pb);
	}
	otlp_decode_opts_t o = {
	    .project = r->project,
	    .now_ns = r->now_ns,
	    .min_time_ns = r->now_ns - (r->retention_days ? r->retention_days * 86400LL * 1000000000LL
	                                                  : INGEST_RETENTION_NS),
	    .max_time_ns = r->now_ns + INGEST_FUTURE_NS,
	    .max_rows = r->max_rows ? r->max_rows : LIMIT_SAMPLE_ROWS,
	    .retention_days = r->retention_days ? r->retention_days
	                                        : (uint32_t)(INGEST_RETENTION_NS / (86400 * 1000000000LL)),
	};
	b = model_batch_new(r->project);
	if (otlp_decode(data, &o, b, res, err) < 0)
		goto fail;
	buf_free(&plain);
	buf_free(&pb);
	*out = b;
	return 0;
fail:
	model_batch_free(b);
	buf_free(&plain);
	buf_free(&pb);
	return -1;
}

int ingest_otlp_decode(ingest_push_t *p, err_t *err)
{
	ingest_otlp_push_t *op = p->ctx;
	if (ingest_otlp(&op->req, p->body, &p->batch, &op->res, err) < 0)
		return -1;
	p->samples = op->res.samples;
	p->rejected = op->res.rejected_samples; /* partial success: counted with the accepted ones */
	p->reason = USAGE_OUT_OF_WINDOW;
	return 0;
}
