/* The event loop and its cross-thread post queue (loop.h): a mutex-protected
 * FIFO drained by one libevent event made active from any thread. No sockets,
 * no timers of its own. */
#include "net/loop.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "base/alloc.h"

struct post {
	void (*fn)(void *);
	void *arg;
	struct post *next;
};

struct loop {
	struct event_base *base;
	struct event *wake;
	pthread_mutex_t mu;
	struct post *head, *tail; /* guarded by mu */
	int stopping;             /* guarded by mu */
};

static pthread_once_t threads_once = PTHREAD_ONCE_INIT;

static void process_init(void)
{
	evthread_use_pthreads();
	signal(SIGPIPE, SIG_IGN);
}

/* Takes the whole queue; runs it outside the lock so fn may post again. */
static void run_posts(loop_t *l)
{
	pthread_mutex_lock(&l->mu);
	struct post *p = l->head;
	l->head = l->tail = NULL;
	pthread_mutex_unlock(&l->mu);
	while (p) {
		struct post *next = p->next;
		p->fn(p->arg);
		free(p);
		p = next;
	}
}

static void wake_cb(evutil_socket_t fd, short what, void *arg)
{
	loop_t *l = arg;
	run_posts(l);
	pthread_mutex_lock(&l->mu);
	int stop = l->stopping;
	pthread_mutex_unlock(&l->mu);
	if (stop)
		event_base_loopbreak(l->base);
}

loop_t *loop_new(void)
{
	pthread_once(&threads_once, process_init);
	loop_t *l = xcalloc(1, sizeof *l);
	pthread_mutex_init(&l->mu, NULL);
	l->base = event_base_new();
	if (!l->base)
		goto fail;
	l->wake = xcheck(event_new(l->base, -1, 0, wake_cb, l));
	return l;
fail:
	if (l->base)
		event_base_free(l->base);
	pthread_mutex_destroy(&l->mu);
	free(l);
	return NULL;
}

struct event_base *loop_base(loop_t *l)
{
	return l->base;
}

void loop_post(loop_t *l, void (*fn)(void *), void *arg)
{
	struct post *p = xmalloc(sizeof *p);
	p->fn = fn;
	p->arg = arg;
	p->next = NULL;
	pthread_mutex_lock(&l->mu);
	if (l->tail)
		l->tail->next = p;
	else
		l->head = p;
	l->tail = p;
	pthread_mutex_unlock(&l->mu);
	event_active(l->wake, 0, 0);
}

int loop_run(loop_t *l)
{
	pthread_mutex_lock(&l->mu);
	int stop = l->stopping;
	pthread_mutex_unlock(&l->mu);
	int rc = 0;
	if (!stop)
		rc = event_base_loop(l->base, EVLOOP_NO_EXIT_ON_EMPTY);
	pthread_mutex_lock(&l->mu);
	l->stopping = 0;
	pthread_mutex_unlock(&l->mu);
	return rc < 0 ? -1 : 0;
}

void loop_stop(loop_t *l)
{
	pthread_mutex_lock(&l->mu);
	l->stopping = 1;
	pthread_mutex_unlock(&l->mu);
	event_active(l->wake, 0, 0);
}

void loop_free(loop_t *l)
{
	if (!l)
		return;
	run_posts(l);
	/* Freed bufferevents (TLS ones above all) finish in deferred callbacks:
	 * let those run, or event_base_free drops them and their memory. */
	event_base_loop(l->base, EVLOOP_NONBLOCK);
	event_free(l->wake);
	event_base_free(l->base);
	pthread_mutex_destroy(&l->mu);
	free(l);
}
