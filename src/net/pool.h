/* A fixed pool of worker threads for CPU work (decode, merge) so the loop
 * thread never does it. Jobs run in submission order across the workers; no
 * priorities, no cancellation, no bound on the queue (callers bound the work). */
#ifndef KILN_NET_POOL_H
#define KILN_NET_POOL_H

typedef struct pool pool_t;

/* Starts nthreads workers (<= 0: one per online CPU). Aborts if a thread
 * cannot be started. */
pool_t *pool_new(int nthreads);

/* The number of worker threads p runs (what pool_new resolved nthreads to). */
int pool_size(const pool_t *p);

/* Thread-safe: fn(arg) will run on some worker. Not after pool_free began. */
void pool_submit(pool_t *p, void (*fn)(void *arg), void *arg);

/* Runs every job already submitted, then joins the workers and frees the
 * pool. Must not be called from a worker. NULL is a no-op. */
void pool_free(pool_t *p);

#endif
