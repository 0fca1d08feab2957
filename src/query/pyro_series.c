/* Pyroscope's SelectSeries over Kiln's series (query/pyro.h,
 * query_pyro_select_series): the profiles (chunk heads, scanned as the
 * timeline scans them: query_part_load + query_chunk_value) of the query's
 * series, grouped by the values of the group_by labels, each profile's total
 * placed on the step grid as grafana/pyroscope's timeseries.RangeSeries
 * places it (the first grid point at or after its time), summed or averaged
 * per point, series ordered as its TopSeries orders them. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/hash.h"
#include "base/timeutil.h"
#include "query/pyro.h"
#include "query/query_int.h"

/* One profile of a group, on grid point k. */
typedef struct {
	uint32_t group;
	int64_t k;
	int64_t value;
} ps_rec_t;

typedef struct {
	arena_t *a;
	u64map_t ix; /* hash of a group's key -> group index */
	query_pyro_ts_t *g;
	size_t cap;
	uint32_t n;
	slice_t *keys; /* a group's key: its label values, each followed by \0 (absent: \1) */
	size_t cap_keys;
} ps_groups_t;

/* Part k (0..4) of a profile type id NAME:SAMPLE:UNIT:PERIOD_TYPE:PERIOD_UNIT. */
static slice_t id_part(slice_t id, int k)
{
	size_t at = 0;
	for (int i = 0; i < k; i++) {
		while (at < id.n && id.p[at] != ':')
			at++;
		at += at < id.n;
	}
	size_t e = at;
	while (e < id.n && (k == 4 || id.p[e] != ':'))
		e++;
	return slice_make(id.p + at, e - at);
}

slice_t query_pyro_label(const store_series_t *s, slice_t id, slice_t name)
{
	static const char *const parts[] = {"__name__", "__type__", "__unit__", "__period_type__",
	                                    "__period_unit__"};
	if (slice_eq_cstr(name, "service_name"))
		return s->service;
	if (slice_eq_cstr(name, "__profile_type__"))
		return id;
	for (int k = 0; k < 5; k++)
		if (slice_eq_cstr(name, parts[k]))
			return id_part(id, k);
	for (uint32_t i = 0; i < s->n_labels; i++)
		if (slice_eq(s->labels[i].key, name))
			return s->labels[i].value;
	return slice_make("", 0);
}

/* The group of series s: its index, made when new. */
static uint32_t group_of(ps_groups_t *gs, const store_series_t *s, const query_pyro_select_t *r, buf_t *key)
{
	key->n = 0;
	for (uint32_t i = 0; i < r->n_group_by; i++) {
		slice_t v = query_pyro_label(s, r->q.pyro_id, r->group_by[i]);
		buf_append(key, v.p, v.n);
		buf_putc(key, v.n ? 0 : 1);
	}
	slice_t k = buf_slice(key);
	for (uint64_t seed = 0;; seed++) {
		uint64_t h = hash_slice(k, seed);
		uint32_t at;
		if (!h)
			continue; /* the map's empty key */
		if (u64map_get(&gs->ix, h, &at)) {
			if (slice_eq(gs->keys[at], k))
				return at;
			continue;
		}
		gs->g = xgrow(gs->g, &gs->cap, (size_t)gs->n + 1, sizeof *gs->g);
		gs->keys = xgrow(gs->keys, &gs->cap_keys, (size_t)gs->n + 1, sizeof *gs->keys);
		gs->keys[gs->n] = arena_slice(gs->a, k);
		query_pyro_ts_t *g = &gs->g[gs->n];
		memset(g, 0, sizeof *g);
		g->labels = arena_alloc(gs->a, ((size_t)r->n_group_by + 1) * sizeof *g->labels);
		for (uint32_t i = 0; i < r->n_group_by; i++) {
			slice_t v = query_pyro_label(s, r->q.pyro_id, r->group_by[i]);
			if (!v.n)
				continue;
			uint32_t at2 = g->n_labels++; /* sorted by name, as Pyroscope's label sets */
			while (at2 && slice_cmp(g->labels[at2 - 1].key, r->group_by[i]) > 0) {
				g->labels[at2] = g->labels[at2 - 1];
				at2--;
			}
			g->labels[at2] =
			    (model_label_t){arena_slice(gs->a, r->group_by[i]), arena_slice(gs->a, v)};
		}
		u64map_put(&gs->ix, h, gs->n);
		return gs->n++;
	}
}

static int rec_cmp(const void *a, const void *b)
{
	const ps_rec_t *x = a, *y = b;
	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	return x->k < y->k ? -1 : x->k > y->k;
}

int query_pyro_labels_cmp(const model_label_t *a, uint32_t na, const model_label_t *b, uint32_t nb)
{
	for (uint32_t i = 0; i < na && i < nb; i++) {
		int c = slice_cmp(a[i].key, b[i].key);
		if (!c)
			c = slice_cmp(a[i].value, b[i].value);
		if (c)
			return c;
	}
	return na < nb ? -1 : na > nb;
}

static int series_cmp(const void *a, const void *b)
{
	const query_pyro_ts_t *x = a, *y = b;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return query_pyro_labels_cmp(x->labels, x->n_labels, y->labels, y->n_labels);
}

/* The grid point of a profile at t_ns: the first start + k·step at or after
 * it, or with in_step the last at or before it (k ≥ 0). */
static int64_t grid_k(const query_pyro_select_t *r, int64_t t_ns)
{
	int64_t ms = t_ns / 1000000 - (t_ns % 1000000 < 0);
	int64_t d = ms - r->start_ms;
	if (d <= 0)
		return 0;
	return (d + (r->in_step ? 0 : r->step_ms - 1)) / r->step_ms;
}

int query_pyro_select_series(store_t *s, const query_pyro_select_t *r, arena_t *a, query_pyro_ts_t **out,
                             uint32_t *n_out, err_t *err)
{
	query_type_t qt;
	*out = NULL;
	*n_out = 0;
	if (query_check(&r->q, 1, &qt, err) < 0)
		return -1;
	if (r->step_ms <= 0)
		return err_set(err, 400, "step must be at least 1 ms");
	ps_groups_t gs = {.a = a};
	u64map_init(&gs.ix);
	ps_rec_t *recs = NULL;
	size_t n_recs = 0, cap_recs = 0;
	buf_t key;
	buf_init(&key, SIZE_MAX);
	store_view_t *v = NULL;
	int rc = store_view_open(s, r->q.project, r->q.from_ns, r->q.until_ns, &v, err);
	uint32_t np = rc == 0 ? store_view_partitions(v) : 0;
	for (uint32_t p = 0; p < np && rc == 0; p++) {
		query_part_t qp;
		rc = query_part_load(v, p, &r->q, &qt, &qp, err);
		uint32_t *group = rc == 0 ? xmalloc(((size_t)qp.n_sel + 1) * sizeof *group) : NULL;
		for (uint32_t i = 0; rc == 0 && i < qp.n_sel; i++)
			group[i] = group_of(&gs, qp.sel[i].s, r, &key);
		for (uint32_t i = 0; rc == 0 && i < qp.n_heads; i++) {
			const store_chunk_head_t *h = &qp.heads[i];
			const query_sel_t *sel = query_part_sel(&qp, h);
			int64_t value;
			rc = query_chunk_value(v, &qp, h, &value, err);
			if (rc < 0)
				break;
			if (sel->attr_mask && !value)
				continue; /* no sample has the filtered attributes: not a profile of the query */
			recs = xgrow(recs, &cap_recs, n_recs + 1, sizeof *recs);
			recs[n_recs++] = (ps_rec_t){group[sel - qp.sel], grid_k(r, h->t_ns),
			                            num_sat_mul(value, sel->scale)};
		}
		free(group);
		query_part_free(&qp);
	}
	if (v)
		store_view_close(v);
	buf_free(&key);
	if (rc == 0 && n_recs) {
		qsort(recs, n_recs, sizeof *recs, rec_cmp);
		for (size_t i = 0; i < n_recs;) {
			query_pyro_ts_t *g = &gs.g[recs[i].group];
			size_t j = i, pts = 0;
			for (; j < n_recs && recs[j].group == recs[i].group; j++)
				pts += j == i || recs[j].k != recs[j - 1].k;
			g->ts_ms = arena_alloc(a, pts * sizeof *g->ts_ms);
			g->value = arena_alloc(a, pts * sizeof *g->value);
			for (size_t k = i; k < j;) {
				size_t e = k;
				double sum = 0;
				for (; e < j && recs[e].k == recs[k].k; e++)
					sum += (double)recs[e].value;
				double value = r->average ? sum / (double)(e - k) : sum;
				g->ts_ms[g->n_points] = r->start_ms + recs[k].k * r->step_ms;
				g->value[g->n_points++] = value;
				g->total += value;
				k = e;
			}
			i = j;
		}
	}
	/* Groups without a profile in the range have no series. */
	uint32_t n = 0;
	for (uint32_t i = 0; i < gs.n; i++)
		if (gs.g[i].n_points)
			gs.g[n++] = gs.g[i];
	if (n > 1)
		qsort(gs.g, n, sizeof *gs.g, series_cmp);
	if (r->limit > 0 && (uint64_t)n > (uint64_t)r->limit)
		n = (uint32_t)r->limit;
	if (rc == 0 && n) {
		*out = arena_alloc(a, (size_t)n * sizeof **out);
		memcpy(*out, gs.g, (size_t)n * sizeof **out);
		*n_out = n;
	}
	free(recs);
	free(gs.g);
	free(gs.keys);
	u64map_free(&gs.ix);
	return rc;
}
