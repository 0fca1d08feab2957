/* Per-key sample-rate limits (OPS: Rate limits): one token bucket per key name, counted
 * in samples, with one second of burst. Buckets live in memory only (a restart
 * refills them); answering 429/RESOURCE_EXHAUSTED is the caller's job. */
#ifndef KILN_INGEST_RATELIMIT_H
#define KILN_INGEST_RATELIMIT_H

#include <stddef.h>
#include <stdint.h>

#include "base/limits.h"
#include "base/slice.h"

#define RATELIMIT_IDLE_NS       (60LL * 1000000000LL) /* a bucket idle this long is full again: evictable */

typedef struct ratelimit ratelimit_t;

/* A limiter of samples_per_sec per key (<= 0: unlimited, every take admits)
 * with capacity (burst) = one second of rate, tracking at most
 * LIMIT_RATE_BUCKETS keys. */
ratelimit_t *ratelimit_new(double samples_per_sec);
/* The same with another bound on tracked keys (tests, small deployments). */
ratelimit_t *ratelimit_new_bounded(double samples_per_sec, size_t max_buckets);
void ratelimit_free(ratelimit_t *r);

/* Takes samples tokens from key's bucket at time now_ns (any monotonic clock;
 * a clock going backwards refills nothing). 0 admitted (tokens taken); -1
 * refused, nothing taken, and *retry_after_s = whole seconds (ceil, >= 1) until
 * the bucket holds enough tokens.
 * A request larger than the capacity can never fit; it is admitted when the
 * bucket is full and drives the balance negative, so big batches are not
 * refused forever and the long-run rate still holds (the debt is repaid before
 * the key is admitted again).
 * A key seen for the first time starts with a full bucket. When the bound on
 * tracked keys is reached, buckets idle for over a minute are dropped first
 * (they would be full again anyway), then the least recently used one.
 * Thread-safe: buckets are spread over 64 shards by a hash of the key, each
 * with its own mutex held for a few arithmetic operations. */
int ratelimit_take(ratelimit_t *r, slice_t key, uint64_t samples, int64_t now_ns, int *retry_after_s);

/* The configured rate (samples per second), for messages. */
double ratelimit_rate(const ratelimit_t *r);
/* Buckets currently tracked (tests, /metrics). */
size_t ratelimit_buckets(ratelimit_t *r);

#endif
