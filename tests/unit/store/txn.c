/* The apply thread's partition transactions (docs/STORE.md, Writing, step 4):
 * they stay open across passes, so a second connection does not see their
 * rows until they are committed, which happens once a transaction is
 * LOCAL_APPLY_TXN_MS old (with no reader and nothing else to write), or at
 * once when a reader needs them (the read barrier); the checkpoint never
 * passes an open one. Claims about "still open" are checked only while the
 * test is fast enough for them to hold (a slow machine skips those, never
 * fails on them); what must be true in the end always is. */
#include <semaphore.h>
#include <stdatomic.h>
#include <time.h>

#include "helpers.h"
#include "store/local.h"

typedef struct {
	sem_t sem;
	atomic_int failed;
} answers_t;

static void answered(void *ctx, const err_t *err)
{
	answers_t *a = ctx;
	if (err)
		atomic_fetch_add(&a->failed, 1);
	sem_post(&a->sem);
}

/* Submits b and waits for its answer (not for its partition: no read barrier). */
static void push(store_t *s, model_batch_t *b)
{
	answers_t a = {.failed = 0};
	assert_int_equal(sem_init(&a.sem, 0, 0), 0);
	store_submit(s, b, answered, &a);
	while (sem_wait(&a.sem) != 0)
		;
	sem_destroy(&a.sem);
	assert_int_equal(atomic_load(&a.failed), 0);
}

static int64_t ms_since(int64_t t0)
{
	return (time_mono_ns() - t0) / 1000000;
}

static void sleep_ms(int ms)
{
	struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000};
	while (nanosleep(&t, &t) != 0)
		;
}

static uint64_t applied_end(store_t *s)
{
	pthread_mutex_lock(&s->ckpt_mu);
	uint64_t e = s->applied_end;
	pthread_mutex_unlock(&s->ckpt_mu);
	return e;
}

static int64_t file_chunks(const char *path)
{
	return sql_int(path, "SELECT count(*) FROM chunks");
}

static void test_open_across_passes(void **state)
{
	store_fix *f = *state;
	store_t *s = f->s;
	char path[4096];
	snprintf(path, sizeof path, "%s/default/2023-05-24.db", f->dir);
	const int64_t t = DAY0 + 10 * NS_PER_SEC;

	/* One push: answered from the log, written by the next pass into an open
	 * transaction that a second connection does not see. */
	int64_t t0 = time_mono_ns();
	push(s, test_batch(t, 1));
	uint64_t durable = atomic_load(&s->durable_end);
	sleep_ms(LOCAL_APPLY_DELAY_MS + 200);
	if (ms_since(t0) < LOCAL_APPLY_TXN_MS - 100) {
		assert_true(access(path, F_OK) == 0); /* the pass made the file */
		assert_int_equal(file_chunks(path), 0);
		assert_true(applied_end(s) < durable); /* the checkpoint may not pass it */
	}
	/* A reader commits it first and sees it. */
	uint32_t chunks = 0;
	assert_int_equal(sum_totals(s, "default", DAY0, DAY0 + NS_PER_DAY, &chunks), 6);
	assert_int_equal(chunks, 1);
	assert_int_equal(file_chunks(path), 1);
	assert_true(applied_end(s) >= durable);

	/* Three pushes, a pass each, go into one transaction; with no reader it
	 * is committed once LOCAL_APPLY_TXN_MS old. */
	t0 = time_mono_ns();
	for (int i = 0; i < 3; i++) {
		push(s, test_batch(t + (i + 1) * NS_PER_SEC, 10));
		sleep_ms(LOCAL_APPLY_DELAY_MS + 50);
	}
	if (ms_since(t0) < LOCAL_APPLY_TXN_MS - 100)
		assert_int_equal(file_chunks(path), 1);
	int64_t n = 0;
	for (int i = 0; i < 100 && (n = file_chunks(path)) != 4; i++)
		sleep_ms(50);
	assert_int_equal(n, 4);
	assert_true(ms_since(t0) >= LOCAL_APPLY_TXN_MS - 100);
	assert_int_equal(sum_totals(s, "default", DAY0, DAY0 + NS_PER_DAY, &chunks), 6 + 3 * 60);
	assert_int_equal(chunks, 4);
}

/* Closing commits what is open: a clean stop leaves nothing to replay, and
 * the next open finds every push in the file. */
static void test_close_commits(void **state)
{
	store_fix *f = *state;
	char path[4096];
	snprintf(path, sizeof path, "%s/default/2023-05-24.db", f->dir);
	for (int i = 0; i < 5; i++)
		push(f->s, test_batch(DAY0 + (i + 1) * NS_PER_SEC, 2));
	store_close(f->s);
	assert_int_equal(file_chunks(path), 5);
	f->s = open_store(f->dir);
	uint32_t chunks = 0;
	assert_int_equal(sum_totals(f->s, "default", DAY0, DAY0 + NS_PER_DAY, &chunks), 5 * 12);
	assert_int_equal(chunks, 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_open_across_passes, store_fix_setup, store_fix_teardown),
	    cmocka_unit_test_setup_teardown(test_close_commits, store_fix_setup, store_fix_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
