/* A fixed pool of worker threads for CPU work (decode, merge) so the loop
 * thread never does it. Jobs run in submission order across the workers; no
 * priorities, no cancellation, no bound on the queue (callers bound the work). */
#ifndef KILN_NET_POOL_H
#define KILN_NET_POOL_H

typedef struct kn_pool kn_pool;

/* Starts nthreads workers (<= 0: one per online CPU). Aborts if a thread
 * cannot be started. */
kn_pool *pool_new(int nthreads);

/* The number of worker threads p runs (what pool_new resolved nthreads to). */
int pool_size(const kn_pool *p);

/* Thread-safe: fn(arg) will run on some worker. Not after pool_free began. */
void pool_submit(kn_pool *p, void (*fn)(void *arg), void *arg);

/* Runs every job already submitted, then joins the workers and frees the
 * pool. Must not be called from a worker. NULL is a no-op. */
void pool_free(kn_pool *p);

#endif
