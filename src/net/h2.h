/* Kiln's HTTP/2 server (nghttp2 on libevent bufferevents): prior-knowledge h2c
 * and, with an SSL_CTX, TLS with ALPN "h2". Unary exchanges only: a request is
 * handed over whole at END_STREAM and answered once. No push, no HTTP/1.1 Upgrade. */
#ifndef KILN_NET_H2_H
#define KILN_NET_H2_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/slice.h"
#include "net/budget.h"

struct bufferevent;
struct event_base;
struct ssl_ctx_st;
struct h2_stream;
struct h2_conn;

typedef struct h2_server h2_server_t;
typedef struct h2_req h2_req_t;

/* One request (one stream). Public fields are read-only for handlers (body may
 * be taken with buf_steal or reserved by on_data); fields starting with '_'
 * are the server's. Slices point into memory the request owns, valid until
 * h2_respond. */
struct h2_req {
	slice_t method;      /* :method */
	slice_t path;        /* :path, as sent */
	slice_t scheme;      /* :scheme */
	slice_t authority;   /* :authority, or empty */
	slice_t *hdr_names;  /* regular headers; lowercase (HTTP/2 requires it) */
	slice_t *hdr_values; /* as sent */
	uint32_t n_hdrs;
	int32_t stream_id;
	buf_t body;            /* the whole body once on_request runs; ceiling opts.max_body */
	slice_t peer;          /* "ip:port" ("[v6]:port"); IPv4-mapped IPv6 shown as IPv4 */
	void *user;            /* for the layer above; the server never touches it */
	struct h2_stream *_st; /* NULL once the stream is gone */
	struct h2_conn *_conn; /* set while detached from its stream; NULL once the connection is gone */
	h2_req_t *_prev, *_next; /* the connection's list of detached requests */
	buf_t _hdr;            /* owned header bytes the slices point into */
	uint32_t *_hdr_off;    /* offsets while headers arrive: name, name len, value, value len */
	size_t _hdr_cap;
	size_t _counted; /* body bytes counted against the connection's buffer budget */
	net_budget_t *_budget; /* the server's; _taken bytes of it are this body's */
	size_t _taken;
	int _state;
	char _peer[64];
};

/* A response header or trailer: NUL-terminated, copied by h2_respond. Names
 * must be lowercase. */
typedef struct {
	const char *name;
	const char *value;
} h2_header_t;

/* First value of a regular header, or NULL. lowercase_name must be lowercase. */
const slice_t *h2_header_get(const h2_req_t *r, const char *lowercase_name);

typedef struct {
	const char *name; /* listener name for logs; copied */
	/* Ceiling of one request body; 0 = LIMIT_BODY_BYTES + 64 KiB. A body that
	 * passes it (and was not answered by on_data) is reset with RST_STREAM
	 * ENHANCE_YOUR_CALM. */
	size_t max_body;
	net_budget_t *budget; /* bodies of all servers together (budget.h); NULL = none */
	/* Ceiling of request body bytes one connection holds at once (bodies being
	 * read and those handlers own); 0 = 2 * max_body. A stream whose data
	 * would pass it is reset with REFUSED_STREAM (clients may retry it). */
	size_t max_conn_body;
	/* 0 = default (LIMIT_*_MS). idle: no stream in flight and nothing received (60 s; the
	 * connection then gets GOAWAY and is closed). read: a request being read
	 * and no byte received (60 s; the connection is closed). write: longest
	 * pause in sending while the client does not read (30 s; dropped after
	 * one to two such pauses). */
	int idle_timeout_ms, read_timeout_ms, write_timeout_ms;
	uint32_t max_conns;   /* 0 = LIMIT_CONNECTIONS; connections accepted past it are closed at once */
	uint32_t max_streams; /* SETTINGS_MAX_CONCURRENT_STREAMS; 0 = LIMIT_H2_STREAMS (256) */
	/* Optional: TLS. Each connection gets SSL_new(ssl_ctx); the context must
	 * select ALPN "h2" (tls_ctx_new(..., TLS_ALPN_H2, ...) does). Borrowed:
	 * keep it alive longer than the server. NULL = cleartext h2c with prior
	 * knowledge. */
	struct ssl_ctx_st *ssl_ctx;
	/* Optional. Called when a request's headers are complete, before its body.
	 * Return 0 to read the body, or answer with h2_respond and return 1: the
	 * stream is then reset with NO_ERROR after the response if the client was
	 * still sending, and its further DATA is discarded. */
	int (*on_headers)(h2_req_t *r, void *ctx);
	/* Optional. Called after body bytes were appended to r->body, before the
	 * end of the stream. Same return contract as on_headers. */
	int (*on_data)(h2_req_t *r, void *ctx);
	/* Required. The whole request has arrived (END_STREAM). The handler owns r
	 * until it calls h2_respond exactly once, now or later, on the loop thread. */
	void (*on_request)(h2_req_t *r, void *ctx);
	void *ctx;
} h2_opts_t;

/* Binds and listens on addr ("host:port", ":port", "[v6]:port"; port 0 picks
 * a free port); host names resolve here (blocking: call at startup). NULL and
 * err (status 500) on failure. Loop thread, or before the loop runs. */
h2_server_t *h2_server_new(struct event_base *base, const char *addr, const h2_opts_t *o, err_t *err);

int h2_server_port(const h2_server_t *s);
uint32_t h2_server_conns(const h2_server_t *s); /* open connections */

/* Graceful shutdown: closes the listener and sends every connection GOAWAY
 * (last stream = the last one received). Streams in flight complete and are
 * answered; a connection closes once it has none. Loop thread only;
 * h2_server_conns() reaching 0 means all are done. */
void h2_server_stop_accepting(h2_server_t *s);

/* Closes the listener and every connection at once. Requests handlers still
 * own are detached, not freed: h2_respond then only frees them. Loop thread,
 * or while the loop is not running. NULL is a no-op. */
void h2_server_free(h2_server_t *s);

/* Tests and fuzzing: a server that listens nowhere (o as for h2_server_new,
 * on_request required), and h2_server_adopt to run HTTP/2 over any
 * bufferevent, e.g. one end of bufferevent_pair_new: the connection is then
 * the server's exactly as an accepted one (h2_server_free closes it). */
h2_server_t *h2_server_detached(struct event_base *base, const h2_opts_t *o);
void h2_server_adopt(h2_server_t *s, struct bufferevent *bev, const char *peer);

/* Answers r and frees it (r must not be used afterwards). Loop thread only,
 * exactly once per request (also from on_headers / on_data, see there).
 * Sends HEADERS (:status, then hdrs), then body as DATA if n > 0, then the
 * trailers if any; the last frame carries END_STREAM (with no body and no
 * trailers that is the HEADERS frame: a gRPC "trailers-only" answer). Body and
 * headers are copied. If the stream or connection is gone, only frees r. */
void h2_respond(h2_req_t *r, int status, const h2_header_t *hdrs, size_t n_hdrs, const void *body, size_t n,
                const h2_header_t *trailers, size_t n_trailers);

#endif
