/* Private to src/store: the table of functions an engine implements behind
 * store/store.h. store.c dispatches every public call through it; each
 * engine's `struct store` and `struct store_view` start with a pointer to
 * its table. Nothing outside src/store includes this. */
#ifndef KILN_STORE_ENGINE_H
#define KILN_STORE_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>

#include "store/store.h"

typedef struct store_engine {
	const char *name;
	void (*drain)(store_t *s);
	void (*close)(store_t *s);
	void (*submit)(store_t *s, model_batch_t *b, store_done_fn done, void *ctx);
	uint32_t (*queue_depth)(store_t *s);
	/* Waits until every write answered so far is visible to reads (NULL: they are once answered). */
	void (*read_barrier)(store_t *s);
	int (*set_retention)(store_t *s, slice_t project, int days, err_t *err);
	int64_t (*retention_start)(store_t *s, slice_t project, int64_t now_ns);
	int (*projects)(store_t *s, void (*cb)(slice_t project, void *ctx), void *ctx, err_t *err);
	/* project and keep_days already checked by store_retention_sweep */
	int (*retention_sweep)(store_t *s, slice_t project, int keep_days, int64_t now_ns, uint32_t *deleted,
	                       err_t *err);
	void (*get_stats)(store_t *s, store_stats_t *out);
	/* Keys and usage (store.h): every engine fills these. */
	int (*usage_write)(store_t *s, const store_usage_row_t *rows, uint32_t n, err_t *err);
	int (*usage_read)(store_t *s, slice_t project, int64_t from_day, int64_t until_day,
	                  void (*cb)(const store_usage_row_t *row, void *ctx), void *ctx, err_t *err);
	int (*keys_create)(store_t *s, const store_key_row_t *row, err_t *err);
	int (*keys_revoke)(store_t *s, slice_t name, int64_t now_ns, err_t *err);
	int (*keys_read)(store_t *s, void (*cb)(const store_key_row_t *row, void *ctx), void *ctx,
	                 err_t *err);
	int (*keys_poll)(store_t *s, int64_t *stamp, void (*cb)(const store_key_row_t *row, void *ctx),
	                 void *ctx, err_t *err);

	int (*view_open)(store_t *s, slice_t project, int64_t from_ns, int64_t until_ns, store_view_t **out,
	                 err_t *err);
	void (*view_close)(store_view_t *v);
	uint32_t (*view_partitions)(const store_view_t *v);
	int (*view_skipped)(const store_view_t *v, uint32_t p);
	int (*view_series)(store_view_t *v, uint32_t p, const store_series_t **out, uint32_t *n, err_t *err);
	int (*view_heads)(store_view_t *v, uint32_t p, const uint32_t *series, uint32_t n_series,
	                  const store_chunk_head_t **out, uint32_t *n, err_t *err);
	int (*view_entries)(store_view_t *v, uint32_t p, const store_chunk_head_t *h,
	                    const store_entry_t **out, uint32_t *n, err_t *err);
	int (*view_nodes)(store_view_t *v, uint32_t p, store_nodes_t *out, err_t *err);
	int (*view_frames)(store_view_t *v, uint32_t p, const model_frame_t **out, uint32_t *n, err_t *err);
	int (*view_attrsets)(store_view_t *v, uint32_t p, const model_attrset_t **sets,
	                     const model_label_t **labels, uint32_t *n, err_t *err);
	int (*view_span_chunks)(store_view_t *v, uint32_t p, slice_t span_id, slice_t trace_id,
	                        const store_span_hit_t **out, uint32_t *n, err_t *err);
	/* NULL when the engine cannot aggregate (store_view_sums then says so). */
	int (*view_sums)(store_view_t *v, uint32_t p, const uint32_t *series, uint32_t n_series,
	                 const store_sum_t **out, uint32_t *n, err_t *err);
} store_engine_t;

/* The first member of every engine's struct store and struct store_view. */
typedef struct {
	const store_engine_t *engine;
} store_head_t;

extern const store_engine_t store_local_engine;
extern const store_engine_t store_clickhouse_engine;

store_t *local_open(const store_config_t *cfg, err_t *err);
store_t *ch_open(const store_config_t *cfg, err_t *err);

/* ---- what both engines' writers share (store.c) ---- */

/* A histogram of times (store_time_bounds_ns), noted on one thread and
 * read on any. */
typedef struct {
	_Atomic uint64_t n[STORE_TIME_BUCKETS + 1], ns_sum;
} store_hist_t;
void store_hist_note(store_hist_t *h, uint64_t ns);
/* Copies the counts (not cumulative) into buckets[STORE_TIME_BUCKETS + 1]; returns the summed ns. */
uint64_t store_hist_read(const store_hist_t *h, uint64_t *buckets);

/* Commit figures for store_stats_t, updated by a writer after each group. */
typedef struct {
	_Atomic uint64_t ns_max;
	store_hist_t hist; /* its counts are the commits */
} store_commit_stats_t;
void store_commit_note(store_commit_stats_t *c, uint64_t ns);
void store_commit_read(const store_commit_stats_t *c, store_stats_t *out);

/* Whole seconds from the profile start to a sample's time (floor); 0 when
 * the sample has no time of its own. Entries keep this 1 s resolution (API: Frames). */
int64_t store_second_offset(int64_t sample_ns, int64_t profile_ns);

/* A sample entry as both writers store it: node and attrset (the writer's
 * ids; the embedded engine's node 0 and ClickHouse's MODEL_NONE are the
 * root, samples with an empty stack), whole seconds from the chunk's time (store_second_offset), value. */
typedef struct {
	uint32_t node, attrset;
	int64_t t_off;
	int64_t value;
} store_wentry_t;
/* Sorts e[0..n) by (node, attrset, t_off), merges entries with equal keys
 * (saturating sums, base/num.h) and drops those whose sum is 0; returns the
 * new n. Both engines store what this leaves, so they answer alike. */
uint32_t store_entries_merge(store_wentry_t *e, uint32_t n);

/* The span link of attribute set a: *span, *trace = index + 1 in
 * b->attr_labels of its span_id (else `profile_id`, the span label of
 * Pyroscope's otel-profiling-go) and trace_id labels, 0 when absent. */
void store_span_labels(const model_batch_t *b, const model_attrset_t *a, uint32_t *span, uint32_t *trace);

/* qsort order of span hits (store_view_span_chunks): t_ns, series, chunk, attrset. */
int store_span_hit_cmp(const void *a, const void *b);

/* A thread that calls tick(arg) every interval_ms, the first time one
 * interval after the start (both hours compactors). */
typedef struct {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int inited, running, stop;
	int interval_ms;
	void (*tick)(void *arg);
	void *arg;
} store_ticker_t;
/* 0, or -1 with a 500 when the thread cannot start (t still needs store_ticker_stop). */
int store_ticker_start(store_ticker_t *t, const char *name, int interval_ms, void (*tick)(void *arg),
                       void *arg, err_t *err);
/* Whether store_ticker_stop was called: a long tick may end early. */
int store_ticker_stopping(store_ticker_t *t);
/* Stops the thread after its current tick (a no-op on a ticker never started). */
void store_ticker_stop(store_ticker_t *t);

/* An integer from the environment (the test hooks KILN_TEST_*), or def
 * when unset or outside [min, max]. */
int64_t store_env_int(const char *name, int64_t def, int64_t min, int64_t max);

/* The first UTC day of b's profiles (INT64_MAX when none). */
int64_t store_oldest_day(const model_batch_t *b);
/* The 400 for a write to a day before floor, which a retention sweep deleted. */
int store_floor_error(err_t *err, int64_t day, int64_t floor, slice_t project);

/* A caller waiting for one store_done_fn: store_waiter_init, pass
 * store_waiter_done with the waiter as ctx, then store_waiter_wait. */
typedef struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done;
	err_t err;
} store_waiter_t;
void store_waiter_init(store_waiter_t *w);
void store_waiter_done(void *ctx, const err_t *err);
/* Waits, destroys w; 0, or -1 with the done callback's error in err. */
int store_waiter_wait(store_waiter_t *w, err_t *err);

/* ---- the write queue (write_queue.c) ---- */

/* The head of every engine's job (its first member). */
typedef struct store_job {
	struct store_job *next;
	model_batch_t *b; /* NULL: a retention sweep */
	store_done_fn done;
	void *ctx;
	size_t bytes; /* b's memory, counted against the queue's byte cap (set by store_writeq_push) */
	struct store_writeq *q; /* the queue that counts it until it is answered (NULL: not counted) */
	int answered;           /* store_job_answer ran: done was called, the counts released */
	int64_t queued_ns;      /* when store_writeq_push queued it (time_mono_ns) */
} store_job_t;

/* Answers j before the engine is done with its batch (the embedded engine
 * answers once the group is durable in its log, then writes the batch to its
 * partitions): takes j off its queue's counts (so a push the done callback
 * answers finds the room it left) and calls j->done(j->ctx, err). The batch
 * stays until store_job_finish. */
void store_job_answer(store_job_t *j, const err_t *err);
/* Answers j (unless store_job_answer did: err is then ignored), frees j's
 * batch, then the engine's job. */
void store_job_finish(store_job_t *j, const err_t *err);

typedef struct {
	/* How long a group gathers after its first job; 0: not at all (the
	 * embedded engine: the writer takes what is queued as soon as it is
	 * free). ClickHouse: 5 ms (clickhouse_writer.c says why). */
	int window_ms;
	int max_jobs;       /* jobs per group */
	uint64_t max_rows;  /* samples per group: taking stops once reached (0: no limit) */
	uint64_t max_bytes; /* batch memory per group: taking stops once reached (0:
	                       LIMIT_STORE_GROUP_BYTES); a larger batch goes alone */
	uint32_t cap_jobs;  /* batches queued or being written at most (0: LIMIT_STORE_QUEUE_BATCHES) */
	uint64_t cap_bytes; /* their memory at most (0: LIMIT_STORE_QUEUE_BYTES) */
	/* Writes jobs[0..n) on the writer thread and finishes every one of them
	 * (store_job_finish). A sweep comes as a group of one. */
	void (*run)(void *ctx, store_job_t **jobs, size_t n);
	void *ctx;
	/* Test-only (store_config_t.hold): called on the writer thread with the
	 * batches of a group (not a sweep), in its order, after it is taken and
	 * before run; may block. */
	void (*hold)(void *arg, const model_batch_t *const *batches, size_t n);
	void *hold_arg;
} store_writeq_config_t;

typedef struct store_writeq {
	store_writeq_config_t cfg;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	store_job_t *head, *tail;
	uint32_t queued;       /* batches queued + being written (what the caps count) */
	uint32_t depth;        /* jobs queued + being written, sweeps included (store_queue_depth) */
	uint64_t queued_bytes; /* their memory */
	int closing, joined;   /* joined: the writer thread has been joined (or never ran) */
	pthread_t thread;
	store_hist_t acks; /* batches acknowledged as stored, by time from queued to ack */
} store_writeq_t;

/* Starts the writer thread. On failure q still needs store_writeq_destroy. */
int store_writeq_start(store_writeq_t *q, const store_writeq_config_t *cfg, err_t *err);
/* Queues j. Finishes it at once on the caller's thread with a 503 once
 * draining has begun, and with the busy error (store_busy) when j's batch
 * would take the queue past cap_jobs or cap_bytes; a sweep (no batch) is
 * never refused for the caps. */
void store_writeq_push(store_writeq_t *q, store_job_t *j);
uint32_t store_writeq_depth(store_writeq_t *q);
/* Copies the ack-time histogram into out->ack_buckets and out->ack_ns_sum. */
void store_writeq_ack_read(store_writeq_t *q, store_stats_t *out);
/* Refuses new jobs, lets the writer finish every queued one and joins it. */
void store_writeq_drain(store_writeq_t *q);
void store_writeq_destroy(store_writeq_t *q);

#endif
