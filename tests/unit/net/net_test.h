/* Helpers shared by the tests of src/net (include after testutil.h): a
 * monotonic clock, sleeping, running a function on a loop's thread while the
 * test thread waits for it, and an HTTP server's connection count. */
#ifndef KILN_TESTS_NET_TEST_H
#define KILN_TESTS_NET_TEST_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "net/http.h"
#include "net/loop.h"

static inline int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

typedef struct {
	void (*fn)(void *arg);
	void *arg;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done;
} on_loop_call;

static inline void on_loop_run_(void *p)
{
	on_loop_call *c = p;
	c->fn(c->arg);
	pthread_mutex_lock(&c->mu);
	c->done = 1;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

/* Runs fn(arg) on the thread running loop and returns once it has. */
static inline void run_on_loop(loop_t *loop, void (*fn)(void *arg), void *arg)
{
	on_loop_call c = {.fn = fn, .arg = arg};
	pthread_mutex_init(&c.mu, NULL);
	pthread_cond_init(&c.cv, NULL);
	loop_post(loop, on_loop_run_, &c);
	pthread_mutex_lock(&c.mu);
	while (!c.done)
		pthread_cond_wait(&c.cv, &c.mu);
	pthread_mutex_unlock(&c.mu);
	pthread_cond_destroy(&c.cv);
	pthread_mutex_destroy(&c.mu);
}

typedef struct {
	http_server_t *srv;
	uint32_t n;
} conns_probe_;

static inline void conns_probe_run_(void *arg)
{
	conns_probe_ *p = arg;
	p->n = http_server_conns(p->srv);
}

/* Open connections of srv as its loop thread sees them. */
static inline uint32_t http_conns_now(loop_t *loop, http_server_t *srv)
{
	conns_probe_ p = {.srv = srv};
	run_on_loop(loop, conns_probe_run_, &p);
	return p.n;
}

/* 1 once srv has want open connections, 0 if it still has not after ms. */
static inline int http_conns_wait(loop_t *loop, http_server_t *srv, uint32_t want, int ms)
{
	int64_t end = now_ms() + ms;
	while (now_ms() < end) {
		if (http_conns_now(loop, srv) == want)
			return 1;
		sleep_ms(10);
	}
	return http_conns_now(loop, srv) == want;
}

#endif
