/* Tests of the write queue both engines share (store/write_queue.c, STORE:
 * Writing, OPS: The write queue), on the embedded engine: a
 * writer held by the test hook (store_config_t.hold) lets the test fill the
 * queue deterministically. Submits past the batch cap and past the byte cap
 * are refused at once with the busy error and store nothing; every accepted
 * batch is written after the release; a lone submit is written as a group of
 * its own at once, and what arrives during a group forms the next one. */
#include <pthread.h>

#include "helpers.h"

/* The hook: records every group's size; blocks while held. */
typedef struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int held;
	uint32_t groups; /* groups the writer has taken */
	size_t sizes[64];
} hold_t;

static void hold_fn(void *arg, const model_batch_t *const *batches, size_t n)
{
	(void)batches; /* these tests look at group sizes only (crash_groups.c at the batches) */
	hold_t *h = arg;
	pthread_mutex_lock(&h->mu);
	if (h->groups < 64)
		h->sizes[h->groups] = n;
	h->groups++;
	pthread_cond_broadcast(&h->cv);
	while (h->held)
		pthread_cond_wait(&h->cv, &h->mu);
	pthread_mutex_unlock(&h->mu);
}

static void hold_wait_groups(hold_t *h, uint32_t groups)
{
	pthread_mutex_lock(&h->mu);
	while (h->groups < groups)
		pthread_cond_wait(&h->cv, &h->mu);
	pthread_mutex_unlock(&h->mu);
}

static uint32_t hold_groups(hold_t *h)
{
	pthread_mutex_lock(&h->mu);
	uint32_t n = h->groups;
	pthread_mutex_unlock(&h->mu);
	return n;
}

static void hold_set(hold_t *h, int held)
{
	pthread_mutex_lock(&h->mu);
	h->held = held;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

/* One submit's outcome, filled by its done callback. */
typedef struct {
	pthread_mutex_t *mu;
	pthread_cond_t *cv;
	int done;
	err_t err;
} outcome_t;

static void outcome_done(void *ctx, const err_t *err)
{
	outcome_t *o = ctx;
	pthread_mutex_lock(o->mu);
	o->done = 1;
	o->err = err ? *err : (err_t){0};
	pthread_cond_broadcast(o->cv);
	pthread_mutex_unlock(o->mu);
}

typedef struct {
	char *dir;
	store_t *s;
	hold_t h;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	outcome_t out[16];
} fix_t;

static fix_t *fix_open(uint32_t queue_batches, uint32_t queue_mib)
{
	fix_t *f = calloc(1, sizeof *f);
	pthread_mutex_init(&f->h.mu, NULL);
	pthread_cond_init(&f->h.cv, NULL);
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	for (int i = 0; i < 16; i++)
		f->out[i] = (outcome_t){.mu = &f->mu, .cv = &f->cv};
	f->dir = tmpdir_new();
	store_config_t cfg = {.dir = f->dir,
	                      .sync = 1,
	                      .queue_batches = queue_batches,
	                      .queue_mib = queue_mib,
	                      .hold = hold_fn,
	                      .hold_arg = &f->h};
	err_t err = {0};
	f->s = store_open(&cfg, &err);
	if (!f->s)
		fail_msg("store_open: %s", err.msg);
	return f;
}

static void fix_close(fix_t *f)
{
	hold_set(&f->h, 0);
	store_close(f->s);
	tmpdir_free(f->dir);
	free(f);
}

static void submit(fix_t *f, int i, model_batch_t *b)
{
	store_submit(f->s, b, outcome_done, &f->out[i]);
}

static int is_done(fix_t *f, int i)
{
	pthread_mutex_lock(&f->mu);
	int d = f->out[i].done;
	pthread_mutex_unlock(&f->mu);
	return d;
}

static void wait_done(fix_t *f, int i)
{
	pthread_mutex_lock(&f->mu);
	while (!f->out[i].done)
		pthread_cond_wait(&f->cv, &f->mu);
	pthread_mutex_unlock(&f->mu);
}

/* Refused before store_submit returned, with the busy error. */
static void assert_busy(fix_t *f, int i)
{
	assert_true(is_done(f, i));
	assert_true(store_busy(&f->out[i].err));
	assert_int_equal(f->out[i].err.status, 503);
	assert_int_equal(f->out[i].err.retry_after, 1);
}

static void assert_ok(fix_t *f, int i)
{
	wait_done(f, i);
	if (f->out[i].err.status)
		fail_msg("batch %d: %d %s", i, f->out[i].err.status, f->out[i].err.msg);
}

/* A batch of over 1 MiB: one profile whose 300 frames have 4,000-byte names. */
static model_batch_t *big_batch(int64_t t_ns, int64_t v)
{
	model_batch_t *b = model_batch_new(slice_cstr("default"));
	model_profile_t *p = test_profile(b, "cpu", "nanoseconds", t_ns, "pod-1");
	char name[4001];
	for (int i = 0; i < 300; i++) {
		memset(name, 'a' + i % 26, 4000);
		snprintf(name, 16, "f%d-", i);
		name[strlen(name)] = 'x';
		name[4000] = 0;
		uint32_t node = model_node_intern(b, MODEL_NONE, test_frame(b, name));
		model_sample_add(b, p, node, 0, v, 0);
	}
	model_profile_finish(b, p);
	return b;
}

static void test_batch_cap(void **state)
{
	(void)state;
	fix_t *f = fix_open(4, 0);
	hold_set(&f->h, 1);
	submit(f, 0, test_batch(DAY0, 1));
	hold_wait_groups(&f->h, 1); /* the writer holds batch 0: being written counts */
	for (int i = 1; i < 4; i++) {
		submit(f, i, test_batch(DAY0 + i * NS_PER_SEC, 10 * i));
		assert_false(is_done(f, i)); /* queued */
	}
	submit(f, 4, test_batch(DAY0 + 4 * NS_PER_SEC, 1000));
	assert_busy(f, 4);
	assert_non_null(strstr(f->out[4].err.msg, "4 batches"));
	assert_non_null(strstr(f->out[4].err.msg, "store.queueBatches"));
	assert_false(is_done(f, 0)); /* nothing queued was touched */
	hold_set(&f->h, 0);
	for (int i = 0; i < 4; i++)
		assert_ok(f, i);
	/* What arrived during group 1 formed group 2, whole. */
	assert_int_equal(hold_groups(&f->h), 2);
	assert_int_equal(f->h.sizes[0], 1);
	assert_int_equal(f->h.sizes[1], 3);
	/* Stored: batches 0..3 (each total 6v), not batch 4. */
	uint32_t chunks;
	assert_int_equal(sum_totals(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &chunks),
	                 6 * (1 + 10 + 20 + 30));
	assert_int_equal(chunks, 4);
	/* The queue has room again. */
	submit(f, 5, test_batch(DAY0 + 5 * NS_PER_SEC, 100));
	assert_ok(f, 5);
	fix_close(f);
}

static void test_byte_cap(void **state)
{
	(void)state;
	fix_t *f = fix_open(0, 1); /* 1 MiB */
	hold_set(&f->h, 1);
	submit(f, 0, big_batch(DAY0, 7)); /* over the cap alone: an empty queue takes it */
	hold_wait_groups(&f->h, 1);
	assert_false(is_done(f, 0));
	submit(f, 1, test_batch(DAY0 + NS_PER_SEC, 1)); /* a few KiB: past the byte cap, not the batch cap */
	assert_busy(f, 1);
	assert_non_null(strstr(f->out[1].err.msg, "store.queueMiB"));
	submit(f, 2, big_batch(DAY0 + 2 * NS_PER_SEC, 9));
	assert_busy(f, 2);
	hold_set(&f->h, 0);
	assert_ok(f, 0);
	uint32_t chunks;
	assert_int_equal(sum_totals(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &chunks), 300 * 7);
	assert_int_equal(chunks, 1);
	submit(f, 3, test_batch(DAY0 + 3 * NS_PER_SEC, 1)); /* room again */
	assert_ok(f, 3);
	fix_close(f);
}

/* No idle wait: with the writer free, each submit becomes a group of its
 * own at once (the old window made a lone push wait for company); while a
 * group is written, what arrives waits and forms exactly the next group. */
static void test_no_window(void **state)
{
	(void)state;
	fix_t *f = fix_open(0, 0);
	for (int i = 0; i < 3; i++) {
		submit(f, i, test_batch(DAY0 + i * NS_PER_SEC, 1));
		assert_ok(f, i);
		assert_int_equal(hold_groups(&f->h), (uint32_t)i + 1);
		assert_int_equal(f->h.sizes[i], 1);
	}
	store_stats_t st;
	store_get_stats(f->s, &st);
	assert_int_equal(st.commits, 3);
	hold_set(&f->h, 1);
	submit(f, 3, test_batch(DAY0 + 3 * NS_PER_SEC, 1));
	hold_wait_groups(&f->h, 4);
	for (int i = 4; i < 9; i++)
		submit(f, i, test_batch(DAY0 + i * NS_PER_SEC, 1));
	hold_set(&f->h, 0);
	for (int i = 3; i < 9; i++)
		assert_ok(f, i);
	assert_int_equal(hold_groups(&f->h), 5);
	assert_int_equal(f->h.sizes[3], 1);
	assert_int_equal(f->h.sizes[4], 5);
	fix_close(f);
}

/* The time histograms of /metrics (store_stats_t): a batch's ack time runs
 * from its submit to its durable answer, so three batches held 30 ms count
 * in buckets past 25 ms; a refused batch is not counted; every commit is in
 * the commit histogram. */
static void test_time_histograms(void **state)
{
	(void)state;
	fix_t *f = fix_open(3, 0);
	hold_set(&f->h, 1);
	submit(f, 0, test_batch(DAY0, 1));
	hold_wait_groups(&f->h, 1);
	submit(f, 1, test_batch(DAY0 + NS_PER_SEC, 1));
	submit(f, 2, test_batch(DAY0 + 2 * NS_PER_SEC, 1));
	submit(f, 3, test_batch(DAY0 + 3 * NS_PER_SEC, 1));
	assert_busy(f, 3);
	struct timespec ms30 = {0, 30 * 1000000L};
	nanosleep(&ms30, NULL);
	hold_set(&f->h, 0);
	for (int i = 0; i < 3; i++)
		assert_ok(f, i);
	store_stats_t st;
	store_get_stats(f->s, &st);
	uint64_t acks = 0, early = 0, commits = 0;
	for (int i = 0; i <= STORE_TIME_BUCKETS; i++) {
		acks += st.ack_buckets[i];
		commits += st.commit_buckets[i];
		if (i < STORE_TIME_BUCKETS && store_time_bounds_ns[i] < 25000000)
			early += st.ack_buckets[i];
	}
	assert_int_equal(acks, 3);
	assert_int_equal(early, 0);
	assert_int_equal(st.ack_buckets[STORE_TIME_BUCKETS], 0); /* none beyond 30 s */
	assert_true(st.ack_ns_sum >= 3 * 30000000ull);
	assert_int_equal(commits, st.commits);
	assert_int_equal(st.commits, 2); /* batch 0 alone, then 1 and 2 */
	fix_close(f);
}

/* Shutting down is a 503 but not the busy error: the scraper tells them apart. */
static void test_busy_is_distinct(void **state)
{
	(void)state;
	fix_t *f = fix_open(0, 0);
	store_drain(f->s);
	submit(f, 0, test_batch(DAY0, 1));
	assert_true(is_done(f, 0));
	assert_int_equal(f->out[0].err.status, 503);
	assert_false(store_busy(&f->out[0].err));
	assert_false(store_busy(NULL));
	fix_close(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_batch_cap),        cmocka_unit_test(test_byte_cap),
	    cmocka_unit_test(test_no_window),        cmocka_unit_test(test_time_histograms),
	    cmocka_unit_test(test_busy_is_distinct),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
