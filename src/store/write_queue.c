/* The write queue both engines' writers share (store/engine.h): callers
 * push jobs, one writer thread takes them in groups and hands each group to
 * the engine. No idle wait (STORE: Writing): as soon as the writer is free
 * it takes everything queued, up to max_jobs jobs, max_rows samples and
 * max_bytes of batch memory; what arrives while a group is written forms
 * the next one (an engine may ask for a window instead: ClickHouse). A
 * retention sweep (a job without a batch) is always a group of its own.
 * What waits is capped (cap_jobs batches, cap_bytes of their memory, OPS:
 * The write queue): past either a push is refused at once with the busy
 * error, so a slow store holds bounded memory and nothing queued is
 * touched. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/arena.h"
#include "base/timeutil.h"
#include "store/engine.h"

#define BUSY_PREFIX "store: busy"

int store_busy(const err_t *err)
{
	return err && err->status == 503 && !strncmp(err->msg, BUSY_PREFIX, sizeof BUSY_PREFIX - 1);
}

/* The memory b holds: its arena and its growable arrays and index maps. */
static size_t batch_bytes(const model_batch_t *b)
{
	size_t n = sizeof *b + arena_used(b->arena);
	n += b->cap_frames * sizeof *b->frames + b->cap_nodes * sizeof *b->nodes;
	n += (b->cap_attr_labels + b->cap_series_labels) * sizeof *b->attr_labels;
	n += b->cap_attrsets * sizeof *b->attrsets + b->cap_samples * sizeof *b->samples;
	n += b->cap_profiles * sizeof *b->profiles;
	const u64map_t *maps[] = {&b->_frame_ix, &b->_node_ix, &b->_attrset_ix};
	for (size_t k = 0; k < 3; k++)
		n += maps[k]->cap * (sizeof(uint64_t) + sizeof(uint32_t));
	return n;
}

/* Takes j off its queue's counts; a batch stored (ok) also counts its ack time. */
static void job_uncount(store_job_t *j, int ok)
{
	store_writeq_t *q = j->q;
	if (!q)
		return;
	if (j->b && ok) {
		int64_t d = time_mono_ns() - j->queued_ns;
		store_hist_note(&q->acks, d > 0 ? (uint64_t)d : 0);
	}
	pthread_mutex_lock(&q->mu);
	q->depth--;
	if (j->b) {
		q->queued--;
		q->queued_bytes -= j->bytes;
	}
	pthread_mutex_unlock(&q->mu);
}

void store_writeq_ack_read(store_writeq_t *q, store_stats_t *out)
{
	out->ack_ns_sum = store_hist_read(&q->acks, out->ack_buckets);
}

void store_job_answer(store_job_t *j, const err_t *err)
{
	if (j->answered)
		return;
	j->answered = 1;
	job_uncount(j, !err || !err->status);
	if (j->done)
		j->done(j->ctx, err);
}

void store_job_finish(store_job_t *j, const err_t *err)
{
	store_job_answer(j, err);
	model_batch_free(j->b);
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
	if (q->cfg.max_bytes == 0)
		q->cfg.max_bytes = LIMIT_STORE_GROUP_BYTES;
	if (q->cfg.cap_jobs == 0)
		q->cfg.cap_jobs = LIMIT_STORE_QUEUE_BATCHES;
	if (q->cfg.cap_bytes == 0)
		q->cfg.cap_bytes = LIMIT_STORE_QUEUE_BYTES;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	int rc = pthread_create(&q->thread, NULL, queue_main, q);
	if (rc != 0) {
		q->closing = q->joined = 1; /* store_writeq_drain has nothing to join */
		return err_set(err, 500, "store: cannot start the writer thread: %s", strerror(rc));
	}
	pthread_setname_np(q->thread, "kiln-writer"); /* the embedded engine's log thread */
	return 0;
}

void store_writeq_push(store_writeq_t *q, store_job_t *j)
{
	j->next = NULL;
	if (j->b)
		model_batch_seal(j->b);
	j->bytes = j->b ? batch_bytes(j->b) : 0;
	j->queued_ns = time_mono_ns();
	err_t e = {0};
	pthread_mutex_lock(&q->mu);
	if (q->closing) {
		err_set(&e, 503, "store: shutting down");
		e.retry_after = 5;
	} else if (j->b && q->queued &&
	           (q->queued + 1 > q->cfg.cap_jobs || q->queued_bytes + j->bytes > q->cfg.cap_bytes)) {
		/* Only a non-empty queue refuses: one batch larger than the byte
		 * cap alone still goes in, rather than being refused forever. */
		err_set(&e, 503,
		        BUSY_PREFIX
		        ": %u batches (%llu MiB) are waiting to be written, the most allowed is %u "
		        "(store.queueBatches) and %llu MiB (store.queueMiB); retry later",
		        q->queued, (unsigned long long)(q->queued_bytes >> 20), q->cfg.cap_jobs,
		        (unsigned long long)(q->cfg.cap_bytes >> 20));
		e.retry_after = 1;
	}
	if (e.status) {
		pthread_mutex_unlock(&q->mu);
		store_job_finish(j, &e);
		return;
	}
	if (q->tail)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
	j->q = q;
	q->depth++;
	if (j->b) {
		q->queued++;
		q->queued_bytes += j->bytes;
	}
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
}

uint32_t store_writeq_depth(store_writeq_t *q)
{
	pthread_mutex_lock(&q->mu);
	uint32_t n = q->depth;
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

/* Takes the next group into jobs (q->mu held, q->head set): a sweep alone,
 * else batches until one of the group's caps is reached (at least one). */
static size_t take_group(store_writeq_t *q, store_job_t **jobs)
{
	size_t n = 0;
	if (!q->head->b) { /* a sweep goes alone, between the groups before and after it */
		jobs[n++] = q->head;
		q->head = q->head->next;
	} else {
		uint64_t rows = 0, bytes = 0;
		while (q->head && q->head->b && n < (size_t)q->cfg.max_jobs && rows < q->cfg.max_rows &&
		       (n == 0 || bytes + q->head->bytes <= q->cfg.max_bytes)) {
			rows += q->head->b->n_samples;
			bytes += q->head->bytes;
			jobs[n++] = q->head;
			q->head = q->head->next;
		}
	}
	if (!q->head)
		q->tail = NULL;
	return n;
}

/* Only with a window configured (ClickHouse; the embedded engine in
 * bench/commit.c): let concurrent writers join the group for window_ms
 * after its first job. */
static void gather(store_writeq_t *q)
{
	struct timespec until;
	time_deadline(&until, (int64_t)q->cfg.window_ms * 1000000);
	while (!q->closing && q->depth < (uint32_t)q->cfg.max_jobs &&
	       pthread_cond_timedwait(&q->cv, &q->mu, &until) != ETIMEDOUT)
		;
}

/* The leader: waits only while nothing is queued, then writes everything
 * queued, group by group; jobs pushed meanwhile are the followers. */
static void *queue_main(void *arg)
{
	store_writeq_t *q = arg;
	store_job_t **jobs = xmalloc((size_t)q->cfg.max_jobs * sizeof *jobs);
	/* The test hook's view of a group: its batches (a sweep has none). */
	const model_batch_t **held = q->cfg.hold ? xmalloc((size_t)q->cfg.max_jobs * sizeof *held) : NULL;
	pthread_mutex_lock(&q->mu);
	for (;;) {
		while (!q->head && !q->closing)
			pthread_cond_wait(&q->cv, &q->mu);
		if (!q->head)
			break;
		if (q->head->b && q->cfg.window_ms > 0 && !q->closing)
			gather(q);
		size_t n = take_group(q, jobs), n_held = 0;
		if (held)
			for (size_t i = 0; i < n; i++)
				if (jobs[i]->b)
					held[n_held++] = jobs[i]->b;
		pthread_mutex_unlock(&q->mu);
		if (n_held)
			q->cfg.hold(q->cfg.hold_arg, held, n_held);
		q->cfg.run(q->cfg.ctx, jobs, n); /* finishes the jobs: each leaves the counts then */
		pthread_mutex_lock(&q->mu);
	}
	pthread_mutex_unlock(&q->mu);
	free(held);
	free(jobs);
	return NULL;
}
