/* What every query shares: parameter checks, choosing the series of a
 * partition that a query reads (service, type and profile name, cpu_alias, a
 * Pyroscope profile type id, label filters),
 * their chunk heads, attribute filters, and small JSON helpers.
 * It builds no tree and writes no result. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/hash.h"
#include "base/limits.h"
#include "base/sort.h"
#include "base/u64map.h"
#include "query/pyro.h"
#include "query/query_int.h"

int query_check(const query_params_t *q, int need_service, query_type_t *t, err_t *err)
{
	if (q->from_ns >= q->until_ns)
		return err_set(err, 400, "from must be before until");
	if (need_service && q->service.n == 0)
		return err_set(err, 400, "service is required");
	if (q->n_labels > 64)
		return err_set(err, 400, "at most 64 label filters are allowed, got %u", q->n_labels);
	for (uint32_t i = 0; i < q->n_labels; i++)
		if (q->labels[i].key.n == 0)
			return err_set(err, 400, "label filter %u has an empty key (use label.KEY=VALUE)", i);
	if (!t)
		return 0;
	if (q->type.n == 0)
		return err_set(err, 400, "type is required (SAMPLE_TYPE:UNIT, e.g. cpu:nanoseconds)");
	return query_type_parse(q->type, t, err);
}

/* 1 when series s is read by the query; fills *sel. */
static int series_select(const store_series_t *s, const query_params_t *q, const query_type_t *t,
                         query_sel_t *sel)
{
	memset(sel, 0, sizeof *sel);
	sel->local = s->local;
	sel->id = s->id;
	sel->scale = 1;
	sel->snapshot = s->aggregation == MODEL_SNAPSHOT;
	sel->s = s;
	if (q->service.n && !slice_eq(s->service, q->service))
		return 0;
	if (!t)
		return 1;
	if (t->named && !slice_eq(query_series_profile(s), t->profile))
		return 0;
	if (!slice_eq(s->type, t->type)) {
		if (!t->cpu_ns || !s->cpu_alias || s->period <= 0)
			return 0;
		sel->scale = s->period;
		sel->snapshot = 0;
	}
	if (q->pyro_id.n && !query_pyro_is(s, t, q->pyro_id))
		return 0;
	for (uint32_t i = 0; i < q->n_matchers; i++) {
		slice_t value = slice_make("", 0);
		for (uint32_t j = 0; j < s->n_labels; j++)
			if (slice_eq(s->labels[j].key, q->matchers[i].name))
				value = s->labels[j].value;
		if (!sel_match(&q->matchers[i], value))
			return 0;
	}
	for (uint32_t i = 0; i < q->n_labels; i++) {
		int has_key = 0, match = 0;
		for (uint32_t j = 0; j < s->n_labels; j++) {
			if (!slice_eq(s->labels[j].key, q->labels[i].key))
				continue;
			has_key = 1;
			match |= slice_eq(s->labels[j].value, q->labels[i].value);
		}
		if (has_key && !match)
			return 0;
		if (!has_key)
			sel->attr_mask |= 1ull << i;
	}
	return 1;
}

static int head_cmp(const void *a, const void *b)
{
	const store_chunk_head_t *x = a, *y = b;
	if (x->series != y->series)
		return x->series < y->series ? -1 : 1;
	if (x->t_ns != y->t_ns)
		return x->t_ns < y->t_ns ? -1 : 1;
	return 0;
}

/* Bit i of mask[a] is set when attrset a holds the pair of filter i. */
static int load_attr_masks(store_view_t *v, query_part_t *qp, const query_params_t *q, err_t *err)
{
	const model_attrset_t *sets;
	const model_label_t *labels;
	uint32_t n;
	if (store_view_attrsets(v, qp->p, &sets, &labels, &n, err) < 0)
		return -1;
	qp->attr_mask = xcalloc((size_t)n + 1, sizeof *qp->attr_mask);
	qp->n_attrsets = n;
	for (uint32_t a = 1; a <= n; a++) {
		uint64_t m = 0;
		for (uint32_t k = 0; k < sets[a].count; k++) {
			const model_label_t *l = &labels[sets[a].first + k];
			for (uint32_t i = 0; i < q->n_labels; i++)
				if (slice_eq(l->key, q->labels[i].key) &&
				    slice_eq(l->value, q->labels[i].value))
					m |= 1ull << i;
		}
		qp->attr_mask[a] = m;
	}
	return 0;
}

/* Fills qp's series and their selection for query q of type t; *any_attr
 * tells whether a selected series needs attribute filters. */
static int select_series(store_view_t *v, uint32_t p, const query_params_t *q, const query_type_t *t,
                         query_part_t *qp, int *any_attr, err_t *err)
{
	memset(qp, 0, sizeof *qp);
	qp->p = p;
	*any_attr = 0;
	if (store_view_series(v, p, &qp->series, &qp->n_series, err) < 0)
		return -1;
	qp->sel = xmalloc(((size_t)qp->n_series + 1) * sizeof *qp->sel);
	qp->sel_of = xcalloc((size_t)qp->n_series + 1, sizeof *qp->sel_of);
	for (uint32_t i = 0; i < qp->n_series; i++) {
		const store_series_t *s = &qp->series[i];
		if (s->local == 0 || s->local > qp->n_series || qp->sel_of[s->local])
			return err_set(err, 500, "partition %u: series %u has a bad local id", p, i);
		query_sel_t *sel = &qp->sel[qp->n_sel];
		if (!series_select(s, q, t, sel))
			continue;
		*any_attr |= sel->attr_mask != 0;
		qp->sel_of[s->local] = ++qp->n_sel;
	}
	return 0;
}

int query_part_load(store_view_t *v, uint32_t p, const query_params_t *q, const query_type_t *t,
                    query_part_t *qp, err_t *err)
{
	int any_attr;
	if (select_series(v, p, q, t, qp, &any_attr, err) < 0)
		return -1;
	if (qp->n_sel == 0)
		return 0;
	uint32_t *locals = xmalloc((size_t)qp->n_sel * sizeof *locals);
	for (uint32_t i = 0; i < qp->n_sel; i++)
		locals[i] = qp->sel[i].local;
	const store_chunk_head_t *heads;
	uint32_t n;
	int rc = store_view_heads(v, p, locals, qp->n_sel, &heads, &n, err);
	free(locals);
	if (rc < 0)
		return -1;
	qp->heads = xmalloc(((size_t)n + 1) * sizeof *qp->heads);
	for (uint32_t i = 0; i < n; i++)
		if (heads[i].series <= qp->n_series && qp->sel_of[heads[i].series])
			qp->heads[qp->n_heads++] = heads[i];
	sort_unless_sorted(qp->heads, qp->n_heads, sizeof *qp->heads, head_cmp);
	qp->all_heads = 1;
	if (any_attr && qp->n_heads && load_attr_masks(v, qp, q, err) < 0)
		return -1;
	return 0;
}

int query_part_from_hits(store_view_t *v, uint32_t p, const query_params_t *q, const query_type_t *t,
                         const store_span_hit_t *hits, uint32_t n, query_part_t *qp, err_t *err)
{
	int any_attr;
	if (select_series(v, p, q, t, qp, &any_attr, err) < 0)
		return -1;
	if (qp->n_sel == 0)
		return 0;
	qp->heads = xmalloc(((size_t)n + 1) * sizeof *qp->heads);
	uint32_t max_attrset = 0;
	for (uint32_t i = 0; i < n; i++) {
		const store_chunk_head_t *h = &hits[i].head;
		if (h->series == 0 || h->series > qp->n_series || !qp->sel_of[h->series])
			continue;
		/* Hits of one chunk are adjacent (sorted by time, series, chunk). */
		if (!qp->n_heads || qp->heads[qp->n_heads - 1].chunk_id != h->chunk_id)
			qp->heads[qp->n_heads++] = *h;
		if (hits[i].attrset > max_attrset)
			max_attrset = hits[i].attrset;
	}
	qsort(qp->heads, qp->n_heads, sizeof *qp->heads, head_cmp);
	qp->attr_mask = xcalloc((size_t)max_attrset + 1, sizeof *qp->attr_mask);
	qp->n_attrsets = max_attrset;
	for (uint32_t i = 0; i < n; i++) {
		const store_chunk_head_t *h = &hits[i].head;
		if (h->series && h->series <= qp->n_series && qp->sel_of[h->series])
			qp->attr_mask[hits[i].attrset] = 1;
	}
	for (uint32_t i = 0; i < qp->n_sel; i++)
		qp->sel[i].attr_mask = 1;
	return 0;
}

void query_part_free(query_part_t *qp)
{
	free(qp->sel);
	free(qp->sel_of);
	free(qp->heads);
	free(qp->attr_mask);
	memset(qp, 0, sizeof *qp);
}

int query_chunk_value(store_view_t *v, const query_part_t *qp, const store_chunk_head_t *h, int64_t *out,
                      err_t *err)
{
	const query_sel_t *sel = query_part_sel(qp, h);
	if (!sel->attr_mask) {
		*out = h->total;
		return 0;
	}
	const store_entry_t *e;
	uint32_t n;
	if (store_view_entries(v, qp->p, h, &e, &n, err) < 0)
		return -1;
	int64_t sum = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (e[i].attrset > qp->n_attrsets)
			return err_set(err, 500, "partition %u: chunk entry names attrset %u of %u", qp->p,
			               e[i].attrset, qp->n_attrsets);
		if ((qp->attr_mask[e[i].attrset] & sel->attr_mask) == sel->attr_mask)
			sum = num_sat_add(sum, e[i].value);
	}
	*out = sum;
	return 0;
}

int query_json_i64(buf_t *json, int64_t v)
{
	char tmp[24];
	size_t i = sizeof tmp;
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	do {
		tmp[--i] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		tmp[--i] = '-';
	return buf_append(json, tmp + i, sizeof tmp - i);
}

int query_json_type(buf_t *json, const query_type_t *t)
{
	int rc = buf_puts(json, "\"type\":");
	rc |= buf_json_str(json, t->name);
	rc |= buf_puts(json, ",\"unit\":");
	rc |= buf_json_str(json, t->sample_unit);
	rc |= buf_putc(json, ',');
	return rc;
}

int query_err_too_large(err_t *err)
{
	return err_set(err, 413, "the result is too large; narrow the time range or add label filters");
}

slice_t query_frame_name(const model_frame_t *f)
{
	if (f->name.n && !f->unsymbolized)
		return f->name;
	slice_t b = f->binary;
	for (size_t i = b.n; i > 0; i--) {
		if (b.p[i - 1] == '/') {
			b = slice_make(b.p + i, b.n - i);
			break;
		}
	}
	if (b.n)
		return b;
	return f->name.n ? f->name : slice_cstr("unknown");
}

uint32_t query_intern(u64map_t *ix, slice_t **names, size_t *cap, uint32_t *n, slice_t name, int *inserted)
{
	/* A hash collision moves on to the next seed, so equal ids mean equal names. */
	for (uint64_t seed = 0;; seed++) {
		int ins;
		uint32_t id = u64map_get_or_put(ix, hash_slice(name, seed), *n, &ins);
		if (ins) {
			*names = xgrow(*names, cap, (size_t)*n + 1, sizeof **names);
			(*names)[(*n)++] = name;
		} else if (!slice_eq((*names)[id], name)) {
			continue;
		}
		if (inserted)
			*inserted = ins;
		return id;
	}
}

void query_names_build(const model_tree_t *t, query_names_t *out)
{
	memset(out, 0, sizeof *out);
	uint32_t *name_of_frame = xmalloc(((size_t)t->n_frames + 1) * sizeof *name_of_frame);
	out->frame_of_name = xmalloc(((size_t)t->n_frames + 1) * sizeof *out->frame_of_name);
	/* At most one name a frame: sized once, not grown by doubling. */
	size_t cap = (size_t)t->n_frames + 1;
	out->names = xmalloc(cap * sizeof *out->names);
	u64map_t ix;
	u64map_init(&ix);
	u64map_reserve(&ix, t->n_frames);
	for (uint32_t f = 0; f < t->n_frames; f++) {
		int inserted;
		uint32_t id = query_intern(&ix, &out->names, &cap, &out->n_names,
		                           query_frame_name(&t->frames[f]), &inserted);
		if (inserted)
			out->frame_of_name[id] = f;
		name_of_frame[f] = id;
	}
	u64map_free(&ix);
	out->name_of = xmalloc(((size_t)t->n_nodes + 1) * sizeof *out->name_of);
	out->name_of[0] = UINT32_MAX;
	for (uint32_t i = 1; i < t->n_nodes; i++)
		out->name_of[i] = name_of_frame[t->frame[i]];
	free(name_of_frame);
}

void query_names_free(query_names_t *n)
{
	free(n->names);
	free(n->name_of);
	free(n->frame_of_name);
	memset(n, 0, sizeof *n);
}

void query_children(const uint32_t *parent, uint32_t n, const uint32_t *order, uint32_t **start_out,
                    uint32_t **kids_out)
{
	uint32_t *start = xcalloc((size_t)n + 2, sizeof *start);
	uint32_t *kids = xmalloc(((size_t)n + 1) * sizeof *kids);
	for (uint32_t i = 1; i < n; i++)
		start[parent[i] + 2]++;
	for (uint32_t i = 2; i <= n + 1; i++)
		start[i] += start[i - 1];
	/* start[p + 1] is now where p's children begin; filling moves it to their end. */
	for (uint32_t k = 1; k < n; k++) {
		uint32_t i = order ? order[k - 1] : k;
		kids[start[parent[i] + 1]++] = i;
	}
	*start_out = start;
	*kids_out = kids;
}
