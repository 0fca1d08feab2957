/* The JFR push decoder (ingest/jfr_push.h): the recording out of the body
 * or its multipart part, gunzipped, decoded by wire/jfr.c with the route's
 * request. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "ingest/ingest.h"
#include "ingest/jfr_push.h"
#include "wire/jfr.h"
#include "wire/multipart.h"

/* sampleRate: a positive integer of Hz, at most 10^9 (a period of 1 ns). */
static int parse_rate(const char *s, int64_t *rate, err_t *err)
{
	int64_t v = 0;
	*rate = 100;
	if (!s || !*s)
		return 0;
	for (const char *q = s; *q; q++) {
		if (*q < '0' || *q > '9' || v > 1000000000)
			return err_set(err, 400,
			               "sampleRate=%.32s is not a positive integer up to 1000000000 (Hz)", s);
		v = v * 10 + (*q - '0');
	}
	if (v < 1 || v > 1000000000)
		return err_set(err, 400, "sampleRate=%.32s is not a positive integer up to 1000000000 (Hz)",
		               s);
	*rate = v;
	return 0;
}

/* The recording: the body, or multipart part jfr, and its labels part
 * (empty when none; form is scratch for the parts). */
static int recording(const ingest_jfr_push_t *jp, slice_t body, multipart_form_t *form, slice_t *rec,
                     slice_t *labels, err_t *err)
{
	*rec = body;
	*labels = slice_make("", 0);
	if (!jp->content_type.n || !multipart_is(jp->content_type))
		return 0;
	if (multipart_boundary(jp->content_type, form->boundary, err) < 0 ||
	    multipart_parse(body, form, err) < 0)
		return -1;
	const multipart_part_t *part = multipart_find(form, "jfr");
	if (!part)
		return err_set(err, 400,
		               "multipart: no part named jfr: format=jfr takes the recording as part jfr "
		               "(and its labels as part labels), as the Java agent sends them");
	*rec = part->body;
	if ((part = multipart_find(form, "labels")) != NULL)
		*labels = part->body;
	return 0;
}

/* The labels part, gunzipped (within what the recording left of
 * LIMIT_DECODED_BYTES) into plain and parsed; *out NULL when it is empty. */
static int labels_snapshot(slice_t part, size_t used, buf_t *plain, jfr_labels_t **out, err_t *err)
{
	slice_t data;
	*out = NULL;
	buf_init(plain, used < LIMIT_DECODED_BYTES ? LIMIT_DECODED_BYTES - used : 0); /* nothing held yet */
	if (!part.n)
		return 0;
	if (ingest_gunzip(part, 0, plain, &data, err) < 0)
		return err->status == 413 ? err_set(err, 413,
		                                    "part labels: the recording and its labels decompress to "
		                                    "more than %u MiB (the limit)",
		                                    LIMIT_DECODED_BYTES >> 20)
		                          : err_prefix(err, "part labels");
	return data.n ? jfr_labels_parse(data, out, err) : 0;
}

int ingest_jfr_decode(ingest_push_t *p, err_t *err)
{
	ingest_jfr_push_t *jp = p->ctx;
	ingest_pprof_req_t r = jp->pprof->req;
	int64_t rate;
	int rc = -1;
	multipart_form_t *form = xmalloc(sizeof *form);
	model_label_t *labels = NULL;
	uint32_t n_labels;
	buf_t plain, lplain;
	slice_t rec, data, lpart;
	jfr_labels_t *snapshot = NULL;
	buf_init(&plain, LIMIT_DECODED_BYTES);
	buf_init(&lplain, 0);
	r.profile_name = slice_make("", 0); /* each kind names its profiles */
	if (parse_rate(jp->sample_rate, &rate, err) < 0 ||
	    recording(jp, p->body, form, &rec, &lpart, err) < 0 ||
	    ingest_gunzip(rec, r.content_gzip && rec.p == p->body.p, &plain, &data, err) < 0 ||
	    ingest_series_labels(&r, &labels, &n_labels, err) < 0)
		goto out;
	if (data.n == 0) {
		err_set(err, 400,
		        "empty recording: format=jfr takes a JFR recording, raw or gzip, as the body or as "
		        "multipart part jfr");
		goto out;
	}
	int lrc = labels_snapshot(lpart, data.n, &lplain, &snapshot, err);
	int64_t from = r.from_ns ? r.from_ns : r.now_ns;
	jfr_decode_opts_t o = {.service = r.service,
	                       .labels = labels,
	                       .n_labels = n_labels,
	                       .from_ns = from,
	                       .until_ns = r.until_ns > from ? r.until_ns : from,
	                       .sample_rate = rate,
	                       .max_rows = r.max_rows,
	                       .snapshot = snapshot};
	model_batch_t *b = model_batch_new(r.project);
	if (lrc < 0) { /* the recording's own error, when it has one, comes first */
		err_t rec_err = {0};
		if (jfr_decode(data, &o, b, &rec_err) < 0)
			*err = rec_err;
		model_batch_free(b);
		goto out;
	}
	if (jfr_decode(data, &o, b, err) < 0) {
		model_batch_free(b);
		goto out;
	}
	jp->pprof->res = (ingest_result_t){b->n_profiles, b->n_samples};
	p->batch = b;
	rc = ingest_push_window(p, jp->pprof, err);
out:
	free(labels);
	free(form);
	jfr_labels_free(snapshot);
	buf_free(&lplain);
	buf_free(&plain);
	return rc;
}
