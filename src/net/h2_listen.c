/* The HTTP/2 server's options and listener (listen.h does the accepting) and
 * the TLS context with ALPN "h2". Frames and streams live in h2.c. */
#include "net/h2_int.h"

#include <stdlib.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "base/alloc.h"
#include "base/limits.h"

h2_server *h2_server_new(struct event_base *base, const char *addr, const h2_opts *o, kn_err *err)
{
	if (!o->on_request) {
		err_set(err, 500, "h2 server %s: no on_request handler", o->name ? o->name : "");
		return NULL;
	}
	h2_server *s = xcalloc(1, sizeof *s);
	s->base = base;
	s->o = *o;
	if (!s->o.max_body)
		s->o.max_body = LIMIT_BODY_BYTES + (64u << 10);
	if (!s->o.max_conn_body)
		s->o.max_conn_body = 2 * s->o.max_body;
	if (s->o.idle_timeout_ms <= 0)
		s->o.idle_timeout_ms = 60000;
	if (s->o.read_timeout_ms <= 0)
		s->o.read_timeout_ms = 60000;
	if (s->o.write_timeout_ms <= 0)
		s->o.write_timeout_ms = 30000;
	if (!s->o.max_streams)
		s->o.max_streams = 256;
	listener_opts lo = {.kind = "h2",
	                    .name = o->name,
	                    .max_conns = o->max_conns,
	                    .ssl_ctx = o->ssl_ctx,
	                    .on_conn = h2_conn_start,
	                    .ctx = s};
	if (listener_open(&s->lis, base, addr, &lo, err) < 0) {
		free(s);
		return NULL;
	}
	s->o.name = s->lis.o.name; /* the listener's copy */
	return s;
}

int h2_server_port(const h2_server *s)
{
	return s->lis.port;
}

uint32_t h2_server_conns(const h2_server *s)
{
	return s->lis.n_conns;
}

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                       unsigned int inlen, void *arg)
{
	static const unsigned char h2[] = "\x02h2";
	unsigned char *sel;
	if (SSL_select_next_proto(&sel, outlen, h2, sizeof h2 - 1, in, inlen) != OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_ALERT_FATAL; /* gRPC requires h2 */
	*out = sel;
	return SSL_TLSEXT_ERR_OK;
}

struct ssl_ctx_st *h2_tls_ctx_new(const char *cert_file, const char *key_file, kn_err *err)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx) {
		err_set(err, 500, "cannot create a TLS context");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
	if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
		err_set(err, 500, "cannot load TLS certificate %s: %s", cert_file,
		        ERR_reason_error_string(ERR_get_error()));
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1) {
		err_set(err, 500, "cannot load TLS key %s (or it does not match %s): %s", key_file, cert_file,
		        ERR_reason_error_string(ERR_get_error()));
		goto fail;
	}
	SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
	return ctx;
fail:
	ERR_clear_error();
	SSL_CTX_free(ctx);
	return NULL;
}
