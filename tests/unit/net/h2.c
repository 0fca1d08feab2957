/* Tests of src/net/h2.c: a real HTTP/2 server on 127.0.0.1:0 on a loop thread,
 * driven by nghttp2's client over TCP (h2_client.h) and by the nghttp tool:
 * trailers, concurrent streams, limits, resets, disconnects, GOAWAY, timeouts, TLS. */
#include "testutil.h"

#include <pthread.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "h2_client.h"
#include "net/h2.h"
#include "net/loop.h"
#include "net/pool.h"
#include "net/tls.h"

typedef struct {
	loop_t *loop;
	pool_t *pool;
	h2_server_t *srv;
	pthread_t th;
	int port;
	int slow_ms;
	pthread_mutex_t mu;
	int answered, requests;
} tsrv;

typedef struct {
	tsrv *t;
	h2_req_t *r;
} slow_job;

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static void slow_reply(void *arg)
{
	slow_job *j = arg;
	pthread_mutex_lock(&j->t->mu);
	j->t->answered++;
	pthread_mutex_unlock(&j->t->mu);
	h2_header_t h[] = {{"content-type", "text/plain"}};
	h2_respond(j->r, 200, h, 1, "slow", 4, NULL, 0);
	free(j);
}

static void slow_work(void *arg)
{
	slow_job *j = arg;
	sleep_ms(j->t->slow_ms);
	loop_post(j->t->loop, slow_reply, j);
}

static void on_request(h2_req_t *r, void *ctx)
{
	tsrv *t = ctx;
	pthread_mutex_lock(&t->mu);
	t->requests++;
	pthread_mutex_unlock(&t->mu);
	if (slice_eq_cstr(r->path, "/slow")) {
		slow_job *j = malloc(sizeof *j);
		j->t = t;
		j->r = r;
		pool_submit(t->pool, slow_work, j);
		return;
	}
	if (slice_eq_cstr(r->path, "/empty")) {
		h2_respond(r, 204, NULL, 0, NULL, 0, NULL, 0);
		return;
	}
	char len[32];
	snprintf(len, sizeof len, "%zu", r->body.n);
	const slice_t *x = h2_header_get(r, "x-echo");
	char xv[64] = "";
	if (x)
		snprintf(xv, sizeof xv, "%.*s", (int)x->n, (const char *)x->p);
	h2_header_t h[] = {{"content-type", "application/octet-stream"}, {"x-len", len}, {"x-echo", xv}};
	h2_header_t tr[] = {{"x-trailer", "done"}, {"grpc-status", "0"}};
	h2_respond(r, 200, h, 3, r->body.p, r->body.n, tr, 2);
}

static void *loop_thread(void *arg)
{
	tsrv *t = arg;
	loop_run(t->loop);
	return NULL;
}

static tsrv *start(h2_opts_t o)
{
	tsrv *t = calloc(1, sizeof *t);
	pthread_mutex_init(&t->mu, NULL);
	t->slow_ms = 200;
	t->loop = loop_new();
	t->pool = pool_new(32);
	o.on_request = on_request;
	o.ctx = t;
	o.name = "test";
	err_t err;
	t->srv = h2_server_new(loop_base(t->loop), "127.0.0.1:0", &o, &err);
	if (!t->srv)
		fail_msg("h2_server_new: %s", err.msg);
	t->port = h2_server_port(t->srv);
	assert_true(t->port > 0);
	pthread_create(&t->th, NULL, loop_thread, t);
	return t;
}

static void stop(tsrv *t)
{
	loop_stop(t->loop);
	pthread_join(t->th, NULL);
	pool_free(t->pool);
	h2_server_free(t->srv);
	loop_free(t->loop);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

typedef struct {
	tsrv *t;
	void (*fn)(tsrv *t);
	uint32_t conns;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done;
} on_loop_job;

static void on_loop_run(void *arg)
{
	on_loop_job *j = arg;
	if (j->fn)
		j->fn(j->t);
	j->conns = h2_server_conns(j->t->srv);
	pthread_mutex_lock(&j->mu);
	j->done = 1;
	pthread_cond_signal(&j->cv);
	pthread_mutex_unlock(&j->mu);
}

/* Runs fn (may be NULL) on the loop thread; returns the open connections after it. */
static uint32_t on_loop(tsrv *t, void (*fn)(tsrv *t))
{
	on_loop_job j = {.t = t, .fn = fn};
	pthread_mutex_init(&j.mu, NULL);
	pthread_cond_init(&j.cv, NULL);
	loop_post(t->loop, on_loop_run, &j);
	pthread_mutex_lock(&j.mu);
	while (!j.done)
		pthread_cond_wait(&j.cv, &j.mu);
	pthread_mutex_unlock(&j.mu);
	pthread_mutex_destroy(&j.mu);
	pthread_cond_destroy(&j.cv);
	return j.conns;
}

static void do_stop_accepting(tsrv *t)
{
	h2_server_stop_accepting(t->srv);
}

static int wait_conns(tsrv *t, uint32_t want, int ms)
{
	int64_t end = tc_now_ms() + ms;
	while (on_loop(t, NULL) != want) {
		if (tc_now_ms() > end)
			return 0;
		sleep_ms(10);
	}
	return 1;
}

static void test_echo_with_trailers(void **state)
{
	tsrv *t = start((h2_opts_t){0});
	tc_conn c;
	assert_int_equal(tc_connect(&c, t->port), 0);
	tc_stream st;
	const char *h[] = {"x-echo", "hi there", NULL};
	tc_submit(&c, &st, NULL, "/echo", h, "hello", 5);
	assert_int_equal(tc_wait1(&c, &st, 5000), 0);
	assert_int_equal(st.status, 200);
	assert_int_equal(st.body_n, 5);
	assert_memory_equal(st.body, "hello", 5);
	assert_int_equal(st.n_trailers, 2);
	assert_string_equal(st.grpc_status, "0");
	assert_int_equal(st.close_code, 0);
	tc_stream_free(&st);
	tc_stream e; /* no body, no trailers: one HEADERS frame with END_STREAM */
	tc_submit(&c, &e, "GET", "/empty", NULL, NULL, 0);
	assert_int_equal(tc_wait1(&c, &e, 5000), 0);
	assert_int_equal(e.status, 204);
	assert_int_equal(e.headers_frames, 1);
	tc_stream_free(&e);
	tc_close(&c);
	stop(t);
}

static void test_many_streams_one_connection(void **state)
{
	tsrv *t = start((h2_opts_t){0});
	t->slow_ms = 100;
	tc_conn c;
	assert_int_equal(tc_connect(&c, t->port), 0);
	enum { N = 100 };
	static tc_stream sts[N];
	tc_stream *ps[N];
	int64_t t0 = tc_now_ms();
	for (int i = 0; i < N; i++) {
		ps[i] = &sts[i];
		tc_submit(&c, &sts[i], NULL, "/slow", NULL, "x", 1);
	}
	assert_int_equal(tc_wait(&c, ps, N, 10000), 0);
	int64_t ms = tc_now_ms() - t0;
	for (int i = 0; i < N; i++) {
		assert_int_equal(sts[i].status, 200);
		tc_stream_free(&sts[i]);
	}
	/* 32 workers x 100 ms: 4 rounds; one stream at a time would take 10 s */
	printf("100 concurrent slow streams on one connection: %lld ms\n", (long long)ms);
	assert_true(ms < 3000);
	tc_close(&c);
	stop(t);
}

/* A 3 MiB body on a server started with o is reset with code; a body of
 * ok_len bytes on the same connection is then answered 200. */
static void big_body_is_reset(h2_opts_t o, uint32_t code, size_t ok_len)
{
	tsrv *t = start(o);
	tc_conn c;
	assert_int_equal(tc_connect(&c, t->port), 0);
	size_t n = 3u << 20;
	uint8_t *big = calloc(1, n);
	tc_stream st;
	tc_submit(&c, &st, NULL, "/echo", NULL, big, n);
	assert_int_equal(tc_wait1(&c, &st, 5000), 0);
	assert_int_equal(st.close_code, code);
	assert_int_equal(st.status, 0); /* no answer, a reset */
	tc_stream ok;                   /* the connection carries on */
	tc_submit(&c, &ok, NULL, "/echo", NULL, big, ok_len);
	assert_int_equal(tc_wait1(&c, &ok, 5000), 0);
	assert_int_equal(ok.status, 200);
	tc_stream_free(&ok);
	tc_stream_free(&st);
	free(big);
	tc_close(&c);
	stop(t);
}

static void test_body_limit_resets_stream(void **state)
{
	big_body_is_reset((h2_opts_t){.max_body = 1u << 20}, NGHTTP2_ENHANCE_YOUR_CALM, 1);
}

/* The process-wide body budget (net/budget.h): a body that would cross it
 * is refused with REFUSED_STREAM (gRPC retries it); its bytes and those of
 * finished requests come back. */
static void test_body_budget_refuses_stream(void **state)
{
	net_budget_t budget = {.limit = 2u << 20};
	big_body_is_reset((h2_opts_t){.budget = &budget}, NGHTTP2_REFUSED_STREAM, 1u << 20);
	assert_int_equal(atomic_load(&budget.used), 0);
}

static void test_client_reset_before_reply(void **state)
{
	tsrv *t = start((h2_opts_t){0});
	tc_conn c;
	assert_int_equal(tc_connect(&c, t->port), 0);
	tc_stream st;
	tc_submit(&c, &st, NULL, "/slow", NULL, "x", 1);
	tc_pump(&c, 50);
	nghttp2_submit_rst_stream(c.ng, NGHTTP2_FLAG_NONE, st.id, NGHTTP2_CANCEL);
	tc_pump(&c, t->slow_ms + 200); /* the reply arrives at a closed stream: only freed */
	tc_stream_free(&st);
	pthread_mutex_lock(&t->mu);
	assert_int_equal(t->answered, 1);
	pthread_mutex_unlock(&t->mu);
	tc_stream ok;
	tc_submit(&c, &ok, NULL, "/echo", NULL, "a", 1);
	assert_int_equal(tc_wait1(&c, &ok, 5000), 0);
	assert_int_equal(ok.status, 200);
	tc_stream_free(&ok);
	tc_close(&c);
	stop(t);
}

static void test_client_disconnect_before_reply(void **state)
{
	tsrv *t = start((h2_opts_t){0});
	tc_conn c;
	assert_int_equal(tc_connect(&c, t->port), 0);
	tc_stream st[3];
	for (int i = 0; i < 3; i++)
		tc_submit(&c, &st[i], NULL, "/slow", NULL, "x", 1);
	tc_pump(&c, 50);
	tc_close(&c);
	assert_true(wait_conns(t, 0, 2000));
	sleep_ms(t->slow_ms + 200);
	pthread_mutex_lock(&t->mu);
	assert_int_equal(t->answered, 3); /* answered into the void: freed, no crash */
	pthread_mutex_unlock(&t->mu);
	/* and a handler still working when the server is freed */
	assert_int_equal(tc_connect(&c, t->port), 0);
	tc_submit(&c, &st[0], NULL, "/slow", NULL, "x", 1);
	tc_pump(&c, 50);
	stop(t);
	tc_close(&c);
}

static void test_stop_accepting_goaway(void **state)
{
	tsrv *t = start((h2_opts_t){0});
	tc_conn c;
	assert_int_equal(tc_connect(&c, t->port), 0);
	tc_stream st[3];
	tc_stream *ps[3];
	for (int i = 0; i < 3; i++) {
		ps[i] = &st[i];
		tc_submit(&c, &st[i], NULL, "/slow", NULL, "x", 1);
	}
	tc_pump(&c, 50);
	on_loop(t, do_stop_accepting);
	assert_int_equal(tc_wait(&c, ps, 3, 5000), 0);
	assert_true(c.goaway);
	assert_int_equal(c.goaway_code, 0);
	assert_int_equal(c.goaway_last, st[2].id);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(st[i].status, 200); /* in flight: completed */
		tc_stream_free(&st[i]);
	}
	assert_true(tc_wait_eof(&c, 3000));
	/* The server has closed its side; once the client closes too, the
	 * connection is gone (before that the server may linger up to 2 s to
	 * drain the client, which raced this check). */
	tc_close(&c);
	assert_true(wait_conns(t, 0, 3000));
	assert_int_equal(tc_connect(&c, t->port), -1); /* no longer listening */
	tc_close(&c);
	stop(t);
}

static void test_idle_timeout(void **state)
{
	tsrv *t = start((h2_opts_t){.idle_timeout_ms = 200});
	tc_conn c;
	assert_int_equal(tc_connect(&c, t->port), 0);
	tc_stream st;
	tc_submit(&c, &st, NULL, "/echo", NULL, "a", 1);
	assert_int_equal(tc_wait1(&c, &st, 5000), 0);
	tc_stream_free(&st);
	int64_t t0 = tc_now_ms();
	assert_true(tc_wait_eof(&c, 3000));
	int64_t ms = tc_now_ms() - t0;
	assert_true(c.goaway);
	assert_true(ms >= 150 && ms < 2500);
	tc_close(&c);
	assert_true(wait_conns(t, 0, 2000));
	stop(t);
}

static void test_read_timeout(void **state)
{
	tsrv *t = start((h2_opts_t){.read_timeout_ms = 200, .idle_timeout_ms = 10000});
	tc_conn c;
	assert_int_equal(tc_connect(&c, t->port), 0);
	nghttp2_nv nv[] = {
	    {(uint8_t *)":method", (uint8_t *)"POST", 7, 4, 0},
	    {(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, 0},
	    {(uint8_t *)":authority", (uint8_t *)"x", 10, 1, 0},
	    {(uint8_t *)":path", (uint8_t *)"/echo", 5, 5, 0},
	};
	/* headers without END_STREAM, then nothing: the body never comes */
	nghttp2_submit_headers(c.ng, NGHTTP2_FLAG_NONE, -1, NULL, nv, 4, NULL);
	assert_true(tc_wait_eof(&c, 3000));
	assert_true(c.goaway);
	tc_close(&c);
	stop(t);
}

/* At the cap, an idle connection makes room for a new one; a connection
 * with a request in flight is never cut, so then the newcomer is closed. */
static void test_connection_cap(void **state)
{
	tsrv *t = start((h2_opts_t){.max_conns = 1});
	t->slow_ms = 1500;
	tc_conn a, b, c;
	assert_int_equal(tc_connect(&a, t->port), 0);
	tc_pump(&a, 50);
	assert_int_equal(tc_connect(&b, t->port), 0);
	assert_true(tc_wait_eof(&a, 2000)); /* idle a evicted for b */
	tc_stream st;
	tc_submit(&b, &st, NULL, "/echo", NULL, "b", 1);
	assert_int_equal(tc_wait1(&b, &st, 5000), 0);
	assert_int_equal(st.status, 200);
	tc_stream_free(&st);
	tc_submit(&b, &st, NULL, "/slow", NULL, NULL, 0);
	tc_pump(&b, 100);
	assert_int_equal(tc_connect(&c, t->port), 0);
	assert_true(tc_wait_eof(&c, 2000)); /* b is busy: c is closed at once */
	assert_int_equal(tc_wait1(&b, &st, 5000), 0);
	assert_int_equal(st.status, 200);
	tc_stream_free(&st);
	tc_close(&a);
	tc_close(&b);
	tc_close(&c);
	stop(t);
}

/* The nghttp tool as an independent client, cleartext and over TLS. */
static void test_nghttp_tool_and_tls(void **state)
{
	if (system("command -v nghttp >/dev/null && command -v openssl >/dev/null") != 0)
		skip();
	char dir[] = "/tmp/kiln-h2-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char cmd[1024], out[8192];
	snprintf(cmd, sizeof cmd,
	         "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
	         "-subj /CN=localhost -keyout %s/key.pem -out %s/cert.pem >/dev/null 2>&1",
	         dir, dir);
	assert_int_equal(system(cmd), 0);
	char certf[256], keyf[256];
	snprintf(certf, sizeof certf, "%s/cert.pem", dir);
	snprintf(keyf, sizeof keyf, "%s/key.pem", dir);
	err_t err;
	struct ssl_ctx_st *ctx = tls_ctx_new(certf, keyf, TLS_ALPN_H2, &err);
	if (!ctx)
		fail_msg("tls_ctx_new: %s", err.msg);
	assert_null(tls_ctx_new(keyf, keyf, TLS_ALPN_H2, &err));
	assert_non_null(strstr(err.msg, "certificate"));
	for (int tls = 0; tls < 2; tls++) {
		tsrv *t = start((h2_opts_t){.ssl_ctx = tls ? ctx : NULL});
		snprintf(cmd, sizeof cmd,
		         "printf hello-h2 | nghttp -v -d - -H 'x-echo: tool' %s://127.0.0.1:%d/echo 2>&1",
		         tls ? "https" : "http", t->port);
		FILE *p = popen(cmd, "r");
		size_t n = fread(out, 1, sizeof out - 1, p);
		out[n] = 0;
		assert_int_equal(pclose(p), 0);
		assert_non_null(strstr(out, ":status: 200"));
		assert_non_null(strstr(out, "x-echo: tool"));
		assert_non_null(strstr(out, "x-trailer: done"));
		assert_non_null(strstr(out, "hello-h2"));
		if (tls)
			assert_non_null(strstr(out, "h2")); /* negotiated by ALPN */
		stop(t);
	}
	tls_ctx_free(ctx);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

/* h2_server_detached + h2_server_adopt: a request over a bufferevent pair,
 * no socket; the server's answer (SETTINGS, then HEADERS :status 204) comes
 * back on the other end. */
static void adopt_on_request(h2_req_t *r, void *ctx)
{
	(*(int *)ctx)++;
	h2_respond(r, 204, NULL, 0, NULL, 0, NULL, 0);
}

static void test_adopt_bufferevent_pair(void **state)
{
	static const uint8_t req[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	                             "\0\0\0\x04\0\0\0\0\0"                   /* SETTINGS */
	                             "\0\0\x35\x01\x05\0\0\0\x01"             /* HEADERS, END_STREAM|END_HEADERS */
	                             "\x00\x07:method\x03GET\x00\x05:path\x01/" /* literal fields */
	                             "\x00\x07:scheme\x04http\x00\x0a:authority\x04kiln";
	struct event_base *base = event_base_new();
	int requests = 0;
	h2_opts_t o = {.name = "pair", .on_request = adopt_on_request, .ctx = &requests};
	h2_server_t *s = h2_server_detached(base, &o);
	struct bufferevent *pair[2];
	assert_int_equal(bufferevent_pair_new(base, 0, pair), 0);
	bufferevent_enable(pair[1], EV_READ | EV_WRITE);
	h2_server_adopt(s, pair[0], "192.0.2.1:1");
	assert_int_equal(h2_server_conns(s), 1);
	bufferevent_write(pair[1], req, sizeof req - 1);
	for (int i = 0; i < 16; i++) /* pairs defer their callbacks to the loop */
		event_base_loop(base, EVLOOP_NONBLOCK);
	assert_int_equal(requests, 1);
	struct evbuffer *in = bufferevent_get_input(pair[1]);
	assert_true(evbuffer_get_length(in) > 9);
	h2_server_free(s);
	bufferevent_free(pair[1]);
	event_base_free(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_adopt_bufferevent_pair),
	    cmocka_unit_test(test_echo_with_trailers),
	    cmocka_unit_test(test_many_streams_one_connection),
	    cmocka_unit_test(test_body_limit_resets_stream),
	    cmocka_unit_test(test_body_budget_refuses_stream),
	    cmocka_unit_test(test_client_reset_before_reply),
	    cmocka_unit_test(test_client_disconnect_before_reply),
	    cmocka_unit_test(test_stop_accepting_goaway),
	    cmocka_unit_test(test_idle_timeout),
	    cmocka_unit_test(test_read_timeout),
	    cmocka_unit_test(test_connection_cap),
	    cmocka_unit_test(test_nghttp_tool_and_tls),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
