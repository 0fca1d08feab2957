/* Tests of src/net/tls.c and of TLS on both servers: a throwaway CA and server
 * certificate made with the openssl tool, curl and a raw OpenSSL client
 * against the HTTP/1.1 server (keep-alive, bodies, 413, async answers,
 * close_notify), plain-HTTP and silent clients on a TLS port, ALPN on the
 * HTTP/1.1 and h2 listeners, and clear errors for bad certificate/key files. */
#include "testutil.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "base/log.h"
#include "net/h2.h"
#include "net/http.h"
#include "net/loop.h"
#include "net/pool.h"
#include "net_test.h"
#include "net/tls.h"

static char dir[] = "/tmp/kiln-tls-XXXXXX";
static char ca_pem[256], cert_pem[256], key_pem[256], chain_pem[256], other_key[256];

static void run(const char *cmd)
{
	if (system(cmd) != 0)
		fail_msg("command failed: %s", cmd);
}

/* A CA, a server certificate for 127.0.0.1 and localhost signed by it (cert.pem
 * alone, chain.pem with the CA after it), its key, and an unrelated key. */
static int make_certs(void **state)
{
	if (system("command -v openssl >/dev/null") != 0)
		return -1;
	if (!mkdtemp(dir))
		return -1;
	char cmd[2048];
	const char *ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
	snprintf(cmd, sizeof cmd,
	         "(cd %s && openssl req -x509 %s -days 1 -subj /CN=kiln-test-ca -keyout ca.key -out ca.pem "
	         "&& openssl req %s -subj /CN=localhost -keyout key.pem -out srv.csr "
	         "&& printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > ext.cnf "
	         "&& openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 "
	         "-extfile ext.cnf -out cert.pem "
	         "&& cat cert.pem ca.pem > chain.pem "
	         "&& openssl genpkey -algorithm ec -pkeyopt ec_paramgen_curve:prime256v1 -out other.key"
	         ") >/dev/null 2>&1",
	         dir, ec, ec);
	if (system(cmd) != 0)
		return -1;
	snprintf(ca_pem, sizeof ca_pem, "%s/ca.pem", dir);
	snprintf(cert_pem, sizeof cert_pem, "%s/cert.pem", dir);
	snprintf(key_pem, sizeof key_pem, "%s/key.pem", dir);
	snprintf(chain_pem, sizeof chain_pem, "%s/chain.pem", dir);
	snprintf(other_key, sizeof other_key, "%s/other.key", dir);
	return 0;
}

static int remove_certs(void **state)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* ---- servers on a loop thread ---- */

typedef struct {
	loop_t *loop;
	pool_t *pool;
	http_server_t *srv;
	h2_server_t *h2;
	struct ssl_ctx_st *ctx;
	pthread_t th;
	int port;
} tsrv;

typedef struct {
	loop_t *loop;
	http_req_t *r;
} slow_job;

static void slow_reply(void *arg)
{
	slow_job *j = arg;
	http_respond(j->r, 200, "text/plain", NULL, "slow", 4);
	free(j);
}

static void slow_work(void *arg)
{
	slow_job *j = arg;
	sleep_ms(100);
	loop_post(j->loop, slow_reply, j);
}

static void on_request(http_req_t *r, void *ctx)
{
	tsrv *t = ctx;
	if (slice_eq_cstr(r->path, "/slow")) {
		slow_job *j = malloc(sizeof *j);
		j->loop = t->loop;
		j->r = r;
		pool_submit(t->pool, slow_work, j);
		return;
	}
	if (slice_eq_cstr(r->path, "/peer")) {
		http_respond(r, 200, "text/plain", NULL, r->peer.p, r->peer.n);
		return;
	}
	char out[256];
	int n = snprintf(out, sizeof out, "%.*s %.*s len=%zu:", (int)r->method.n, (const char *)r->method.p,
	                 (int)r->path.n, (const char *)r->path.p, r->body.n);
	buf_t b;
	buf_init(&b, SIZE_MAX);
	buf_append(&b, out, (size_t)n);
	buf_append(&b, r->body.p, r->body.n);
	http_respond(r, 200, "text/plain", NULL, b.p, b.n);
	buf_free(&b);
}

static void on_h2_request(h2_req_t *r, void *ctx)
{
	h2_header_t ct = {"content-type", "text/plain"};
	h2_respond(r, 200, &ct, 1, "h2 ok", 5, NULL, 0);
}

static void *loop_thread(void *arg)
{
	tsrv *t = arg;
	loop_run(t->loop);
	return NULL;
}

static struct ssl_ctx_st *ctx_or_fail(const char *cert, tls_alpn_t alpn)
{
	err_t err;
	struct ssl_ctx_st *ctx = tls_ctx_new(cert, key_pem, alpn, &err);
	if (!ctx)
		fail_msg("tls_ctx_new: %s", err.msg);
	return ctx;
}

/* An HTTP/1.1 server over TLS (o's handlers and ssl_ctx are set here). */
static tsrv *start_http(http_opts_t o)
{
	tsrv *t = calloc(1, sizeof *t);
	t->loop = loop_new();
	t->pool = pool_new(1);
	t->ctx = ctx_or_fail(chain_pem, TLS_ALPN_HTTP1);
	o.on_request = on_request;
	o.ctx = t;
	o.name = "tls-test";
	o.ssl_ctx = t->ctx;
	err_t err;
	t->srv = http_server_new(loop_base(t->loop), "127.0.0.1:0", &o, &err);
	if (!t->srv)
		fail_msg("http_server_new: %s", err.msg);
	t->port = http_server_port(t->srv);
	pthread_create(&t->th, NULL, loop_thread, t);
	return t;
}

static tsrv *start_h2(void)
{
	tsrv *t = calloc(1, sizeof *t);
	t->loop = loop_new();
	t->pool = pool_new(1);
	t->ctx = ctx_or_fail(cert_pem, TLS_ALPN_H2);
	h2_opts_t o = {.name = "tls-h2", .ssl_ctx = t->ctx, .on_request = on_h2_request, .ctx = t};
	err_t err;
	t->h2 = h2_server_new(loop_base(t->loop), "127.0.0.1:0", &o, &err);
	if (!t->h2)
		fail_msg("h2_server_new: %s", err.msg);
	t->port = h2_server_port(t->h2);
	pthread_create(&t->th, NULL, loop_thread, t);
	return t;
}

static void stop(tsrv *t)
{
	loop_stop(t->loop);
	pthread_join(t->th, NULL);
	pool_free(t->pool);
	http_server_free(t->srv);
	h2_server_free(t->h2);
	loop_free(t->loop);
	tls_ctx_free(t->ctx);
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

/* ---- clients ---- */

static int tcp_connect(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
		fail_msg("connect: %s", strerror(errno));
	struct timeval tv = {5, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	return fd;
}

/* 1 if the server closes fd (EOF or reset) within ms; bytes it sends first are ignored. */
static int closed_within(int fd, int ms)
{
	int64_t end = now_ms() + ms;
	for (;;) {
		int left = (int)(end - now_ms());
		if (left <= 0)
			return 0;
		struct pollfd p = {fd, POLLIN, 0};
		if (poll(&p, 1, left) <= 0)
			return 0;
		char tmp[4096];
		ssize_t k = recv(fd, tmp, sizeof tmp, 0);
		if (k == 0 || (k < 0 && errno == ECONNRESET))
			return 1;
	}
}

typedef struct {
	SSL_CTX *ctx;
	SSL *ssl;
	int fd;
	size_t n;
	char buf[1 << 16];
} tls_client;

/* A TLS client that verifies the server against the test CA for 127.0.0.1.
 * alpn: wire-format protocol list, or NULL to offer none. Returns 0 when the
 * handshake succeeded, -1 (c still to be closed) when it failed. */
static int tc_open(tls_client *c, int port, const char *alpn, size_t alpn_n)
{
	memset(c, 0, sizeof *c);
	c->ctx = SSL_CTX_new(TLS_client_method());
	assert_int_equal(SSL_CTX_load_verify_locations(c->ctx, ca_pem, NULL), 1);
	SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
	c->fd = tcp_connect(port);
	c->ssl = SSL_new(c->ctx);
	X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), "127.0.0.1");
	if (alpn)
		SSL_set_alpn_protos(c->ssl, (const unsigned char *)alpn, (unsigned)alpn_n);
	SSL_set_fd(c->ssl, c->fd);
	int rc = SSL_connect(c->ssl) == 1 ? 0 : -1;
	ERR_clear_error();
	return rc;
}

static void tc_close(tls_client *c)
{
	SSL_free(c->ssl);
	SSL_CTX_free(c->ctx);
	close(c->fd);
}

static void tc_send(tls_client *c, const char *s)
{
	size_t n = strlen(s);
	while (n) {
		int k = SSL_write(c->ssl, s, (int)n);
		if (k <= 0)
			fail_msg("SSL_write failed: %d", SSL_get_error(c->ssl, k));
		s += k;
		n -= (size_t)k;
	}
}

/* Reads one response (head and Content-Length body) into out; its status, or
 * 0 if the connection ended first. */
static int tc_response(tls_client *c, char *out, size_t cap)
{
	for (;;) {
		char *end = c->n ? memmem(c->buf, c->n, "\r\n\r\n", 4) : NULL;
		if (end) {
			size_t hn = (size_t)(end - c->buf) + 4;
			c->buf[c->n < sizeof c->buf ? c->n : sizeof c->buf - 1] = 0;
			const char *cl = strstr(c->buf, "Content-Length: ");
			size_t len = cl && cl < end ? strtoul(cl + 16, NULL, 10) : 0;
			if (c->n >= hn + len) {
				assert_true(hn + len < cap);
				memcpy(out, c->buf, hn + len);
				out[hn + len] = 0;
				memmove(c->buf, c->buf + hn + len, c->n - hn - len);
				c->n -= hn + len;
				return atoi(out + 9);
			}
		}
		if (c->n == sizeof c->buf)
			fail_msg("client buffer full");
		int k = SSL_read(c->ssl, c->buf + c->n, (int)(sizeof c->buf - c->n));
		if (k <= 0) {
			ERR_clear_error();
			return 0;
		}
		c->n += (size_t)k;
	}
}

/* The SSL_get_error of reading once more: SSL_ERROR_ZERO_RETURN means the
 * server ended with close_notify. */
static int tc_read_end(tls_client *c)
{
	char tmp[256];
	int k = SSL_read(c->ssl, tmp, sizeof tmp);
	int e = k > 0 ? SSL_ERROR_NONE : SSL_get_error(c->ssl, k);
	ERR_clear_error();
	return e;
}

/* Runs cmd, returns its output (malloc'd) and its exit status in *status. */
static char *run_output(const char *cmd, int *status)
{
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t cap = 1 << 16, n = 0;
	char *out = malloc(cap);
	size_t k;
	while ((k = fread(out + n, 1, cap - 1 - n, p)) > 0)
		n += k;
	out[n] = 0;
	*status = pclose(p);
	return out;
}

/* ---- tests ---- */

static void test_ctx_errors(void **state)
{
	err_t err;
	char missing[300], cmd[600];
	snprintf(missing, sizeof missing, "%s/nope.pem", dir);

	assert_null(tls_ctx_new(missing, key_pem, TLS_ALPN_HTTP1, &err));
	assert_int_equal(err.status, 500);
	assert_non_null(strstr(err.msg, missing));
	assert_non_null(strstr(err.msg, "certificate"));
	assert_non_null(strstr(err.msg, "No such file"));

	assert_null(tls_ctx_new(cert_pem, missing, TLS_ALPN_HTTP1, &err));
	assert_non_null(strstr(err.msg, missing));
	assert_non_null(strstr(err.msg, "key"));
	assert_non_null(strstr(err.msg, "No such file"));

	/* a key where the certificate belongs: no certificate in it */
	assert_null(tls_ctx_new(key_pem, key_pem, TLS_ALPN_HTTP1, &err));
	assert_non_null(strstr(err.msg, "certificate"));
	assert_non_null(strstr(err.msg, key_pem));
	assert_non_null(strstr(err.msg, "no start line"));

	/* a certificate where the key belongs */
	assert_null(tls_ctx_new(cert_pem, cert_pem, TLS_ALPN_HTTP1, &err));
	assert_non_null(strstr(err.msg, "cannot load TLS key"));

	/* a key of another certificate */
	assert_null(tls_ctx_new(cert_pem, other_key, TLS_ALPN_H2, &err));
	assert_non_null(strstr(err.msg, "does not match"));
	assert_non_null(strstr(err.msg, other_key));
	assert_non_null(strstr(err.msg, cert_pem));

	assert_null(tls_ctx_new("", key_pem, TLS_ALPN_HTTP1, &err));
	assert_non_null(strstr(err.msg, "both"));

	/* an unreadable file (skipped as root, who reads anything) */
	if (geteuid() != 0) {
		snprintf(cmd, sizeof cmd, "cp %s %s/locked.pem && chmod 000 %s/locked.pem", key_pem, dir,
		         dir);
		run(cmd);
		snprintf(missing, sizeof missing, "%s/locked.pem", dir);
		assert_null(tls_ctx_new(cert_pem, missing, TLS_ALPN_HTTP1, &err));
		assert_non_null(strstr(err.msg, "Permission denied"));
	}

	/* the error queue is left empty for whoever runs OpenSSL next */
	assert_int_equal(ERR_peek_error(), 0);

	struct ssl_ctx_st *ok = tls_ctx_new(cert_pem, key_pem, TLS_ALPN_HTTP1, &err);
	assert_non_null(ok);
	tls_ctx_free(ok);
	tls_ctx_free(NULL);
}

/* curl as an independent client: GETs on one connection, a POST body, 413. */
static void test_curl(void **state)
{
	if (system("command -v curl >/dev/null") != 0)
		skip();
	tsrv *t = start_http((http_opts_t){.max_body = 1000});
	char cmd[1024];
	int st;
	snprintf(cmd, sizeof cmd,
	         "curl -sS -v --cacert %s https://127.0.0.1:%d/one https://localhost:%d/two 2>&1", ca_pem,
	         t->port, t->port);
	char *out = run_output(cmd, &st);
	assert_int_equal(st, 0);
	assert_non_null(strstr(out, "GET /one len=0:"));
	assert_non_null(strstr(out, "GET /two len=0:"));
	assert_non_null(strstr(out, "ALPN: server accepted http/1.1"));
	free(out);

	snprintf(
	    cmd, sizeof cmd,
	    "curl -sS --cacert %s https://127.0.0.1:%d/a https://127.0.0.1:%d/b -w '%%{num_connects}\\n'",
	    ca_pem, t->port, t->port);
	out = run_output(cmd, &st);
	assert_int_equal(st, 0);
	assert_non_null(strstr(out, "GET /b len=0:0\n")); /* the second transfer made no new connection */
	free(out);

	snprintf(cmd, sizeof cmd,
	         "printf 'hello over tls' | curl -sS --cacert %s --data-binary @- https://127.0.0.1:%d/post",
	         ca_pem, t->port);
	out = run_output(cmd, &st);
	assert_int_equal(st, 0);
	assert_string_equal(out, "POST /post len=14:hello over tls");
	free(out);

	snprintf(
	    cmd, sizeof cmd,
	    "head -c 5000 /dev/zero | curl -sS --cacert %s --data-binary @- -o /dev/null -w '%%{http_code}' "
	    "https://127.0.0.1:%d/big",
	    ca_pem, t->port);
	out = run_output(cmd, &st);
	assert_string_equal(out, "413");
	free(out);

	/* without the CA, curl refuses the certificate: it is the test CA's */
	snprintf(cmd, sizeof cmd, "curl -sS https://127.0.0.1:%d/x >/dev/null 2>&1", t->port);
	assert_int_not_equal(system(cmd), 0);
	stop(t);
}

static void test_raw_client_keep_alive_body_413(void **state)
{
	tsrv *t = start_http((http_opts_t){.max_body = 1000});
	tls_client c;
	assert_int_equal(tc_open(&c, t->port, "\x08http/1.1", 9), 0);
	const unsigned char *sel;
	unsigned sel_n;
	SSL_get0_alpn_selected(c.ssl, &sel, &sel_n);
	assert_int_equal(sel_n, 8);
	assert_memory_equal(sel, "http/1.1", 8);
	char out[8192];

	tc_send(&c, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
	assert_int_equal(tc_response(&c, out, sizeof out), 200);
	assert_non_null(strstr(out, "Connection: keep-alive"));
	assert_non_null(strstr(out, "GET /a len=0:"));

	tc_send(&c, "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
	assert_int_equal(tc_response(&c, out, sizeof out), 200);
	assert_non_null(strstr(out, "POST /p len=5:hello"));

	tc_send(&c, "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
	assert_int_equal(tc_response(&c, out, sizeof out), 200);
	assert_non_null(strstr(out, "POST /c len=3:abc"));

	/* an answer from a worker thread, then two pipelined requests */
	tc_send(&c, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /x HTTP/1.1\r\nHost: x\r\n\r\n"
	            "GET /peer HTTP/1.1\r\nHost: x\r\n\r\n");
	assert_int_equal(tc_response(&c, out, sizeof out), 200);
	assert_non_null(strstr(out, "\r\n\r\nslow"));
	assert_int_equal(tc_response(&c, out, sizeof out), 200);
	assert_non_null(strstr(out, "GET /x len=0:"));
	assert_int_equal(tc_response(&c, out, sizeof out), 200);
	/* the peer is the TCP peer */
	struct sockaddr_in me;
	socklen_t ml = sizeof me;
	getsockname(c.fd, (struct sockaddr *)&me, &ml);
	char want[64];
	snprintf(want, sizeof want, "\r\n\r\n127.0.0.1:%u", ntohs(me.sin_port));
	assert_non_null(strstr(out, want));
	assert_int_equal(server_conns(t), 1);

	/* too big: 413 before the body, then the server closes with close_notify */
	tc_send(&c, "POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n");
	assert_int_equal(tc_response(&c, out, sizeof out), 413);
	assert_non_null(strstr(out, "Connection: close"));
	assert_non_null(strstr(out, "the limit is 1000 bytes"));
	assert_int_equal(tc_read_end(&c), SSL_ERROR_ZERO_RETURN);
	tc_close(&c);
	assert_true(wait_conns(t, 0, 3000));
	stop(t);
}

/* Connection: close, and a client that half-closes TCP after its request:
 * both answered, both ended by the server with close_notify. */
static void test_close_and_half_close(void **state)
{
	tsrv *t = start_http((http_opts_t){0});
	tls_client c;
	char out[4096];
	assert_int_equal(tc_open(&c, t->port, NULL, 0), 0);
	tc_send(&c, "GET /bye HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	assert_int_equal(tc_response(&c, out, sizeof out), 200);
	assert_non_null(strstr(out, "GET /bye"));
	assert_int_equal(tc_read_end(&c), SSL_ERROR_ZERO_RETURN);
	tc_close(&c);

	assert_int_equal(tc_open(&c, t->port, NULL, 0), 0);
	tc_send(&c, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n");
	shutdown(c.fd, SHUT_WR); /* TCP FIN, no close_notify */
	assert_int_equal(tc_response(&c, out, sizeof out), 200);
	assert_non_null(strstr(out, "\r\n\r\nslow"));
	assert_int_equal(tc_read_end(&c), SSL_ERROR_ZERO_RETURN);
	tc_close(&c);
	assert_true(wait_conns(t, 0, 3000));
	stop(t);
}

/* Plain HTTP, garbage and silence on the TLS port: each connection is closed
 * promptly (silence at the header timeout) and TLS clients are still served. */
static void test_plain_clients_fail_cleanly(void **state)
{
	tsrv *t = start_http((http_opts_t){.header_timeout_ms = 400});
	tls_client c;
	char out[4096];
	/* a keep-alive client the others must not disturb (idle after its first
	 * request, so the header timeout no longer applies to it) */
	assert_int_equal(tc_open(&c, t->port, NULL, 0), 0);
	tc_send(&c, "GET /first HTTP/1.1\r\nHost: x\r\n\r\n");
	assert_int_equal(tc_response(&c, out, sizeof out), 200);

	int plain = tcp_connect(t->port);
	const char *req = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	assert_int_equal(send(plain, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	assert_true(closed_within(plain, 1000));
	close(plain);

	int junk = tcp_connect(t->port);
	char bytes[300];
	for (size_t i = 0; i < sizeof bytes; i++)
		bytes[i] = (char)(i * 37 + 11);
	assert_int_equal(send(junk, bytes, sizeof bytes, MSG_NOSIGNAL), (ssize_t)sizeof bytes);
	assert_true(closed_within(junk, 1000));
	close(junk);

	int64_t t0 = now_ms();
	int silent = tcp_connect(t->port);
	assert_true(closed_within(silent, 3000)); /* the handshake never starts */
	int64_t ms = now_ms() - t0;
	assert_true(ms >= 300 && ms < 2500);
	close(silent);

	/* half a handshake: the ClientHello, then nothing */
	tls_client h;
	memset(&h, 0, sizeof h);
	h.ctx = SSL_CTX_new(TLS_client_method());
	h.fd = tcp_connect(t->port);
	h.ssl = SSL_new(h.ctx);
	SSL_set_fd(h.ssl, h.fd);
	SSL_set_connect_state(h.ssl);
	struct timeval tv = {0, 1000};
	setsockopt(h.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	SSL_do_handshake(h.ssl); /* sends the hello; the answer times out at once */
	ERR_clear_error();
	t0 = now_ms();
	assert_true(closed_within(h.fd, 3000));
	assert_true(now_ms() - t0 < 2500);
	tc_close(&h);

	tc_send(&c, "GET /still HTTP/1.1\r\nHost: x\r\n\r\n");
	assert_int_equal(tc_response(&c, out, sizeof out), 200);
	assert_non_null(strstr(out, "GET /still"));
	tc_close(&c);
	assert_true(wait_conns(t, 0, 3000));
	stop(t);
}

/* ALPN on the HTTP/1.1 listener: http/1.1 chosen among others; a client
 * offering only h2 gets no ALPN and HTTP/1.1 still works. */
static void test_http1_alpn(void **state)
{
	tsrv *t = start_http((http_opts_t){0});
	tls_client c;
	const unsigned char *sel;
	unsigned sel_n;
	char out[4096];
	assert_int_equal(tc_open(&c, t->port, "\x02h2\x08http/1.1", 12), 0);
	SSL_get0_alpn_selected(c.ssl, &sel, &sel_n);
	assert_int_equal(sel_n, 8);
	tc_close(&c);

	assert_int_equal(tc_open(&c, t->port, "\x02h2", 3), 0);
	SSL_get0_alpn_selected(c.ssl, &sel, &sel_n);
	assert_int_equal(sel_n, 0);
	tc_send(&c, "GET /h1 HTTP/1.1\r\nHost: x\r\n\r\n");
	assert_int_equal(tc_response(&c, out, sizeof out), 200);
	tc_close(&c);
	stop(t);
}

/* The h2 listener: nghttp negotiates h2; a client offering only http/1.1 is
 * refused in the handshake, and the listener keeps serving. */
static void test_h2_alpn(void **state)
{
	tsrv *t = start_h2();
	tls_client c;
	assert_int_not_equal(tc_open(&c, t->port, "\x08http/1.1", 9), 0);
	tc_close(&c);

	assert_int_equal(tc_open(&c, t->port, "\x02h2\x08http/1.1", 12), 0);
	const unsigned char *sel;
	unsigned sel_n;
	SSL_get0_alpn_selected(c.ssl, &sel, &sel_n);
	assert_int_equal(sel_n, 2);
	assert_memory_equal(sel, "h2", 2);
	tc_close(&c);

	if (system("command -v nghttp >/dev/null") == 0) {
		char cmd[512];
		int st;
		snprintf(cmd, sizeof cmd, "nghttp -v https://127.0.0.1:%d/x 2>&1", t->port);
		char *out = run_output(cmd, &st);
		assert_int_equal(st, 0);
		assert_non_null(strstr(out, "h2 ok"));
		assert_non_null(strstr(out, "The negotiated protocol: h2"));
		free(out);
	}
	stop(t);
}

int main(void)
{
	if (getenv("KILN_TEST_DEBUG")) /* shows why each refused connection was closed */
		log_set_level(LOG_DEBUG);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ctx_errors),
	    cmocka_unit_test(test_curl),
	    cmocka_unit_test(test_raw_client_keep_alive_body_413),
	    cmocka_unit_test(test_close_and_half_close),
	    cmocka_unit_test(test_plain_clients_fail_cleanly),
	    cmocka_unit_test(test_http1_alpn),
	    cmocka_unit_test(test_h2_alpn),
	};
	return cmocka_run_group_tests(tests, make_certs, remove_certs);
}
