/* Unary gRPC over Kiln's HTTP/2 server (h2.h): request checks, the
 * length-prefixed message, grpc-encoding (identity, gzip, zstd) with a hard
 * bound, replies with trailers and google.rpc.Status details. No streaming
 * calls, no reflection, no health service; protobuf is the handler's job. */
#ifndef KILN_NET_GRPC_H
#define KILN_NET_GRPC_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/slice.h"
#include "net/h2.h"
#include "wire/rpc_status.h" /* enum grpc_code, grpc_code_of_http */

struct event_base;

typedef struct grpc_server grpc_server_t;
typedef struct grpc_call grpc_call_t;

/* One unary call, owned by the handler from the method's handler until
 * grpc_reply or grpc_fail. Public fields are read-only; slices stay valid
 * until the reply. */
struct grpc_call {
	slice_t method;      /* ":path": "/package.Service/Method" */
	slice_t peer;        /* "ip:port" of the client (attribution) */
	slice_t encoding;    /* grpc-encoding: "identity", "gzip" or "zstd" */
	int compressed;      /* the message's compressed flag */
	slice_t wire;        /* the message as received, without its 5-byte prefix */
	slice_t msg;         /* the message to decode: == wire unless compressed; set by grpc_call_decode */
	int64_t deadline_ms; /* from grpc-timeout: CLOCK_MONOTONIC milliseconds; 0 = none */
	h2_req_t *_req;
	buf_t _inflated;
	size_t _max;
};

/* A method: the full path and its handler. The handler runs on the loop
 * thread, owns the call, and answers it exactly once, now or later (after
 * work on other threads), with grpc_reply or grpc_fail on the loop thread. */
typedef struct {
	const char *path; /* "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export" */
	void (*handler)(grpc_call_t *call, void *ctx);
} grpc_method_t;

typedef struct {
	/* Listener settings: name, timeouts, max_conns, max_streams, max_conn_body,
	 * ssl_ctx. max_body and the callbacks are set by this layer. */
	h2_opts_t h2;
	size_t max_message; /* after decompression; 0 = LIMIT_DECODED_BYTES */
	/* The methods served (the array is copied; the strings must outlive the
	 * server). Any other path is answered UNIMPLEMENTED before its body is read. */
	const grpc_method_t *methods;
	size_t n_methods;
	void *ctx; /* passed to the handlers */
} grpc_opts_t;

/* Listens on addr like h2_server_new. Requests are checked before a handler
 * sees them: :method POST (else HTTP 405), content-type application/grpc or
 * application/grpc+proto (else HTTP 415, grpc-status INVALID_ARGUMENT), a
 * known method (else UNIMPLEMENTED), a supported grpc-encoding (else
 * UNIMPLEMENTED with grpc-accept-encoding), exactly one length-prefixed
 * message (else INVALID_ARGUMENT naming what was wrong; a compressed flag
 * without grpc-encoding is INTERNAL), at most max_message bytes as the prefix
 * announces it (else RESOURCE_EXHAUSTED at once, before the rest is read). */
grpc_server_t *grpc_server_new(struct event_base *base, const char *addr, const grpc_opts_t *o, err_t *err);
int grpc_server_port(const grpc_server_t *s);
uint32_t grpc_server_conns(const grpc_server_t *s);
/* As h2_server_stop_accepting: GOAWAY; calls in flight complete. */
void grpc_server_stop_accepting(grpc_server_t *s);
/* As h2_server_free: calls handlers own are detached; their reply only frees them. */
void grpc_server_free(grpc_server_t *s);

/* First value of a request header (metadata) or NULL; lowercase name. */
const slice_t *grpc_call_header(const grpc_call_t *c, const char *lowercase_name);

/* Decompresses the message (when compressed) so that c->msg holds it; never
 * allocates past max_message. Any thread, while the handler owns c (meant for
 * a worker: the loop thread never decompresses). Returns GRPC_OK, or
 * RESOURCE_EXHAUSTED (over the limit) / INVALID_ARGUMENT (corrupt data) with
 * err->msg saying so. Calling it again returns the same result cheaply. */
int grpc_call_decode(grpc_call_t *c, err_t *err);

/* Answers OK with msg (copied) as the one response message: HTTP 200,
 * content-type application/grpc, the framed message, trailer grpc-status 0.
 * Frees c. Loop thread only. If the client has gone, only frees c. */
void grpc_reply(grpc_call_t *c, const void *msg, size_t n);

/* Answers with a failure as a trailers-only response: grpc-status code,
 * grpc-message (percent-encoded; NULL for none) and, when details is given,
 * grpc-status-details-bin (the google.rpc.Status bytes, base64). Frees c.
 * Loop thread only. If the client has gone, only frees c. */
void grpc_fail(grpc_call_t *c, int code, const char *message, const void *details, size_t n);

/* A unary call's request body: one length-prefixed message (1-byte
 * compressed flag, 4-byte big-endian length, the message). */
typedef struct {
	uint32_t len;   /* the length the prefix announces (0 before it is there) */
	int whole;      /* complete and well formed: compressed and msg are set */
	int compressed; /* the flag: 0 or 1 */
	slice_t msg;    /* the message, pointing into the body */
} grpc_frame_t;

/* Checks body, all of a request body so far (complete: it has ended), as the
 * server does while DATA arrives and at the end. Pure: no I/O, no allocation.
 * Returns GRPC_OK (while incomplete: nothing wrong yet), else a code with a
 * message in m (cap bytes): RESOURCE_EXHAUSTED when the prefix announces more
 * than max bytes, INVALID_ARGUMENT for a short prefix, a truncated message,
 * data after the message, or a flag other than 0 and 1. */
int grpc_frame_check(slice_t body, int complete, size_t max, grpc_frame_t *f, char *m, size_t cap);

/* grpc-message encoding: bytes outside 0x20..0x7e and '%' become %XX. */
void grpc_percent_encode(slice_t in, buf_t *out);

#endif
