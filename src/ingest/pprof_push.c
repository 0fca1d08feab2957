/* The pprof push path (API: Push: POST /profiling/upload): body → bounded
 * gunzip → pprof decode → one profile per sample type, at `from` or at
 * receive time, with the request's profile name as series label __name__
 * (API: Profile names; for Pyroscope's /ingest one derived from the sample
 * types when none is given); and the push job's pprof decoder, which adds the
 * window of `from` (API: Frames). Does not talk to the store or the network. */
#include "ingest/ingest.h"

#include <stdlib.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/limits.h"
#include "base/timeutil.h"
#include "ingest/push.h"
#include "wire/compress.h"
#include "wire/pprof.h"

/* API: Profile names: the name is the series label __name__, whatever the labels say. */
int ingest_series_labels(const ingest_pprof_req_t *r, model_label_t **out, uint32_t *n, err_t *err)
{
	*out = NULL;
	*n = 0;
	if (r->profile_name.n && !model_profile_name_valid(r->profile_name))
		return err_set(err, 400, "profile name \"%.*s\" is not 1 to %d bytes of [a-z0-9_.-]",
		               (int)(r->profile_name.n > 64 ? 64 : r->profile_name.n),
		               (const char *)r->profile_name.p, LIMIT_PROFILE_NAME_BYTES);
	model_label_t *labels = xmalloc(((size_t)r->n_labels + 1) * sizeof *labels);
	uint32_t k = 0;
	for (uint32_t i = 0; i < r->n_labels; i++)
		if (!slice_eq_cstr(r->labels[i].key, MODEL_PROFILE_NAME_KEY))
			labels[k++] = r->labels[i];
	if (r->profile_name.n)
		labels[k++] = (model_label_t){slice_cstr(MODEL_PROFILE_NAME_KEY), r->profile_name};
	*out = labels;
	*n = k;
	return 0;
}

int ingest_pprof_append(const ingest_pprof_req_t *r, slice_t body, size_t max_decoded, model_batch_t *b,
                        size_t *decoded, err_t *err)
{
	buf_t plain;
	buf_init(&plain, max_decoded);
	model_label_t *labels = NULL;
	uint32_t n_labels = 0;
	slice_t data;
	int rc = -1;
	if (ingest_gunzip(body, r->content_gzip, &plain, &data, err) < 0)
		goto out;
	if (data.n > max_decoded) {
		err_set(err, 413, "the profile is %zu bytes; the limit is %zu", data.n, max_decoded);
		goto out;
	}
	if (data.n == 0) {
		err_set(err, 400, "empty profile: the decompressed body is empty");
		goto out;
	}
	*decoded = data.n;
	ingest_pprof_req_t named = *r;
	if (!r->profile_name.n && r->pyro_derive_name) {
		slice_t types[LIMIT_SAMPLE_TYPES];
		uint32_t n = pprof_sample_types(data, types, LIMIT_SAMPLE_TYPES);
		named.profile_name = pyro_stc_profile_name(r->pyro_config, types, n);
	}
	if (ingest_series_labels(&named, &labels, &n_labels, err) < 0)
		goto out;
	pprof_decode_opts_t o = {
	    .service = r->service,
	    .labels = labels,
	    .n_labels = n_labels,
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
	free(labels);
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

int ingest_gunzip(slice_t body, int content_gzip, buf_t *plain, slice_t *data, err_t *err)
{
	*data = body;
	if (gz_is_gzip(body)) {
		if (gz_inflate(body, plain, err) < 0)
			return -1;
		*data = buf_slice(plain);
	} else if (content_gzip) {
		return err_set(
		    err, 400, "Content-Encoding: gzip but the body does not start with the gzip magic bytes");
	}
	return 0;
}

int ingest_pprof_decode(ingest_push_t *p, err_t *err)
{
	ingest_pprof_push_t *pp = p->ctx;
	if (ingest_pprof(&pp->req, p->body, &p->batch, &pp->res, err) < 0)
		return -1;
	return ingest_push_window(p, pp, err);
}

int ingest_push_window(ingest_push_t *p, const ingest_pprof_push_t *pp, err_t *err)
{
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
