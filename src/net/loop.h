/* The event loop thread: a libevent base plus a thread-safe way for other
 * threads to run a function on it (loop_post). It owns no sockets itself;
 * listeners (http.h) are created on its base. */
#ifndef KILN_NET_LOOP_H
#define KILN_NET_LOOP_H

struct event_base;

typedef struct loop loop_t;

/* Creates the base with pthreads locking (evthread_use_pthreads is called on
 * first use) and ignores SIGPIPE process-wide (writes to closed sockets then
 * fail with EPIPE instead of killing the process). NULL if libevent fails. */
loop_t *loop_new(void);

struct event_base *loop_base(loop_t *l);

/* Thread-safe: fn(arg) runs on the loop thread soon, in posting order. Posts
 * made while the loop is not running wait for the next loop_run (or for
 * loop_free, which runs them). */
void loop_post(loop_t *l, void (*fn)(void *arg), void *arg);

/* Runs the loop on the calling thread until loop_stop. Returns 0, or -1 on a
 * libevent error. The loop keeps running even with no events pending. */
int loop_run(loop_t *l);

/* Thread-safe (also from a posted function): makes loop_run return soon. A
 * stop requested before loop_run starts makes it return at once. */
void loop_stop(loop_t *l);

/* Runs posts still queued, then frees the loop. Call on the thread that ran
 * it, after loop_run returned and after freeing everything created on the
 * base (servers, events). NULL is a no-op. */
void loop_free(loop_t *l);

#endif
