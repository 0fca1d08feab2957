/* A fixed pool of worker threads for CPU work (decode, merge) so the loop
 * thread never does it. Jobs run in submission order across the workers; no
 * priorities, no cancellation; the queue is bounded by callers that pass a
 * bound to pool_try_submit (the push job: LIMIT_PUSH_JOBS). */
#ifndef KILN_NET_POOL_H
#define KILN_NET_POOL_H

#include <stddef.h>

typedef struct pool pool_t;

/* Starts nthreads workers (<= 0: one per online CPU). Aborts if a thread
 * cannot be started. */
pool_t *pool_new(int nthreads);

/* The number of worker threads p runs (what pool_new resolved nthreads to). */
int pool_size(const pool_t *p);

/* Thread-safe: fn(arg) will run on some worker. Not after pool_free began. */
void pool_submit(pool_t *p, void (*fn)(void *arg), void *arg);
/* pool_submit unless max_queued (> 0) jobs already wait for a worker: then
 * -1 and fn is not run. */
int pool_try_submit(pool_t *p, void (*fn)(void *arg), void *arg, size_t max_queued);

/* Runs every job already submitted, then joins the workers and frees the
 * pool. Must not be called from a worker. NULL is a no-op. */
void pool_free(pool_t *p);

#endif
