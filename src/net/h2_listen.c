/* The listening side of the HTTP/2 server (h2.h): binding, accepting into
 * bufferevents (plain or OpenSSL), the connection cap, the TLS context with
 * ALPN "h2", and the server's lifetime. Frames and streams live in h2.c. */
#include "net/h2_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "base/log.h"

/* "ip:port" or "[v6]:port"; an IPv4-mapped IPv6 address is shown as IPv4. */
static void peer_name(const struct sockaddr *sa, socklen_t len, char *out, size_t cap)
{
	struct sockaddr_in v4;
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)sa;
	if (sa->sa_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr)) {
		memset(&v4, 0, sizeof v4);
		v4.sin_family = AF_INET;
		v4.sin_port = a6->sin6_port;
		memcpy(&v4.sin_addr, &a6->sin6_addr.s6_addr[12], 4);
		sa = (const struct sockaddr *)&v4;
		len = sizeof v4;
	}
	char host[INET6_ADDRSTRLEN], serv[8];
	if (getnameinfo(sa, len, host, sizeof host, serv, sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV)) {
		snprintf(out, cap, "unknown");
		return;
	}
	snprintf(out, cap, sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, serv);
}

static void accept_cb(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *arg)
{
	h2_server *s = arg;
	if (s->n_conns >= s->o.max_conns) {
		evutil_closesocket(fd);
		uint64_t k = ++s->n_rejected;
		if ((k & (k - 1)) == 0) /* the 1st, 2nd, 4th, 8th... */
			log_warn("h2 connection limit reached; closing new connections",
			         "listener=%s max_conns=%u rejected=%llu", s->name, s->o.max_conns,
			         (unsigned long long)k);
		return;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	struct bufferevent *bev;
	if (s->o.ssl_ctx) {
		SSL *ssl = SSL_new(s->o.ssl_ctx);
		bev = ssl ? bufferevent_openssl_socket_new(s->base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
		                                           BEV_OPT_CLOSE_ON_FREE)
		          : NULL;
		if (!bev && ssl)
			SSL_free(ssl);
	} else {
		bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
	}
	if (!bev) {
		evutil_closesocket(fd);
		return;
	}
	char peer[64];
	peer_name(sa, (socklen_t)salen, peer, sizeof peer);
	h2_conn_start(s, bev, peer);
}

static void accept_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	h2_server *s = arg;
	if (s->lis)
		evconnlistener_enable(s->lis);
}

/* accept() failed (EMFILE...): pause accepting for a moment instead of spinning. */
static void accept_error_cb(struct evconnlistener *lis, void *arg)
{
	h2_server *s = arg;
	int e = EVUTIL_SOCKET_ERROR();
	log_warn("h2 accept failed; pausing accepts for 100 ms", "listener=%s error=\"%s\"", s->name,
	         evutil_socket_error_to_string(e));
	evconnlistener_disable(lis);
	struct timeval tv = {0, 100 * 1000};
	evtimer_add(s->accept_retry, &tv);
}

/* Binds the first address host:port resolves to (host NULL: every interface
 * of family). Returns the socket, or -1 with *e set. */
static evutil_socket_t bind_first(const char *host, const char *port, int family, int *e)
{
	struct addrinfo hints = {.ai_family = family, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
	struct addrinfo *res = NULL;
	int rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0) {
		*e = -rc; /* negative: a getaddrinfo error */
		return -1;
	}
	evutil_socket_t fd = -1;
	for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0) {
			*e = errno;
			continue;
		}
		int one = 1, v6only = host != NULL; /* ":port" on [::] takes IPv4 too */
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (ai->ai_family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
			*e = errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	return fd;
}

/* Binds addr ("host:port", ":port", "[v6]:port"); ":port" prefers dual-stack [::]. */
static evutil_socket_t bind_listener(const char *addr, kn_err *err)
{
	char host[256];
	const char *colon = strrchr(addr, ':');
	const char *h = addr;
	size_t hn = colon ? (size_t)(colon - addr) : 0;
	const char *port = colon ? colon + 1 : "";
	if (hn >= 2 && h[0] == '[' && h[hn - 1] == ']')
		h++, hn -= 2;
	if (!colon || hn >= sizeof host || !*port || strspn(port, "0123456789") != strlen(port)) {
		err_set(err, 500, "bad listen address \"%s\": use host:port, :port or [v6]:port", addr);
		return -1;
	}
	memcpy(host, h, hn);
	host[hn] = 0;
	int e = 0;
	evutil_socket_t fd;
	if (hn) {
		fd = bind_first(host, port, AF_UNSPEC, &e);
	} else {
		fd = bind_first(NULL, port, AF_INET6, &e);
		if (fd < 0 && e != EADDRINUSE && e != EACCES)
			fd = bind_first(NULL, port, AF_INET, &e);
	}
	if (fd < 0 && e < 0)
		err_set(err, 500, "cannot resolve listen address %s: %s", addr, gai_strerror(-e));
	else if (fd < 0)
		err_set(err, 500, "cannot listen on %s: %s", addr, strerror(e));
	return fd;
}

h2_server *h2_server_new(struct event_base *base, const char *addr, const h2_opts *o, kn_err *err)
{
	if (!o->on_request) {
		err_set(err, 500, "h2 server %s: no on_request handler", o->name ? o->name : "");
		return NULL;
	}
	evutil_socket_t fd = bind_listener(addr, err);
	if (fd < 0)
		return NULL;
	h2_server *s = xcalloc(1, sizeof *s);
	s->base = base;
	s->o = *o;
	s->name = xstrdup(o->name ? o->name : "h2");
	s->o.name = s->name;
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
	if (!s->o.max_conns)
		s->o.max_conns = 4096;
	if (!s->o.max_streams)
		s->o.max_streams = 256;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		s->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
		                                         : ((struct sockaddr_in *)&ss)->sin_port);
	s->accept_retry = evtimer_new(base, accept_retry_cb, s);
	s->lis = evconnlistener_new(base, accept_cb, s, LEV_OPT_CLOSE_ON_FREE, 511, fd);
	if (!s->lis) {
		err_set(err, 500, "cannot listen on %s: %s", addr, strerror(errno));
		close(fd);
		event_free(s->accept_retry);
		free(s->name);
		free(s);
		return NULL;
	}
	evconnlistener_set_error_cb(s->lis, accept_error_cb);
	return s;
}

int h2_server_port(const h2_server *s)
{
	return s->port;
}

uint32_t h2_server_conns(const h2_server *s)
{
	return s->n_conns;
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
