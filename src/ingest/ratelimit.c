/* Token buckets per key, in 64 independently locked shards (chained hash maps
 * keyed by the key name), so concurrent requests of different keys rarely meet
 * on one lock. No persistence, no clock of its own: callers pass the time. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/hash.h"
#include "ingest/ratelimit.h"

#define RL_SHARDS 64
#define RL_SEED 0x6b696c6e726cULL

typedef struct rl_bucket {
	struct rl_bucket *next;
	uint64_t hash;
	double tokens;   /* may be negative after an oversized request */
	int64_t last_ns; /* time of the last refill */
	size_t len;
	uint8_t name[];
} rl_bucket_t;

typedef struct {
	pthread_mutex_t mu;
	rl_bucket_t **heads;
	size_t n_heads; /* a power of two */
	size_t count;
	char _pad[64]; /* keeps neighbouring shards' mutexes off one cache line */
} rl_shard_t;

struct ratelimit {
	double rate, capacity;
	size_t shard_cap; /* buckets per shard */
	rl_shard_t shards[RL_SHARDS];
};

ratelimit_t *ratelimit_new_bounded(double samples_per_sec, size_t max_buckets)
{
	ratelimit_t *r = xcalloc(1, sizeof *r);
	r->rate = samples_per_sec > 0 ? samples_per_sec : 0;
	r->capacity = r->rate;
	r->shard_cap = max_buckets / RL_SHARDS;
	if (r->shard_cap < 1)
		r->shard_cap = 1;
	for (int i = 0; i < RL_SHARDS; i++) {
		pthread_mutex_init(&r->shards[i].mu, NULL);
		r->shards[i].n_heads = 16;
		r->shards[i].heads = xcalloc(16, sizeof(rl_bucket_t *));
	}
	return r;
}

ratelimit_t *ratelimit_new(double samples_per_sec)
{
	return ratelimit_new_bounded(samples_per_sec, LIMIT_RATE_BUCKETS);
}

void ratelimit_free(ratelimit_t *r)
{
	if (!r)
		return;
	for (int i = 0; i < RL_SHARDS; i++) {
		rl_shard_t *s = &r->shards[i];
		for (size_t h = 0; h < s->n_heads; h++) {
			for (rl_bucket_t *b = s->heads[h], *next; b; b = next) {
				next = b->next;
				free(b);
			}
		}
		free(s->heads);
		pthread_mutex_destroy(&s->mu);
	}
	free(r);
}

double ratelimit_rate(const ratelimit_t *r)
{
	return r->rate;
}

size_t ratelimit_buckets(ratelimit_t *r)
{
	size_t n = 0;
	for (int i = 0; i < RL_SHARDS; i++) {
		pthread_mutex_lock(&r->shards[i].mu);
		n += r->shards[i].count;
		pthread_mutex_unlock(&r->shards[i].mu);
	}
	return n;
}

static void shard_grow(rl_shard_t *s)
{
	size_t n = s->n_heads * 2;
	rl_bucket_t **heads = xcalloc(n, sizeof *heads);
	for (size_t h = 0; h < s->n_heads; h++) {
		for (rl_bucket_t *b = s->heads[h], *next; b; b = next) {
			next = b->next;
			size_t i = (size_t)(b->hash >> 8) & (n - 1);
			b->next = heads[i];
			heads[i] = b;
		}
	}
	free(s->heads);
	s->heads = heads;
	s->n_heads = n;
}

/* Makes room for one more bucket: drops every bucket idle for over a minute
 * (it would be full again, so forgetting it changes nothing); if none was, the
 * least recently used one (which then starts full when it comes back: generous,
 * and only when more than max_buckets keys are active within a minute).
 * Caller holds s->mu. */
static void shard_evict(rl_shard_t *s, int64_t now_ns)
{
	size_t before = s->count;
	for (size_t h = 0; h < s->n_heads; h++) {
		for (rl_bucket_t **pp = &s->heads[h]; *pp;) {
			rl_bucket_t *b = *pp;
			if (now_ns - b->last_ns > RATELIMIT_IDLE_NS) {
				*pp = b->next;
				free(b);
				s->count--;
			} else {
				pp = &b->next;
			}
		}
	}
	if (s->count < before)
		return;
	rl_bucket_t **oldest = NULL;
	for (size_t h = 0; h < s->n_heads; h++)
		for (rl_bucket_t **pp = &s->heads[h]; *pp; pp = &(*pp)->next)
			if (!oldest || (*pp)->last_ns < (*oldest)->last_ns)
				oldest = pp;
	if (oldest) {
		rl_bucket_t *b = *oldest;
		*oldest = b->next;
		free(b);
		s->count--;
	}
}

/* Finds or adds key's bucket (a new one starts full). Caller holds s->mu. */
static rl_bucket_t *shard_bucket(const ratelimit_t *r, rl_shard_t *s, slice_t key, uint64_t hash,
                                 int64_t now_ns)
{
	size_t i = (size_t)(hash >> 8) & (s->n_heads - 1);
	for (rl_bucket_t *b = s->heads[i]; b; b = b->next)
		if (b->hash == hash && b->len == key.n && memcmp(b->name, key.p, key.n) == 0)
			return b;
	if (s->count >= r->shard_cap)
		shard_evict(s, now_ns);
	if (s->count >= s->n_heads * 2)
		shard_grow(s);
	rl_bucket_t *b = xmalloc(sizeof *b + key.n);
	b->hash = hash;
	b->tokens = r->capacity;
	b->last_ns = now_ns;
	b->len = key.n;
	if (key.n)
		memcpy(b->name, key.p, key.n);
	i = (size_t)(hash >> 8) & (s->n_heads - 1);
	b->next = s->heads[i];
	s->heads[i] = b;
	s->count++;
	return b;
}

int ratelimit_take(ratelimit_t *r, slice_t key, uint64_t samples, int64_t now_ns, int *retry_after_s)
{
	if (r->rate <= 0)
		return 0;
	uint64_t hash = hash_slice(key, RL_SEED);
	rl_shard_t *s = &r->shards[hash & (RL_SHARDS - 1)];
	pthread_mutex_lock(&s->mu);
	rl_bucket_t *b = shard_bucket(r, s, key, hash, now_ns);
	if (now_ns > b->last_ns) {
		b->tokens += (double)(now_ns - b->last_ns) * r->rate / 1e9;
		if (b->tokens > r->capacity)
			b->tokens = r->capacity;
		b->last_ns = now_ns;
	}
	double want = (double)samples;
	/* An oversized request needs a full bucket, not more than it can ever hold. */
	double need = want > r->capacity ? r->capacity : want;
	int rc = 0;
	if (b->tokens >= need) {
		b->tokens -= want;
	} else {
		double secs = ceil((need - b->tokens) / r->rate);
		rc = -1;
		if (retry_after_s)
			*retry_after_s = secs < 1 ? 1 : secs > 1e6 ? 1000000 : (int)secs;
	}
	pthread_mutex_unlock(&s->mu);
	return rc;
}
