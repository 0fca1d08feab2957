/* The push job: the one pipeline every ingest path runs (upload, OTLP/HTTP,
 * OTLP/gRPC, the scraper; Pyroscope /ingest and JFR next). A path fills an
 * ingest_push_t with a decoder and a reply function and starts it; the job
 * runs the decoder on a worker, attributes the batch (API: Push attribution), admits it
 * (rate limit, OPS: Rate limits), submits it to the store and, once the store's done
 * callback has run, counts usage (OPS: Usage) and posts the reply to the loop.
 * Usage is counted exactly once per push: rejected at the step that refuses
 * it (decode, window, rate limit), accepted only after the commit. */
#ifndef KILN_INGEST_PUSH_H
#define KILN_INGEST_PUSH_H

#include <stdint.h>

#include "base/err.h"
#include "ingest/ingest.h"
#include "ingest/keys.h"
#include "ingest/ratelimit.h"
#include "ingest/usage.h"
#include "model/model.h"
#include "net/loop.h"
#include "net/pool.h"
#include "store/store.h"

/* Who sent a push: its project and key name (OPS: Roles and listeners). anonymous: the caller of a
 * listener without auth, or the scraper (default/default). */
typedef struct {
	char project[LIMIT_NAME_BYTES + 1];
	char key[LIMIT_NAME_BYTES + 1];
	int anonymous;
} ingest_caller_t;

/* What a job needs from the process. Copied into each job: every pointer
 * must outlive the jobs (the server frees them after the pool and the store
 * have drained). */
typedef struct {
	loop_t *loop;
	pool_t *pool;
	store_t *store;
	ratelimit_t *limiter; /* keys' limit (OPS: Rate limits); NULL: keys are not limited */
	ratelimit_t
	    *default_limiter; /* anonymous callers' (limits.defaultSamplesPerSecond); NULL: unlimited */
	usage_t *usage;       /* NULL: nothing counted */
	/* Push attribution (API: Push attribution) of a batch from peer (any thread); NULL: none. */
	void (*attribute)(void *ctx, slice_t peer, model_batch_t *b);
	void *attribute_ctx;
	_Atomic uint32_t *inflight; /* jobs started and not yet answered; may be NULL */
} ingest_push_env_t;

typedef struct ingest_push ingest_push_t;

/* Worker thread: decodes p->body (and the path's state in p->ctx) into
 * p->batch (the job owns it from then on) and p->samples (what admission
 * takes and the commit counts as accepted); p->rejected samples of reason
 * p->reason are counted with them (OTLP's points outside the window).
 * 0, or -1 + err: then p->rejected samples of p->reason are counted when
 * p->reason is set, else 1 sample (the count of an undecodable body is
 * unknown) of the reason err's status gives. */
typedef int (*ingest_push_decode_fn)(ingest_push_t *p, err_t *err);
/* Loop thread, exactly once: the answer (err NULL: accepted; the batch, if
 * any, is durable). Frees the path's job, p with it. */
typedef void (*ingest_push_reply_fn)(ingest_push_t *p, const err_t *err);

struct ingest_push {
	ingest_push_env_t env;
	ingest_caller_t caller;
	slice_t peer; /* "ip:port" of the sender for attribution; empty: none */
	slice_t body; /* what the decoder reads; must live until the reply */
	ingest_push_decode_fn decode;
	ingest_push_reply_fn reply;
	void *ctx; /* the path's state, for its decoder */
	/* The decoder's output. */
	model_batch_t *batch;
	uint64_t samples;
	uint64_t rejected;
	int reason; /* USAGE_*; USAGE_ACCEPTED (0): none */
	/* The job's. */
	err_t _err;
	int _failed;
};

/* Loop thread: runs p (decoder on the pool, then the store, then reply). */
void ingest_push_start(ingest_push_t *p);
/* Loop thread: answers p now with err (a request refused before its body is
 * decoded: a bad query, an unknown key), counting 1 sample of err's reason. */
void ingest_push_refuse(ingest_push_t *p, const err_t *err);

/* The rate limit (OPS: Rate limits) of c: keys take from env->limiter, anonymous callers
 * from env->default_limiter. 0 admitted; -1 + err 429 with retry_after (and
 * the samples counted as rate_limited). */
int ingest_admit(const ingest_push_env_t *env, const ingest_caller_t *c, uint64_t samples, err_t *err);
/* Counts samples of c: accepted (err NULL) or rejected with the reason of
 * err's status (429 rate_limited, 413 too_large, else invalid); nothing for
 * 401, 403, 500 and 503 (not the data's fault, or not the key's). */
void ingest_account(const ingest_push_env_t *env, const ingest_caller_t *c, uint64_t samples,
                    const err_t *err);
/* The same with an explicit USAGE_* reason: accepted samples + samples of reason. */
void ingest_account_reason(const ingest_push_env_t *env, const ingest_caller_t *c, uint64_t accepted,
                           int reason, uint64_t samples);

/* ---- Decoders (p->ctx is the path's state, as named). ---------------- */

/* pprof (upload, scrape): p->ctx is an ingest_pprof_push_t. */
typedef struct {
	ingest_pprof_req_t req;
	int retention_days; /* API: Frames: from (or now) must be in [now − days, now + 10 min]; 0: not
	                       checked */
	ingest_result_t res;
} ingest_pprof_push_t;
int ingest_pprof_decode(ingest_push_t *p, err_t *err);
/* What ingest_pprof_decode does after a decode into p->batch with pp->res
 * (also for decoders that fill an ingest_pprof_push_t's result): p->samples,
 * and API: Frames' window of pp's from (or now) when pp->retention_days is
 * set; -1 + err 400 (the samples counted out_of_window) outside it. */
int ingest_push_window(ingest_push_t *p, const ingest_pprof_push_t *pp, err_t *err);

/* OTLP (HTTP and gRPC): p->ctx is an ingest_otlp_push_t (or starts with one). */
typedef struct {
	ingest_otlp_req_t req;
	otlp_result_t res;
} ingest_otlp_push_t;
int ingest_otlp_decode(ingest_push_t *p, err_t *err);

/* Pyroscope's push.v1 Push (Connect or gRPC): p->ctx is an
 * ingest_pyro_push_t. The body (decompressed by encoding, JSON transcoded)
 * is a PushRequest; every raw profile of every series is decoded into one
 * batch with the series' service (service_name; "unknown_service" when
 * absent), profile name (__name__) and labels, so the request is stored
 * whole or not at all. A raw profile that fails refuses the request with
 * "series[i].samples[k]: <the pprof decoder's message>". The decompressed
 * raw profiles of one request may not pass LIMIT_DECODED_BYTES together. */
typedef struct {
	ingest_pprof_req_t req; /* project, max_rows, now_ns; the rest is set per series */
	slice_t encoding;       /* of the whole body (Content-Encoding); empty: none */
	int json;               /* Connect's JSON codec */
	ingest_result_t res;
} ingest_pyro_push_t;
int ingest_pyro_push_decode(ingest_push_t *p, err_t *err);

#endif
