/* Usage counting: usage_add bumps counters in an in-memory map under one short
 * mutex; usage_flush moves them into the store as deltas (store_usage_write).
 * Reads merge the store's rows with what is still pending, so answers never
 * lag the flush. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/hash.h"
#include "base/timeutil.h"
#include "base/u64map.h"
#include "ingest/usage.h"
#include "store/store.h"


typedef struct {
	int64_t day;
	size_t plen, klen;
	uint64_t counts[USAGE_COUNTERS];
	char names[]; /* project bytes, then key bytes */
} usage_entry_t;

/* (day, project, key) → counters. The u64map holds a hash of the triple; a
 * (vanishingly rare) hash collision probes the next derived hash. */
typedef struct {
	u64map_t index;
	usage_entry_t **v;
	size_t n, cap;
} usage_map_t;

struct usage {
	pthread_mutex_t _mu;    /* guards _pending and _totals */
	usage_map_t _pending;   /* counts not yet in the store */
	usage_map_t _totals;    /* since open, per (project, key); day = 0 */
	pthread_mutex_t _db_mu; /* held across a flush or a read so none sees a half-moved delta */
	store_t *_store;
};

static void map_init(usage_map_t *m)
{
	memset(m, 0, sizeof *m);
	u64map_init(&m->index);
}

static void map_free(usage_map_t *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i]);
	free(m->v);
	u64map_free(&m->index);
	map_init(m);
}

static int entry_is(const usage_entry_t *e, int64_t day, slice_t project, slice_t key)
{
	return e->day == day && e->plen == project.n && e->klen == key.n &&
	       (project.n == 0 || memcmp(e->names, project.p, project.n) == 0) &&
	       (key.n == 0 || memcmp(e->names + project.n, key.p, key.n) == 0);
}

/* The counters of (day, project, key), added (zeroed) if missing unless the
 * map already holds max entries (then NULL). */
static usage_entry_t *map_get(usage_map_t *m, int64_t day, slice_t project, slice_t key, size_t max)
{
	if (project.n > LIMIT_USAGE_NAME_BYTES)
		project.n = LIMIT_USAGE_NAME_BYTES;
	if (key.n > LIMIT_USAGE_NAME_BYTES)
		key.n = LIMIT_USAGE_NAME_BYTES;
	uint64_t h = hash_pair(hash_pair(hash_slice(project, 1), hash_slice(key, 2)), (uint64_t)day);
	for (;; h = hash_pair(h, 3)) {
		uint32_t at;
		if (!u64map_get(&m->index, h, &at))
			break;
		if (entry_is(m->v[at], day, project, key))
			return m->v[at];
	}
	if (m->n >= max)
		return NULL;
	usage_entry_t *e = xcalloc(1, sizeof *e + project.n + key.n);
	e->day = day;
	e->plen = project.n;
	e->klen = key.n;
	if (project.n)
		memcpy(e->names, project.p, project.n);
	if (key.n)
		memcpy(e->names + project.n, key.p, key.n);
	m->v = xgrow(m->v, &m->cap, m->n + 1, sizeof *m->v);
	u64map_put(&m->index, h, (uint32_t)m->n);
	m->v[m->n++] = e;
	return e;
}

static slice_t entry_project(const usage_entry_t *e)
{
	return slice_make(e->names, e->plen);
}

static slice_t entry_key(const usage_entry_t *e)
{
	return slice_make(e->names + e->plen, e->klen);
}

static void entry_add(usage_entry_t *e, const uint64_t counts[USAGE_COUNTERS])
{
	for (int i = 0; i < USAGE_COUNTERS; i++)
		e->counts[i] += counts[i];
}

usage_t *usage_open(store_t *s)
{
	usage_t *u = xcalloc(1, sizeof *u);
	pthread_mutex_init(&u->_mu, NULL);
	pthread_mutex_init(&u->_db_mu, NULL);
	map_init(&u->_pending);
	map_init(&u->_totals);
	u->_store = s;
	return u;
}

void usage_close(usage_t *u)
{
	if (!u)
		return;
	err_t err;
	usage_flush(u, &err);
	map_free(&u->_pending);
	map_free(&u->_totals);
	pthread_mutex_destroy(&u->_mu);
	pthread_mutex_destroy(&u->_db_mu);
	free(u);
}

void usage_add(usage_t *u, slice_t project, slice_t key, int64_t t_ns, uint64_t accepted, int reason,
               uint64_t samples)
{
	uint64_t counts[USAGE_COUNTERS] = {0};
	counts[USAGE_ACCEPTED] = accepted;
	if (reason >= 0 && reason < USAGE_COUNTERS)
		counts[reason] += samples;
	int64_t day = time_day(t_ns);
	pthread_mutex_lock(&u->_mu);
	/* Pending holds at most one second of distinct (day, project, key): unbounded
	 * only by the number of keys, which the key store bounds. */
	entry_add(map_get(&u->_pending, day, project, key, SIZE_MAX), counts);
	usage_entry_t *total = map_get(&u->_totals, 0, project, key, LIMIT_USAGE_TOTALS);
	if (total)
		entry_add(total, counts);
	pthread_mutex_unlock(&u->_mu);
}

static int store_write_all(store_t *s, const usage_map_t *m, err_t *err)
{
	store_usage_row_t *rows = xmalloc((m->n + 1) * sizeof *rows);
	for (size_t i = 0; i < m->n; i++) {
		rows[i].day = m->v[i]->day;
		rows[i].project = entry_project(m->v[i]);
		rows[i].key = entry_key(m->v[i]);
		memcpy(rows[i].counts, m->v[i]->counts, sizeof rows[i].counts);
	}
	int rc = store_usage_write(s, rows, (uint32_t)m->n, err);
	free(rows);
	return rc;
}

int usage_flush(usage_t *u, err_t *err)
{
	pthread_mutex_lock(&u->_db_mu);
	pthread_mutex_lock(&u->_mu);
	usage_map_t moving = u->_pending;
	map_init(&u->_pending);
	pthread_mutex_unlock(&u->_mu);

	int rc = moving.n ? store_write_all(u->_store, &moving, err) : 0;
	if (rc < 0) { /* put the counts back for the next flush */
		pthread_mutex_lock(&u->_mu);
		for (size_t i = 0; i < moving.n; i++) {
			const usage_entry_t *e = moving.v[i];
			entry_add(map_get(&u->_pending, e->day, entry_project(e), entry_key(e), SIZE_MAX),
			          e->counts);
		}
		pthread_mutex_unlock(&u->_mu);
	}
	map_free(&moving);
	pthread_mutex_unlock(&u->_db_mu);
	return rc;
}

static int entry_order(const void *a, const void *b)
{
	const usage_entry_t *x = *(const usage_entry_t *const *)a, *y = *(const usage_entry_t *const *)b;
	if (x->day != y->day)
		return x->day < y->day ? -1 : 1;
	int c = slice_cmp(entry_project(x), entry_project(y));
	return c ? c : slice_cmp(entry_key(x), entry_key(y));
}

static void store_row(const store_usage_row_t *r, void *ctx)
{
	entry_add(map_get(ctx, r->day, r->project, r->key, SIZE_MAX), r->counts);
}

int usage_rows(usage_t *u, slice_t project, int64_t from_ns, int64_t until_ns,
               void (*cb)(const usage_row_t *row, void *ctx), void *ctx, err_t *err)
{
	int64_t from_day = time_day(from_ns), until_day = until_ns ? time_day(until_ns) : INT64_MAX;
	usage_map_t m;
	map_init(&m);
	pthread_mutex_lock(&u->_db_mu);
	int rc = store_usage_read(u->_store, project, from_day, until_day, store_row, &m, err);
	if (rc == 0) {
		pthread_mutex_lock(&u->_mu);
		for (size_t i = 0; i < u->_pending.n; i++) {
			const usage_entry_t *e = u->_pending.v[i];
			if (e->day < from_day || e->day > until_day ||
			    (project.n && !slice_eq(entry_project(e), project)))
				continue;
			entry_add(map_get(&m, e->day, entry_project(e), entry_key(e), SIZE_MAX), e->counts);
		}
		pthread_mutex_unlock(&u->_mu);
	}
	pthread_mutex_unlock(&u->_db_mu);
	if (rc == 0 && m.n) {
		qsort(m.v, m.n, sizeof *m.v, entry_order);
		for (size_t i = 0; i < m.n; i++) {
			usage_row_t row = {
			    .day = m.v[i]->day, .project = entry_project(m.v[i]), .key = entry_key(m.v[i])};
			memcpy(row.counts, m.v[i]->counts, sizeof row.counts);
			cb(&row, ctx);
		}
	}
	map_free(&m);
	return rc;
}

typedef struct {
	buf_t *json;
	int n, full;
} json_ctx_t;

static void row_json(const usage_row_t *r, void *arg)
{
	json_ctx_t *c = arg;
	char day[11];
	time_day_str(r->day, day);
	uint64_t rejected = 0;
	for (int i = USAGE_RATE_LIMITED; i < USAGE_COUNTERS; i++)
		rejected += r->counts[i];
	if (buf_printf(c->json, "%s{\"day\":\"%s\",\"key\":", c->n++ ? "," : "", day) < 0 ||
	    buf_json_str(c->json, r->key) < 0 ||
	    buf_printf(c->json,
	               ",\"accepted\":%llu,\"rejected\":%llu,\"rejected_by_reason\":{\"rate_limited\":%llu,"
	               "\"too_large\":%llu,\"invalid\":%llu,\"out_of_window\":%llu}}",
	               (unsigned long long)r->counts[USAGE_ACCEPTED], (unsigned long long)rejected,
	               (unsigned long long)r->counts[USAGE_RATE_LIMITED],
	               (unsigned long long)r->counts[USAGE_TOO_LARGE],
	               (unsigned long long)r->counts[USAGE_INVALID],
	               (unsigned long long)r->counts[USAGE_OUT_OF_WINDOW]) < 0)
		c->full = 1;
}

int usage_query(usage_t *u, slice_t project, int64_t from_ns, int64_t until_ns, buf_t *json, err_t *err)
{
	json_ctx_t c = {.json = json};
	if (buf_puts(json, "{\"days\":[") < 0)
		c.full = 1;
	if (usage_rows(u, project, from_ns, until_ns, row_json, &c, err) < 0)
		return -1;
	if (c.full || buf_puts(json, "]}") < 0)
		return err_set(err, 500, "usage answer larger than its buffer");
	return 0;
}

void usage_totals(usage_t *u,
                  void (*cb)(slice_t project, slice_t key, const uint64_t counts[USAGE_COUNTERS], void *ctx),
                  void *ctx)
{
	pthread_mutex_lock(&u->_mu);
	for (size_t i = 0; i < u->_totals.n; i++) {
		const usage_entry_t *e = u->_totals.v[i];
		cb(entry_project(e), entry_key(e), e->counts, ctx);
	}
	pthread_mutex_unlock(&u->_mu);
}
