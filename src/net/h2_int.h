/* Private to the HTTP/2 server (h2.c, h2_listen.c): the server and connection
 * structs and the calls between the listening side and the frame side. Not
 * for other modules. */
#ifndef KILN_NET_H2_INT_H
#define KILN_NET_H2_INT_H

#include "net/h2.h"

struct bufferevent;
struct evconnlistener;
struct event;

struct h2_server {
	struct event_base *base;
	struct evconnlistener *lis;
	struct event *accept_retry;
	h2_opts o;
	char *name;
	struct h2_conn *conns;
	uint32_t n_conns;
	uint64_t n_rejected;
	int port;
	int draining; /* stop_accepting called */
};

/* Takes a new connection's bufferevent (owned from now on) and starts HTTP/2
 * on it: the server preface (SETTINGS) goes out at once. */
void h2_conn_start(h2_server *s, struct bufferevent *bev, const char *peer);

#endif
