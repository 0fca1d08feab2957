/* Private to the HTTP/2 server (h2.c, h2_listen.c): the server and connection
 * structs and the calls between the listening side and the frame side. Not
 * for other modules. */
#ifndef KILN_NET_H2_INT_H
#define KILN_NET_H2_INT_H

#include "net/h2.h"

#include "net/listen.h"

struct bufferevent;

struct h2_server {
	struct event_base *base;
	kn_listener lis;
	h2_opts o;
	struct h2_conn *conns;
	int draining; /* stop_accepting called */
};

/* The listener's on_conn (listen.h): takes a new connection's bufferevent
 * (owned from now on) and starts HTTP/2 on it: the server preface (SETTINGS)
 * goes out at once. arg is the h2_server. */
void h2_conn_start(void *arg, struct bufferevent *bev, const char *peer);

#endif
