/* A small blocking HTTP/2 client for the h2 and gRPC tests: nghttp2's client
 * session over a real TCP socket (prior knowledge), several streams at once,
 * request bodies, and what came back: status, headers, body, trailers, resets. */
#ifndef KILN_TESTS_H2_CLIENT_H
#define KILN_TESTS_H2_CLIENT_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

typedef struct {
	int32_t id;
	int status;
	char ctype[64];
	char grpc_status[8]; /* from headers (trailers-only) or trailers; "" if none */
	char grpc_message[512];
	char details[512]; /* grpc-status-details-bin as sent */
	char accept_enc[64];
	int n_trailers; /* fields in a trailing HEADERS frame */
	int headers_frames;
	uint8_t *body;
	size_t body_n;
	int closed;
	uint32_t close_code; /* RST_STREAM error code, or 0 */
	const uint8_t *req;
	size_t req_n, req_off;
	int64_t t_done_ms;
} tc_stream;

typedef struct {
	int fd;
	nghttp2_session *ng;
	uint8_t *out; /* bytes not yet written */
	size_t out_n, out_cap;
	int eof;
	int goaway;
	int32_t goaway_last;
	uint32_t goaway_code;
} tc_conn;

static inline int64_t tc_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void tc_copy(char *dst, size_t cap, const uint8_t *v, size_t n)
{
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, v, n);
	dst[n] = 0;
}

static inline int tc_on_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name, size_t nl,
                               const uint8_t *value, size_t vl, uint8_t flags, void *arg)
{
	tc_stream *st = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
	if (!st)
		return 0;
	if (st->headers_frames > 1)
		st->n_trailers++;
	if (nl == 7 && !memcmp(name, ":status", 7))
		st->status = atoi((const char *)value);
	else if (nl == 12 && !memcmp(name, "content-type", 12))
		tc_copy(st->ctype, sizeof st->ctype, value, vl);
	else if (nl == 11 && !memcmp(name, "grpc-status", 11))
		tc_copy(st->grpc_status, sizeof st->grpc_status, value, vl);
	else if (nl == 12 && !memcmp(name, "grpc-message", 12))
		tc_copy(st->grpc_message, sizeof st->grpc_message, value, vl);
	else if (nl == 23 && !memcmp(name, "grpc-status-details-bin", 23))
		tc_copy(st->details, sizeof st->details, value, vl);
	else if (nl == 20 && !memcmp(name, "grpc-accept-encoding", 20))
		tc_copy(st->accept_enc, sizeof st->accept_enc, value, vl);
	return 0;
}

static inline int tc_on_begin_headers(nghttp2_session *ng, const nghttp2_frame *f, void *arg)
{
	tc_stream *st = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
	if (st)
		st->headers_frames++;
	return 0;
}

static inline int tc_on_data(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                             void *arg)
{
	tc_stream *st = nghttp2_session_get_stream_user_data(ng, id);
	if (!st)
		return 0;
	st->body = realloc(st->body, st->body_n + len + 1);
	memcpy(st->body + st->body_n, data, len);
	st->body_n += len;
	return 0;
}

static inline int tc_on_close(nghttp2_session *ng, int32_t id, uint32_t code, void *arg)
{
	tc_stream *st = nghttp2_session_get_stream_user_data(ng, id);
	if (st) {
		st->closed = 1;
		st->close_code = code;
		st->t_done_ms = tc_now_ms();
	}
	return 0;
}

static inline int tc_on_frame_recv(nghttp2_session *ng, const nghttp2_frame *f, void *arg)
{
	tc_conn *c = arg;
	if (f->hd.type == NGHTTP2_GOAWAY) {
		c->goaway = 1;
		c->goaway_last = f->goaway.last_stream_id;
		c->goaway_code = f->goaway.error_code;
	}
	return 0;
}

static inline ssize_t tc_read_body(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                                   nghttp2_data_source *src, void *arg)
{
	tc_stream *st = src->ptr;
	size_t n = st->req_n - st->req_off;
	if (n > len)
		n = len;
	memcpy(buf, st->req + st->req_off, n);
	st->req_off += n;
	if (st->req_off == st->req_n)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)n;
}

/* Connects to 127.0.0.1:port and queues the client preface; 0 or -1. */
static inline int tc_connect(tc_conn *c, int port)
{
	memset(c, 0, sizeof *c);
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(c->fd, (struct sockaddr *)&a, sizeof a) < 0)
		return -1;
	int one = 1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
	nghttp2_session_callbacks *cb;
	nghttp2_session_callbacks_new(&cb);
	nghttp2_session_callbacks_set_on_header_callback(cb, tc_on_header);
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, tc_on_begin_headers);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, tc_on_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, tc_on_close);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, tc_on_frame_recv);
	nghttp2_session_client_new(&c->ng, cb, c);
	nghttp2_session_callbacks_del(cb);
	nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1000}};
	nghttp2_submit_settings(c->ng, NGHTTP2_FLAG_NONE, iv, 1);
	return 0;
}

/* Starts a request: POST path with hdrs ({name, value, ..., NULL}) and body.
 * The body must outlive the stream. method NULL = POST. */
static inline int32_t tc_submit(tc_conn *c, tc_stream *st, const char *method, const char *path,
                                const char *const *hdrs, const void *body, size_t n)
{
	nghttp2_nv nv[32];
	size_t k = 0;
#define TC_NV(n_, v_) nv[k++] = (nghttp2_nv){(uint8_t *)(n_), (uint8_t *)(v_), strlen(n_), strlen(v_), 0}
	TC_NV(":method", method ? method : "POST");
	TC_NV(":scheme", "http");
	TC_NV(":authority", "127.0.0.1");
	TC_NV(":path", path);
	for (size_t i = 0; hdrs && hdrs[i] && k < 30; i += 2)
		TC_NV(hdrs[i], hdrs[i + 1]);
#undef TC_NV
	memset(st, 0, sizeof *st);
	st->req = body;
	st->req_n = n;
	nghttp2_data_provider prd = {.source.ptr = st, .read_callback = tc_read_body};
	st->id = nghttp2_submit_request(c->ng, NULL, nv, k, body ? &prd : NULL, st);
	return st->id;
}

/* Writes what is queued and reads what arrives, for up to ms (one round if 0). */
static inline void tc_pump(tc_conn *c, int ms)
{
	int64_t end = tc_now_ms() + ms;
	do {
		for (;;) {
			if (c->out_n < (1u << 20) && nghttp2_session_want_write(c->ng)) {
				const uint8_t *d;
				ssize_t n = nghttp2_session_mem_send(c->ng, &d);
				if (n > 0) {
					if (c->out_n + (size_t)n > c->out_cap) {
						c->out_cap = (c->out_n + (size_t)n) * 2;
						c->out = realloc(c->out, c->out_cap);
					}
					memcpy(c->out + c->out_n, d, (size_t)n);
					c->out_n += (size_t)n;
					continue;
				}
			}
			break;
		}
		struct pollfd p = {.fd = c->fd, .events = POLLIN | (c->out_n ? POLLOUT : 0)};
		int left = (int)(end - tc_now_ms());
		if (poll(&p, 1, left > 0 ? (left < 50 ? left : 50) : 0) <= 0)
			continue;
		if ((p.revents & POLLOUT) && c->out_n) {
			ssize_t w = write(c->fd, c->out, c->out_n);
			if (w > 0) {
				memmove(c->out, c->out + w, c->out_n - (size_t)w);
				c->out_n -= (size_t)w;
			}
		}
		if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
			uint8_t buf[65536];
			ssize_t r = read(c->fd, buf, sizeof buf);
			if (r > 0)
				nghttp2_session_mem_recv(c->ng, buf, (size_t)r);
			else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
				c->eof = 1;
				return;
			}
		}
	} while (tc_now_ms() < end);
}

/* Runs until every stream in sts is closed, the server closed, or ms pass.
 * Returns the number still open. */
static inline int tc_wait(tc_conn *c, tc_stream **sts, int n, int ms)
{
	int64_t end = tc_now_ms() + ms;
	for (;;) {
		int open = 0;
		for (int i = 0; i < n; i++)
			open += !sts[i]->closed;
		if (!open || c->eof || tc_now_ms() >= end)
			return open;
		tc_pump(c, 20);
	}
}

static int tc_wait1(tc_conn *c, tc_stream *st, int ms)
{
	return tc_wait(c, &st, 1, ms);
}

/* Waits for the server to close the connection; 1 if it did within ms. */
static inline int tc_wait_eof(tc_conn *c, int ms)
{
	int64_t end = tc_now_ms() + ms;
	while (!c->eof && tc_now_ms() < end)
		tc_pump(c, 20);
	return c->eof;
}

static inline void tc_close(tc_conn *c)
{
	nghttp2_session_del(c->ng);
	close(c->fd);
	free(c->out);
}

static inline void tc_stream_free(tc_stream *st)
{
	free(st->body);
	st->body = NULL;
}

/* A gRPC message with its 5-byte prefix (malloc'd). */
static inline uint8_t *tc_grpc_frame(const void *msg, size_t n, int compressed, size_t *out_n)
{
	uint8_t *p = malloc(n + 5);
	p[0] = (uint8_t)compressed;
	p[1] = (uint8_t)(n >> 24);
	p[2] = (uint8_t)(n >> 16);
	p[3] = (uint8_t)(n >> 8);
	p[4] = (uint8_t)n;
	if (n)
		memcpy(p + 5, msg, n);
	*out_n = n + 5;
	return p;
}

#endif
