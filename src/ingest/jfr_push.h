/* Pyroscope's JFR push (API: Push: POST /ingest (Pyroscope), format=jfr), as
 * the Pyroscope Java agent sends it: a multipart/form-data body with part
 * `jfr` (the recording, gzipped or not; required) and part `labels` (its
 * LabelsSnapshot, gzipped or not: the samples' context labels and span
 * names, wire/jfr.h), or the recording as the whole body
 * (application/octet-stream). The push job's decoder (worker thread):
 * wire/jfr.h into one batch, a profile per kind and sample type, each named
 * by its kind (__name__), with the request's service, series labels and
 * window. Same limits as a pprof push: LIMIT_DECODED_BYTES after gunzip
 * (the recording and its labels together), maxDecodedSampleRows distinct
 * stacks per profile, the retention window of the request's from. */
#ifndef KILN_INGEST_JFR_PUSH_H
#define KILN_INGEST_JFR_PUSH_H

#include "ingest/push.h"

typedef struct {
	/* The request (project, service, labels, from/until, rows, retention)
	 * and its result. Its profile_name is not used: each kind names its own. */
	ingest_pprof_push_t *pprof;
	slice_t content_type;    /* multipart/form-data: the parts; else the body is the recording */
	const char *sample_rate; /* sampleRate as sent (Hz of cpu and wall samples); NULL or "": 100 */
} ingest_jfr_push_t;

/* The decoder: p->ctx is an ingest_jfr_push_t. Errors: 400 for a bad
 * sampleRate, a multipart body without part jfr, an empty recording, a
 * labels part jfr_labels_parse refuses (its message, "part labels: " before
 * a gunzip error; a recording that is bad too gives its own error instead)
 * and every error of jfr_decode (naming chunk, offset and problem); 413 as
 * jfr_decode's and gz_inflate's; the window of ingest_push_window. The
 * profiles' time is from (now when absent) and their duration until − from
 * (0 when until is absent). */
int ingest_jfr_decode(ingest_push_t *p, err_t *err);

#endif
