/* Tests of src/net/grpc.c: unary gRPC on a real server (127.0.0.1:0, loop
 * thread, decoding on a worker), driven by nghttp2's client (h2_client.h) and
 * by h2load: replies and trailers, encodings, every refusal, limits, load. */
#include "testutil.h"

#include <pthread.h>

#include <zstd.h>

#include "h2_client.h"
#include "net/grpc.h"
#include "net/loop.h"
#include "net/pool.h"
#include "wire/compress.h"

#define ECHO "/test.Svc/Echo"

typedef struct {
	loop_t *loop;
	pool_t *pool;
	grpc_server_t *srv;
	pthread_t th;
	int port;
	pthread_mutex_t mu;
	int ok;      /* calls answered OK */
	int started; /* calls handed to a worker */
} tsrv;

typedef struct {
	tsrv *t;
	grpc_call_t *c;
	int code;
	err_t err;
} job;

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* loop thread: the worker's result */
static void echo_reply(void *arg)
{
	job *j = arg;
	if (j->code != GRPC_OK) {
		grpc_fail(j->c, j->code, j->err.msg, NULL, 0);
	} else {
		char out[96];
		int n = snprintf(out, sizeof out, "len=%zu first=%c peer=%s", j->c->msg.n,
		                 j->c->msg.n ? j->c->msg.p[0] : '-', j->c->peer.n ? "yes" : "no");
		pthread_mutex_lock(&j->t->mu);
		j->t->ok++;
		pthread_mutex_unlock(&j->t->mu);
		grpc_reply(j->c, out, (size_t)n);
	}
	free(j);
}

/* worker thread: decompression happens here, never on the loop */
static void echo_work(void *arg)
{
	job *j = arg;
	j->code = grpc_call_decode(j->c, &j->err);
	if (slice_eq_cstr(j->c->method, "/test.Svc/Slow"))
		sleep_ms(200);
	loop_post(j->t->loop, echo_reply, j);
}

static void echo(grpc_call_t *c, void *ctx)
{
	job *j = calloc(1, sizeof *j);
	j->t = ctx;
	j->c = c;
	pthread_mutex_lock(&j->t->mu);
	j->t->started++;
	pthread_mutex_unlock(&j->t->mu);
	pool_submit(j->t->pool, echo_work, j);
}

static void fail_call(grpc_call_t *c, void *ctx)
{
	static const uint8_t details[] = {0x08, 0x08, 0x12, 0x01, 'h'};
	grpc_fail(c, GRPC_RESOURCE_EXHAUSTED, "rate 100% over\nlimit \xc3\xa9", details, sizeof details);
}

static void *loop_thread(void *arg)
{
	tsrv *t = arg;
	loop_run(t->loop);
	return NULL;
}

static const grpc_method_t methods[] = {
    {ECHO, echo},
    {"/test.Svc/Slow", echo},
    {"/test.Svc/Fail", fail_call},
};

static tsrv *start(void)
{
	tsrv *t = calloc(1, sizeof *t);
	pthread_mutex_init(&t->mu, NULL);
	t->loop = loop_new();
	t->pool = pool_new(4);
	grpc_opts_t o = {.methods = methods, .n_methods = 3, .ctx = t};
	o.h2.name = "grpc-test";
	err_t err;
	t->srv = grpc_server_new(loop_base(t->loop), "127.0.0.1:0", &o, &err);
	if (!t->srv)
		fail_msg("grpc_server_new: %s", err.msg);
	t->port = grpc_server_port(t->srv);
	pthread_create(&t->th, NULL, loop_thread, t);
	return t;
}

static void stop(tsrv *t)
{
	loop_stop(t->loop);
	pthread_join(t->th, NULL);
	pool_free(t->pool);
	grpc_server_free(t->srv);
	loop_free(t->loop);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

static const char *const grpc_hdrs[] = {"content-type", "application/grpc", "te", "trailers", NULL};

/* One call on a fresh connection; the stream is left in st. */
static void call(tsrv *t, tc_stream *st, const char *method, const char *path, const char *const *hdrs,
                 const void *body, size_t n)
{
	tc_conn c;
	assert_int_equal(tc_connect(&c, t->port), 0);
	tc_submit(&c, st, method, path, hdrs ? hdrs : grpc_hdrs, body, n);
	assert_int_equal(tc_wait1(&c, st, 20000), 0);
	tc_close(&c);
}

/* Calls path with msg framed (compressed flag as given) and extra headers. */
static void call_msg(tsrv *t, tc_stream *st, const char *path, const char *const *hdrs, const void *msg,
                     size_t n, int compressed)
{
	size_t fn;
	uint8_t *f = tc_grpc_frame(msg, n, compressed, &fn);
	call(t, st, NULL, path, hdrs, f, fn);
	free(f);
}

static void assert_reply(const tc_stream *st, const char *want)
{
	assert_int_equal(st->status, 200);
	assert_string_equal(st->ctype, "application/grpc");
	assert_string_equal(st->grpc_status, "0");
	assert_true(st->n_trailers >= 1); /* grpc-status came as a trailer */
	size_t n = strlen(want);
	assert_true(st->body_n >= 5);
	assert_int_equal(st->body[0], 0);
	assert_int_equal((size_t)st->body[4] | (size_t)st->body[3] << 8, st->body_n - 5);
	assert_true(st->body_n - 5 >= n);
	assert_memory_equal(st->body + 5, want, n);
}

static void assert_status(const tc_stream *st, int http, const char *code, const char *msg_part)
{
	assert_int_equal(st->status, http);
	assert_string_equal(st->grpc_status, code);
	assert_int_equal(st->headers_frames, 1); /* trailers-only */
	if (msg_part && !strstr(st->grpc_message, msg_part))
		fail_msg("grpc-message \"%s\" lacks \"%s\"", st->grpc_message, msg_part);
}

static void test_unary_ok(void **state)
{
	tsrv *t = start();
	tc_stream st;
	call_msg(t, &st, ECHO, NULL, "hello", 5, 0);
	assert_reply(&st, "len=5 first=h peer=yes");
	tc_stream_free(&st);
	call_msg(t, &st, ECHO, NULL, "", 0, 0); /* an empty message is a message */
	assert_reply(&st, "len=0");
	tc_stream_free(&st);
	const char *h[] = {"content-type", "application/grpc+proto", "grpc-timeout", "5S", NULL};
	call_msg(t, &st, ECHO, h, "x", 1, 0);
	assert_reply(&st, "len=1");
	tc_stream_free(&st);
	stop(t);
}

static void test_gzip_and_zstd(void **state)
{
	tsrv *t = start();
	size_t n = 100000;
	uint8_t *msg = malloc(n);
	for (size_t i = 0; i < n; i++)
		msg[i] = (uint8_t)('a' + i % 7);
	buf_t z;
	buf_init(&z, SIZE_MAX);
	assert_int_equal(gz_deflate(slice_make(msg, n), 6, &z), 0);
	tc_stream st;
	const char *gz[] = {"content-type", "application/grpc", "grpc-encoding", "gzip", NULL};
	call_msg(t, &st, ECHO, gz, z.p, z.n, 1);
	assert_reply(&st, "len=100000 first=a");
	tc_stream_free(&st);
	call_msg(t, &st, ECHO, gz, msg, n, 0); /* the encoding header alone: flag 0 = not compressed */
	assert_reply(&st, "len=100000 first=a");
	tc_stream_free(&st);
	size_t cap = ZSTD_compressBound(n);
	uint8_t *zs = malloc(cap);
	size_t zn = ZSTD_compress(zs, cap, msg, n, 3);
	assert_false(ZSTD_isError(zn));
	const char *zh[] = {"content-type", "application/grpc", "grpc-encoding", "zstd", NULL};
	call_msg(t, &st, ECHO, zh, zs, zn, 1);
	assert_reply(&st, "len=100000 first=a");
	tc_stream_free(&st);
	call_msg(t, &st, ECHO, zh, zs, zn / 2, 1); /* truncated zstd */
	assert_status(&st, 200, "3", "zstd");
	tc_stream_free(&st);
	call_msg(t, &st, ECHO, gz, "not gzip", 8, 1);
	assert_status(&st, 200, "3", "gzip");
	tc_stream_free(&st);
	free(zs);
	buf_free(&z);
	free(msg);
	stop(t);
}

static void test_refusals(void **state)
{
	tsrv *t = start();
	tc_stream st;
	call_msg(t, &st, "/test.Svc/Nope", NULL, "x", 1, 0);
	assert_status(&st, 200, "12", "unknown method /test.Svc/Nope");
	tc_stream_free(&st);
	const char *json[] = {"content-type", "application/json", NULL};
	call_msg(t, &st, ECHO, json, "x", 1, 0);
	assert_status(&st, 415, "3", "application/json");
	tc_stream_free(&st);
	call(t, &st, "GET", ECHO, grpc_hdrs, NULL, 0);
	assert_status(&st, 405, "12", "POST");
	tc_stream_free(&st);
	const char *br[] = {"content-type", "application/grpc", "grpc-encoding", "br", NULL};
	call_msg(t, &st, ECHO, br, "x", 1, 1);
	assert_status(&st, 200, "12", "grpc-encoding \"br\"");
	assert_string_equal(st.accept_enc, "identity,gzip,zstd");
	tc_stream_free(&st);
	stop(t);
}

static void test_malformed_framing(void **state)
{
	tsrv *t = start();
	tc_stream st;
	call(t, &st, NULL, ECHO, NULL, "\0\0\0", 3);
	assert_status(&st, 200, "3", "5-byte prefix");
	tc_stream_free(&st);
	call(t, &st, NULL, ECHO, NULL, NULL, 0);
	assert_status(&st, 200, "3", "has 0 bytes");
	tc_stream_free(&st);
	uint8_t trunc[5 + 50] = {0, 0, 0, 0, 100};
	call(t, &st, NULL, ECHO, NULL, trunc, sizeof trunc);
	assert_status(&st, 200, "3", "truncated: its prefix says 100 bytes, 50 arrived");
	tc_stream_free(&st);
	uint8_t two[12] = {0, 0, 0, 0, 1, 'a', 0, 0, 0, 0, 1, 'b'};
	call(t, &st, NULL, ECHO, NULL, two, sizeof two);
	assert_status(&st, 200, "3", "one message");
	tc_stream_free(&st);
	call_msg(t, &st, ECHO, NULL, "x", 1, 1); /* compressed, but no grpc-encoding */
	assert_status(&st, 200, "13", "compressed");
	tc_stream_free(&st);
	call_msg(t, &st, ECHO, NULL, "x", 1, 2);
	assert_status(&st, 200, "3", "compressed-flag is 2");
	tc_stream_free(&st);
	stop(t);
}

static void test_fail_with_details(void **state)
{
	tsrv *t = start();
	tc_stream st;
	call_msg(t, &st, "/test.Svc/Fail", NULL, "x", 1, 0);
	assert_status(&st, 200, "8", NULL);
	assert_string_equal(st.grpc_message, "rate 100%25 over%0Alimit %C3%A9");
	assert_string_equal(st.details, "CAgSAWg"); /* base64 of 08 08 12 01 68, unpadded */
	tc_stream_free(&st);
	buf_t b;
	buf_init(&b, SIZE_MAX);
	grpc_percent_encode(slice_cstr("a b%\x7f"), &b);
	assert_int_equal(b.n, 9);
	assert_memory_equal(b.p, "a b%25%7F", 9);
	buf_free(&b);
	assert_int_equal(grpc_code_of_http(413), GRPC_RESOURCE_EXHAUSTED);
	assert_int_equal(grpc_code_of_http(400), GRPC_INVALID_ARGUMENT);
	assert_int_equal(grpc_code_of_http(503), GRPC_UNAVAILABLE);
	assert_int_equal(grpc_code_of_http(401), GRPC_UNAUTHENTICATED);
	stop(t);
}

static void test_over_limit(void **state)
{
	tsrv *t = start();
	size_t n = 40u << 20;
	size_t fn;
	uint8_t *zeros = calloc(1, n);
	uint8_t *f = tc_grpc_frame(zeros, n, 0, &fn);
	tc_stream st;
	int64_t t0 = tc_now_ms();
	call(t, &st, NULL, ECHO, NULL, f, fn);
	assert_status(&st, 200, "8", "grpc message is 41943040 bytes; the limit is 32 MiB");
	printf("40 MiB message refused after the client sent %zu bytes, %lld ms\n", st.req_off,
	       (long long)(tc_now_ms() - t0));
	assert_true(st.req_off < fn); /* the answer came before the body: the rest was never read */
	tc_stream_free(&st);
	free(f);
	buf_t z; /* a gzip bomb: 40 MiB of zeros in ~40 KB */
	buf_init(&z, SIZE_MAX);
	assert_int_equal(gz_deflate(slice_make(zeros, n), 6, &z), 0);
	const char *gz[] = {"content-type", "application/grpc", "grpc-encoding", "gzip", NULL};
	call_msg(t, &st, ECHO, gz, z.p, z.n, 1);
	assert_status(&st, 200, "8", "decompresses to more than 32 MiB");
	tc_stream_free(&st);
	buf_reset(&z);
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	buf_reserve(&z, ZSTD_compressBound(n));
	z.n = ZSTD_compressCCtx(cc, z.p, z.cap, zeros, n, 1);
	ZSTD_freeCCtx(cc);
	const char *zh[] = {"content-type", "application/grpc", "grpc-encoding", "zstd", NULL};
	call_msg(t, &st, ECHO, zh, z.p, z.n, 1);
	assert_status(&st, 200, "8", "the limit is 32 MiB");
	tc_stream_free(&st);
	buf_free(&z);
	free(zeros);
	stop(t);
}

static void test_32mib_message(void **state)
{
	tsrv *t = start();
	size_t n = 32u << 20;
	uint8_t *msg = malloc(n);
	memset(msg, 'q', n);
	int64_t t0 = tc_now_ms();
	tc_stream st;
	call_msg(t, &st, ECHO, NULL, msg, n, 0);
	int64_t ms = tc_now_ms() - t0;
	assert_reply(&st, "len=33554432 first=q");
	printf("32 MiB message: %lld ms (%.0f MiB/s)\n", (long long)ms, 32000.0 / (double)(ms ? ms : 1));
	assert_true(ms < 10000);
	tc_stream_free(&st);
	free(msg);
	stop(t);
}

/* Reads of *field under t->mu. */
static int tsrv_get(tsrv *t, const int *field)
{
	pthread_mutex_lock(&t->mu);
	int v = *field;
	pthread_mutex_unlock(&t->mu);
	return v;
}

/* Pumps c until the server counts n in *field (at most 10 s): the test
 * acts once the server has the call, not after a guess of how long that
 * takes on a loaded machine. */
static void pump_until(tc_conn *c, tsrv *t, const int *field, int n)
{
	for (int i = 0; i < 500 && tsrv_get(t, field) < n; i++)
		tc_pump(c, 20);
	assert_int_equal(tsrv_get(t, field), n);
}

static void do_stop(void *arg)
{
	grpc_server_stop_accepting(arg);
}

static void test_inflight_across_stop_and_disconnect(void **state)
{
	tsrv *t = start();
	tc_conn c;
	assert_int_equal(tc_connect(&c, t->port), 0);
	size_t fn;
	uint8_t *f = tc_grpc_frame("slow", 4, 0, &fn);
	tc_stream st;
	tc_submit(&c, &st, NULL, "/test.Svc/Slow", grpc_hdrs, f, fn);
	pump_until(&c, t, &t->started, 1);
	loop_post(t->loop, do_stop, t->srv);
	assert_int_equal(tc_wait1(&c, &st, 5000), 0);
	assert_true(c.goaway);
	assert_reply(&st, "len=4");
	tc_stream_free(&st);
	tc_close(&c);
	stop(t);
	t = start(); /* a client that leaves before the reply */
	assert_int_equal(tc_connect(&c, t->port), 0);
	tc_submit(&c, &st, NULL, "/test.Svc/Slow", grpc_hdrs, f, fn);
	pump_until(&c, t, &t->started, 1);
	tc_close(&c);
	for (int i = 0; i < 500 && tsrv_get(t, &t->ok) < 1; i++)
		sleep_ms(20);
	assert_int_equal(tsrv_get(t, &t->ok), 1); /* answered into the void: only freed */
	stop(t);
	free(f);
}

/* h2load: 2000 calls over 50 connections, 10 streams each at a time. */
static void test_h2load(void **state)
{
	if (system("command -v h2load >/dev/null") != 0)
		skip();
	tsrv *t = start();
	char path[] = "/tmp/kiln-grpc-body-XXXXXX";
	int fd = mkstemp(path);
	uint8_t msg[1000];
	memset(msg, 'm', sizeof msg);
	size_t fn;
	uint8_t *f = tc_grpc_frame(msg, sizeof msg, 0, &fn);
	assert_int_equal(write(fd, f, fn), (ssize_t)fn);
	close(fd);
	free(f);
	char cmd[512], out[8192];
	snprintf(cmd, sizeof cmd,
	         "h2load -n 2000 -c 50 -m 10 -d %s -H 'content-type: application/grpc' -H 'te: trailers' "
	         "http://127.0.0.1:%d" ECHO " 2>&1",
	         path, t->port);
	FILE *p = popen(cmd, "r");
	size_t n = fread(out, 1, sizeof out - 1, p);
	out[n] = 0;
	assert_int_equal(pclose(p), 0);
	unlink(path);
	const char *rps = strstr(out, "finished in");
	if (rps)
		printf("h2load -n 2000 -c 50 -m 10: %.*s\n", (int)strcspn(rps, "\n"), rps);
	if (!strstr(out, "2000 succeeded") || !strstr(out, "status codes: 2000 2xx"))
		fail_msg("h2load:\n%s", out);
	pthread_mutex_lock(&t->mu);
	assert_int_equal(t->ok, 2000); /* every call decoded and answered grpc-status 0 */
	pthread_mutex_unlock(&t->mu);
	stop(t);
}

/* The framing rules without a server: prefix, limit, one message, flag. */
static void test_frame_check(void **state)
{
	static const uint8_t ok[] = {1, 0, 0, 0, 2, 'h', 'i'};
	grpc_frame_t f;
	char m[160];
	assert_int_equal(grpc_frame_check(slice_make(ok, 3), 0, 100, &f, m, sizeof m), GRPC_OK);
	assert_false(f.whole);
	assert_int_equal(grpc_frame_check(slice_make(ok, 6), 0, 100, &f, m, sizeof m), GRPC_OK);
	assert_int_equal(f.len, 2);
	assert_int_equal(grpc_frame_check(slice_make(ok, 7), 1, 100, &f, m, sizeof m), GRPC_OK);
	assert_true(f.whole && f.compressed && f.msg.n == 2 && f.msg.p == ok + 5);
	assert_int_equal(grpc_frame_check(slice_make(ok, 7), 0, 1, &f, m, sizeof m), GRPC_RESOURCE_EXHAUSTED);
	assert_string_equal(m, "grpc message is 2 bytes; the limit is 1 bytes");
	assert_int_equal(grpc_frame_check(slice_make(ok, 6), 1, 100, &f, m, sizeof m), GRPC_INVALID_ARGUMENT);
	assert_string_equal(m, "grpc message truncated: its prefix says 2 bytes, 1 arrived");
	assert_int_equal(grpc_frame_check(slice_make(ok, 4), 1, 100, &f, m, sizeof m), GRPC_INVALID_ARGUMENT);
	static const uint8_t two[] = {0, 0, 0, 0, 0, 0};
	assert_int_equal(grpc_frame_check(slice_make(two, 6), 0, 100, &f, m, sizeof m),
	                 GRPC_INVALID_ARGUMENT);
	assert_string_equal(m, "a unary call carries one message; more data followed it");
	static const uint8_t flag2[] = {2, 0, 0, 0, 0};
	assert_int_equal(grpc_frame_check(slice_make(flag2, 5), 1, 100, &f, m, sizeof m),
	                 GRPC_INVALID_ARGUMENT);
	assert_false(f.whole);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_frame_check),
	    cmocka_unit_test(test_unary_ok),
	    cmocka_unit_test(test_gzip_and_zstd),
	    cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_malformed_framing),
	    cmocka_unit_test(test_fail_with_details),
	    cmocka_unit_test(test_over_limit),
	    cmocka_unit_test(test_32mib_message),
	    cmocka_unit_test(test_inflight_across_stop_and_disconnect),
	    cmocka_unit_test(test_h2load),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
