/* Binding, accepting and the connection cap for both HTTP servers (listen.h).
 * Nothing here reads or writes a connection's bytes. */
#include "net/listen.h"

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
#include <openssl/ssl.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "base/log.h"

static void format_peer(const struct sockaddr *sa, char *out, size_t cap)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
		snprintf(out, cap, "%s:%u", ip, ntohs(a->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)sa;
		if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
			inet_ntop(AF_INET, &a->sin6_addr.s6_addr[12], ip, sizeof ip);
			snprintf(out, cap, "%s:%u", ip, ntohs(a->sin6_port));
		} else {
			inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
			snprintf(out, cap, "[%s]:%u", ip, ntohs(a->sin6_port));
		}
	} else {
		snprintf(out, cap, "unknown");
	}
}

/* The bufferevent for an accepted socket: TLS (handshake pending) when the
 * listener has a context. NULL on failure, the socket still open. */
static struct bufferevent *wrap_socket(listen_t *l, evutil_socket_t fd)
{
	if (!l->o.ssl_ctx)
		return bufferevent_socket_new(l->_base, fd, BEV_OPT_CLOSE_ON_FREE);
	SSL *ssl = SSL_new(l->o.ssl_ctx);
	if (!ssl)
		return NULL;
	struct bufferevent *bev = bufferevent_openssl_socket_new(l->_base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
	                                                         BEV_OPT_CLOSE_ON_FREE);
	if (!bev)
		SSL_free(ssl);
	return bev;
}

/* Counts one event at the cap and logs the 1st, 2nd, 4th, 8th … of them. */
static void log_at_cap(const listen_t *l, uint64_t *counter, const char *what, const char *field)
{
	uint64_t k = ++*counter;
	if ((k & (k - 1)) != 0)
		return;
	char m[96], f[96];
	snprintf(m, sizeof m, "%s connection limit reached; %s", l->o.kind, what);
	snprintf(f, sizeof f, "listener=%%s max_conns=%%u %s=%%llu", field);
	log_warn(m, f, l->o.name, l->o.max_conns, (unsigned long long)k);
}

static void accept_cb(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *arg)
{
	listen_t *l = arg;
	if (l->n_conns >= l->o.max_conns && l->o.evict && l->o.evict(l->o.ctx))
		log_at_cap(l, &l->_evicted, "closing the oldest idle connections", "evicted");
	if (l->n_conns >= l->o.max_conns) {
		evutil_closesocket(fd);
		log_at_cap(l, &l->_rejected, "closing new connections", "rejected");
		return;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	struct bufferevent *bev = wrap_socket(l, fd);
	if (!bev) {
		evutil_closesocket(fd);
		return;
	}
	char peer[64];
	format_peer(sa, peer, sizeof peer);
	l->n_conns++;
	l->o.on_conn(l->o.ctx, bev, peer);
}

static void accept_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	listen_t *l = arg;
	if (l->_lis)
		evconnlistener_enable(l->_lis);
}

/* accept() failed (EMFILE...): pause accepting for a moment instead of spinning. */
static void accept_error_cb(struct evconnlistener *lis, void *arg)
{
	listen_t *l = arg;
	int e = EVUTIL_SOCKET_ERROR();
	char m[96];
	snprintf(m, sizeof m, "%s accept failed; pausing accepts for 100 ms", l->o.kind);
	log_warn(m, "listener=%s error=\"%s\"", l->o.name, evutil_socket_error_to_string(e));
	evconnlistener_disable(lis);
	struct timeval tv = {0, 100 * 1000};
	evtimer_add(l->_retry, &tv);
}

/* Splits "host:port", ":port", "[v6]:port". host is "" for every interface. */
static int split_addr(const char *addr, char *host, size_t cap, char *port, size_t pcap)
{
	const char *colon;
	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');
		if (!close || close[1] != ':' || (size_t)(close - addr - 1) >= cap)
			return -1;
		memcpy(host, addr + 1, (size_t)(close - addr - 1));
		host[close - addr - 1] = 0;
		colon = close + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon || (size_t)(colon - addr) >= cap)
			return -1;
		memcpy(host, addr, (size_t)(colon - addr));
		host[colon - addr] = 0;
	}
	if (!colon[1] || strlen(colon + 1) >= pcap || strspn(colon + 1, "0123456789") != strlen(colon + 1))
		return -1;
	snprintf(port, pcap, "%s", colon + 1);
	return 0;
}

static evutil_socket_t bind_one(const struct sockaddr *sa, socklen_t len, int dual_stack)
{
	evutil_socket_t fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	int one = 1, zero = 0;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (sa->sa_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, dual_stack ? &zero : &one, sizeof one);
	if (bind(fd, sa, len) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Binds addr; for ":port" tries dual-stack [::] first, then 0.0.0.0. */
static evutil_socket_t bind_addr(const char *addr, err_t *err)
{
	char host[256], port[16];
	if (split_addr(addr, host, sizeof host, port, sizeof port) < 0) {
		err_set(err, 500, "bad listen address \"%s\": use host:port, :port or [v6]:port", addr);
		return -1;
	}
	if (!host[0]) {
		struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)atoi(port))};
		struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port))};
		a6.sin6_addr = in6addr_any;
		evutil_socket_t fd = bind_one((struct sockaddr *)&a6, sizeof a6, 1);
		if (fd < 0 && (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL))
			fd = bind_one((struct sockaddr *)&a4, sizeof a4, 0);
		if (fd < 0)
			err_set(err, 500, "cannot listen on %s: %s", addr, strerror(errno));
		return fd;
	}
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
	struct addrinfo *res = NULL;
	int rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0) {
		err_set(err, 500, "cannot resolve listen address %s: %s", addr, gai_strerror(rc));
		return -1;
	}
	evutil_socket_t fd = -1;
	int e = 0;
	for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
		fd = bind_one(ai->ai_addr, ai->ai_addrlen, 0);
		if (fd < 0)
			e = errno;
	}
	freeaddrinfo(res);
	if (fd < 0)
		err_set(err, 500, "cannot listen on %s: %s", addr, strerror(e));
	return fd;
}

int listen_open(listen_t *l, struct event_base *base, const char *addr, const listen_opts_t *o, err_t *err)
{
	memset(l, 0, sizeof *l);
	evutil_socket_t fd = bind_addr(addr, err);
	if (fd < 0)
		return -1;
	l->_base = base;
	l->o = *o;
	l->o.name = xstrdup(o->name ? o->name : o->kind);
	if (!l->o.max_conns)
		l->o.max_conns = LIMIT_CONNECTIONS;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		l->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
		                                         : ((struct sockaddr_in *)&ss)->sin_port);
	l->_retry = xcheck(evtimer_new(base, accept_retry_cb, l));
	l->_lis = evconnlistener_new(base, accept_cb, l, LEV_OPT_CLOSE_ON_FREE, 511, fd);
	if (!l->_lis) {
		err_set(err, 500, "cannot listen on %s: %s", addr, strerror(errno));
		close(fd);
		event_free(l->_retry);
		free((char *)l->o.name);
		memset(l, 0, sizeof *l);
		return -1;
	}
	evconnlistener_set_error_cb(l->_lis, accept_error_cb);
	return 0;
}

void listen_stop(listen_t *l)
{
	if (l->_lis)
		evconnlistener_free(l->_lis);
	l->_lis = NULL;
	if (l->_retry)
		evtimer_del(l->_retry);
}

void listen_close(listen_t *l)
{
	listen_stop(l);
	if (l->_retry)
		event_free(l->_retry);
	l->_retry = NULL;
	free((char *)l->o.name);
	l->o.name = NULL;
}
