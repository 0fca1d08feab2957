/* HTTP/1.1 connections on libevent bufferevents (http.h), plain or TLS:
 * reading one request at a time, the phase timers, responses and lingering
 * close. Accepting is listen.c's, byte-level parsing http1_parse.c's; routing
 * is the handler's job. */
#include "net/http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "base/log.h"
#include "net/h2_int.h"
#include "net/http1_parse.h"
#include "net/listen.h"
#include "net/tls.h"

enum conn_state {
	ST_HEAD,     /* reading a request line and headers */
	ST_BODY,     /* reading a body */
	ST_HANDLING, /* the handler owns the request */
	ST_WRITING,  /* response queued, waiting for it to drain */
	ST_LINGER,   /* write side shut, discarding input until EOF or timeout */
};

enum timer_kind { T_NONE, T_HEADER, T_BODY, T_IDLE, T_LINGER };

struct http_conn {
	http_server_t *srv;
	struct bufferevent *bev;
	struct event *timer;
	struct http_conn *prev, *next;
	http_req_t *req; /* being read, or owned by the handler in ST_HANDLING */
	enum conn_state st;
	enum timer_kind timer_kind;
	http_scan_t scan;
	http_chunked_t chunk;
	int chunked;
	uint64_t body_left;    /* Content-Length bytes still to read */
	int body_unread;       /* a body was announced and not fully read */
	int close_after;       /* close once the response has drained */
	int peer_eof;          /* the client shut its write side */
	size_t out_at_timeout; /* output left at the last write timeout; SIZE_MAX: none yet */
	int spoke;             /* a request head arrived: no longer an h2c candidate */
	int plain;             /* not TLS: responses and bodies use the socket directly */
	char peer[64];
};

struct http_server {
	struct event_base *base;
	listen_t lis;
	http_opts_t o;
	struct http_conn *conns, *oldest; /* newest first; oldest = the list's tail */
	int draining;                     /* stop_accepting called: answer what is in flight, then close */
	h2_server_t *h2c;                 /* prior-knowledge h2c connections (opts.h2c); NULL: none */
};

/* The HTTP/2 client preface (RFC 9113 3.4). */
static const char h2_preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
#define H2_PREFACE_LEN (sizeof h2_preface - 1)

static void conn_free(struct http_conn *c);
static int conn_process(struct http_conn *c);

const char *http_reason(int status)
{
	switch (status) {
	case 100:
		return "Continue";
	case 200:
		return "OK";
	case 201:
		return "Created";
	case 202:
		return "Accepted";
	case 204:
		return "No Content";
	case 301:
		return "Moved Permanently";
	case 302:
		return "Found";
	case 304:
		return "Not Modified";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 409:
		return "Conflict";
	case 411:
		return "Length Required";
	case 413:
		return "Content Too Large";
	case 415:
		return "Unsupported Media Type";
	case 417:
		return "Expectation Failed";
	case 422:
		return "Unprocessable Content";
	case 429:
		return "Too Many Requests";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 501:
		return "Not Implemented";
	case 502:
		return "Bad Gateway";
	case 503:
		return "Service Unavailable";
	case 504:
		return "Gateway Timeout";
	case 505:
		return "HTTP Version Not Supported";
	default:
		return "Unknown";
	}
}

const slice_t *http_header(const http_req_t *r, const char *lowercase_name)
{
	for (uint32_t i = 0; i < r->n_hdrs; i++)
		if (slice_eq_cstr(r->hdr_names[i], lowercase_name))
			return &r->hdr_values[i];
	return NULL;
}

static void req_free(http_req_t *r)
{
	net_budget_give(r->_budget, r->_taken);
	buf_free(&r->body);
	free(r->hdr_names);
	free(r->_head);
	free(r);
}

/* "32 MiB", "64 KiB" or "100 bytes": a limit as people read it. */
static void format_size(size_t n, char *out, size_t cap)
{
	if (n >= (1u << 20) && n % (1u << 20) == 0)
		snprintf(out, cap, "%zu MiB", n >> 20);
	else if (n >= 1024 && n % 1024 == 0)
		snprintf(out, cap, "%zu KiB", n >> 10);
	else
		snprintf(out, cap, "%zu bytes", n);
}

static void timer_set(struct http_conn *c, enum timer_kind kind, int ms)
{
	c->timer_kind = kind;
	if (kind == T_NONE) {
		evtimer_del(c->timer);
		return;
	}
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	evtimer_add(c->timer, &tv);
}

/* A response's head into dst (snprintf's rule: the full length returned,
 * what fits written); length NULL: no Content-Length (204, 304). */
static size_t format_head(char *dst, size_t cap, int status, const char *ctype, const char *extra,
                          const size_t *length, int keep)
{
	char len[48] = "";
	if (length)
		snprintf(len, sizeof len, "Content-Length: %zu\r\n", *length);
	return (size_t)snprintf(dst, cap, "HTTP/1.1 %d %s\r\n%s%s%s%sConnection: %s\r\n%s\r\n", status,
	                        http_reason(status), ctype ? "Content-Type: " : "", ctype ? ctype : "",
	                        ctype ? "\r\n" : "", len, keep ? "keep-alive" : "close", extra ? extra : "");
}

/* Queues a response on c. keep = 0 closes the connection once it drains.
 * On a plain socket with nothing else waiting to go out, the response is
 * written at once, in this callback, with one writev of its head and body:
 * libevent 2.1 would copy it into the bufferevent, arm EV_WRITE and write
 * on its next pass, two epoll_ctl calls and a pass for every response.
 * When the socket took it all, write_cb runs deferred, as it would have
 * after that pass (not from here: the caller may be inside conn_process).
 * What the socket did not take, and any error, goes the usual way
 * (EV_WRITE with its timeout; event_cb). */
static void conn_write_response(struct http_conn *c, int status, const char *ctype, const char *extra,
                                const void *body, size_t n, int with_body, int keep)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	int no_body = status == 204 || status == 304;
	char stack[512], *head = stack;
	size_t head_n = format_head(stack, sizeof stack, status, ctype, extra, no_body ? NULL : &n, keep);
	if (head_n >= sizeof stack) { /* only with a long extra header */
		head = xmalloc(head_n + 1);
		format_head(head, head_n + 1, status, ctype, extra, no_body ? NULL : &n, keep);
	}
	size_t body_n = with_body && !no_body ? n : 0;
	size_t sent = 0;
	if (c->plain && evbuffer_get_length(out) == 0) {
		struct iovec v[2] = {{head, head_n}, {(void *)body, body_n}};
		ssize_t w = writev(bufferevent_getfd(c->bev), v, body_n ? 2 : 1);
		sent = w > 0 ? (size_t)w : 0;
	}
	if (sent < head_n)
		evbuffer_add(out, head + sent, head_n - sent);
	size_t body_sent = sent > head_n ? sent - head_n : 0;
	if (body_sent < body_n)
		evbuffer_add(out, (const char *)body + body_sent, body_n - body_sent);
	if (head != stack)
		free(head);
	c->out_at_timeout = SIZE_MAX;
	c->close_after = !keep;
	c->st = ST_WRITING;
	timer_set(c, T_NONE, 0);
	if (evbuffer_get_length(out) == 0)
		bufferevent_trigger(c->bev, EV_WRITE, BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
	else /* arms the write timeout only now that there is output */
		bufferevent_enable(c->bev, EV_WRITE);
}

static void format_error_body(const http_server_t *s, int status, const char *msg, buf_t *body,
                              const char **ctype)
{
	*ctype = "application/json";
	if (s->o.format_error) {
		s->o.format_error(status, msg, body, ctype, s->o.ctx);
		return;
	}
	buf_puts(body, "{\"error\":");
	buf_json_str(body, slice_cstr(msg));
	buf_puts(body, "}\n");
}

/* Answers with a server-made error (extra: more header lines or NULL) and
 * closes; drops a request being read. */
static void conn_error_extra(struct http_conn *c, int status, const char *msg, const char *extra)
{
	if (c->req) {
		req_free(c->req);
		c->req = NULL;
	}
	buf_t body;
	buf_init(&body, SIZE_MAX);
	const char *ctype;
	format_error_body(c->srv, status, msg, &body, &ctype);
	conn_write_response(c, status, ctype, extra, body.p, body.n, 1, 0);
	buf_free(&body);
	log_msg(LOG_DEBUG, "http request rejected", "listener=%s peer=%s status=%d error=\"%s\"",
	        c->srv->o.name, c->peer, status, msg);
}

static void conn_error(struct http_conn *c, int status, const char *msg)
{
	conn_error_extra(c, status, msg, NULL);
}

void http_respond(http_req_t *r, int status, const char *content_type, const char *extra_headers,
                  const void *body, size_t n)
{
	struct http_conn *c = r->_conn;
	if (c) {
		int keep = r->_keep_alive && !c->body_unread && !c->srv->draining;
		int with_body = !slice_eq_cstr(r->method, "HEAD");
		c->req = NULL;
		conn_write_response(c, status, content_type, extra_headers, body, n, with_body, keep);
	}
	req_free(r);
}

void http_respond_error(http_req_t *r, int status, const char *msg)
{
	struct http_conn *c = r->_conn;
	if (!c) {
		req_free(r);
		return;
	}
	buf_t body;
	buf_init(&body, SIZE_MAX);
	const char *ctype;
	format_error_body(c->srv, status, msg, &body, &ctype);
	http_respond(r, status, ctype, NULL, body.p, body.n);
	buf_free(&body);
}

/* Drops CR/LF between requests (RFC 9112 2.2 allows them). */
static void skip_blank_lines(struct evbuffer *in)
{
	for (;;) {
		struct evbuffer_iovec v;
		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1 || v.iov_len == 0)
			return;
		const uint8_t *p = v.iov_base;
		size_t k = 0;
		while (k < v.iov_len && (p[k] == '\r' || p[k] == '\n'))
			k++;
		if (k == 0)
			return;
		evbuffer_drain(in, k);
		if (k < v.iov_len)
			return;
	}
}

/* Looks for the end of the head in unscanned input; 0 if not there yet. */
static size_t find_head_end(struct http_conn *c, struct evbuffer *in, size_t limit)
{
	while (c->scan.scanned < limit) {
		struct evbuffer_ptr pos;
		struct evbuffer_iovec v[8];
		if (evbuffer_ptr_set(in, &pos, c->scan.scanned, EVBUFFER_PTR_SET) < 0)
			return 0;
		int nv = evbuffer_peek(in, (ev_ssize_t)(limit - c->scan.scanned), &pos, v, 8);
		if (nv <= 0)
			return 0;
		for (int i = 0; i < nv && i < 8; i++) {
			size_t n = v[i].iov_len;
			if (n > limit - c->scan.scanned)
				n = limit - c->scan.scanned;
			size_t end = http_scan_head(&c->scan, v[i].iov_base, n);
			if (end)
				return end;
			if (c->scan.scanned >= limit)
				return 0;
		}
	}
	return 0;
}

enum { STEP_NEED = 0, STEP_NEXT = 1, STEP_STOP = 2, STEP_GONE = 3 /* c was freed or handed off */ };

static void conn_unlink(struct http_conn *c);

/* The first bytes of a new connection against the HTTP/2 preface: 1 it is
 * the preface, 0 they may still become it, -1 they are not it. */
static int preface_match(struct evbuffer *in)
{
	uint8_t head[H2_PREFACE_LEN];
	size_t n = evbuffer_get_length(in);
	if (n > H2_PREFACE_LEN)
		n = H2_PREFACE_LEN;
	evbuffer_copyout(in, head, n);
	if (memcmp(head, h2_preface, n) != 0)
		return -1;
	return n == H2_PREFACE_LEN ? 1 : 0;
}

/* Hands c's connection (counted in this listener) to the h2c server. */
static void conn_to_h2(struct http_conn *c)
{
	http_server_t *s = c->srv;
	struct bufferevent *bev = c->bev;
	char peer[sizeof c->peer];
	memcpy(peer, c->peer, sizeof peer);
	conn_unlink(c);
	event_free(c->timer);
	free(c);
	bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
	h2_server_adopt_on(s->h2c, bev, peer, &s->lis);
}

static void dispatch(struct http_conn *c)
{
	c->st = ST_HANDLING;
	c->body_unread = 0;
	timer_set(c, T_NONE, 0);
	http_server_t *s = c->srv;
	s->o.on_request(c->req, s->o.ctx);
}

/* Builds c->req from a complete head; answers errors itself. */
static int start_request(struct http_conn *c, uint8_t *head, size_t n)
{
	http_server_t *s = c->srv;
	http_head_t h;
	http_framing_t f;
	int status;
	const char *msg;
	if (http_parse_head(head, n, &h, &status, &msg) < 0) {
		free(head);
		conn_error(c, status, msg);
		return STEP_STOP;
	}
	http_req_t *r = xcalloc(1, sizeof *r);
	r->_head = head;
	r->method = h.method;
	r->target = h.target;
	http_split_target(h.target, &r->path, &r->query);
	r->hdr_names = h.names;
	r->hdr_values = h.values;
	r->n_hdrs = h.n;
	r->version_minor = h.minor;
	buf_init(&r->body, s->o.max_body);
	snprintf(r->_peer, sizeof r->_peer, "%s", c->peer);
	r->peer = slice_cstr(r->_peer);
	r->_conn = c;
	c->req = r;
	if (http_framing_of(&h, &f, &status, &msg) < 0) {
		conn_error(c, status, msg);
		return STEP_STOP;
	}
	r->_keep_alive = f.keep_alive;
	c->chunked = f.chunked;
	memset(&c->chunk, 0, sizeof c->chunk);
	c->body_left = f.content_length;
	c->body_unread = f.chunked || f.content_length > 0;
	/* on_headers first: it may refuse the caller, or answer an over-long body in its route's own form. */
	if (s->o.on_headers) {
		int rc = s->o.on_headers(r, s->o.ctx);
		if (!c->req)
			return STEP_STOP; /* answered (r is freed) */
		if (rc) {
			conn_error(c, 500, "request refused without an answer");
			return STEP_STOP;
		}
	}
	if (!f.chunked && f.content_length > s->o.max_body) {
		char lim[32], m[128];
		format_size(s->o.max_body, lim, sizeof lim);
		snprintf(m, sizeof m, "request body is %llu bytes; the limit is %s",
		         (unsigned long long)f.content_length, lim);
		conn_error(c, 413, m);
		return STEP_STOP;
	}
	if (!c->body_unread) {
		dispatch(c);
		return STEP_STOP;
	}
	struct evbuffer *in = bufferevent_get_input(c->bev);
	if (f.expect_continue && evbuffer_get_length(in) == 0) {
		bufferevent_write(c->bev, "HTTP/1.1 100 Continue\r\n\r\n", 25);
		bufferevent_enable(c->bev, EV_WRITE);
	}
	if (!f.chunked && f.content_length < (1u << 20))
		buf_reserve(&r->body, (size_t)f.content_length);
	c->st = ST_BODY;
	timer_set(c, T_BODY, s->o.body_timeout_ms);
	return STEP_NEXT;
}

static int read_head(struct http_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	if (c->scan.scanned == 0)
		skip_blank_lines(in);
	size_t len = evbuffer_get_length(in);
	if (len == 0)
		return STEP_NEED;
	if (c->srv->h2c && !c->spoke && c->scan.scanned == 0) {
		int m = preface_match(in);
		if (m == 0)
			return STEP_NEED; /* the header timer runs on */
		if (m == 1) {
			conn_to_h2(c);
			return STEP_GONE;
		}
	}
	if (c->timer_kind == T_IDLE)
		timer_set(c, T_HEADER, c->srv->o.header_timeout_ms);
	size_t limit = len < LIMIT_HEADER_BYTES ? len : LIMIT_HEADER_BYTES;
	size_t end = find_head_end(c, in, limit);
	if (!end) {
		if (c->scan.scanned >= LIMIT_HEADER_BYTES) {
			char lim[32], m[96];
			format_size(LIMIT_HEADER_BYTES, lim, sizeof lim);
			snprintf(m, sizeof m, "request line and headers exceed the %s limit", lim);
			conn_error(c, 431, m);
			return STEP_STOP;
		}
		return STEP_NEED;
	}
	memset(&c->scan, 0, sizeof c->scan);
	c->spoke = 1;
	uint8_t *head = xmalloc(end);
	evbuffer_remove(in, head, end);
	return start_request(c, head, end);
}

static void body_too_big(struct http_conn *c)
{
	char lim[32], m[96];
	format_size(c->srv->o.max_body, lim, sizeof lim);
	snprintf(m, sizeof m, "request body exceeds the %s limit", lim);
	conn_error(c, 413, m);
}

/* Counts n more body bytes of c's request against the process's budget;
 * -1 after answering 503 when that would cross it. */
static int body_take(struct http_conn *c, size_t n)
{
	http_req_t *r = c->req;
	if (net_budget_take(c->srv->o.budget, n) == 0) {
		r->_budget = c->srv->o.budget;
		r->_taken += n;
		return 0;
	}
	char lim[32], m[160];
	format_size(c->srv->o.budget->limit, lim, sizeof lim);
	snprintf(m, sizeof m, "the server holds %s of request bodies already; retry shortly", lim);
	conn_error_extra(c, 503, m, "Retry-After: 1\r\n");
	return -1;
}

/* Plain socket: reads more of a Content-Length body straight into it, in
 * this callback (at most BODY_DIRECT_READ bytes more than it holds room
 * for). libevent 2.1 reads at most 4 KiB a pass and asks FIONREAD first:
 * a 6 KB profile took two passes and four system calls, now one pass and
 * three. Nothing read (the rest not here yet, EOF, an error) leaves it to
 * the bufferevent's next read, which sees EOF and errors itself. 1 when
 * bytes were read, 0 when none, -1 after answering (too big, no budget). */
#define BODY_DIRECT_READ (64u << 10)
static int read_body_direct(struct http_conn *c)
{
	buf_t *body = &c->req->body;
	size_t room = body->cap - body->n;
	size_t want = room > BODY_DIRECT_READ ? room : BODY_DIRECT_READ;
	if (want > c->body_left)
		want = (size_t)c->body_left;
	if (buf_reserve(body, want) < 0) {
		body_too_big(c);
		return -1;
	}
	ssize_t got = recv(bufferevent_getfd(c->bev), body->p + body->n, want, 0);
	if (got <= 0)
		return 0;
	if (body_take(c, (size_t)got) < 0)
		return -1;
	body->n += (size_t)got;
	c->body_left -= (uint64_t)got;
	return 1;
}

static int read_body(struct http_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	buf_t *body = &c->req->body;
	size_t avail = evbuffer_get_length(in);
	if (avail)
		timer_set(c, T_BODY, c->srv->o.body_timeout_ms);
	if (!c->chunked) {
		size_t k = avail < c->body_left ? avail : (size_t)c->body_left;
		if (k) {
			if (buf_reserve(body, k) < 0) {
				body_too_big(c);
				return STEP_STOP;
			}
			if (body_take(c, k) < 0)
				return STEP_STOP;
			evbuffer_remove(in, body->p + body->n, k);
			body->n += k;
			c->body_left -= k;
		}
		if (c->body_left && c->plain) {
			int r = read_body_direct(c);
			if (r < 0)
				return STEP_STOP;
			if (r > 0 && !avail)
				timer_set(c, T_BODY, c->srv->o.body_timeout_ms);
		}
		if (c->body_left)
			return STEP_NEED;
		dispatch(c);
		return STEP_STOP;
	}
	while (avail) {
		struct evbuffer_iovec v;
		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
			break;
		size_t used = 0;
		const char *msg = NULL;
		size_t before = body->n;
		int rc = http_chunked_feed(&c->chunk, v.iov_base, v.iov_len, body, c->srv->o.max_body, &used,
		                           &msg);
		evbuffer_drain(in, used);
		avail -= used;
		if (body->n > before && body_take(c, body->n - before) < 0)
			return STEP_STOP;
		if (rc == HTTP_DONE) {
			dispatch(c);
			return STEP_STOP;
		}
		if (rc == HTTP_TOO_BIG) {
			body_too_big(c);
			return STEP_STOP;
		}
		if (rc == HTTP_BAD) {
			conn_error(c, 400, msg);
			return STEP_STOP;
		}
	}
	return STEP_NEED;
}

/* Runs the request state machine over buffered input. Returns -1 if c was freed. */
static int conn_process(struct http_conn *c)
{
	for (;;) {
		int step;
		if (c->st == ST_HEAD)
			step = read_head(c);
		else if (c->st == ST_BODY)
			step = read_body(c);
		else
			return 0;
		if (step == STEP_GONE)
			return -1;
		if (step == STEP_NEED)
			break;
	}
	if (c->peer_eof) {
		/* the client will send nothing more: an unfinished request never completes */
		conn_free(c);
		return -1;
	}
	return 0;
}

static void start_linger(struct http_conn *c)
{
	if (c->peer_eof) {
		conn_free(c);
		return;
	}
	c->st = ST_LINGER;
	tls_close_notify(c->bev);
	shutdown(bufferevent_getfd(c->bev), SHUT_WR);
	struct evbuffer *in = bufferevent_get_input(c->bev);
	evbuffer_drain(in, evbuffer_get_length(in));
	bufferevent_enable(c->bev, EV_READ);
	int ms = c->srv->o.idle_timeout_ms < LIMIT_LINGER_MS ? c->srv->o.idle_timeout_ms : LIMIT_LINGER_MS;
	timer_set(c, T_LINGER, ms);
}

static void read_cb(struct bufferevent *bev, void *arg)
{
	struct http_conn *c = arg;
	if (c->st == ST_LINGER) {
		struct evbuffer *in = bufferevent_get_input(bev);
		evbuffer_drain(in, evbuffer_get_length(in));
		return;
	}
	conn_process(c);
}

static void write_cb(struct bufferevent *bev, void *arg)
{
	struct http_conn *c = arg;
	if (c->st != ST_WRITING)
		return; /* "100 Continue" went out */
	if (c->close_after) {
		start_linger(c);
		return;
	}
	c->st = ST_HEAD;
	memset(&c->scan, 0, sizeof c->scan);
	if (evbuffer_get_length(bufferevent_get_input(bev))) {
		timer_set(c, T_HEADER, c->srv->o.header_timeout_ms);
	} else if (c->srv->draining) {
		conn_free(c); /* shutting down and nothing more was asked */
		return;
	} else {
		timer_set(c, T_IDLE, c->srv->o.idle_timeout_ms);
	}
	conn_process(c);
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct http_conn *c = arg;
	if (what & BEV_EVENT_CONNECTED)
		return; /* TLS handshake done; the header timer keeps running */
	if (what & BEV_EVENT_TIMEOUT) {
		/* Drop only after a second timeout with no byte sent in between: a
		 * loop thread that was itself stalled also reports a timeout. */
		size_t left = evbuffer_get_length(bufferevent_get_output(bev));
		if (left == 0 || left != c->out_at_timeout) {
			c->out_at_timeout = left;
			bufferevent_enable(bev, EV_WRITE);
			return;
		}
	}
	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR)) {
		c->peer_eof = 1;
		if (c->st == ST_HANDLING || c->st == ST_WRITING)
			return; /* answer what was asked, then close */
	}
	if (what & BEV_EVENT_ERROR) {
		const char *tls = tls_error(bev); /* a failed handshake: plain HTTP on a TLS port... */
		log_msg(LOG_DEBUG, "http connection failed", "listener=%s peer=%s error=\"%s\"",
		        c->srv->o.name, c->peer,
		        tls ? tls : evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
	}
	conn_free(c); /* EOF mid-request, error, write timeout */
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct http_conn *c = arg;
	int started = c->scan.scanned > 0 || evbuffer_get_length(bufferevent_get_input(c->bev)) > 0;
	switch (c->timer_kind) {
	case T_HEADER:
		if (started) {
			conn_error(c, 408, "timed out waiting for the request headers");
			return;
		}
		break;
	case T_BODY:
		conn_error(c, 408, "timed out waiting for the request body");
		return;
	default:
		break;
	}
	conn_free(c);
}

/* Takes c off its server's list. */
static void conn_unlink(struct http_conn *c)
{
	http_server_t *s = c->srv;
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		s->oldest = c->prev;
}

static void conn_free(struct http_conn *c)
{
	http_server_t *s = c->srv;
	conn_unlink(c);
	listen_conn_closed(&s->lis);
	if (c->req) {
		if (c->st == ST_HANDLING)
			c->req->_conn = NULL; /* the handler still owns it */
		else
			req_free(c->req);
	}
	event_free(c->timer);
	tls_close_notify(c->bev);
	bufferevent_free(c->bev);
	free(c);
}

/* At the connection cap (listen.h): closes the oldest connection that is
 * waiting for a request head (new and never spoke, slowly sending one, or
 * idle between requests), else the oldest h2c one without a stream.
 * Requests being read, handled or answered are never cut. 1 when one was
 * closed. */
static int conn_evict(void *arg)
{
	http_server_t *s = arg;
	for (struct http_conn *c = s->oldest; c; c = c->prev)
		if (c->st == ST_HEAD) {
			conn_free(c);
			return 1;
		}
	return s->h2c && h2_server_evict(s->h2c);
}

/* A new connection from the listener (listen.h). */
static void conn_start(void *arg, struct bufferevent *bev, const char *peer)
{
	http_server_t *s = arg;
	struct http_conn *c = xcalloc(1, sizeof *c);
	c->srv = s;
	c->bev = bev;
	c->plain = !tls_is(bev);
	c->timer = xcheck(evtimer_new(s->base, timer_cb, c));
	snprintf(c->peer, sizeof c->peer, "%s", peer);
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	else
		s->oldest = c;
	s->conns = c;
	bufferevent_setcb(bev, read_cb, write_cb, event_cb, c);
	/* reads stop while this much is buffered: a head at most, or pipelined
	 * requests waiting for the current one */
	bufferevent_setwatermark(bev, EV_READ, 0, LIMIT_HEADER_BYTES + 1);
	struct timeval wtv = {s->o.write_timeout_ms / 1000, (s->o.write_timeout_ms % 1000) * 1000};
	bufferevent_set_timeouts(bev, NULL, &wtv);
	bufferevent_enable(bev, EV_READ); /* EV_WRITE when there is something to write */
	timer_set(c, T_HEADER, s->o.header_timeout_ms);
}

http_server_t *http_server_new(struct event_base *base, const char *addr, const http_opts_t *o, err_t *err)
{
	if (!o->on_request) {
		err_set(err, 500, "http server %s: no on_request handler", o->name ? o->name : "");
		return NULL;
	}
	http_server_t *s = xcalloc(1, sizeof *s);
	s->base = base;
	s->o = *o;
	if (!s->o.max_body)
		s->o.max_body = LIMIT_BODY_BYTES;
	if (s->o.header_timeout_ms <= 0)
		s->o.header_timeout_ms = LIMIT_HEADER_MS;
	if (s->o.body_timeout_ms <= 0)
		s->o.body_timeout_ms = LIMIT_BODY_PAUSE_MS;
	if (s->o.idle_timeout_ms <= 0)
		s->o.idle_timeout_ms = LIMIT_IDLE_MS;
	if (s->o.write_timeout_ms <= 0)
		s->o.write_timeout_ms = LIMIT_WRITE_PAUSE_MS;
	listen_opts_t lo = {.kind = "http",
	                    .name = o->name,
	                    .max_conns = o->max_conns,
	                    .ssl_ctx = o->ssl_ctx,
	                    .on_conn = conn_start,
	                    .evict = conn_evict,
	                    .ctx = s};
	if (listen_open(&s->lis, base, addr, &lo, err) < 0) {
		free(s);
		return NULL;
	}
	s->o.name = s->lis.o.name; /* the listener's copy */
	if (o->h2c) {
		h2_opts_t ho = *o->h2c;
		ho.name = ho.name ? ho.name : s->o.name;
		ho.budget = ho.budget ? ho.budget : s->o.budget;
		ho.max_body = ho.max_body ? ho.max_body : s->o.max_body;
		ho.idle_timeout_ms = ho.idle_timeout_ms > 0 ? ho.idle_timeout_ms : s->o.idle_timeout_ms;
		ho.read_timeout_ms = ho.read_timeout_ms > 0 ? ho.read_timeout_ms : s->o.body_timeout_ms;
		ho.write_timeout_ms = ho.write_timeout_ms > 0 ? ho.write_timeout_ms : s->o.write_timeout_ms;
		s->h2c = h2_server_detached(base, &ho);
		s->o.h2c = NULL; /* the caller's; not kept */
	}
	return s;
}

int http_server_port(const http_server_t *s)
{
	return s->lis.port;
}

uint32_t http_server_conns(const http_server_t *s)
{
	return s->lis.n_conns;
}

void http_server_stop_accepting(http_server_t *s)
{
	if (s->draining)
		return;
	s->draining = 1;
	listen_stop(&s->lis);
	if (s->h2c)
		h2_server_stop_accepting(s->h2c); /* GOAWAY to the h2c connections */
	struct http_conn *c = s->conns;
	while (c) {
		struct http_conn *next = c->next;
		if (c->st == ST_HEAD && c->scan.scanned == 0 &&
		    evbuffer_get_length(bufferevent_get_input(c->bev)) == 0)
			conn_free(c); /* idle: no request in flight */
		c = next;
	}
}

void http_server_free(http_server_t *s)
{
	if (!s)
		return;
	listen_stop(&s->lis);
	while (s->conns)
		conn_free(s->conns);
	h2_server_free(s->h2c); /* its connections uncount themselves from s->lis */
	listen_close(&s->lis);
	free(s);
}
