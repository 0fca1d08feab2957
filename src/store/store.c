/* store/store.h's calls, dispatched to the engine chosen at store_open
 * (store/engine.h), and what every engine shares: waiting for a write, the
 * sort and merge of a chunk's entries, the span links of a batch. */
#include "store/engine.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/num.h"
#include "base/timeutil.h"

#define ENGINE(s) (((const store_head_t *)(s))->engine)

store_t *store_open(const store_config_t *cfg, err_t *err)
{
	if (cfg->engine == STORE_ENGINE_CLICKHOUSE)
		return ch_open(cfg, err);
	return local_open(cfg, err);
}

void store_close(store_t *s)
{
	if (s)
		ENGINE(s)->close(s);
}

void store_drain(store_t *s)
{
	if (s)
		ENGINE(s)->drain(s);
}

const char *store_engine_name(const store_t *s)
{
	return ENGINE(s)->name;
}

void store_submit(store_t *s, model_batch_t *b, store_done_fn done, void *ctx)
{
	ENGINE(s)->submit(s, b, done, ctx);
}

void store_waiter_init(store_waiter_t *w)
{
	w->done = 0;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
}

void store_waiter_done(void *ctx, const err_t *err)
{
	store_waiter_t *w = ctx;
	pthread_mutex_lock(&w->mu);
	if (err)
		w->err = *err;
	w->done = err ? -1 : 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

int store_waiter_wait(store_waiter_t *w, err_t *err)
{
	pthread_mutex_lock(&w->mu);
	while (!w->done)
		pthread_cond_wait(&w->cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	if (w->done < 0) {
		if (err)
			*err = w->err;
		return -1;
	}
	return 0;
}

int store_write_sync(store_t *s, model_batch_t *b, err_t *err)
{
	store_waiter_t w;
	store_waiter_init(&w);
	store_submit(s, b, store_waiter_done, &w);
	int rc = store_waiter_wait(&w, err);
	if (rc == 0 && ENGINE(s)->read_barrier)
		ENGINE(s)->read_barrier(s);
	return rc;
}

/* Prometheus-style bounds: fine around a group commit (0.1-3 ms on a local
 * disk), coarse up to the seconds a stalled disk or ClickHouse takes. */
const uint64_t store_time_bounds_ns[STORE_TIME_BUCKETS] = {
    100000,    250000,    500000,     750000,     1000000,    1500000,     2000000,
    3000000,   5000000,   7500000,    10000000,   25000000,   50000000,    100000000,
    250000000, 500000000, 1000000000, 2500000000, 5000000000, 10000000000, 30000000000};

void store_hist_note(store_hist_t *h, uint64_t ns)
{
	size_t i = 0;
	while (i < STORE_TIME_BUCKETS && ns > store_time_bounds_ns[i])
		i++;
	atomic_fetch_add_explicit(&h->n[i], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->ns_sum, ns, memory_order_relaxed);
}

uint64_t store_hist_read(const store_hist_t *h, uint64_t *buckets)
{
	for (size_t i = 0; i <= STORE_TIME_BUCKETS; i++)
		buckets[i] = atomic_load_explicit(&h->n[i], memory_order_relaxed);
	return atomic_load_explicit(&h->ns_sum, memory_order_relaxed);
}

void store_commit_note(store_commit_stats_t *c, uint64_t ns)
{
	store_hist_note(&c->hist, ns);
	uint64_t max = atomic_load(&c->ns_max);
	while (ns > max && !atomic_compare_exchange_weak(&c->ns_max, &max, ns))
		;
}

void store_commit_read(const store_commit_stats_t *c, store_stats_t *out)
{
	out->commit_ns_sum = store_hist_read(&c->hist, out->commit_buckets);
	out->commits = 0;
	for (size_t i = 0; i <= STORE_TIME_BUCKETS; i++)
		out->commits += out->commit_buckets[i];
	out->commit_ns_max = atomic_load(&c->ns_max);
}

int64_t store_second_offset(int64_t sample_ns, int64_t profile_ns)
{
	int64_t d;
	if (!sample_ns || __builtin_sub_overflow(sample_ns, profile_ns, &d))
		return 0;
	int64_t q = d / NS_PER_SEC;
	return (d % NS_PER_SEC < 0) ? q - 1 : q;
}

/* x sorts before y: by node, attrset, t_off. */
static inline int went_before(const store_wentry_t *x, const store_wentry_t *y)
{
	if (x->node != y->node)
		return x->node < y->node;
	if (x->attrset != y->attrset)
		return x->attrset < y->attrset;
	return x->t_off < y->t_off;
}

static inline int went_same(const store_wentry_t *x, const store_wentry_t *y)
{
	return x->node == y->node && x->attrset == y->attrset && x->t_off == y->t_off;
}

#define WENT_RUN 16 /* runs sorted by insertion before the merges */

static void went_insertion(store_wentry_t *e, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		store_wentry_t x = e[i];
		size_t j = i;
		for (; j > 0 && went_before(&x, &e[j - 1]); j--)
			e[j] = e[j - 1];
		e[j] = x;
	}
}

/* A stable sort (equal keys keep their order: the saturating sums of
 * store_entries_merge depend on it), with the comparison inlined: glibc's
 * qsort called wentry_cmp through a pointer for each of the ~n log n
 * comparisons, 1.4-1.8 % of the server's CPU at ingest (perf, apply thread).
 * Runs of WENT_RUN by insertion, then bottom-up merges through tmp. */
static void went_sort(store_wentry_t *e, size_t n)
{
	for (size_t i = 0; i < n; i += WENT_RUN)
		went_insertion(e + i, n - i < WENT_RUN ? n - i : WENT_RUN);
	if (n <= WENT_RUN)
		return;
	store_wentry_t *tmp = xmalloc(n * sizeof *tmp), *src = e, *dst = tmp;
	for (size_t w = WENT_RUN; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t a = lo, b = mid, k = lo;
			while (a < mid && b < hi)
				dst[k++] = went_before(&src[b], &src[a]) ? src[b++] : src[a++];
			while (a < mid)
				dst[k++] = src[a++];
			while (b < hi)
				dst[k++] = src[b++];
		}
		store_wentry_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != e)
		memcpy(e, src, n * sizeof *e);
	free(tmp);
}

uint32_t store_entries_merge(store_wentry_t *e, uint32_t n)
{
	if (n > 1)
		went_sort(e, n);
	uint32_t out = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (out && went_same(&e[out - 1], &e[i]))
			e[out - 1].value = num_sat_add(e[out - 1].value, e[i].value);
		else
			e[out++] = e[i];
	}
	uint32_t kept = 0;
	for (uint32_t i = 0; i < out; i++)
		if (e[i].value != 0)
			e[kept++] = e[i];
	return kept;
}

void store_span_labels(const model_batch_t *b, const model_attrset_t *a, uint32_t *span, uint32_t *trace)
{
	*span = *trace = 0;
	if ((uint64_t)a->first + a->count > b->n_attr_labels)
		return;
	uint32_t profile_id = 0;
	for (uint32_t k = a->first; k < a->first + a->count; k++) {
		slice_t key = b->attr_labels[k].key;
		if (!*span && slice_eq_cstr(key, "span_id"))
			*span = k + 1;
		else if (!profile_id && slice_eq_cstr(key, "profile_id"))
			profile_id = k + 1;
		else if (!*trace && slice_eq_cstr(key, "trace_id"))
			*trace = k + 1;
	}
	if (!*span)
		*span = profile_id;
}

int store_span_hit_cmp(const void *a, const void *b)
{
	const store_span_hit_t *x = a, *y = b;
	if (x->head.t_ns != y->head.t_ns)
		return x->head.t_ns < y->head.t_ns ? -1 : 1;
	if (x->head.series != y->head.series)
		return x->head.series < y->head.series ? -1 : 1;
	if (x->head.chunk_id !=
	    y->head.chunk_id) /* chunk ids: unsigned on ClickHouse, positive rowids locally */
		return (uint64_t)x->head.chunk_id < (uint64_t)y->head.chunk_id ? -1 : 1;
	return (x->attrset > y->attrset) - (x->attrset < y->attrset);
}

int64_t store_oldest_day(const model_batch_t *b)
{
	int64_t oldest = INT64_MAX;
	for (uint32_t i = 0; i < b->n_profiles; i++) {
		int64_t d = time_day(b->profiles[i].time_ns);
		if (d < oldest)
			oldest = d;
	}
	return oldest;
}

int store_floor_error(err_t *err, int64_t day, int64_t floor, slice_t project)
{
	char d[11], first[11];
	time_day_str(day, d);
	time_day_str(floor, first);
	return err_set(err, 400,
	               "store: a profile of %s is older than the retention of project %.*s: days before %s "
	               "have been deleted",
	               d, (int)project.n, (const char *)project.p, first);
}

uint32_t store_queue_depth(store_t *s)
{
	return ENGINE(s)->queue_depth(s);
}

int store_set_retention(store_t *s, slice_t project, int days, err_t *err)
{
	return ENGINE(s)->set_retention(s, project, days, err);
}

int64_t store_retention_start(store_t *s, slice_t project, int64_t now_ns)
{
	return ENGINE(s)->retention_start(s, project, now_ns);
}

int store_projects(store_t *s, void (*cb)(slice_t project, void *ctx), void *ctx, err_t *err)
{
	return ENGINE(s)->projects(s, cb, ctx, err);
}

int store_retention_sweep(store_t *s, slice_t project, int keep_days, int64_t now_ns, uint32_t *deleted,
                          err_t *err)
{
	/* Checked here, once for both engines: they must refuse the same calls alike. */
	if (deleted)
		*deleted = 0;
	if (keep_days < 1 || keep_days > LIMIT_RETENTION_DAYS)
		return err_set(err, 400, "store: retention must be 1 to %d days", LIMIT_RETENTION_DAYS);
	if (project.n == 0 || project.n > LIMIT_NAME_BYTES)
		return err_set(err, 400, "store: project name must be 1 to %u bytes", LIMIT_NAME_BYTES);
	return ENGINE(s)->retention_sweep(s, project, keep_days, now_ns, deleted, err);
}

void store_get_stats(store_t *s, store_stats_t *out)
{
	ENGINE(s)->get_stats(s, out);
}

int store_usage_write(store_t *s, const store_usage_row_t *rows, uint32_t n, err_t *err)
{
	return ENGINE(s)->usage_write(s, rows, n, err);
}

int store_usage_read(store_t *s, slice_t project, int64_t from_day, int64_t until_day,
                     void (*cb)(const store_usage_row_t *row, void *ctx), void *ctx, err_t *err)
{
	return ENGINE(s)->usage_read(s, project, from_day, until_day, cb, ctx, err);
}

int store_keys_create(store_t *s, const store_key_row_t *row, err_t *err)
{
	return ENGINE(s)->keys_create(s, row, err);
}

int store_keys_revoke(store_t *s, slice_t name, int64_t now_ns, err_t *err)
{
	return ENGINE(s)->keys_revoke(s, name, now_ns, err);
}

int store_keys_read(store_t *s, void (*cb)(const store_key_row_t *row, void *ctx), void *ctx, err_t *err)
{
	return ENGINE(s)->keys_read(s, cb, ctx, err);
}

int store_keys_poll(store_t *s, int64_t *stamp, void (*cb)(const store_key_row_t *row, void *ctx), void *ctx,
                    err_t *err)
{
	return ENGINE(s)->keys_poll(s, stamp, cb, ctx, err);
}

int store_view_open(store_t *s, slice_t project, int64_t from_ns, int64_t until_ns, store_view_t **out,
                    err_t *err)
{
	return ENGINE(s)->view_open(s, project, from_ns, until_ns, out, err);
}

void store_view_close(store_view_t *v)
{
	if (v)
		ENGINE(v)->view_close(v);
}

uint32_t store_view_partitions(const store_view_t *v)
{
	return ENGINE(v)->view_partitions(v);
}

int store_view_skipped(const store_view_t *v, uint32_t p)
{
	return ENGINE(v)->view_skipped(v, p);
}

int store_view_series(store_view_t *v, uint32_t p, const store_series_t **out, uint32_t *n, err_t *err)
{
	return ENGINE(v)->view_series(v, p, out, n, err);
}

int store_view_heads(store_view_t *v, uint32_t p, const uint32_t *series, uint32_t n_series,
                     const store_chunk_head_t **out, uint32_t *n, err_t *err)
{
	return ENGINE(v)->view_heads(v, p, series, n_series, out, n, err);
}

int store_view_entries(store_view_t *v, uint32_t p, const store_chunk_head_t *h, const store_entry_t **out,
                       uint32_t *n, err_t *err)
{
	return ENGINE(v)->view_entries(v, p, h, out, n, err);
}

int store_view_nodes(store_view_t *v, uint32_t p, store_nodes_t *out, err_t *err)
{
	return ENGINE(v)->view_nodes(v, p, out, err);
}

int store_view_frames(store_view_t *v, uint32_t p, const model_frame_t **out, uint32_t *n, err_t *err)
{
	return ENGINE(v)->view_frames(v, p, out, n, err);
}

int store_view_attrsets(store_view_t *v, uint32_t p, const model_attrset_t **sets,
                        const model_label_t **labels, uint32_t *n, err_t *err)
{
	return ENGINE(v)->view_attrsets(v, p, sets, labels, n, err);
}

int store_view_span_chunks(store_view_t *v, uint32_t p, slice_t span_id, slice_t trace_id,
                           const store_span_hit_t **out, uint32_t *n, err_t *err)
{
	return ENGINE(v)->view_span_chunks(v, p, span_id, trace_id, out, n, err);
}

int store_view_can_sum(const store_view_t *v)
{
	return ENGINE(v)->view_sums != NULL;
}

int store_view_sums(store_view_t *v, uint32_t p, const uint32_t *series, uint32_t n_series,
                    const store_sum_t **out, uint32_t *n, err_t *err)
{
	if (!ENGINE(v)->view_sums)
		return err_set(err, 500, "store: the %s engine does not aggregate", ENGINE(v)->name);
	return ENGINE(v)->view_sums(v, p, series, n_series, out, n, err);
}

int64_t store_env_int(const char *name, int64_t def, int64_t min, int64_t max)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return def;
	char *end;
	long long x = strtoll(v, &end, 10);
	return *end || x < min || x > max ? def : x;
}

static void *ticker_main(void *arg)
{
	store_ticker_t *t = arg;
	pthread_mutex_lock(&t->mu);
	for (;;) {
		struct timespec ts;
		time_deadline(&ts, (int64_t)t->interval_ms * 1000000);
		while (!t->stop && pthread_cond_timedwait(&t->cv, &t->mu, &ts) != ETIMEDOUT)
			;
		if (t->stop)
			break;
		pthread_mutex_unlock(&t->mu);
		t->tick(t->arg);
		pthread_mutex_lock(&t->mu);
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

int store_ticker_start(store_ticker_t *t, const char *name, int interval_ms, void (*tick)(void *arg),
                       void *arg, err_t *err)
{
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, NULL);
	t->inited = 1;
	t->stop = 0;
	t->interval_ms = interval_ms;
	t->tick = tick;
	t->arg = arg;
	int rc = pthread_create(&t->thread, NULL, ticker_main, t);
	if (rc != 0)
		return err_set(err, 500, "store: cannot start the %s thread: %s", name, strerror(rc));
	pthread_setname_np(t->thread, name);
	t->running = 1;
	return 0;
}

int store_ticker_stopping(store_ticker_t *t)
{
	if (!t->inited)
		return 0;
	pthread_mutex_lock(&t->mu);
	int stop = t->stop;
	pthread_mutex_unlock(&t->mu);
	return stop;
}

void store_ticker_stop(store_ticker_t *t)
{
	if (!t->inited)
		return;
	if (t->running) {
		pthread_mutex_lock(&t->mu);
		t->stop = 1;
		pthread_cond_broadcast(&t->cv);
		pthread_mutex_unlock(&t->mu);
		pthread_join(t->thread, NULL);
		t->running = 0;
	}
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->mu);
	t->inited = 0;
}
