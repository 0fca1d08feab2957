/* Tests of src/net/http1.c: a real server on 127.0.0.1:0 on a loop thread,
 * driven over raw TCP (keep-alive, pipelining, bodies, limits, timeouts,
 * async answers, clients that vanish, the connection cap). */
#include "testutil.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "net/http.h"
#include "net/loop.h"
#include "net/pool.h"
#include "h2_client.h"
#include "net_test.h"

#define BIG_BYTES (8u << 20)

typedef struct {
	loop_t *loop;
	pool_t *pool;
	http_server_t *srv;
	pthread_t th;
	int port;
	pthread_mutex_t mu;
	int requests, inflight, max_inflight;
	char *big;
	int slow_ms;
} tsrv;

typedef struct {
	tsrv *t;
	http_req_t *r;
} slow_job;

static void track_done(tsrv *t)
{
	pthread_mutex_lock(&t->mu);
	t->inflight--;
	pthread_mutex_unlock(&t->mu);
}

static void echo(tsrv *t, http_req_t *r)
{
	char out[512];
	int n = snprintf(out, sizeof out, "%.*s %.*s q=%.*s len=%zu:", (int)r->method.n,
	                 (const char *)r->method.p, (int)r->path.n, (const char *)r->path.p, (int)r->query.n,
	                 (const char *)r->query.p, r->body.n);
	buf_t b;
	buf_init(&b, SIZE_MAX);
	buf_append(&b, out, (size_t)n);
	buf_append(&b, r->body.p, r->body.n);
	track_done(t);
	http_respond(r, 200, "text/plain", "X-Test: 1\r\n", b.p, b.n);
	buf_free(&b);
}

/* loop thread: the worker's answer arrives */
static void slow_reply(void *arg)
{
	slow_job *j = arg;
	track_done(j->t);
	http_respond(j->r, 200, "text/plain", NULL, "slow", 4);
	free(j);
}

/* worker thread */
static void slow_work(void *arg)
{
	slow_job *j = arg;
	sleep_ms(j->t->slow_ms);
	loop_post(j->t->loop, slow_reply, j);
}

static void on_request(http_req_t *r, void *ctx)
{
	tsrv *t = ctx;
	pthread_mutex_lock(&t->mu);
	t->requests++;
	if (++t->inflight > t->max_inflight)
		t->max_inflight = t->inflight;
	pthread_mutex_unlock(&t->mu);
	if (r->path.n >= 5 && memcmp(r->path.p, "/slow", 5) == 0) {
		slow_job *j = malloc(sizeof *j);
		j->t = t;
		j->r = r;
		pool_submit(t->pool, slow_work, j);
		return;
	}
	if (slice_eq_cstr(r->path, "/peer")) {
		track_done(t);
		http_respond(r, 200, "text/plain", NULL, r->peer.p, r->peer.n);
		return;
	}
	if (slice_eq_cstr(r->path, "/count")) { /* a body too large to echo: its length and a checksum */
		uint64_t sum = 0;
		for (size_t i = 0; i < r->body.n; i++)
			sum = sum * 31 + r->body.p[i];
		char out[96];
		int n = snprintf(out, sizeof out, "len=%zu sum=%llu", r->body.n, (unsigned long long)sum);
		track_done(t);
		http_respond(r, 200, "text/plain", NULL, out, (size_t)n);
		return;
	}
	if (slice_eq_cstr(r->path, "/big")) {
		track_done(t);
		http_respond(r, 200, "application/octet-stream", NULL, t->big, BIG_BYTES);
		return;
	}
	echo(t, r);
}

static int on_headers(http_req_t *r, void *ctx)
{
	if (slice_eq_cstr(r->path, "/reject")) {
		http_respond(r, 403, "text/plain", NULL, "no", 2);
		return 1;
	}
	return 0;
}

static void *loop_thread(void *arg)
{
	tsrv *t = arg;
	loop_run(t->loop);
	return NULL;
}

static tsrv *start_at(const char *addr, http_opts_t o)
{
	tsrv *t = calloc(1, sizeof *t);
	pthread_mutex_init(&t->mu, NULL);
	t->slow_ms = 150;
	t->big = malloc(BIG_BYTES);
	for (size_t i = 0; i < BIG_BYTES; i++)
		t->big[i] = (char)('a' + i % 23); /* a pattern a lost or repeated piece breaks */
	t->loop = loop_new();
	t->pool = pool_new(2);
	o.on_request = on_request;
	o.on_headers = on_headers;
	o.ctx = t;
	o.name = "test";
	err_t err;
	t->srv = http_server_new(loop_base(t->loop), addr, &o, &err);
	if (!t->srv)
		fail_msg("http_server_new: %s", err.msg);
	t->port = http_server_port(t->srv);
	assert_true(t->port > 0);
	pthread_create(&t->th, NULL, loop_thread, t);
	return t;
}

static tsrv *start(http_opts_t o)
{
	return start_at("127.0.0.1:0", o);
}

static void stop(tsrv *t)
{
	loop_stop(t->loop);
	pthread_join(t->th, NULL);
	pool_free(t->pool);       /* slow jobs finish; their replies are queued on the loop */
	http_server_free(t->srv); /* requests still out are detached */
	loop_free(t->loop);       /* runs the queued replies: they only free */
	pthread_mutex_destroy(&t->mu);
	free(t->big);
	free(t);
}

static uint32_t server_conns(tsrv *t)
{
	return http_conns_now(t->loop, t->srv);
}

static int wait_conns(tsrv *t, uint32_t want, int ms)
{
	return http_conns_wait(t->loop, t->srv, want, ms);
}

/* ---- a raw TCP client ---- */

typedef struct {
	int fd;
	int head_only; /* the next response answers HEAD: no body follows */
	size_t n;
	char buf[1 << 17];
} client;

typedef struct {
	int status;
	char head[4096];
	char body[1 << 16];
	size_t body_n;
} response;

/* rcvbuf > 0: the client's receive buffer, fixed before connecting. */
static client *cl_open_rcvbuf(int port, int rcvbuf)
{
	client *c = calloc(1, sizeof *c);
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (rcvbuf > 0)
		setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(c->fd, (struct sockaddr *)&a, sizeof a) < 0)
		fail_msg("connect: %s", strerror(errno));
	struct timeval tv = {5, 0};
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	return c;
}

static client *cl_open(int port)
{
	return cl_open_rcvbuf(port, 0);
}

static void cl_close(client *c)
{
	close(c->fd);
	free(c);
}

static void cl_send(client *c, const char *s, size_t n)
{
	while (n) {
		ssize_t k = send(c->fd, s, n, MSG_NOSIGNAL);
		if (k < 0)
			fail_msg("send: %s", strerror(errno));
		s += k;
		n -= (size_t)k;
	}
}

static void cl_sends(client *c, const char *s)
{
	cl_send(c, s, strlen(s));
}

/* Receives more bytes; 0 on EOF, -1 on error/timeout. */
static ssize_t cl_fill(client *c)
{
	if (c->n == sizeof c->buf)
		fail_msg("client buffer full");
	ssize_t k = recv(c->fd, c->buf + c->n, sizeof c->buf - c->n, 0);
	if (k > 0)
		c->n += (size_t)k;
	return k;
}

/* Reads one whole response (status 0 if the connection ended first). */
static void cl_response(client *c, response *r)
{
	memset(r, 0, sizeof *r);
	char *end;
	for (;;) {
		c->buf[c->n < sizeof c->buf ? c->n : sizeof c->buf - 1] = 0;
		end = c->n ? memmem(c->buf, c->n, "\r\n\r\n", 4) : NULL;
		if (end)
			break;
		if (cl_fill(c) <= 0)
			return;
	}
	size_t hn = (size_t)(end - c->buf) + 4;
	assert_true(hn < sizeof r->head);
	memcpy(r->head, c->buf, hn);
	r->head[hn] = 0;
	r->status = atoi(r->head + 9);
	const char *cl = strstr(r->head, "Content-Length: ");
	size_t len = cl && !c->head_only ? (size_t)strtoul(cl + 16, NULL, 10) : 0;
	c->head_only = 0;
	assert_true(len < sizeof r->body);
	while (c->n < hn + len)
		if (cl_fill(c) <= 0)
			fail_msg("connection ended inside a response body");
	memcpy(r->body, c->buf + hn, len);
	r->body[len] = 0;
	r->body_n = len;
	memmove(c->buf, c->buf + hn + len, c->n - hn - len);
	c->n -= hn + len;
}

/* 1 if the server closes the connection (EOF or reset) within ms, any unread bytes ignored. */
static int cl_closed_within(client *c, int ms)
{
	int64_t end = now_ms() + ms;
	for (;;) {
		int left = (int)(end - now_ms());
		if (left <= 0)
			return 0;
		struct pollfd p = {c->fd, POLLIN, 0};
		if (poll(&p, 1, left) <= 0)
			return 0;
		char tmp[4096];
		ssize_t k = recv(c->fd, tmp, sizeof tmp, 0);
		if (k == 0 || (k < 0 && errno == ECONNRESET))
			return 1;
	}
}

/* Reads a final answer that closes the connection: status, body (exact, or
 * containing body_part if exact is 0), "Connection: close", then EOF. */
static void expect_closing_answer(client *c, int status, const char *body, int exact)
{
	response r;
	cl_response(c, &r);
	assert_int_equal(r.status, status);
	if (body && exact)
		assert_string_equal(r.body, body);
	if (body && !exact && !strstr(r.body, body))
		fail_msg("body %s lacks %s", r.body, body);
	assert_non_null(strstr(r.head, "Connection: close\r\n"));
	assert_true(cl_closed_within(c, 2000));
}

static http_opts_t defaults(void)
{
	http_opts_t o = {0};
	o.max_body = 1 << 20;
	return o;
}

/* ---- tests ---- */

static void test_simple_get(void **state)
{
	tsrv *t = start(defaults());
	client *c = cl_open(t->port);
	response r;
	cl_sends(c, "GET /hello?x=1&y=%20 HTTP/1.1\r\nHost: a\r\nX-Upper: V\r\n\r\n");
	cl_response(c, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "GET /hello q=x=1&y=%20 len=0:");
	assert_non_null(strstr(r.head, "HTTP/1.1 200 OK\r\n"));
	assert_non_null(strstr(r.head, "Content-Type: text/plain\r\n"));
	assert_non_null(strstr(r.head, "Connection: keep-alive\r\n"));
	assert_non_null(strstr(r.head, "X-Test: 1\r\n"));
	cl_close(c);
	stop(t);
}

static void test_any_address_and_peer(void **state)
{
	tsrv *t = start_at(":0", defaults());
	client *c = cl_open(t->port);
	response r;
	cl_sends(c, "GET /peer HTTP/1.1\r\n\r\n");
	cl_response(c, &r);
	assert_int_equal(r.status, 200);
	assert_true(strncmp(r.body, "127.0.0.1:", 10) == 0); /* not ::ffff:127.0.0.1 */
	cl_close(c);
	stop(t);

	err_t err;
	http_opts_t o = defaults();
	o.on_request = on_request;
	assert_null(http_server_new(NULL, "nonsense", &o, &err));
	assert_non_null(strstr(err.msg, "host:port"));
}

static void test_keep_alive(void **state)
{
	tsrv *t = start(defaults());
	client *c = cl_open(t->port);
	response r;
	cl_sends(c, "GET /one HTTP/1.1\r\nHost: a\r\n\r\n");
	cl_response(c, &r);
	assert_string_equal(r.body, "GET /one q= len=0:");
	cl_sends(c, "POST /two HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhel");
	sleep_ms(50);
	cl_sends(c, "lo");
	cl_response(c, &r);
	assert_string_equal(r.body, "POST /two q= len=5:hello");
	assert_int_equal(server_conns(t), 1);
	cl_close(c);
	stop(t);
}

/* A body much larger than one read of the bufferevent (4 KiB) and than
 * one direct read (64 KiB), arriving in pieces, with the next request
 * right behind its last byte: every byte lands once, in order, and the
 * next request is read from where the body ends. */
static void test_large_body_in_pieces(void **state)
{
	http_opts_t o = defaults();
	tsrv *t = start(o);
	client *c = cl_open(t->port);
	enum { N = 300000, PIECES = 7 };
	char *body = malloc(N);
	uint64_t sum = 0;
	for (size_t i = 0; i < N; i++) {
		body[i] = (char)('a' + (i * 7 + i / 4096) % 26);
		sum = sum * 31 + (uint8_t)body[i];
	}
	char head[128];
	snprintf(head, sizeof head, "POST /count HTTP/1.1\r\nContent-Length: %d\r\n\r\n", N);
	cl_sends(c, head);
	for (size_t k = 0; k < PIECES - 1; k++) {
		cl_send(c, body + k * (N / PIECES), N / PIECES);
		sleep_ms(20);
	}
	size_t done = (PIECES - 1) * (N / PIECES);
	size_t last = N - done;
	static const char next[] = "GET /after HTTP/1.1\r\n\r\n";
	char *tail = malloc(last + sizeof next);
	memcpy(tail, body + done, last);
	memcpy(tail + last, next, sizeof next - 1);
	cl_send(c, tail, last + sizeof next - 1);
	response r;
	cl_response(c, &r);
	assert_int_equal(r.status, 200);
	char want[96];
	snprintf(want, sizeof want, "len=%d sum=%llu", N, (unsigned long long)sum);
	assert_string_equal(r.body, want);
	cl_response(c, &r);
	assert_string_equal(r.body, "GET /after q= len=0:");
	free(tail);
	free(body);
	cl_close(c);
	stop(t);
}

/* An answer the socket cannot take at once (8 MiB): what the first write
 * left goes out after it, every byte once, and the connection then serves
 * the next request. */
static void test_large_response_then_next(void **state)
{
	tsrv *t = start(defaults());
	client *c = cl_open_rcvbuf(t->port, 64 << 10); /* and not reading at first: */
	cl_sends(c, "GET /big HTTP/1.1\r\n\r\n");
	sleep_ms(100); /* the server's first write is cut short (its send buffer is 4 MiB at most) */
	char *end = NULL;
	while (!(end = c->n ? memmem(c->buf, c->n, "\r\n\r\n", 4) : NULL))
		assert_true(cl_fill(c) > 0);
	size_t hn = (size_t)(end - c->buf) + 4;
	const char *cl = memmem(c->buf, hn, "Content-Length: ", 16);
	assert_non_null(cl);
	assert_int_equal(strtoul(cl + 16, NULL, 10), BIG_BYTES);
	size_t got = 0, bad = 0;
	for (size_t i = hn; i < c->n; i++, got++)
		bad += c->buf[i] != (char)('a' + got % 23);
	c->n = 0;
	while (got < BIG_BYTES) {
		ssize_t k =
		    recv(c->fd, c->buf, BIG_BYTES - got < sizeof c->buf ? BIG_BYTES - got : sizeof c->buf, 0);
		assert_true(k > 0);
		for (ssize_t i = 0; i < k; i++)
			bad += c->buf[i] != (char)('a' + (got + (size_t)i) % 23);
		got += (size_t)k;
	}
	assert_int_equal(bad, 0);
	response r;
	cl_sends(c, "GET /next HTTP/1.1\r\n\r\n");
	cl_response(c, &r);
	assert_string_equal(r.body, "GET /next q= len=0:");
	cl_close(c);
	stop(t);
}

static void test_connection_close_and_http10(void **state)
{
	tsrv *t = start(defaults());
	client *c = cl_open(t->port);
	response r;
	cl_sends(c, "GET /a HTTP/1.1\r\nConnection: close\r\n\r\n");
	expect_closing_answer(c, 200, NULL, 0);
	cl_close(c);

	c = cl_open(t->port);
	cl_sends(c, "GET /b HTTP/1.0\r\n\r\n");
	expect_closing_answer(c, 200, NULL, 0);
	cl_close(c);

	c = cl_open(t->port);
	cl_sends(c, "GET /c HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
	cl_response(c, &r);
	assert_non_null(strstr(r.head, "Connection: keep-alive\r\n"));
	cl_sends(c, "HEAD /d HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
	c->head_only = 1;
	cl_response(c, &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.head, "Content-Length: 17\r\n"));
	cl_sends(c, "GET /e HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
	cl_response(c, &r); /* no stray body bytes came before it */
	assert_string_equal(r.body, "GET /e q= len=0:");
	cl_close(c);
	stop(t);
}

static void test_pipelined_in_order(void **state)
{
	tsrv *t = start(defaults());
	client *c = cl_open(t->port);
	response r;
	cl_sends(c, "GET /slow HTTP/1.1\r\n\r\n"
	            "POST /b HTTP/1.1\r\nContent-Length: 3\r\n\r\nxyz"
	            "GET /c?z HTTP/1.1\r\n\r\n");
	cl_response(c, &r);
	assert_string_equal(r.body, "slow");
	cl_response(c, &r);
	assert_string_equal(r.body, "POST /b q= len=3:xyz");
	cl_response(c, &r);
	assert_string_equal(r.body, "GET /c q=z len=0:");
	pthread_mutex_lock(&t->mu);
	assert_int_equal(t->max_inflight, 1); /* one request at a time */
	assert_int_equal(t->requests, 3);
	pthread_mutex_unlock(&t->mu);
	cl_close(c);
	stop(t);
}

static void test_chunked_body(void **state)
{
	tsrv *t = start(defaults());
	client *c = cl_open(t->port);
	response r;
	cl_sends(c, "POST /up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel");
	sleep_ms(30);
	cl_sends(c, "lo\r\n6;name=val\r\n world\r\nA\r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n"
	            "GET /after HTTP/1.1\r\n\r\n");
	cl_response(c, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "POST /up q= len=21:hello world0123456789");
	cl_response(c, &r);
	assert_string_equal(r.body, "GET /after q= len=0:");

	cl_sends(c, "POST /bad HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
	expect_closing_answer(c, 400, "{\"error\":\"malformed chunk size\"}\n", 1);
	cl_close(c);
	stop(t);
}

static void test_expect_continue(void **state)
{
	tsrv *t = start(defaults());
	client *c = cl_open(t->port);
	response r;
	cl_sends(c, "POST /up HTTP/1.1\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n");
	cl_response(c, &r);
	assert_int_equal(r.status, 100);
	assert_string_equal(r.head, "HTTP/1.1 100 Continue\r\n\r\n");
	cl_sends(c, "data");
	cl_response(c, &r);
	assert_string_equal(r.body, "POST /up q= len=4:data");

	/* refused in on_headers: the final status instead of 100, then close */
	cl_sends(c, "POST /reject HTTP/1.1\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n");
	expect_closing_answer(c, 403, NULL, 0);
	cl_close(c);
	stop(t);
}

static void test_413_content_length_before_body(void **state)
{
	http_opts_t o = defaults();
	o.max_body = 32u << 20;
	o.body_timeout_ms = 10000;
	tsrv *t = start(o);
	client *c = cl_open(t->port);
	response r;
	int64_t t0 = now_ms();
	cl_sends(c, "POST /up HTTP/1.1\r\nContent-Length: 40000000\r\n\r\n");
	cl_response(c, &r);
	assert_true(now_ms() - t0 < 1000); /* did not wait for the body */
	assert_int_equal(r.status, 413);
	assert_string_equal(r.body, "{\"error\":\"request body is 40000000 bytes; the limit is 32 MiB\"}\n");
	assert_non_null(strstr(r.head, "Connection: close\r\n"));
	assert_true(cl_closed_within(c, 2000));
	cl_close(c);
	stop(t);
}

static void test_413_chunked_past_limit(void **state)
{
	http_opts_t o = defaults();
	o.max_body = 100;
	tsrv *t = start(o);
	client *c = cl_open(t->port);
	response r;
	char chunk[200];
	memset(chunk, 'a', sizeof chunk);
	cl_sends(c, "POST /up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3c\r\n");
	cl_send(c, chunk, 60);
	cl_sends(c, "\r\n3c\r\n");
	cl_send(c, chunk, 60);
	expect_closing_answer(c, 413, "{\"error\":\"request body exceeds the 100 bytes limit\"}\n", 1);
	cl_close(c);

	/* one announced chunk far past the limit is refused before its data */
	c = cl_open(t->port);
	cl_sends(c, "POST /up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffffffff\r\n");
	cl_response(c, &r);
	assert_int_equal(r.status, 413);
	cl_close(c);
	stop(t);
}

static void expect_error(tsrv *t, const char *req, size_t n, int status, const char *body_part)
{
	client *c = cl_open(t->port);
	cl_send(c, req, n);
	expect_closing_answer(c, status, body_part, 0);
	cl_close(c);
}

static void test_malformed_requests(void **state)
{
	tsrv *t = start(defaults());
	expect_error(t, "HELLO\r\n\r\n", 9, 400, "malformed request line");
	expect_error(t, "GET / HTTP/2.0\r\n\r\n", 18, 505, "HTTP version");
	expect_error(t, "GET / HTTP/1.1\r\n folded\r\n\r\n", 27, 400, "folding");
	expect_error(t, "GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", 31, 400, "header field");
	expect_error(t, "POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 67, 400,
	             "both");
	expect_error(t, "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 40, 400, "Content-Length");
	expect_error(t, "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 44, 501, "chunked");
	expect_error(t, "GET / HTTP/1.1\r\nExpect: tea\r\n\r\n", 31, 417, "100-continue");
	stop(t);
}

static void test_431_huge_headers(void **state)
{
	tsrv *t = start(defaults());
	size_t n = 70000;
	char *req = malloc(n + 64);
	int k = snprintf(req, 64, "GET / HTTP/1.1\r\nX-Big: ");
	memset(req + k, 'a', n);
	memcpy(req + k + n, "\r\n\r\n", 4);
	expect_error(t, req, (size_t)k + n + 4, 431, "the 64 KiB limit");
	free(req);

	/* many small fields */
	char *many = malloc(300 * 8 + 64);
	size_t m = (size_t)snprintf(many, 64, "GET / HTTP/1.1\r\n");
	for (int i = 0; i < 300; i++)
		m += (size_t)sprintf(many + m, "h%03d:\r\n", i);
	memcpy(many + m, "\r\n", 2);
	expect_error(t, many, m + 2, 431, "too many header fields");
	free(many);
	stop(t);
}

static void test_header_timeout(void **state)
{
	http_opts_t o = defaults();
	o.header_timeout_ms = 200;
	o.idle_timeout_ms = 300;
	tsrv *t = start(o);
	client *c = cl_open(t->port);
	response r;
	int64_t t0 = now_ms();
	cl_sends(c, "GET / HTTP/1.1\r\nHost: slow");
	cl_response(c, &r);
	assert_int_equal(r.status, 408);
	assert_true(now_ms() - t0 >= 150);
	assert_true(cl_closed_within(c, 2000));
	cl_close(c);

	/* a connection that never sends is closed without a response */
	c = cl_open(t->port);
	assert_true(cl_closed_within(c, 2000));
	assert_int_equal(c->n, 0);
	cl_close(c);

	/* an idle keep-alive connection is closed after idle_timeout */
	c = cl_open(t->port);
	cl_sends(c, "GET / HTTP/1.1\r\n\r\n");
	cl_response(c, &r);
	assert_int_equal(r.status, 200);
	t0 = now_ms();
	assert_true(cl_closed_within(c, 2000));
	assert_true(now_ms() - t0 >= 200);
	cl_close(c);
	assert_true(wait_conns(t, 0, 2000));
	stop(t);
}

static void test_body_timeout(void **state)
{
	http_opts_t o = defaults();
	o.body_timeout_ms = 200;
	tsrv *t = start(o);
	client *c = cl_open(t->port);
	cl_sends(c, "POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc");
	expect_closing_answer(c, 408, "request body", 0);
	cl_close(c);
	stop(t);
}

static void test_async_response(void **state)
{
	tsrv *t = start(defaults());
	client *c = cl_open(t->port);
	response r;
	int64_t t0 = now_ms();
	cl_sends(c, "GET /slow HTTP/1.1\r\n\r\n");
	cl_response(c, &r);
	assert_true(now_ms() - t0 >= 140);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "slow");
	/* the connection stays usable */
	cl_sends(c, "GET /x HTTP/1.1\r\n\r\n");
	cl_response(c, &r);
	assert_string_equal(r.body, "GET /x q= len=0:");
	cl_close(c);
	stop(t);
}

static void test_client_gone_before_async_response(void **state)
{
	tsrv *t = start(defaults());
	t->slow_ms = 200;
	/* plain close (FIN) */
	client *c = cl_open(t->port);
	cl_sends(c, "GET /slow HTTP/1.1\r\n\r\n");
	sleep_ms(50);
	cl_close(c);
	/* reset (RST): the server drops the connection while the handler owns the request */
	c = cl_open(t->port);
	cl_sends(c, "POST /slow HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi");
	sleep_ms(50);
	struct linger lg = {1, 0};
	setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
	cl_close(c);
	assert_true(wait_conns(t, 1, 1000)); /* the FIN one waits to answer; the reset one is gone */
	sleep_ms(300);                       /* both answers arrive */
	assert_true(wait_conns(t, 0, 2000));
	client *d = cl_open(t->port);
	response r;
	cl_sends(d, "GET /still HTTP/1.1\r\n\r\n");
	cl_response(d, &r);
	assert_int_equal(r.status, 200);
	cl_close(d);

	/* a request still out when the server is freed: its answer only frees it */
	c = cl_open(t->port);
	cl_sends(c, "GET /slow HTTP/1.1\r\n\r\n");
	sleep_ms(50);
	stop(t);
	cl_close(c);
}

/* At the cap, the connection that has waited longest for a request is closed
 * to make room (a flood of idle or slowloris connections evicts itself);
 * connections with a request in progress never are, so then the new one is. */
static void test_max_conns(void **state)
{
	http_opts_t o = defaults();
	o.max_conns = 2;
	tsrv *t = start(o);
	t->slow_ms = 1500;
	response r;
	client *a = cl_open(t->port), *b = cl_open(t->port);
	cl_sends(a, "GET / HTTP/1.1\r\n\r\n");
	cl_response(a, &r);
	assert_int_equal(r.status, 200);
	cl_sends(b, "GET / HTTP/1.1\r\n\r\n");
	cl_response(b, &r);
	assert_int_equal(r.status, 200);
	/* Both idle: the oldest, a, makes room for x. */
	client *x = cl_open(t->port);
	cl_sends(x, "GET / HTTP/1.1\r\n\r\n");
	cl_response(x, &r);
	assert_int_equal(r.status, 200);
	assert_true(cl_closed_within(a, 2000));
	cl_close(a);
	cl_sends(b, "GET / HTTP/1.1\r\n\r\n");
	cl_response(b, &r);
	assert_int_equal(r.status, 200);
	/* Both busy: the newcomer is closed, the requests finish. */
	cl_sends(b, "GET /slow HTTP/1.1\r\n\r\n");
	cl_sends(x, "GET /slow HTTP/1.1\r\n\r\n");
	sleep_ms(100);
	client *y = cl_open(t->port);
	assert_true(cl_closed_within(y, 1000));
	cl_close(y);
	cl_response(b, &r);
	assert_int_equal(r.status, 200);
	cl_response(x, &r);
	assert_int_equal(r.status, 200);
	cl_close(x);
	cl_close(b);
	stop(t);
}

static void test_slow_reader_dropped(void **state)
{
	http_opts_t o = defaults();
	o.write_timeout_ms = 200;
	tsrv *t = start(o);
	client *c = cl_open(t->port);
	int small = 4096;
	setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
	cl_sends(c, "GET /big HTTP/1.1\r\n\r\n");
	/* never read: the server gives up on this connection but keeps serving others */
	client *d = cl_open(t->port);
	response r;
	cl_sends(d, "GET /other HTTP/1.1\r\n\r\n");
	cl_response(d, &r);
	assert_int_equal(r.status, 200);
	cl_close(d);
	assert_true(wait_conns(t, 0, 3000));
	cl_close(c);
	stop(t);
}

static void stop_accepting(void *srv)
{
	http_server_stop_accepting(srv);
}

static void test_stop_accepting(void **state)
{
	tsrv *t = start(defaults());
	client *idle = cl_open(t->port), *busy = cl_open(t->port);
	response r;
	cl_sends(idle, "GET / HTTP/1.1\r\n\r\n");
	cl_response(idle, &r);
	cl_sends(busy, "GET /slow HTTP/1.1\r\n\r\n");
	sleep_ms(50);
	loop_post(t->loop, stop_accepting, t->srv);
	assert_true(cl_closed_within(idle, 2000));
	cl_response(busy, &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.head, "Connection: close\r\n"));
	assert_true(cl_closed_within(busy, 2000));
	cl_close(idle);
	cl_close(busy); /* ends the server's lingering close */
	assert_true(wait_conns(t, 0, 2000));
	stop(t);
}

/* h2c on the HTTP/1.1 listener: its handler echoes "h2 <path> <body>". */
static void h2_on_request(h2_req_t *r, void *ctx)
{
	char out[256];
	int n = snprintf(out, sizeof out, "h2 %.*s %.*s", (int)r->path.n, (const char *)r->path.p,
	                 (int)r->body.n, (const char *)r->body.p);
	h2_header_t h[] = {{"content-type", "text/plain"}};
	h2_respond(r, 200, h, 1, out, (size_t)n, NULL, 0);
}

/* One h2c request on a new connection; 0 when it was answered as expected. */
static int h2c_roundtrip(tc_conn *hc, int port, const char *path)
{
	tc_stream st;
	if (tc_connect(hc, port) < 0 || tc_submit(hc, &st, NULL, path, NULL, "abc", 3) <= 0 ||
	    tc_wait1(hc, &st, 3000) != 0)
		return -1;
	char want[128];
	snprintf(want, sizeof want, "h2 %s abc", path);
	int ok = st.status == 200 && st.body_n == strlen(want) && memcmp(st.body, want, st.body_n) == 0;
	tc_stream_free(&st);
	return ok ? 0 : -1;
}

static void test_h2c_preface(void **state)
{
	http_opts_t o = defaults();
	h2_opts_t h2 = {.on_request = h2_on_request};
	o.h2c = &h2;
	o.max_conns = 2;
	tsrv *t = start(o);
	response r;
	/* HTTP/1.1 is unchanged, also for a request line that starts like the preface. */
	client *a = cl_open(t->port);
	cl_sends(a, "PRI * HTTP/1.1\r\n\r\n");
	cl_response(a, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "PRI * q= len=0:");
	/* The preface makes a connection HTTP/2; it counts against the cap with the HTTP/1.1 one. */
	tc_conn hc;
	assert_int_equal(h2c_roundtrip(&hc, t->port, "/x"), 0);
	assert_int_equal(server_conns(t), 2);
	/* At the cap: the idle HTTP/1.1 connection goes first, then the idle h2c one. */
	tc_conn hc2;
	assert_int_equal(h2c_roundtrip(&hc2, t->port, "/y"), 0);
	assert_true(cl_closed_within(a, 2000));
	cl_close(a);
	client *b = cl_open(t->port);
	cl_sends(b, "GET /z HTTP/1.1\r\n\r\n");
	cl_response(b, &r);
	assert_int_equal(r.status, 200);
	assert_true(tc_wait_eof(&hc, 2000));
	tc_close(&hc);
	assert_int_equal(server_conns(t), 2);
	/* Stopping: GOAWAY to the h2c connection; the count drops as it closes. */
	loop_post(t->loop, stop_accepting, t->srv);
	assert_true(cl_closed_within(b, 2000));
	cl_close(b);
	assert_true(tc_wait_eof(&hc2, 3000));
	assert_true(hc2.goaway);
	tc_close(&hc2);
	assert_true(wait_conns(t, 0, 3000));
	stop(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_simple_get),
	    cmocka_unit_test(test_any_address_and_peer),
	    cmocka_unit_test(test_keep_alive),
	    cmocka_unit_test(test_large_body_in_pieces),
	    cmocka_unit_test(test_large_response_then_next),
	    cmocka_unit_test(test_connection_close_and_http10),
	    cmocka_unit_test(test_pipelined_in_order),
	    cmocka_unit_test(test_chunked_body),
	    cmocka_unit_test(test_expect_continue),
	    cmocka_unit_test(test_413_content_length_before_body),
	    cmocka_unit_test(test_413_chunked_past_limit),
	    cmocka_unit_test(test_malformed_requests),
	    cmocka_unit_test(test_431_huge_headers),
	    cmocka_unit_test(test_header_timeout),
	    cmocka_unit_test(test_body_timeout),
	    cmocka_unit_test(test_async_response),
	    cmocka_unit_test(test_client_gone_before_async_response),
	    cmocka_unit_test(test_max_conns),
	    cmocka_unit_test(test_slow_reader_dropped),
	    cmocka_unit_test(test_stop_accepting),
	    cmocka_unit_test(test_h2c_preface),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
