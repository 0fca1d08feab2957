/* The write queue both engines' writers share (store/engine.h): callers
 * push jobs, one writer thread takes them in groups and hands each group to
 * the engine. A group gathers for the engine's window, holds at most
 * max_jobs jobs and max_rows samples, and a retention sweep (a job without
 * a batch) is always a group of its own. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "store/engine.h"

void store_job_finish(store_job_t *j, const err_t *err)
{
	model_batch_free(j->b);
	if (j->done)
		j->done(j->ctx, err);
	free(j); /* j is the first member of the engine's job */
}

static void *queue_main(void *arg);

int store_writeq_start(store_writeq_t *q, const store_writeq_config_t *cfg, err_t *err)
{
	memset(q, 0, sizeof *q);
	q->cfg = *cfg;
	if (q->cfg.max_jobs < 1)
		q->cfg.max_jobs = 1;
	if (q->cfg.max_rows == 0)
		q->cfg.max_rows = UINT64_MAX;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	int rc = pthread_create(&q->thread, NULL, queue_main, q);
	if (rc != 0) {
		q->closing = q->joined = 1; /* store_writeq_drain has nothing to join */
		return err_set(err, 500, "store: cannot start the writer thread: %s", strerror(rc));
	}
	return 0;
}

void store_writeq_push(store_writeq_t *q, store_job_t *j)
{
	j->next = NULL;
	pthread_mutex_lock(&q->mu);
	if (q->closing) {
		pthread_mutex_unlock(&q->mu);
		err_t e = {0};
		err_set(&e, 503, "store: shutting down");
		e.retry_after = 5;
		store_job_finish(j, &e);
		return;
	}
	if (q->tail)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
	q->queued++;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
}

uint32_t store_writeq_depth(store_writeq_t *q)
{
	pthread_mutex_lock(&q->mu);
	uint32_t n = q->queued;
	pthread_mutex_unlock(&q->mu);
	return n;
}

void store_writeq_drain(store_writeq_t *q)
{
	pthread_mutex_lock(&q->mu);
	int joined = q->joined;
	q->closing = q->joined = 1;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
	if (!joined)
		pthread_join(q->thread, NULL);
}

void store_writeq_destroy(store_writeq_t *q)
{
	store_writeq_drain(q);
	pthread_cond_destroy(&q->cv);
	pthread_mutex_destroy(&q->mu);
}

static void deadline_in(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_nsec += (long)ms * 1000000L;
	ts->tv_sec += ts->tv_nsec / 1000000000L;
	ts->tv_nsec %= 1000000000L;
}

/* Takes the next group into jobs (q->mu held, q->head set). */
static size_t take_group(store_writeq_t *q, store_job_t **jobs)
{
	size_t n = 0;
	if (!q->head->b) { /* a sweep goes alone, between the groups before and after it */
		jobs[n++] = q->head;
		q->head = q->head->next;
	} else {
		uint64_t rows = 0;
		while (q->head && q->head->b && n < (size_t)q->cfg.max_jobs && rows < q->cfg.max_rows) {
			rows += q->head->b->n_samples;
			jobs[n++] = q->head;
			q->head = q->head->next;
		}
	}
	if (!q->head)
		q->tail = NULL;
	return n;
}

static void *queue_main(void *arg)
{
	store_writeq_t *q = arg;
	store_job_t **jobs = xmalloc((size_t)q->cfg.max_jobs * sizeof *jobs);
	pthread_mutex_lock(&q->mu);
	for (;;) {
		while (!q->head && !q->closing)
			pthread_cond_wait(&q->cv, &q->mu);
		if (!q->head)
			break;
		/* Give concurrent writers the window to join this group. */
		if (q->head->b && q->cfg.window_ms > 0 && !q->closing) {
			struct timespec until;
			deadline_in(&until, q->cfg.window_ms);
			while (!q->closing && q->queued < (uint32_t)q->cfg.max_jobs &&
			       pthread_cond_timedwait(&q->cv, &q->mu, &until) != ETIMEDOUT)
				;
		}
		size_t n = take_group(q, jobs);
		pthread_mutex_unlock(&q->mu);
		q->cfg.run(q->cfg.ctx, jobs, n);
		pthread_mutex_lock(&q->mu);
		q->queued -= (uint32_t)n;
	}
	pthread_mutex_unlock(&q->mu);
	free(jobs);
	return NULL;
}
