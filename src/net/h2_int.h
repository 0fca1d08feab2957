/* The HTTP/2 server as the HTTP/1.1 server uses it for prior-knowledge h2c
 * on its own listener (http.h: http_opts_t.h2c). Private to net/. */
#ifndef KILN_NET_H2_INT_H
#define KILN_NET_H2_INT_H

#include "net/h2.h"
#include "net/listen.h"

/* Runs HTTP/2 over bev, a connection already counted in owner (another
 * server's listener) whose input may hold the client preface and more: it
 * is processed at once. When the connection closes, owner's count drops
 * (listen_conn_closed). s is a detached server (h2_server_detached). */
void h2_server_adopt_on(h2_server_t *s, struct bufferevent *bev, const char *peer, listen_t *owner);

/* The connection cap's evict callback (listen.h) for s's connections:
 * closes the oldest one with no stream in flight; 1 when one was closed. */
int h2_server_evict(h2_server_t *s);

#endif
