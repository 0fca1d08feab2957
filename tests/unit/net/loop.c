/* Tests of src/net/loop.c and src/net/pool.c: posts from many threads run on
 * the loop thread in order, stop before run, the pool drains before freeing. */
#include "testutil.h"

#include <pthread.h>
#include <unistd.h>

#include "net/loop.h"
#include "net/pool.h"

typedef struct {
	loop_t *loop;
	pthread_t loop_thread;
	int seen[4][1000]; /* only touched on the loop thread */
	int next[4];
	int order_ok;
	int total;
} loop_fixture;

typedef struct {
	loop_fixture *f;
	int producer, seq;
} post_arg;

static void on_post(void *arg)
{
	post_arg *a = arg;
	loop_fixture *f = a->f;
	if (a->seq != f->next[a->producer])
		f->order_ok = 0;
	f->next[a->producer] = a->seq + 1;
	f->total++;
	free(a);
}

typedef struct {
	loop_fixture *f;
	int id;
} producer_arg;

static void *producer(void *arg)
{
	producer_arg *p = arg;
	for (int i = 0; i < 1000; i++) {
		post_arg *a = malloc(sizeof *a);
		a->f = p->f;
		a->producer = p->id;
		a->seq = i;
		loop_post(p->f->loop, on_post, a);
	}
	return NULL;
}

static void *run_loop(void *arg)
{
	loop_fixture *f = arg;
	loop_run(f->loop);
	return NULL;
}

static void stop_now(void *arg)
{
	loop_stop(arg);
}

static void test_posts_in_order(void **state)
{
	loop_fixture *f = calloc(1, sizeof *f);
	f->order_ok = 1;
	f->loop = loop_new();
	assert_non_null(f->loop);
	pthread_create(&f->loop_thread, NULL, run_loop, f);
	pthread_t th[4];
	producer_arg pa[4];
	for (int i = 0; i < 4; i++) {
		pa[i] = (producer_arg){f, i};
		pthread_create(&th[i], NULL, producer, &pa[i]);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	loop_post(f->loop, stop_now, f->loop); /* after every post above */
	pthread_join(f->loop_thread, NULL);
	assert_int_equal(f->total, 4000);
	assert_true(f->order_ok);
	loop_free(f->loop);
	free(f);
}

static void count(void *arg)
{
	(*(int *)arg)++;
}

static void test_stop_before_run_and_free_runs_posts(void **state)
{
	loop_t *l = loop_new();
	int n = 0;
	loop_stop(l);
	assert_int_equal(loop_run(l), 0); /* returns at once */
	loop_post(l, count, &n);
	loop_post(l, count, &n);
	loop_free(l); /* runs what is queued */
	assert_int_equal(n, 2);
}

typedef struct {
	pthread_mutex_t mu;
	int done;
} pool_counter;

static void pool_job(void *arg)
{
	pool_counter *c = arg;
	pthread_mutex_lock(&c->mu);
	c->done++;
	pthread_mutex_unlock(&c->mu);
}

static void test_pool_drains(void **state)
{
	pool_counter c = {PTHREAD_MUTEX_INITIALIZER, 0};
	pool_t *p = pool_new(3);
	assert_int_equal(pool_size(p), 3);
	for (int i = 0; i < 5000; i++)
		pool_submit(p, pool_job, &c);
	pool_free(p);
	assert_int_equal(c.done, 5000);
	pool_free(NULL);
	p = pool_new(0); /* one per CPU */
	pool_submit(p, pool_job, &c);
	pool_free(p);
	assert_int_equal(c.done, 5001);
}

/* 0 workers asked: one per online CPU, and pool_size says how many (what
 * kiln serve logs as workers=). */
static void test_pool_size_default(void **state)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	pool_t *p = pool_new(0);
	assert_int_equal(pool_size(p), cpus > 0 ? (int)cpus : 1);
	pool_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_posts_in_order),
	    cmocka_unit_test(test_stop_before_run_and_free_runs_posts),
	    cmocka_unit_test(test_pool_drains),
	    cmocka_unit_test(test_pool_size_default),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
