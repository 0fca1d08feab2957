/* The push job's decoder for Pyroscope's push.v1 Push (API: Push:
 * push.v1.PusherService/Push (Pyroscope Connect)): body decoding, the
 * PushRequest (wire/pyroscope_push.h), and every raw pprof into one batch
 * (push.h). Does not talk to the store or the network. */
#include <stdlib.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "ingest/push.h"
#include "wire/compress.h"
#include "wire/pyroscope_push.h"

/* The raw profiles of req into b; res counts them. */
static int decode_all(ingest_pyro_push_t *pp, const pyro_push_t *req, model_batch_t *b, err_t *err)
{
	model_label_t labels[LIMIT_LABELS];
	size_t decoded_total = 0;
	for (uint32_t i = 0; i < req->n_series; i++) {
		const pyro_series_t *s = &req->series[i];
		ingest_pprof_req_t r = pp->req;
		r.service = slice_cstr("unknown_service");
		r.profile_name = (slice_t){NULL, 0};
		r.n_labels =
		    pyro_labels_to_series(s->labels, s->n_labels, &r.service, &r.profile_name, labels);
		r.labels = labels;
		for (uint32_t k = 0; k < s->n_profiles; k++) {
			size_t decoded = 0;
			if (!s->profiles[k].n)
				return err_set(err, 400, "series[%u].samples[%u]: empty raw_profile", i, k);
			if (ingest_pprof_append(&r, s->profiles[k], LIMIT_DECODED_BYTES - decoded_total, b,
			                        &decoded, err) < 0)
				return err_prefix(err, "series[%u].samples[%u]", i, k);
			decoded_total += decoded;
		}
	}
	return 0;
}

int ingest_pyro_push_decode(ingest_push_t *p, err_t *err)
{
	ingest_pyro_push_t *pp = p->ctx;
	buf_t plain, pb;
	buf_init(&plain, LIMIT_DECODED_BYTES);
	buf_init(&pb, LIMIT_DECODED_BYTES);
	pyro_push_t req = {0};
	model_batch_t *b = NULL;
	int rc = -1;
	slice_t data = p->body;
	if (pp->encoding.n && !slice_eq_cstr(pp->encoding, "identity")) {
		if (body_decode(pp->encoding, p->body, &plain, err) < 0)
			goto out;
		data = buf_slice(&plain);
	}
	if (pp->json) {
		if (pyro_push_json_to_pb(data, &pb, err) < 0)
			goto out;
		data = buf_slice(&pb);
	}
	if (pyro_push_decode(data, &req, err) < 0)
		goto out;
	b = model_batch_new(pp->req.project);
	if (decode_all(pp, &req, b, err) < 0) {
		model_batch_free(b);
		b = NULL;
		goto out;
	}
	pp->res.profiles = b->n_profiles;
	pp->res.samples = 0;
	for (uint32_t i = 0; i < b->n_profiles; i++)
		pp->res.samples += b->profiles[i].samples_count;
	p->batch = b;
	p->samples = pp->res.samples;
	rc = 0;
out:
	pyro_push_free(&req);
	buf_free(&plain);
	buf_free(&pb);
	return rc;
}
