/* Ingest: turns a push (bytes + request metadata) into a validated normalized
 * batch ready for the store. CPU work; runs on worker threads, never on the
 * event loop. Knows wire formats only through wire/, storage not at all.
 * The job around these decoders (admission, store, usage) is push.h. */
#ifndef KILN_INGEST_INGEST_H
#define KILN_INGEST_INGEST_H

#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "model/model.h"
#include "wire/otlp.h"
#include "wire/sample_type_config.h"

typedef struct {
	slice_t project;
	slice_t service;
	/* The profile's kind, Pyroscope's __name__ ("process_cpu", "memory",
	 * "block", "mutex", "goroutines", "wall", ...); empty = none given (the
	 * kind then follows from the sample types). ingest_pprof stores it as the
	 * series label __name__ (any __name__ among labels is dropped) and refuses
	 * one that is not model_profile_name_valid with a 400 (API: Profile names). */
	slice_t profile_name;
	/* Pyroscope's /ingest: when profile_name is empty, ingest_pprof_append
	 * derives it from the pprof's sample types (pyro_stc_profile_name, with
	 * pyro_config's display names; NULL = Pyroscope's default config). */
	int pyro_derive_name;
	const pyro_stc_t *pyro_config;
	const model_label_t *labels; /* series labels (namespace, pod, container, workload, label.K=V) */
	uint32_t n_labels;
	int64_t from_ns, until_ns; /* 0 = not given */
	int content_gzip;          /* Content-Encoding: gzip */
	uint32_t max_rows;         /* 0 = LIMIT_SAMPLE_ROWS */
	int64_t now_ns;
} ingest_pprof_req_t;

typedef struct {
	uint32_t profiles; /* profiles stored (one per sample type) */
	uint64_t samples;  /* decoded sample rows × sample types */
} ingest_result_t;

/* The series labels of r's profiles: r->labels without any __name__, then
 * __name__ = r->profile_name when one is given (API: Profile names). *out is
 * xmalloc'ed (the caller frees it; the slices are r's). 400 for a bad name. */
int ingest_series_labels(const ingest_pprof_req_t *r, model_label_t **out, uint32_t *n, err_t *err);

/* Decompresses (bounded by LIMIT_DECODED_BYTES), decodes and validates a
 * pprof push. On success *out is a finished batch owned by the caller.
 * Errors: 400 malformed / empty, 413 limits; nothing is returned then. */
int ingest_pprof(const ingest_pprof_req_t *r, slice_t body, model_batch_t **out, ingest_result_t *res,
                 err_t *err);
/* The core of ingest_pprof: one pprof body (gzip or not) decoded into b,
 * which may already hold profiles (a request of several profiles is one
 * batch). The body and its decompressed form may not pass max_decoded
 * bytes (413); *decoded is the decompressed size. Errors as ingest_pprof's,
 * and b may then hold a partial decode (the caller frees it). */
int ingest_pprof_append(const ingest_pprof_req_t *r, slice_t body, size_t max_decoded, model_batch_t *b,
                        size_t *decoded, err_t *err);

/* The body as sent (gzip by its magic bytes, else as is) into *data: inflated
 * into plain (whose ceiling bounds it) or body itself. 400 when content_gzip
 * (Content-Encoding: gzip) but the body is not gzip; gz_inflate's errors. */
int ingest_gunzip(slice_t body, int content_gzip, buf_t *plain, slice_t *data, err_t *err);

/* Retention window of pushed samples (API: Frames, OPS: Retention): older ones are refused. */
#define INGEST_RETENTION_NS (14LL * 86400 * 1000000000LL)
#define INGEST_FUTURE_NS (10LL * 60 * 1000000000LL)

typedef struct {
	slice_t project;
	slice_t encoding; /* Content-Encoding (HTTP); empty for gRPC (the gRPC layer decompresses) */
	int json;         /* OTLP/JSON body */
	uint32_t max_rows;
	uint32_t retention_days; /* 0 = 14 */
	int64_t now_ns;
} ingest_otlp_req_t;

/* Decompresses (bounded), transcodes JSON, decodes and validates an OTLP
 * ExportProfilesServiceRequest. Samples outside [now − retention, now + 10 min]
 * are dropped and reported in res (partial success). On success *out is a
 * finished batch (possibly with no profiles: an empty request succeeds).
 * Errors: 400 malformed, 413 limits, 415 unknown encoding. */
int ingest_otlp(const ingest_otlp_req_t *r, slice_t body, model_batch_t **out, otlp_result_t *res,
                err_t *err);

#endif
