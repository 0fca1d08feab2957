/* Tests src/ingest/ratelimit.c on a simulated clock: admission accuracy,
 * Retry-After values, oversized requests, eviction bounds, and many threads on
 * shared and distinct keys. */
#include <pthread.h>

#include "testutil.h"

#include "base/timeutil.h"
#include "ingest/ratelimit.h"

#define MS (NS_PER_SEC / 1000)

/* 3× the rate for 10 s in 60-sample requests every millisecond: admitted =
 * burst + rate × 10 s, within 1 %. */
static void test_accuracy(void **state)
{
	ratelimit_t *r = ratelimit_new(LIMIT_SAMPLES_PER_SECOND);
	assert_true(ratelimit_rate(r) == 20000.0);
	uint64_t admitted = 0;
	int refused = 0, retry;
	for (int64_t t = 0; t < 10 * NS_PER_SEC; t += MS) {
		if (ratelimit_take(r, slice_cstr("ci"), 60, 1000 * NS_PER_SEC + t, &retry) == 0) {
			admitted += 60;
		} else {
			refused++;
			assert_int_equal(retry, 1);
		}
	}
	double want = 20000.0 * 10 + 20000.0;
	assert_true(admitted > want * 0.99 && admitted < want * 1.01);
	assert_true(refused > 0);
	/* Another key was untouched by all that. */
	assert_int_equal(ratelimit_take(r, slice_cstr("other"), 20000, 1010 * NS_PER_SEC, &retry), 0);
	ratelimit_free(r);
}

static void test_retry_after(void **state)
{
	ratelimit_t *r = ratelimit_new(100);
	int retry = 0;
	slice_t k = slice_cstr("k");
	assert_int_equal(ratelimit_take(r, k, 100, 0, &retry), 0); /* the burst */
	assert_int_equal(ratelimit_take(r, k, 1, 0, &retry), -1);
	assert_int_equal(retry, 1);                                 /* 0.01 s rounds up */
	assert_int_equal(ratelimit_take(r, k, 50, 400 * MS, &retry), -1); /* 40 tokens */
	assert_int_equal(retry, 1);
	assert_int_equal(ratelimit_take(r, k, 50, 500 * MS, &retry), 0);
	ratelimit_free(r);

	r = ratelimit_new(10);
	assert_int_equal(ratelimit_take(r, k, 10, 0, &retry), 0);
	assert_int_equal(ratelimit_take(r, k, 10, 0, &retry), -1);
	assert_int_equal(retry, 1);
	assert_int_equal(ratelimit_take(r, k, 5, 499 * MS, &retry), -1); /* 4.99 tokens */
	assert_int_equal(retry, 1);
	assert_int_equal(ratelimit_take(r, k, 5, 500 * MS, &retry), 0); /* a refusal took nothing */
	/* A clock going backwards refills nothing (and does not break the bucket). */
	assert_int_equal(ratelimit_take(r, k, 1, 0, &retry), -1);
	assert_int_equal(ratelimit_take(r, k, 10, 1500 * MS, &retry), 0);
	ratelimit_free(r);
}

/* Requests bigger than the bucket: admitted when it is full, leaving a debt
 * that Retry-After counts in; the long-run rate holds. */
static void test_big_requests(void **state)
{
	ratelimit_t *r = ratelimit_new(1000);
	int retry = 0;
	slice_t k = slice_cstr("big");
	assert_int_equal(ratelimit_take(r, k, 5000, 0, &retry), 0); /* full: admitted, balance -4000 */
	assert_int_equal(ratelimit_take(r, k, 1, NS_PER_SEC, &retry), -1);
	assert_int_equal(retry, 4); /* -3000 + 1 needed → 3.001 s → 4 */
	assert_int_equal(ratelimit_take(r, k, 5000, 4 * NS_PER_SEC, &retry), -1); /* 0 tokens: not full */
	assert_int_equal(retry, 1);
	assert_int_equal(ratelimit_take(r, k, 5000, 5 * NS_PER_SEC, &retry), 0); /* full again */

	/* Sending 5000 every 100 ms for 60 s: the long-run rate is 1000/s. */
	uint64_t admitted = 0;
	for (int64_t t = 0; t < 60 * NS_PER_SEC; t += 100 * MS)
		if (ratelimit_take(r, slice_cstr("big2"), 5000, t, &retry) == 0)
			admitted += 5000;
	assert_true(admitted <= 1000 * 60 + 5000 && admitted >= 1000 * 60 - 5000);
	ratelimit_free(r);
}

static void test_unlimited(void **state)
{
	ratelimit_t *r = ratelimit_new(0);
	int retry = 0;
	for (int i = 0; i < 100; i++)
		assert_int_equal(ratelimit_take(r, slice_cstr("k"), 1000000000, 0, &retry), 0);
	assert_int_equal(ratelimit_buckets(r), 0);
	ratelimit_free(r);
}

static void test_eviction(void **state)
{
	/* 640 buckets at most (10 per shard). */
	ratelimit_t *r = ratelimit_new_bounded(100, 640);
	int retry = 0;
	char name[32];
	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof name, "key-%d", i);
		assert_int_equal(ratelimit_take(r, slice_cstr(name), 1, (int64_t)i * MS, &retry), 0);
		assert_true(ratelimit_buckets(r) <= 640);
	}
	/* Keys idle for over a minute make room without forgetting an active key's debt. */
	assert_int_equal(ratelimit_take(r, slice_cstr("active"), 100, 100 * NS_PER_SEC, &retry), 0);
	for (int i = 0; i < 150; i++) {
		snprintf(name, sizeof name, "later-%d", i);
		ratelimit_take(r, slice_cstr(name), 1, 100 * NS_PER_SEC + i, &retry);
	}
	assert_true(ratelimit_buckets(r) <= 640);
	assert_int_equal(ratelimit_take(r, slice_cstr("active"), 1, 100 * NS_PER_SEC + 200, &retry), -1);
	ratelimit_free(r);

	/* The default bound: 150,000 keys within a minute stay at 100,000 buckets. */
	r = ratelimit_new(100);
	for (int i = 0; i < 150000; i++) {
		snprintf(name, sizeof name, "k%d", i);
		ratelimit_take(r, slice_cstr(name), 1, (int64_t)i * 1000, &retry);
	}
	assert_true(ratelimit_buckets(r) <= LIMIT_RATE_BUCKETS);
	assert_true(ratelimit_buckets(r) > LIMIT_RATE_BUCKETS * 9 / 10);
	ratelimit_free(r);
}

typedef struct {
	ratelimit_t *r;
	int id;
	uint64_t shared_admitted;
} thread_ctx;

static void *hammer(void *arg)
{
	thread_ctx *c = arg;
	char own[32];
	snprintf(own, sizeof own, "own-%d", c->id);
	int retry;
	for (int i = 0; i < 200000; i++) {
		int64_t now = time_mono_ns();
		if (ratelimit_take(c->r, slice_cstr("shared"), 10, now, &retry) == 0)
			c->shared_admitted += 10;
		ratelimit_take(c->r, slice_cstr(own), 10, now, &retry);
		if (i % 1000 == 0) {
			char name[32];
			snprintf(name, sizeof name, "churn-%d-%d", c->id, i);
			ratelimit_take(c->r, slice_cstr(name), 1, now, &retry);
		}
	}
	return NULL;
}

/* Eight threads on one shared key, their own keys and churning keys: no
 * deadlock, and the shared key never gets more than burst + rate × elapsed. */
static void test_threads(void **state)
{
	ratelimit_t *r = ratelimit_new_bounded(100000, 6400);
	thread_ctx ctx[8];
	pthread_t th[8];
	int64_t t0 = time_mono_ns();
	for (int i = 0; i < 8; i++) {
		ctx[i] = (thread_ctx){.r = r, .id = i};
		pthread_create(&th[i], NULL, hammer, &ctx[i]);
	}
	uint64_t shared = 0;
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		shared += ctx[i].shared_admitted;
	}
	double elapsed = (double)(time_mono_ns() - t0) / 1e9;
	assert_true(shared >= 100000);
	assert_true((double)shared <= 100000 + 100000 * elapsed + 10);
	ratelimit_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_accuracy),  cmocka_unit_test(test_retry_after), cmocka_unit_test(test_big_requests),
	        cmocka_unit_test(test_unlimited), cmocka_unit_test(test_eviction),    cmocka_unit_test(test_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
