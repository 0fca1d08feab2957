/* Server TLS contexts and the small OpenSSL calls the servers need around a
 * connection (tls.h). The handshake itself runs inside libevent's OpenSSL
 * bufferevents (listen.c). */
#include "net/tls.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

/* TLS 1.2 suites: forward secret AEADs only (RFC 9113 9.2.2 asks this of h2).
 * TLS 1.3 keeps OpenSSL's defaults, which are all of that kind. */
#define TLS12_CIPHERS                                                                                        \
	"ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"           \
	"ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"

/* ALPN protocol lists in wire format (length-prefixed). */
static const unsigned char ALPN_HTTP1[] = "\x08http/1.1";
static const unsigned char ALPN_H2[] = "\x02h2";

/* The oldest error on this thread's OpenSSL queue, as a reason people can
 * read; empties the queue. */
static const char *ssl_reason(void)
{
	unsigned long e = ERR_peek_error();
	const char *r = e ? ERR_reason_error_string(e) : NULL;
	ERR_clear_error();
	return r ? r : "unknown OpenSSL error";
}

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                       unsigned int inlen, void *arg)
{
	tls_alpn_t alpn = (tls_alpn_t)(uintptr_t)arg;
	const unsigned char *want = alpn == TLS_ALPN_H2 ? ALPN_H2 : ALPN_HTTP1;
	unsigned int want_n = alpn == TLS_ALPN_H2 ? sizeof ALPN_H2 - 1 : sizeof ALPN_HTTP1 - 1;
	unsigned char *sel;
	if (SSL_select_next_proto(&sel, outlen, want, want_n, in, inlen) == OPENSSL_NPN_NEGOTIATED) {
		*out = sel;
		return SSL_TLSEXT_ERR_OK;
	}
	/* gRPC requires h2; HTTP/1.1 is what a client gets without negotiating */
	return alpn == TLS_ALPN_H2 ? SSL_TLSEXT_ERR_ALERT_FATAL : SSL_TLSEXT_ERR_NOACK;
}

/* 0 if path can be opened for reading, else -1 with err naming it. */
static int check_readable(const char *what, const char *path, err_t *err)
{
	FILE *f = fopen(path, "rb");
	if (f) {
		fclose(f);
		return 0;
	}
	err_set(err, 500, "cannot read TLS %s %s: %s", what, path, strerror(errno));
	return -1;
}

struct ssl_ctx_st *tls_ctx_new(const char *cert_file, const char *key_file, tls_alpn_t alpn, err_t *err)
{
	if (!cert_file || !*cert_file || !key_file || !*key_file) {
		err_set(err, 500, "TLS needs both a certificate file and a key file");
		return NULL;
	}
	if (check_readable("certificate", cert_file, err) < 0 || check_readable("key", key_file, err) < 0)
		return NULL;
	ERR_clear_error();
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx) {
		err_set(err, 500, "cannot create a TLS context: %s", ssl_reason());
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	/* IGNORE_UNEXPECTED_EOF: a client closing TCP without close_notify is an
	 * EOF (as over plain TCP: requests are length-delimited anyway), not an
	 * error that would cut off the answer to a request it already sent. */
	SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET |
	                             SSL_OP_IGNORE_UNEXPECTED_EOF);
	/* a new full handshake per connection: no session state to bound or share */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_num_tickets(ctx, 0);
	/* libevent may retry a write from a moved buffer; idle connections give
	 * their record buffers back */
	SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
	if (SSL_CTX_set_cipher_list(ctx, TLS12_CIPHERS) != 1) {
		err_set(err, 500, "cannot set the TLS 1.2 cipher suites: %s", ssl_reason());
		goto fail;
	}
	if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1) {
		err_set(err, 500, "cannot load TLS certificate %s: %s", cert_file, ssl_reason());
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) != 1) {
		unsigned long e = ERR_peek_error();
		if (ERR_GET_LIB(e) == ERR_LIB_X509 && ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH)
			err_set(err, 500, "TLS key %s does not match certificate %s: %s", key_file, cert_file,
			        ssl_reason());
		else
			err_set(err, 500, "cannot load TLS key %s: %s", key_file, ssl_reason());
		goto fail;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		err_set(err, 500, "TLS key %s does not match certificate %s: %s", key_file, cert_file,
		        ssl_reason());
		goto fail;
	}
	SSL_CTX_set_alpn_select_cb(ctx, alpn_select, (void *)(uintptr_t)alpn);
	return ctx;
fail:
	ERR_clear_error();
	SSL_CTX_free(ctx);
	return NULL;
}

void tls_ctx_free(struct ssl_ctx_st *ctx)
{
	SSL_CTX_free(ctx);
}

void tls_close_notify(struct bufferevent *bev)
{
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	if (!ssl)
		return;
	if (SSL_is_init_finished(ssl) && !(SSL_get_shutdown(ssl) & SSL_SENT_SHUTDOWN))
		SSL_shutdown(ssl);
	ERR_clear_error();
}

int tls_is(struct bufferevent *bev)
{
	return bufferevent_openssl_get_ssl(bev) != NULL;
}

const char *tls_error(struct bufferevent *bev)
{
	unsigned long e = bufferevent_get_openssl_error(bev);
	return e ? ERR_reason_error_string(e) : NULL;
}
