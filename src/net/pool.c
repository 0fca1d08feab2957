/* Worker pool (pool.h): a mutex + condition variable FIFO shared by N
 * pthreads. Knows nothing about the loop; a job that must answer a request
 * posts its reply with loop_post. */
#include "net/pool.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/alloc.h"

struct job {
	void (*fn)(void *);
	void *arg;
	struct job *next;
};

struct pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct job *head, *tail; /* guarded by mu */
	size_t queued;           /* jobs waiting for a worker; guarded by mu */
	int closing;             /* guarded by mu */
	int n;
	pthread_t *threads;
};

static void *worker(void *arg)
{
	pool_t *p = arg;
	for (;;) {
		pthread_mutex_lock(&p->mu);
		while (!p->head && !p->closing)
			pthread_cond_wait(&p->cv, &p->mu);
		struct job *j = p->head;
		if (j) {
			p->head = j->next;
			if (!p->head)
				p->tail = NULL;
			p->queued--;
		}
		pthread_mutex_unlock(&p->mu);
		if (!j)
			return NULL; /* closing and drained */
		j->fn(j->arg);
		free(j);
	}
}

pool_t *pool_new(int nthreads)
{
	if (nthreads <= 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		nthreads = c > 0 ? (int)c : 1;
	}
	pool_t *p = xcalloc(1, sizeof *p);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->threads = xcalloc((size_t)nthreads, sizeof *p->threads);
	for (int i = 0; i < nthreads; i++) {
		if (pthread_create(&p->threads[i], NULL, worker, p) != 0) {
			fprintf(stderr, "kiln: cannot start worker thread %d\n", i);
			abort();
		}
		pthread_setname_np(p->threads[i], "kiln-worker");
		p->n++;
	}
	return p;
}

int pool_try_submit(pool_t *p, void (*fn)(void *), void *arg, size_t max_queued)
{
	struct job *j = xmalloc(sizeof *j);
	j->fn = fn;
	j->arg = arg;
	j->next = NULL;
	pthread_mutex_lock(&p->mu);
	if (max_queued && p->queued >= max_queued) {
		pthread_mutex_unlock(&p->mu);
		free(j);
		return -1;
	}
	if (p->tail)
		p->tail->next = j;
	else
		p->head = j;
	p->tail = j;
	p->queued++;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

void pool_submit(pool_t *p, void (*fn)(void *), void *arg)
{
	pool_try_submit(p, fn, arg, 0);
}

int pool_size(const pool_t *p)
{
	return p->n;
}

void pool_free(pool_t *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->closing = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->n; i++)
		pthread_join(p->threads[i], NULL);
	free(p->threads);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}
