/* HTTP and gRPC routes: the pprof push endpoint (upload listener), OTLP over
 * HTTP and gRPC, the query API, /metrics, /healthz and the UI. Handlers run on
 * the event loop thread, identify the caller (keys, OPS: Projects and keys) and hand CPU work to
 * the worker pool; a push runs as an ingest_push_t job (ingest/push.h: decode,
 * attribution, admission (OPS: Rate limits), store, usage after the commit (OPS: Usage)) with the
 * route's decoder and reply; replies go back through loop_post. */
#ifndef KILN_API_API_H
#define KILN_API_API_H

#include <stdint.h>

#include "api/options.h"
#include "ingest/keys.h"
#include "ingest/options.h"
#include "ingest/push.h"
#include "ingest/ratelimit.h"
#include "ingest/usage.h"
#include "net/grpc.h"
#include "net/http.h"
#include "net/loop.h"
#include "net/pool.h"
#include "scrape/k8s.h"
#include "scrape/scraper.h"
#include "store/options.h"
#include "store/store.h"

/* Operational counters for /metrics (all atomics; no lock). */
typedef struct {
	_Atomic uint64_t requests[API_LISTENER_COUNT][6];      /* by status class: 1xx..5xx, [0] = other */
	_Atomic uint64_t status_counts[API_LISTENER_COUNT][8]; /* 200 400 401 403 404 413 429 503 */
	_Atomic uint64_t bytes_in[API_LISTENER_COUNT];
} api_metrics_t;

/* Baselines of Pyroscope /ingest series with cumulative sample types
 * (api/pyroscope_multipart.c): bounded, thread-safe. */
typedef struct api_pyro_deltas api_pyro_deltas_t;
api_pyro_deltas_t *api_pyro_deltas_new(void);
void api_pyro_deltas_free(api_pyro_deltas_t *d); /* NULL is a no-op */

typedef struct {
	store_t *store;
	loop_t *loop;
	pool_t *pool;
	keys_t *keys;                 /* may be NULL when no listener requires auth */
	ratelimit_t *limiter;         /* keys' limit (limits.samplesPerSecond) */
	ratelimit_t *default_limiter; /* the caller of listeners without auth
	                                 (limits.defaultSamplesPerSecond); NULL: unlimited */
	usage_t *usage;
	const ingest_options_t *limits;             /* NULL: the defaults of limits.h */
	const store_retention_options_t *retention; /* NULL: 14 days */
	scraper_t *scraper; /* NULL when this process does not scrape (role, settings) */
	k8s_watcher_t
	    *k8s; /* the pod watch for push attribution (API: Push attribution); NULL when not watching */
	api_pyro_deltas_t *pyro_deltas; /* NULL: no baselines (a cumulative type is never stored
	                                   without prev_profile) */
	api_metrics_t metrics;
	_Atomic uint32_t _inflight; /* requests handed to workers and not yet answered */
} api_ctx_t;

/* The context of one listener (what its handlers get as ctx). */
typedef struct {
	api_ctx_t *api;
	int listener;      /* LISTENER_* */
	int auth_required; /* OPS: Roles and listeners: auth: required */
	int tls;
	int trust_scope_org_id; /* OPS: Trusting X-Scope-OrgID (only without auth) */
} api_listener_t;

/* Identifies the caller from the request's key (x-kiln-key, Authorization:
 * Bearer, Authorization: Basic with the key as the password and any user
 * (as Pyroscope's SDKs, Alloy and Grafana's data source send it), or for the
 * UI the kiln_key cookie; any may be NULL). need is
 * KEY_SCOPE_INGEST or KEY_SCOPE_QUERY. On a listener without auth the caller
 * is default/default, unless the listener trusts X-Scope-OrgID (OPS: Trusting
 * X-Scope-OrgID) and scope_org_id (that header; may be NULL) is not empty:
 * then its project is the header's value. -1 + err: 401 no/unknown/revoked key
 * (the message names the header), 403 a key of the other scope, 400 a trusted
 * X-Scope-OrgID that is not a project name. */
int api_identify(const api_listener_t *l, const slice_t *x_kiln_key, const slice_t *authorization,
                 const slice_t *cookie, const slice_t *scope_org_id, int need, ingest_caller_t *c,
                 err_t *err);

/* Counts a finished request for /metrics. */
void api_count(api_ctx_t *a, int listener, int status, size_t bytes_in);
/* Retention of a project, in days (config, capped). */
int api_retention_days(const api_ctx_t *a, const char *project);

/* Requests being worked on (for a graceful shutdown). */
uint32_t api_inflight(api_ctx_t *a);

/* Push attribution (API: Push attribution; api/attribution.c, any thread). The pod the
 * watch knows at peer's IP ("ip:port" or "[v6]:port"): 1 found, 0 not (or
 * no watch). */
int api_peer_pod(const api_ctx_t *a, slice_t peer, k8s_pod_info_t *out);
/* Adds the peer pod's k8s.namespace.name, k8s.pod.name, workload and (one
 * container) k8s.container.name to every profile of b that names neither
 * namespace nor pod, where the profile lacks them; finished profiles are
 * finished again (new series id). */
void api_attribute_batch(const api_ctx_t *a, slice_t peer, model_batch_t *b);

/* Starts a push on listener l (loop thread): identifies the caller from the
 * x-kiln-key, authorization and x-scope-orgid headers (any may be NULL; see
 * api_identify) and fills p's environment, caller, peer, decoder and reply. 0, or -1 when the caller is
 * refused: p was answered (its reply ran) and must not be touched. */
int api_push_begin(const api_listener_t *l, ingest_push_t *p, const slice_t *x_kiln_key,
                   const slice_t *authorization, const slice_t *scope_org_id, slice_t peer,
                   ingest_push_decode_fn decode, ingest_push_reply_fn reply);

/* The pprof request of push p (whose caller is known) from request r: project,
 * retention, row limit, Content-Encoding: gzip, now. The route then sets the
 * service, labels and time range. */
void api_pprof_req_init(const api_ctx_t *api, const http_req_t *r, const ingest_push_t *p,
                        ingest_pprof_push_t *pp, int64_t now_ns);

/* Upload listener (API: Push: POST /profiling/upload). */
int api_upload_on_headers(http_req_t *r, void *ctx);
void api_upload_on_request(http_req_t *r, void *ctx);

/* Pyroscope's push (API: Push: POST /ingest (Pyroscope)) on the upload and UI
 * listeners: 1 when path is /ingest or /pyroscope/ingest, and its handlers
 * (ctx: the api_listener_t; errors as Pyroscope's {"code","message"}). */
int api_is_pyroscope_path(slice_t path);
/* The Content-Length of r (0 when absent; saturating). */
uint64_t api_content_length(const http_req_t *r);
/* The same of a Content-Length value (NULL: 0). */
uint64_t api_length_value(const slice_t *content_length);
int api_pyroscope_on_headers(http_req_t *r, void *ctx);
void api_pyroscope_on_request(http_req_t *r, void *ctx);

/* The multipart/form-data /ingest decoder of the push job (worker thread):
 * parts profile, prev_profile and sample_type_config of body with
 * content_type, decoded with the pprof request *pprof (API: Push: POST
 * /ingest (Pyroscope)). p->ctx is an api_pyro_multipart_t. */
typedef struct {
	ingest_pprof_push_t *pprof; /* the request (service, labels, times, limits) and its result */
	slice_t content_type;
	api_pyro_deltas_t *deltas; /* may be NULL */
} api_pyro_multipart_t;
int api_pyro_multipart_decode(ingest_push_t *p, err_t *err);

/* A request as a route written once for both HTTP versions sees it:
 * HTTP/1.1 (api_call_http) or HTTP/2, h2c on the upload and UI listeners
 * (api_call_h2). Slices point into the request, valid until the answer. */
typedef struct {
	slice_t method, path, peer;
	slice_t body;                          /* the whole body once the request is complete */
	const slice_t *hdr_names, *hdr_values; /* lowercase names */
	uint32_t n_hdrs;
	http_req_t *_http; /* one of the two */
	h2_req_t *_h2;
} api_call_t;
void api_call_http(api_call_t *c, http_req_t *r);
void api_call_h2(api_call_t *c, h2_req_t *r);
/* First value of a header, or NULL. */
const slice_t *api_call_header(const api_call_t *c, const char *lowercase_name);
/* The media type of a Content-Type header (NULL: none), parameters and
 * spaces left out: "application/json; charset=utf-8" → "application/json". */
slice_t api_media_type(const slice_t *content_type);
/* Answers the request and frees it, exactly once, on the loop thread:
 * status, Content-Type (NULL: none), Retry-After when retry_after_s > 0. */
void api_call_respond(api_call_t *c, int status, const char *content_type, int retry_after_s,
                      const void *body, size_t n);

/* Connect RPC (API: Push: push.v1.PusherService/Push (Pyroscope Connect)). A failed
 * call: err as a Connect error ({"code","message"}, application/json, the
 * HTTP status of the code: connect.h), counted for /metrics on l. */
void api_connect_error(const api_listener_t *l, api_call_t *c, const err_t *err);
/* The header checks every Connect unary call gets, push and query alike:
 * POST (405), Content-Type application/proto or application/json (415),
 * Content-Encoding (or Connect-Content-Encoding) gzip, x-gzip, zstd,
 * deflate or identity when compressed, else identity only (501),
 * Connect-Protocol-Version 1 when sent (400), the declared Content-Length
 * and the body read so far at most max_body bytes (413). 0, or -1 + err. */
int api_connect_check(const api_call_t *c, int compressed, uint64_t max_body, err_t *err);
/* 1 when path is a Connect method Kiln routes over HTTP/1.1 (the
 * /push.v1.PusherService/ service: Push, others answered unimplemented; and
 * /querier.v1.QuerierService/ on the UI listener). */
int api_is_connect_path(slice_t path);
/* The Connect routes over HTTP/1.1 on the upload and UI listeners. */
int api_connect_on_headers(http_req_t *r, void *ctx);
void api_connect_on_request(http_req_t *r, void *ctx);
/* Pyroscope's Connect query API (API: Query: querier.v1.QuerierService
 * (Pyroscope Connect); api/querier.c), UI listener only: 1 when path is a
 * /querier.v1.QuerierService/ method; the headers' check (0: read the body,
 * 1: answered) and the call. */
int api_is_querier_path(slice_t path);
int api_querier_on_headers(const api_listener_t *l, api_call_t *c);
/* The querier's decode step alone, without a listener (the fuzz target):
 * the request body of method (e.g. "SelectSeries"), Connect JSON when json,
 * decoded and checked as a call would be. 0, or -1 + err (404 for an
 * unknown method). */
int api_querier_decode(slice_t method, int json, slice_t body, err_t *err);
void api_querier_on_request(const api_listener_t *l, api_call_t *c);
/* HTTP/2 (h2c) on the upload and UI listeners (http_opts_t.h2c): the
 * Connect routes; any other path is answered unimplemented (404). */
int api_h2_on_headers(h2_req_t *r, void *ctx);
int api_h2_on_data(h2_req_t *r, void *ctx);
void api_h2_on_request(h2_req_t *r, void *ctx);

/* Pyroscope's legacy HTTP query API (API: Query: Pyroscope HTTP API;
 * api/pyroscope_render.c), UI listener only: 1 when path is
 * /pyroscope/render, render-diff, label-values or labels; the GET request
 * (ctx: the api_listener_t). */
int api_is_render_path(slice_t path);
void api_render_on_request(http_req_t *r, void *ctx);

/* OTLP/HTTP listener (API: Push: OTLP profiles over HTTP). */
int api_otlp_on_headers(http_req_t *r, void *ctx);
void api_otlp_on_request(http_req_t *r, void *ctx);
void api_otlp_format_error(int status, const char *msg, buf_t *body, const char **content_type, void *ctx);

/* The OTLP/gRPC decoder of the push job: the call's message (gRPC
 * decompression) through ingest_otlp_decode. p->ctx is an api_grpc_push_t. */
typedef struct {
	ingest_otlp_push_t otlp; /* first: ingest_otlp_decode reads p->ctx as one */
	grpc_call_t *call;
} api_grpc_push_t;
int api_grpc_decode(ingest_push_t *p, err_t *err);

/* A failed gRPC push: the code of err's status, google.rpc.Status details
 * with RetryInfo for a rate limit (API: Push: OTLP profiles over gRPC). */
void api_grpc_fail(grpc_call_t *call, const err_t *err);
/* Pyroscope's push.v1.PusherService/Push as gRPC on the OTLP/gRPC listener. */
void api_grpc_push_handler(grpc_call_t *call, void *ctx);

/* OTLP/gRPC listener (API: Push: OTLP profiles over gRPC): the methods it serves (ctx: api_listener_t). */
extern const grpc_method_t api_grpc_methods[];
extern const size_t api_grpc_n_methods;

/* UI listener: the /api routes, /metrics, /login, /healthz, the UI. */
int api_ui_on_headers(http_req_t *r, void *ctx);
void api_ui_on_request(http_req_t *r, void *ctx);

/* Server-generated errors as {"error":"..."}. */
void api_format_error(int status, const char *msg, buf_t *body, const char **content_type, void *ctx);

/* Sends {"error": msg} with status (and Retry-After when err->retry_after). */
void api_reply_error(http_req_t *r, const err_t *err);

/* /metrics in the Prometheus text format, for the caller's project. */
void api_metrics_write(api_ctx_t *a, const ingest_caller_t *c, buf_t *out);

#endif
