/* The pprof push path (API: Push: POST /profiling/upload): body → bounded gunzip → pprof decode →
 * one profile per sample type, at `from` or at receive time; and the push
 * job's pprof decoder, which adds the window of `from` (API: Frames). Does not talk
 * to the store or the network. */
#include "ingest/ingest.h"

#include "base/buf.h"
#include "base/limits.h"
#include "base/timeutil.h"
#include "ingest/push.h"
#include "wire/compress.h"
#include "wire/pprof.h"

int ingest_pprof_append(const ingest_pprof_req_t *r, slice_t body, size_t max_decoded, model_batch_t *b,
                        size_t *decoded, err_t *err)
{
	buf_t plain;
	buf_init(&plain, max_decoded);
	slice_t data = body;
	int rc = -1;
	if (gz_is_gzip(body)) {
		if (gz_inflate(body, &plain, err) < 0)
			goto out;
		data = buf_slice(&plain);
	} else if (r->content_gzip) {
		err_set(err, 400,
		        "Content-Encoding: gzip but the body does not start with the gzip magic bytes");
		goto out;
	} else if (body.n > max_decoded) {
		err_set(err, 413, "the profile is %zu bytes; the limit is %zu", body.n, max_decoded);
		goto out;
	}
	if (data.n == 0) {
		err_set(err, 400, "empty profile: the decompressed body is empty");
		goto out;
	}
	*decoded = data.n;

	pprof_decode_opts_t o = {
	    .service = r->service,
	    .labels = r->labels,
	    .n_labels = r->n_labels,
	    .time_ns = r->from_ns,
	    .duration_ns = (r->from_ns && r->until_ns > r->from_ns) ? r->until_ns - r->from_ns : 0,
	    .now_ns = r->now_ns,
	    .max_rows = r->max_rows ? r->max_rows : LIMIT_SAMPLE_ROWS,
	};
	/* Without `from`, the profile is stored at receive time (API: Push: POST /profiling/upload) so an old
	 * pprof file can be uploaded and looked at. */
	if (!o.time_ns)
		o.time_ns = r->now_ns;
	rc = pprof_decode(data, &o, b, err);
out:
	buf_free(&plain);
	return rc;
}

int ingest_pprof(const ingest_pprof_req_t *r, slice_t body, model_batch_t **out, ingest_result_t *res,
                 err_t *err)
{
	*out = NULL;
	if (body.n == 0)
		return err_set(err, 400,
		               "empty body: send a pprof profile (raw or gzip) as the request body");
	if (body.n > LIMIT_BODY_BYTES)
		return err_set(err, 413, "request body is %zu bytes; the limit is %u MiB", body.n,
		               LIMIT_BODY_BYTES >> 20);
	model_batch_t *b = model_batch_new(r->project);
	size_t decoded;
	if (ingest_pprof_append(r, body, LIMIT_DECODED_BYTES, b, &decoded, err) < 0) {
		model_batch_free(b);
		return -1;
	}
	res->profiles = b->n_profiles;
	res->samples = 0;
	for (uint32_t i = 0; i < b->n_profiles; i++)
		res->samples += b->profiles[i].samples_count;
	*out = b;
	return 0;
}

int ingest_pprof_decode(ingest_push_t *p, err_t *err)
{
	ingest_pprof_push_t *pp = p->ctx;
	if (ingest_pprof(&pp->req, p->body, &p->batch, &pp->res, err) < 0)
		return -1;
	p->samples = pp->res.samples;
	if (!pp->retention_days)
		return 0;
	/* API: Frames: a profile placed outside the retention window is refused whole. */
	int64_t now = pp->req.now_ns, t = pp->req.from_ns ? pp->req.from_ns : now;
	if (t >= now - pp->retention_days * NS_PER_DAY && t <= now + INGEST_FUTURE_NS)
		return 0;
	p->rejected = pp->res.samples;
	p->reason = USAGE_OUT_OF_WINDOW;
	return err_set(
	    err, 400,
	    "from=%lld is outside the window Kiln stores: the last %d days (the project's retention) up "
	    "to 10 minutes from now",
	    (long long)(t / NS_PER_SEC), pp->retention_days);
}
