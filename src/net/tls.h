/* Server-side TLS for Kiln's listeners (OpenSSL 3): one SSL_CTX per listener
 * from PEM files, TLS 1.2 or later, no session resumption state, and the ALPN
 * protocol the listener speaks. No client side, no client certificates. */
#ifndef KILN_NET_TLS_H
#define KILN_NET_TLS_H

#include "base/err.h"

struct bufferevent;
struct ssl_ctx_st;

/* The application protocol a TLS listener speaks, chosen by ALPN. */
typedef enum {
	/* "http/1.1" when the client offers it; a client offering no ALPN or only
	 * other protocols is still served (HTTP/1.1 needs no negotiation). */
	TLS_ALPN_HTTP1,
	/* "h2" (gRPC): a client offering ALPN without "h2" is refused with a
	 * no_application_protocol alert. */
	TLS_ALPN_H2,
} tls_alpn_t;

/* A server context from cert_file (PEM: the certificate, then any chain
 * certificates) and key_file (PEM private key matching it). NULL and err
 * (status 500) naming the file and OpenSSL's reason on failure: a file that
 * cannot be read, one that holds no certificate or key, a key that does not
 * match the certificate. Call at startup; the context may then be shared by
 * connections on the loop thread. Free with tls_ctx_free. */
struct ssl_ctx_st *tls_ctx_new(const char *cert_file, const char *key_file, tls_alpn_t alpn, err_t *err);

/* NULL is a no-op. Free after every server using the context. */
void tls_ctx_free(struct ssl_ctx_st *ctx);

/* Best effort before closing a connection: if bev is an OpenSSL bufferevent
 * whose handshake completed, sends close_notify (never blocks, never waits
 * for the peer's). Whatever output is still buffered in bev is not sent
 * first. No-op for plain bufferevents. Clears this thread's OpenSSL errors. */
void tls_close_notify(struct bufferevent *bev);

/* 1 if bev is an OpenSSL bufferevent, 0 for a plain socket's. */
int tls_is(struct bufferevent *bev);

/* The reason of a failed TLS connection as OpenSSL gave it ("wrong version
 * number", "http request"), or NULL if bev has none. Static storage. */
const char *tls_error(struct bufferevent *bev);

#endif
