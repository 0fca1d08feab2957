/* The listening side shared by Kiln's HTTP/1.1 and HTTP/2 servers: binding an
 * address, accepting under a connection cap, pausing after accept errors,
 * naming the peer, and wrapping each socket in a bufferevent (plain TCP or
 * server-side TLS). What a connection then speaks is the server's business.
 * Private to net/: other modules use http.h and h2.h. */
#ifndef KILN_NET_LISTEN_H
#define KILN_NET_LISTEN_H

#include <stdint.h>

#include "base/err.h"

struct bufferevent;
struct event;
struct event_base;
struct evconnlistener;
struct ssl_ctx_st;

/* A new connection, on the loop thread: bev is the callee's from now on (it
 * frees it); peer is "ip:port" ("[v6]:port", IPv4-mapped IPv6 shown as IPv4),
 * valid during the call. The connection is already counted in n_conns. */
typedef void (*listen_conn_fn)(void *ctx, struct bufferevent *bev, const char *peer);

typedef struct {
	const char *kind;           /* "http", "h2": first word of log messages (static) */
	const char *name;           /* listener name for logs; copied; NULL = kind */
	uint32_t max_conns;         /* 0 = LIMIT_CONNECTIONS; at the cap, evict (if set) makes room,
	                               else the new connection is closed at once */
	struct ssl_ctx_st *ssl_ctx; /* borrowed; NULL = plain TCP. Each connection gets SSL_new(ssl_ctx) */
	listen_conn_fn on_conn;     /* required */
	/* Called at the cap: closes the server's least valuable connection (one
	 * that has not sent a whole request head for the longest time) and
	 * returns 1, or returns 0 when every connection is busy. A flood of idle
	 * or slow (slowloris) connections then costs its own oldest members, not
	 * the clients that send requests. */
	int (*evict)(void *ctx);
	void *ctx;
} listen_opts_t;

typedef struct listen {
	listen_opts_t o;  /* o.name is the listener's own copy, o.max_conns the limit in force */
	uint32_t n_conns; /* open connections: counted at accept, uncounted by listen_conn_closed */
	int port;         /* the port bound (the real one after port 0) */
	struct event_base *_base;
	struct evconnlistener *_lis; /* NULL once stopped */
	struct event *_retry;        /* re-enables accepting after an accept error */
	uint64_t _rejected;          /* connections closed at the cap */
	uint64_t _evicted;           /* idle connections closed to make room */
} listen_t;

/* Binds and listens on addr: "host:port", ":port" (every interface, IPv6 and
 * IPv4 where the host allows), "[v6]:port"; port 0 picks a free port. Host
 * names resolve here (blocking: call at startup). Returns 0, or -1 with err
 * (status 500) and nothing to free. Loop thread, or before the loop runs. */
int listen_open(listen_t *l, struct event_base *base, const char *addr, const listen_opts_t *o, err_t *err);

/* A connection handed to on_conn has closed. */
static inline void listen_conn_closed(listen_t *l)
{
	l->n_conns--;
}

/* Closes the listening socket; open connections are untouched. Idempotent. */
void listen_stop(listen_t *l);

/* listen_stop, then frees what listen_open allocated (not l itself). */
void listen_close(listen_t *l);

#endif
