/* HTTP routes: the pprof push endpoint (upload listener) and the query API,
 * /healthz and the UI (ui listener). Handlers run on the event loop thread
 * and hand CPU work to the worker pool; replies go back through loop_post. */
#ifndef KILN_API_API_H
#define KILN_API_API_H

#include <stdint.h>

#include "net/grpc.h"
#include "net/http.h"
#include "net/loop.h"
#include "net/pool.h"
#include "store/store.h"

typedef struct {
	store_t *store;
	kn_loop *loop;
	kn_pool *pool;
	const char *project;   /* project of unauthenticated listeners: "default" */
	uint32_t max_rows;     /* receivers.profiles.maxDecodedSampleRows */
	_Atomic uint32_t _inflight; /* requests handed to workers and not yet answered */
} api_ctx;

/* Requests being worked on (for a graceful shutdown). */
uint32_t api_inflight(api_ctx *a);

/* Upload listener (SPEC S2.1). */
int api_upload_on_headers(http_req *r, void *ctx);
void api_upload_on_request(http_req *r, void *ctx);

/* OTLP/HTTP listener (SPEC S2.2). */
int api_otlp_on_headers(http_req *r, void *ctx);
void api_otlp_on_request(http_req *r, void *ctx);
void api_otlp_format_error(int status, const char *msg, buf_t *body, const char **content_type, void *ctx);

/* OTLP/gRPC listener (SPEC S2.3): the methods it serves. */
extern const grpc_method api_grpc_methods[];
extern const size_t api_grpc_n_methods;

/* UI listener: the /api routes, /healthz, the UI. */
int api_ui_on_headers(http_req *r, void *ctx);
void api_ui_on_request(http_req *r, void *ctx);

/* Server-generated errors as {"error":"..."}. */
void api_format_error(int status, const char *msg, buf_t *body, const char **content_type, void *ctx);

/* Sends {"error": msg} with status (and Retry-After when err->retry_after). */
void api_reply_error(http_req *r, const kn_err *err);

#endif
