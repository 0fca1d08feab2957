/* The HTTP/2 server (h2.h): nghttp2 sessions driven with mem_recv/mem_send
 * over bufferevents, requests gathered per stream, unary answers with
 * trailers, timers, GOAWAY and lingering close. Accepting (and TLS) is
 * listen.c's; the TLS context comes from tls.h. */
#include "net/h2.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <nghttp2/nghttp2.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "base/log.h"
#include "net/h2_int.h"
#include "net/listen.h"
#include "net/tls.h"

#define OUT_HIGH (256u << 10)     /* stop making frames (and reading) while this much output waits */
#define IN_HIGH (256u << 10)      /* libevent reads no further ahead than this */
#define STREAM_WINDOW (16u << 20) /* SETTINGS_INITIAL_WINDOW_SIZE */
#define CONN_WINDOW (32u << 20)   /* connection-level receive window */

struct h2_server {
	struct event_base *base;
	listen_t lis;
	h2_opts_t o;
	struct h2_conn *conns, *oldest; /* newest first; oldest = the list's tail */
	int draining;                   /* stop_accepting called */
};

enum req_state {
	RQ_HEADERS, /* headers arriving */
	RQ_BODY,    /* body arriving */
	RQ_HANDLER, /* complete; the handler owns it */
};

struct h2_stream {
	struct h2_conn *conn;
	struct h2_stream *prev, *next;
	int32_t id;
	h2_req_t *req; /* NULL once answered or dropped */
	int req_done;  /* END_STREAM received */
	uint8_t *resp; /* response body being sent */
	size_t resp_n, resp_off;
	nghttp2_nv *trailers; /* one block with the strings; NULL for none */
	size_t n_trailers;
};

struct h2_conn {
	h2_server_t *srv;
	listen_t *lis; /* the listener it counts against: the server's, or the HTTP/1 one it came from */
	struct bufferevent *bev;
	struct event *timer;
	nghttp2_session *ng;
	struct h2_conn *prev, *next;
	struct h2_stream *streams;
	uint32_t n_streams; /* streams with a struct (open at nghttp2) */
	uint32_t n_reading; /* requests in RQ_HEADERS / RQ_BODY */
	h2_req_t *detached; /* requests the handler owns whose stream is gone */
	size_t body_bytes;  /* request body bytes held (max_conn_body) */
	int in_recv;        /* inside nghttp2_session_mem_recv: output waits */
	int closing;        /* 1: output draining, then close; 2: lingering */
	size_t out_at_timeout;
	char peer[64];
};

static int conn_flush(struct h2_conn *c);
static void conn_free(struct h2_conn *c);

const slice_t *h2_header_get(const h2_req_t *r, const char *lowercase_name)
{
	for (uint32_t i = 0; i < r->n_hdrs; i++)
		if (slice_eq_cstr(r->hdr_names[i], lowercase_name))
			return &r->hdr_values[i];
	return NULL;
}

static void req_free(h2_req_t *r)
{
	net_budget_give(r->_budget, r->_taken);
	buf_free(&r->body);
	buf_free(&r->_hdr);
	free(r->_hdr_off);
	free(r->hdr_names);
	free(r);
}

/* Stops counting r's body against its connection's budget. */
static void req_uncount(struct h2_conn *c, h2_req_t *r)
{
	c->body_bytes -= r->_counted;
	r->_counted = 0;
}

/* The stream no longer has a request: answered, refused or reset. */
static void stream_drop_req(struct h2_stream *st)
{
	h2_req_t *r = st->req;
	if (!r)
		return;
	if (r->_state != RQ_HANDLER)
		st->conn->n_reading--;
	req_uncount(st->conn, r);
	st->req = NULL;
	req_free(r);
}

static void stream_reset(struct h2_stream *st, uint32_t code)
{
	nghttp2_submit_rst_stream(st->conn->ng, NGHTTP2_FLAG_NONE, st->id, code);
	stream_drop_req(st);
}

static void stream_free(struct h2_stream *st)
{
	struct h2_conn *c = st->conn;
	h2_req_t *r = st->req;
	if (r && r->_state == RQ_HANDLER) {
		/* the handler still owns it: keep it (and its bytes) on the connection */
		r->_st = NULL;
		r->_conn = c;
		r->_prev = NULL;
		r->_next = c->detached;
		if (c->detached)
			c->detached->_prev = r;
		c->detached = r;
		st->req = NULL;
	} else {
		stream_drop_req(st);
	}
	if (st->prev)
		st->prev->next = st->next;
	else
		c->streams = st->next;
	if (st->next)
		st->next->prev = st->prev;
	c->n_streams--;
	free(st->resp);
	free(st->trailers);
	free(st);
}

static void timer_arm(struct h2_conn *c, int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	evtimer_add(c->timer, &tv);
}

/* Idle (nothing in flight), read (a request arriving) or none (only answers pending). */
static void timer_update(struct h2_conn *c)
{
	if (c->closing)
		return;
	if (c->n_reading)
		timer_arm(c, c->srv->o.read_timeout_ms);
	else if (!c->n_streams)
		timer_arm(c, c->srv->o.idle_timeout_ms);
	else
		evtimer_del(c->timer);
}

/* ---- requests ---- */

static int on_begin_headers(nghttp2_session *ng, const nghttp2_frame *f, void *arg)
{
	struct h2_conn *c = arg;
	if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	struct h2_stream *st = xcalloc(1, sizeof *st);
	st->conn = c;
	st->id = f->hd.stream_id;
	st->next = c->streams;
	if (c->streams)
		c->streams->prev = st;
	c->streams = st;
	c->n_streams++;
	h2_req_t *r = xcalloc(1, sizeof *r);
	r->stream_id = st->id;
	r->_st = st;
	r->_state = RQ_HEADERS;
	buf_init(&r->_hdr, LIMIT_HEADER_BYTES);
	buf_init(&r->body, c->srv->o.max_body);
	snprintf(r->_peer, sizeof r->_peer, "%s", c->peer);
	r->peer = slice_cstr(r->_peer);
	st->req = r;
	c->n_reading++;
	nghttp2_session_set_stream_user_data(ng, st->id, st);
	return 0;
}

static int on_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *arg)
{
	struct h2_stream *st = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
	if (!st || !st->req || st->req->_state != RQ_HEADERS)
		return 0; /* request trailers, or a stream already answered: ignored */
	h2_req_t *r = st->req;
	uint32_t k = r->n_hdrs;
	if (k >= LIMIT_HEADER_FIELDS || buf_reserve(&r->_hdr, namelen + valuelen) < 0) {
		stream_reset(st, NGHTTP2_REFUSED_STREAM); /* headers over LIMIT_HEADER_BYTES */
		return 0;
	}
	r->_hdr_off = xgrow(r->_hdr_off, &r->_hdr_cap, 4 * (size_t)(k + 1), sizeof *r->_hdr_off);
	uint32_t *o = r->_hdr_off + 4 * k;
	o[0] = (uint32_t)r->_hdr.n;
	o[1] = (uint32_t)namelen;
	buf_append(&r->_hdr, name, namelen);
	o[2] = (uint32_t)r->_hdr.n;
	o[3] = (uint32_t)valuelen;
	buf_append(&r->_hdr, value, valuelen);
	r->n_hdrs = k + 1;
	return 0;
}

/* Headers complete: pseudo-headers to fields, the rest to the header arrays. */
static void req_finish_headers(h2_req_t *r)
{
	uint32_t n = r->n_hdrs, k = 0;
	r->hdr_names = xcalloc(2 * (size_t)n + 1, sizeof *r->hdr_names);
	r->hdr_values = r->hdr_names + n;
	for (uint32_t i = 0; i < n; i++) {
		const uint32_t *o = r->_hdr_off + 4 * i;
		slice_t name = slice_make(r->_hdr.p + o[0], o[1]);
		slice_t value = slice_make(r->_hdr.p + o[2], o[3]);
		if (slice_eq_cstr(name, ":method"))
			r->method = value;
		else if (slice_eq_cstr(name, ":path"))
			r->path = value;
		else if (slice_eq_cstr(name, ":scheme"))
			r->scheme = value;
		else if (slice_eq_cstr(name, ":authority"))
			r->authority = value;
		else if (name.n && name.p[0] != ':') {
			r->hdr_names[k] = name;
			r->hdr_values[k] = value;
			k++;
		}
	}
	memmove(r->hdr_values - (n - k), r->hdr_values, k * sizeof *r->hdr_values);
	r->hdr_values -= n - k;
	r->n_hdrs = k;
	free(r->_hdr_off);
	r->_hdr_off = NULL;
}

static void dispatch(struct h2_stream *st)
{
	h2_req_t *r = st->req;
	r->_state = RQ_HANDLER;
	st->conn->n_reading--;
	h2_server_t *s = st->conn->srv;
	s->o.on_request(r, s->o.ctx);
}

static int on_frame_recv(nghttp2_session *ng, const nghttp2_frame *f, void *arg)
{
	if (f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA)
		return 0;
	struct h2_stream *st = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
	if (!st)
		return 0;
	int end = (f->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
	if (end)
		st->req_done = 1;
	h2_req_t *r = st->req;
	if (!r)
		return 0;
	h2_server_t *s = st->conn->srv;
	if (r->_state == RQ_HEADERS && f->hd.type == NGHTTP2_HEADERS) {
		req_finish_headers(r);
		r->_state = RQ_BODY;
		if (s->o.on_headers && s->o.on_headers(r, s->o.ctx))
			return 0; /* answered (or the handler broke the contract: the stream waits for a
			             reset) */
	}
	if (end && st->req && st->req->_state == RQ_BODY)
		dispatch(st);
	return 0;
}

static int on_data_chunk(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                         void *arg)
{
	struct h2_conn *c = arg;
	struct h2_stream *st = nghttp2_session_get_stream_user_data(ng, id);
	if (!st || !st->req || st->req->_state != RQ_BODY)
		return 0; /* answered early: discarded (the window is still given back) */
	h2_req_t *r = st->req;
	h2_server_t *s = c->srv;
	if (c->body_bytes + len > s->o.max_conn_body) {
		log_msg(LOG_DEBUG, "h2 stream refused: connection buffer budget", "listener=%s peer=%s",
		        s->o.name, c->peer);
		stream_reset(st, NGHTTP2_REFUSED_STREAM);
		return 0;
	}
	if (net_budget_take(s->o.budget, len) < 0) {
		log_msg(LOG_DEBUG, "h2 stream refused: request bodies in flight over the budget",
		        "listener=%s peer=%s limit=%zu", s->o.name, c->peer, s->o.budget->limit);
		stream_reset(st, NGHTTP2_REFUSED_STREAM);
		return 0;
	}
	r->_budget = s->o.budget;
	r->_taken += len;
	if (buf_append(&r->body, data, len) < 0) {
		log_msg(LOG_DEBUG, "h2 stream reset: body over the limit", "listener=%s peer=%s max_body=%zu",
		        s->o.name, c->peer, s->o.max_body);
		stream_reset(st, NGHTTP2_ENHANCE_YOUR_CALM);
		return 0;
	}
	c->body_bytes += len;
	r->_counted += len;
	if (s->o.on_data)
		s->o.on_data(r, s->o.ctx);
	return 0;
}

static int on_stream_close(nghttp2_session *ng, int32_t id, uint32_t code, void *arg)
{
	struct h2_stream *st = nghttp2_session_get_stream_user_data(ng, id);
	if (st) {
		nghttp2_session_set_stream_user_data(ng, id, NULL);
		stream_free(st);
	}
	return 0;
}

/* An answer sent before the request ended: tell the client to stop sending. */
static int on_frame_send(nghttp2_session *ng, const nghttp2_frame *f, void *arg)
{
	if ((f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) ||
	    !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
		return 0;
	struct h2_stream *st = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
	if (st && !st->req_done)
		nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_NO_ERROR);
	return 0;
}

/* ---- responses ---- */

static ssize_t resp_read(nghttp2_session *ng, int32_t id, uint8_t *out, size_t len, uint32_t *flags,
                         nghttp2_data_source *src, void *arg)
{
	struct h2_stream *st = src->ptr;
	size_t n = st->resp_n - st->resp_off;
	if (n > len)
		n = len;
	if (n)
		memcpy(out, st->resp + st->resp_off, n);
	st->resp_off += n;
	if (st->resp_off == st->resp_n) {
		*flags |= NGHTTP2_DATA_FLAG_EOF;
		if (st->trailers) {
			*flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
			if (nghttp2_submit_trailer(ng, id, st->trailers, st->n_trailers) != 0)
				return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
		}
	}
	return (ssize_t)n;
}

/* One malloc'd block: n + extra nv entries, then copies of the strings. */
static nghttp2_nv *nv_pack(const h2_header_t *h, size_t n, size_t extra)
{
	size_t bytes = (n + extra) * sizeof(nghttp2_nv);
	for (size_t i = 0; i < n; i++)
		bytes += strlen(h[i].name) + strlen(h[i].value) + 2;
	nghttp2_nv *nv = xmalloc(bytes);
	uint8_t *p = (uint8_t *)(nv + n + extra);
	for (size_t i = 0; i < n; i++) {
		nghttp2_nv *v = &nv[extra + i];
		v->namelen = strlen(h[i].name);
		v->valuelen = strlen(h[i].value);
		v->name = memcpy(p, h[i].name, v->namelen + 1);
		p += v->namelen + 1;
		v->value = memcpy(p, h[i].value, v->valuelen + 1);
		p += v->valuelen + 1;
		v->flags = NGHTTP2_NV_FLAG_NONE;
	}
	return nv;
}

void h2_respond(h2_req_t *r, int status, const h2_header_t *hdrs, size_t n_hdrs, const void *body, size_t n,
                const h2_header_t *trailers, size_t n_trailers)
{
	struct h2_stream *st = r->_st;
	if (!st) {
		struct h2_conn *c = r->_conn;
		if (c) { /* detached: the stream closed while the handler worked */
			if (r->_prev)
				r->_prev->_next = r->_next;
			else
				c->detached = r->_next;
			if (r->_next)
				r->_next->_prev = r->_prev;
			req_uncount(c, r);
		}
		req_free(r);
		return;
	}
	struct h2_conn *c = st->conn;
	char code[8];
	snprintf(code, sizeof code, "%03d", status);
	nghttp2_nv *nv = nv_pack(hdrs, n_hdrs, 1);
	nv[0] = (nghttp2_nv){(uint8_t *)":status", (uint8_t *)code, 7, strlen(code), NGHTTP2_NV_FLAG_NONE};
	nghttp2_data_provider prd = {.source.ptr = st, .read_callback = resp_read};
	int with_data = n > 0 || n_trailers > 0;
	if (with_data) {
		st->resp = n ? xmalloc(n) : NULL;
		if (n)
			memcpy(st->resp, body, n);
		st->resp_n = n;
		st->trailers = n_trailers ? nv_pack(trailers, n_trailers, 0) : NULL;
		st->n_trailers = n_trailers;
	}
	int rv = nghttp2_submit_response(c->ng, st->id, nv, n_hdrs + 1, with_data ? &prd : NULL);
	free(nv);
	if (rv != 0) {
		log_msg(LOG_DEBUG, "h2 response not submitted", "listener=%s peer=%s error=\"%s\"",
		        c->srv->o.name, c->peer, nghttp2_strerror(rv));
		stream_reset(st, NGHTTP2_INTERNAL_ERROR);
	} else {
		stream_drop_req(st);
	}
	conn_flush(c); /* may free c */
}

/* ---- the connection ---- */

/* A closing connection: shut the write side and discard input until the
 * client closes or LIMIT_LINGER_MS pass (so the client reads our last frames
 * rather than a reset). */
static void start_linger(struct h2_conn *c)
{
	c->closing = 2;
	bufferevent_disable(c->bev, EV_WRITE);
	tls_close_notify(c->bev);
	shutdown(bufferevent_getfd(c->bev), SHUT_WR);
	struct evbuffer *in = bufferevent_get_input(c->bev);
	evbuffer_drain(in, evbuffer_get_length(in));
	bufferevent_enable(c->bev, EV_READ);
	timer_arm(c,
	          c->srv->o.idle_timeout_ms < LIMIT_LINGER_MS ? c->srv->o.idle_timeout_ms : LIMIT_LINGER_MS);
}

/* Moves what nghttp2 has to send into the bufferevent, up to OUT_HIGH; closes
 * the connection when the session is over. Returns -1 if c was freed. */
static int conn_flush(struct h2_conn *c)
{
	if (c->in_recv || c->closing)
		return 0;
	struct evbuffer *out = bufferevent_get_output(c->bev);
	while (evbuffer_get_length(out) < OUT_HIGH) {
		const uint8_t *data;
		ssize_t n = nghttp2_session_mem_send(c->ng, &data);
		if (n < 0) {
			log_msg(LOG_DEBUG, "h2 send failed", "listener=%s peer=%s error=\"%s\"",
			        c->srv->o.name, c->peer, nghttp2_strerror((int)n));
			conn_free(c);
			return -1;
		}
		if (n == 0)
			break;
		evbuffer_add(out, data, (size_t)n);
	}
	size_t left = evbuffer_get_length(out);
	if (left) {
		bufferevent_enable(c->bev, EV_WRITE); /* arms the write timeout while output waits */
		c->out_at_timeout = SIZE_MAX;
	}
	if (!nghttp2_session_want_read(c->ng) && !nghttp2_session_want_write(c->ng)) {
		c->closing = 1; /* done: GOAWAY exchanged and no stream left, or a fatal error */
		evtimer_del(c->timer);
		if (!left)
			start_linger(c);
		return 0;
	}
	if (left >= OUT_HIGH)
		bufferevent_disable(c->bev, EV_READ); /* the client is not reading: neither do we */
	else
		bufferevent_enable(c->bev, EV_READ);
	timer_update(c);
	return 0;
}

static void read_cb(struct bufferevent *bev, void *arg)
{
	struct h2_conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	if (c->closing) {
		evbuffer_drain(in, evbuffer_get_length(in));
		return;
	}
	while (evbuffer_get_length(in)) {
		struct evbuffer_iovec v;
		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
			break;
		c->in_recv = 1;
		ssize_t n = nghttp2_session_mem_recv(c->ng, v.iov_base, v.iov_len);
		c->in_recv = 0;
		if (n < 0) {
			log_msg(LOG_DEBUG, "h2 protocol error", "listener=%s peer=%s error=\"%s\"",
			        c->srv->o.name, c->peer, nghttp2_strerror((int)n));
			conn_free(c);
			return;
		}
		evbuffer_drain(in, (size_t)n);
	}
	conn_flush(c); /* also restarts the read or idle timer */
}

static void write_cb(struct bufferevent *bev, void *arg)
{
	struct h2_conn *c = arg;
	if (c->closing == 1) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			start_linger(c);
		return;
	}
	if (!c->closing)
		conn_flush(c);
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct h2_conn *c = arg;
	if (what & BEV_EVENT_CONNECTED)
		return; /* TLS handshake done */
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
	if (what & BEV_EVENT_ERROR) {
		const char *tls = tls_error(bev);
		log_msg(LOG_DEBUG, "h2 connection failed", "listener=%s peer=%s error=\"%s\"", c->srv->o.name,
		        c->peer, tls ? tls : evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
	}
	conn_free(c); /* EOF, error, write timeout: streams still open are cut */
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct h2_conn *c = arg;
	if (c->closing) {
		conn_free(c); /* lingered long enough */
		return;
	}
	if (!c->n_reading && c->n_streams)
		return; /* only answers pending: not the client's fault */
	log_msg(LOG_DEBUG, c->n_reading ? "h2 read timeout" : "h2 idle timeout", "listener=%s peer=%s",
	        c->srv->o.name, c->peer);
	nghttp2_session_terminate_session(c->ng, NGHTTP2_NO_ERROR);
	conn_flush(c);
}

static void conn_goaway(struct h2_conn *c)
{
	if (c->closing)
		return;
	nghttp2_submit_goaway(c->ng, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(c->ng),
	                      NGHTTP2_NO_ERROR, NULL, 0);
	conn_flush(c);
}

static void conn_free(struct h2_conn *c)
{
	h2_server_t *s = c->srv;
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		s->oldest = c->prev;
	listen_conn_closed(c->lis);
	while (c->streams)
		stream_free(c->streams); /* handler-owned requests move to detached */
	for (h2_req_t *r = c->detached; r; r = r->_next)
		r->_conn = NULL;
	nghttp2_session_del(c->ng);
	event_free(c->timer);
	tls_close_notify(c->bev);
	bufferevent_free(c->bev);
	free(c);
}

static nghttp2_session_callbacks *callbacks_new(void)
{
	nghttp2_session_callbacks *cb;
	nghttp2_session_callbacks_new(&cb);
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
	nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
	return cb;
}

/* At the connection cap (listen.h): closes the oldest connection without
 * a stream (new, idle, or one that never sent its preface); connections
 * with requests in flight are never cut. 1 when one was closed. */
static int conn_evict(void *arg)
{
	h2_server_t *s = arg;
	for (struct h2_conn *c = s->oldest; c; c = c->prev)
		if (!c->streams && !c->detached && !c->closing) {
			conn_free(c);
			return 1;
		}
	return 0;
}

/* Starts HTTP/2 on a connection counted in lis (the server preface goes out
 * at once); input already buffered (a client preface read by another
 * server) is processed now. */
static void conn_start_on(h2_server_t *s, listen_t *lis, struct bufferevent *bev, const char *peer)
{
	struct h2_conn *c = xcalloc(1, sizeof *c);
	c->srv = s;
	c->lis = lis;
	c->bev = bev;
	c->out_at_timeout = SIZE_MAX;
	snprintf(c->peer, sizeof c->peer, "%s", peer);
	c->timer = xcheck(evtimer_new(s->base, timer_cb, c));
	nghttp2_session_callbacks *cb = callbacks_new();
	if (nghttp2_session_server_new(&c->ng, cb, c) != 0)
		xoom("nghttp2_session_server_new");
	nghttp2_session_callbacks_del(cb);
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	else
		s->oldest = c;
	s->conns = c;
	nghttp2_settings_entry iv[] = {
	    {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, s->o.max_streams},
	    {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW},
	    {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, LIMIT_HEADER_BYTES},
	    {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
	};
	nghttp2_submit_settings(c->ng, NGHTTP2_FLAG_NONE, iv, sizeof iv / sizeof iv[0]);
	nghttp2_session_set_local_window_size(c->ng, NGHTTP2_FLAG_NONE, 0, CONN_WINDOW);
	bufferevent_setcb(bev, read_cb, write_cb, event_cb, c);
	bufferevent_setwatermark(bev, EV_READ, 0, IN_HIGH);
	bufferevent_setwatermark(bev, EV_WRITE, OUT_HIGH / 4, 0); /* refill before the output runs dry */
	struct timeval wtv = {s->o.write_timeout_ms / 1000, (s->o.write_timeout_ms % 1000) * 1000};
	bufferevent_set_timeouts(bev, NULL, &wtv);
	if (s->draining)
		nghttp2_submit_goaway(c->ng, NGHTTP2_FLAG_NONE, 0, NGHTTP2_NO_ERROR, NULL, 0);
	if (conn_flush(c) < 0) /* the server preface; enables reading and the idle timer */
		return;
	if (evbuffer_get_length(bufferevent_get_input(bev)))
		read_cb(bev, c);
}

/* The listener's on_conn. arg is the h2_server_t. */
static void conn_start(void *arg, struct bufferevent *bev, const char *peer)
{
	h2_server_t *s = arg;
	conn_start_on(s, &s->lis, bev, peer);
}

/* A server with o's settings (defaults filled in), not listening yet. */
static h2_server_t *server_alloc(struct event_base *base, const h2_opts_t *o)
{
	h2_server_t *s = xcalloc(1, sizeof *s);
	s->base = base;
	s->o = *o;
	if (!s->o.max_body)
		s->o.max_body = LIMIT_BODY_BYTES + (64u << 10);
	if (!s->o.max_conn_body)
		s->o.max_conn_body = 2 * s->o.max_body;
	if (s->o.idle_timeout_ms <= 0)
		s->o.idle_timeout_ms = LIMIT_IDLE_MS;
	if (s->o.read_timeout_ms <= 0)
		s->o.read_timeout_ms = LIMIT_BODY_PAUSE_MS;
	if (s->o.write_timeout_ms <= 0)
		s->o.write_timeout_ms = LIMIT_WRITE_PAUSE_MS;
	if (!s->o.max_streams)
		s->o.max_streams = LIMIT_H2_STREAMS;
	return s;
}

h2_server_t *h2_server_new(struct event_base *base, const char *addr, const h2_opts_t *o, err_t *err)
{
	if (!o->on_request) {
		err_set(err, 500, "h2 server %s: no on_request handler", o->name ? o->name : "");
		return NULL;
	}
	h2_server_t *s = server_alloc(base, o);
	listen_opts_t lo = {.kind = "h2",
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
	return s;
}

h2_server_t *h2_server_detached(struct event_base *base, const h2_opts_t *o)
{
	h2_server_t *s = server_alloc(base, o);
	s->lis.o.name = xstrdup(o->name ? o->name : "h2"); /* freed by listen_close */
	s->o.name = s->lis.o.name;
	return s;
}

void h2_server_adopt(h2_server_t *s, struct bufferevent *bev, const char *peer)
{
	s->lis.n_conns++; /* as the listener counts an accepted connection */
	conn_start(s, bev, peer);
}

void h2_server_adopt_on(h2_server_t *s, struct bufferevent *bev, const char *peer, listen_t *owner)
{
	conn_start_on(s, owner, bev, peer);
}

int h2_server_evict(h2_server_t *s)
{
	return conn_evict(s);
}

int h2_server_port(const h2_server_t *s)
{
	return s->lis.port;
}

uint32_t h2_server_conns(const h2_server_t *s)
{
	return s->lis.n_conns;
}

void h2_server_stop_accepting(h2_server_t *s)
{
	if (s->draining)
		return;
	s->draining = 1;
	listen_stop(&s->lis);
	struct h2_conn *c = s->conns;
	while (c) {
		struct h2_conn *next = c->next; /* c may be freed */
		conn_goaway(c);
		c = next;
	}
}

void h2_server_free(h2_server_t *s)
{
	if (!s)
		return;
	listen_stop(&s->lis);
	while (s->conns)
		conn_free(s->conns);
	listen_close(&s->lis);
	free(s);
}
