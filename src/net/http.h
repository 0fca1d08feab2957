/* Kiln's HTTP/1.1 server on libevent bufferevents: keep-alive, pipelining one
 * request at a time, Content-Length and chunked bodies, 100-continue, per-phase
 * timeouts, body and header limits, a connection cap, optional TLS, and
 * optionally prior-knowledge h2c on the same listener (handed to an HTTP/2
 * server, h2.h). No Upgrade: h2c, no routing. */
#ifndef KILN_NET_HTTP_H
#define KILN_NET_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/slice.h"
#include "net/budget.h"
#include "net/h2.h"

struct event_base;
struct http_conn;
struct ssl_ctx_st;

typedef struct http_server http_server_t;
typedef struct http_req http_req_t;

/* One request. Public fields are read-only for handlers (body may be taken
 * with buf_steal); fields starting with '_' are the server's. All slices point
 * into memory the request owns, valid until http_respond. */
struct http_req {
	slice_t method;      /* "GET", as sent (case-sensitive) */
	slice_t target;      /* request-target as sent */
	slice_t path;        /* target before '?' (absolute-form: scheme and host removed) */
	slice_t query;       /* raw text after '?', not decoded; empty if none */
	slice_t *hdr_names;  /* lowercased */
	slice_t *hdr_values; /* surrounding spaces trimmed */
	uint32_t n_hdrs;
	int version_minor;       /* 0 for HTTP/1.0, 1 for HTTP/1.1 */
	buf_t body;              /* the whole body, chunked coding removed */
	slice_t peer;            /* TCP peer "ip:port" ("[v6]:port"); IPv4-mapped IPv6 shown as IPv4 */
	struct http_conn *_conn; /* NULL once the connection is gone */
	uint8_t *_head;          /* owned copy of the request line and headers */
	int _keep_alive;
	char _peer[64];
	net_budget_t *_budget; /* the server's; _taken bytes of it are this body's */
	size_t _taken;
};

/* First value of a header, or NULL. lowercase_name must be lowercase. */
const slice_t *http_header(const http_req_t *r, const char *lowercase_name);

typedef struct {
	const char *name;     /* listener name for logs ("upload", "ui"); copied */
	size_t max_body;      /* 0 = LIMIT_BODY_BYTES */
	net_budget_t *budget; /* bodies of all servers together (budget.h); NULL = none */
	/* 0 = default (LIMIT_*_MS). header: from the first byte of a request (or from accept) to
	 * the end of its headers (10 s); body: longest pause between body bytes
	 * (60 s); idle: keep-alive wait for the next request (60 s); write: longest
	 * pause in sending a response while the client does not read (30 s; the
	 * connection is dropped after one to two such pauses). */
	int header_timeout_ms, body_timeout_ms, idle_timeout_ms, write_timeout_ms;
	uint32_t max_conns; /* 0 = LIMIT_CONNECTIONS; connections accepted past it are closed at once */
	/* Optional: TLS (tls_ctx_new(..., TLS_ALPN_HTTP1, ...)). Each connection
	 * gets SSL_new(ssl_ctx); the handshake counts against header_timeout_ms,
	 * and a failed one (a plain-HTTP client, say) closes the connection,
	 * logged at debug. Borrowed: keep it alive longer than the server. NULL =
	 * plain TCP. */
	struct ssl_ctx_st *ssl_ctx;
	/* Optional. Called after the headers, before the body is read (and before
	 * "100 Continue" is sent). Return 0 to read the body, or call http_respond
	 * and return 1 (the connection is then closed if a body was announced). */
	int (*on_headers)(http_req_t *r, void *ctx);
	/* Required. The whole request has been read. The handler owns r until it
	 * calls http_respond exactly once, now or later, on the loop thread. */
	void (*on_request)(http_req_t *r, void *ctx);
	/* Optional: the body of server-generated errors (400, 408, 413, 431, ...).
	 * Append to body (empty on entry) and set *content_type (a static string).
	 * Default: {"error":"msg"} as application/json. */
	void (*format_error)(int status, const char *msg, buf_t *body, const char **content_type, void *ctx);
	void *ctx;
	/* Optional: prior-knowledge h2c too. A connection whose first bytes are
	 * the HTTP/2 client preface ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") is
	 * handed, preface and all, to an HTTP/2 server the HTTP/1.1 server makes
	 * with these options (copied; its handlers and ctx are h2's). Unset
	 * fields take this server's: name, budget, max_body, idle_timeout_ms,
	 * read_timeout_ms (body_timeout_ms), write_timeout_ms. The connection
	 * keeps counting against max_conns (idle HTTP/2 ones may be evicted for
	 * room after idle HTTP/1.1 ones); stop_accepting sends them GOAWAY and
	 * http_server_conns counts them until they close. Only a connection's
	 * first bytes are looked at: an HTTP/1.1 connection stays HTTP/1.1. NULL
	 * = HTTP/1.1 only (the preface is then answered 505). */
	const h2_opts_t *h2c;
} http_opts_t;

/* Binds and listens on addr: "host:port", ":port" (every interface, IPv6 and
 * IPv4 where the host allows), "[::1]:port"; port 0 picks a free port. Host
 * names are resolved here (blocking: call at startup). Returns NULL and fills
 * err (status 500) on failure. Call on the loop thread or before the loop runs. */
http_server_t *http_server_new(struct event_base *base, const char *addr, const http_opts_t *o, err_t *err);

/* The port actually bound (useful after port 0). */
int http_server_port(const http_server_t *s);

/* Number of open connections (for tests and /metrics). */
uint32_t http_server_conns(const http_server_t *s);

/* Graceful shutdown, step one: closes the listening socket and idle
 * keep-alive connections. Requests being read or handled complete; their
 * responses say "Connection: close" and the connections then close. Loop
 * thread only. http_server_conns() reaching 0 means all are done. */
void http_server_stop_accepting(http_server_t *s);

/* Closes the listener and every connection at once; responses being written
 * are cut off. Requests that handlers still own are detached, not freed: the
 * handler must still call http_respond, which then only frees them. Call on
 * the loop thread or while the loop is not running. NULL is a no-op. */
void http_server_free(http_server_t *s);

/* Answers r and frees it (r must not be used afterwards). Loop thread only,
 * exactly once per request. Writes `HTTP/1.1 <status> <reason>`, Content-Type
 * (omitted if content_type is NULL), Content-Length, Connection, then
 * extra_headers verbatim (each line ending in "\r\n"; NULL for none) and the
 * body (omitted for HEAD requests and 204/304). The body is copied. If the
 * client has gone, only frees r. */
void http_respond(http_req_t *r, int status, const char *content_type, const char *extra_headers,
                  const void *body, size_t n);

/* Server-style error: the body made by opts.format_error (default JSON
 * {"error":"msg"}). Same contract as http_respond. */
void http_respond_error(http_req_t *r, int status, const char *msg);

/* Reason phrase for a status ("Not Found"); "Unknown" for unlisted codes. */
const char *http_reason(int status);

#endif
