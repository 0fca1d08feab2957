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
	void (*submit)(store_t *s, model_batch *b, store_done_fn done, void *ctx);
	uint32_t (*queue_depth)(store_t *s);
	int (*set_retention)(store_t *s, slice_t project, int days, kn_err *err);
	int64_t (*retention_start)(store_t *s, slice_t project, int64_t now_ns);
	int (*projects)(store_t *s, void (*cb)(slice_t project, void *ctx), void *ctx, kn_err *err);
	int (*retention_sweep)(store_t *s, slice_t project, int keep_days, int64_t now_ns, uint32_t *deleted,
	                       kn_err *err);
	void (*get_stats)(store_t *s, store_stats *out);
	int (*usage_write)(store_t *s, const store_usage_row *rows, uint32_t n, kn_err *err); /* NULL: none */
	int (*usage_read)(store_t *s, slice_t project, int64_t from_day, int64_t until_day,
	                  void (*cb)(const store_usage_row *row, void *ctx), void *ctx, kn_err *err);

	int (*keys_write)(store_t *s, const store_key_row *row, kn_err *err);
	int (*keys_read)(store_t *s, void (*cb)(const store_key_row *row, void *ctx), void *ctx, kn_err *err);

	int (*view_open)(store_t *s, slice_t project, int64_t from_ns, int64_t until_ns, store_view **out,
	                 kn_err *err);
	void (*view_close)(store_view *v);
	uint32_t (*view_partitions)(const store_view *v);
	int (*view_skipped)(const store_view *v, uint32_t p);
	int (*view_series)(store_view *v, uint32_t p, const store_series **out, uint32_t *n, kn_err *err);
	int (*view_heads)(store_view *v, uint32_t p, const uint32_t *series, uint32_t n_series,
	                  const store_chunk_head **out, uint32_t *n, kn_err *err);
	int (*view_entries)(store_view *v, uint32_t p, const store_chunk_head *h, const store_entry **out,
	                    uint32_t *n, kn_err *err);
	int (*view_nodes)(store_view *v, uint32_t p, store_nodes *out, kn_err *err);
	int (*view_frames)(store_view *v, uint32_t p, const model_frame **out, uint32_t *n, kn_err *err);
	int (*view_attrsets)(store_view *v, uint32_t p, const model_attrset **sets,
	                     const model_label **labels, uint32_t *n, kn_err *err);
	int (*view_span_chunks)(store_view *v, uint32_t p, slice_t span_id, slice_t trace_id,
	                        const store_span_hit **out, uint32_t *n, kn_err *err);
	/* NULL when the engine cannot aggregate (store_view_sums then says so). */
	int (*view_sums)(store_view *v, uint32_t p, const uint32_t *series, uint32_t n_series,
	                 const store_sum **out, uint32_t *n, kn_err *err);
} store_engine;

/* The first member of every engine's struct store and struct store_view. */
typedef struct {
	const store_engine *engine;
} store_head;

extern const store_engine store_local_engine;
extern const store_engine store_clickhouse_engine;

store_t *local_open(const store_config *cfg, kn_err *err);
store_t *ch_open(const store_config *cfg, kn_err *err);

/* ---- what both engines' writers share (store.c) ---- */

/* Commit figures for store_stats, updated by a writer after each group. */
typedef struct {
	_Atomic uint64_t commits, ns_sum, ns_max;
} store_commit_stats;
void store_commit_note(store_commit_stats *c, uint64_t ns);
void store_commit_read(const store_commit_stats *c, store_stats *out);

/* Whole seconds from the profile start to a sample's time (floor); 0 when
 * the sample has no time of its own. Entries keep this 1 s resolution (S5.3). */
int64_t store_second_offset(int64_t sample_ns, int64_t profile_ns);

/* A sample entry as both writers store it: node and attrset (the writer's
 * ids), whole seconds from the chunk's time (store_second_offset), value. */
typedef struct {
	uint32_t node, attrset;
	int64_t t_off;
	int64_t value;
} store_wentry;
/* Sorts e[0..n) by (node, attrset, t_off), merges entries with equal keys
 * (saturating sums, base/num.h) and drops those whose sum is 0; returns the
 * new n. Both engines store what this leaves, so they answer alike. */
uint32_t store_entries_merge(store_wentry *e, uint32_t n);

/* The span link of attribute set a: *span, *trace = index + 1 in
 * b->attr_labels of its span_id (else `profile_id`, the span label of
 * Pyroscope's otel-profiling-go) and trace_id labels, 0 when absent. */
void store_span_labels(const model_batch *b, const model_attrset *a, uint32_t *span, uint32_t *trace);

/* qsort order of span hits (store_view_span_chunks): t_ns, series, chunk, attrset. */
int store_span_hit_cmp(const void *a, const void *b);

/* The first UTC day of b's profiles (INT64_MAX when none). */
int64_t store_oldest_day(const model_batch *b);
/* The 400 for a write to a day before floor, which a retention sweep deleted. */
int store_floor_error(kn_err *err, int64_t day, int64_t floor, slice_t project);

/* A caller waiting for one store_done_fn: store_waiter_init, pass
 * store_waiter_done with the waiter as ctx, then store_waiter_wait. */
typedef struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done;
	kn_err err;
} store_waiter;
void store_waiter_init(store_waiter *w);
void store_waiter_done(void *ctx, const kn_err *err);
/* Waits, destroys w; 0, or -1 with the done callback's error in err. */
int store_waiter_wait(store_waiter *w, kn_err *err);

/* ---- the write queue (write_queue.c) ---- */

/* The head of every engine's job (its first member). */
typedef struct store_job {
	struct store_job *next;
	model_batch *b; /* NULL: a retention sweep */
	store_done_fn done;
	void *ctx;
} store_job;

/* Frees j's batch, calls j->done(j->ctx, err) and frees the engine's job. */
void store_job_finish(store_job *j, const kn_err *err);

typedef struct {
	int window_ms;     /* how long a group gathers after its first job (0: not at all) */
	int max_jobs;      /* jobs per group */
	uint64_t max_rows; /* samples per group: taking stops once reached (0: no limit) */
	/* Writes jobs[0..n) on the writer thread and finishes every one of them
	 * (store_job_finish). A sweep comes as a group of one. */
	void (*run)(void *ctx, store_job **jobs, size_t n);
	void *ctx;
} store_writeq_config;

typedef struct {
	store_writeq_config cfg;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	store_job *head, *tail;
	uint32_t queued;     /* queued + being written */
	int closing, joined; /* joined: the writer thread has been joined (or never ran) */
	pthread_t thread;
} store_writeq;

/* Starts the writer thread. On failure q still needs store_writeq_destroy. */
int store_writeq_start(store_writeq *q, const store_writeq_config *cfg, kn_err *err);
/* Queues j; once draining has begun, finishes it at once with a 503. */
void store_writeq_push(store_writeq *q, store_job *j);
uint32_t store_writeq_depth(store_writeq *q);
/* Refuses new jobs, lets the writer finish every queued one and joins it. */
void store_writeq_drain(store_writeq *q);
void store_writeq_destroy(store_writeq *q);

#endif
