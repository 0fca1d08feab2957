/* GET /api/labels: the label names and values a query of (service, type,
 * range) could filter on, for the UI's suggestions. Series labels come from
 * the series with chunks in the range (nothing decoded); sample attributes
 * from the attribute sets those chunks use (their chunks are decoded, like a
 * flame graph). Span/trace ids are left out: they have a route of their own
 * and would drown the rest; so is the profile name __name__, which the type
 * id selects (API: Profile names). */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/u64map.h"
#include "query/query_int.h"

typedef struct {
	slice_t *values;
	size_t cap;
	uint32_t n;
	u64map_t ix;
	int attribute; /* seen as a sample attribute (not only as a series label) */
} label_values_t;

typedef struct {
	slice_t *names;
	size_t cap_names;
	uint32_t n;
	u64map_t ix;
	label_values_t *vals;
	size_t cap_vals;
} label_set_t;

static int is_link_key(slice_t k)
{
	return slice_eq_cstr(k, "span_id") || slice_eq_cstr(k, "trace_id") || slice_eq_cstr(k, "profile_id");
}

static void label_add(label_set_t *ls, const model_label_t *l, int attribute)
{
	if (l->key.n == 0 || (attribute && is_link_key(l->key)))
		return;
	int inserted;
	uint32_t k = query_intern(&ls->ix, &ls->names, &ls->cap_names, &ls->n, l->key, &inserted);
	if (inserted) {
		ls->vals = xgrow(ls->vals, &ls->cap_vals, ls->n, sizeof *ls->vals);
		memset(&ls->vals[k], 0, sizeof ls->vals[k]);
		u64map_init(&ls->vals[k].ix);
	}
	label_values_t *lv = &ls->vals[k];
	lv->attribute |= attribute;
	/* One value past the limit is kept to tell that the list is incomplete. */
	if (lv->n > LIMIT_LABEL_VALUES)
		return;
	query_intern(&lv->ix, &lv->values, &lv->cap, &lv->n, l->value, NULL);
}

static void label_set_free(label_set_t *ls)
{
	for (uint32_t i = 0; i < ls->n; i++) {
		free(ls->vals[i].values);
		u64map_free(&ls->vals[i].ix);
	}
	free(ls->vals);
	free(ls->names);
	u64map_free(&ls->ix);
}

/* Adds what the selected chunks of partition qp carry. */
static int add_partition(store_view_t *v, const query_part_t *qp, label_set_t *ls, err_t *err)
{
	const model_attrset_t *sets;
	const model_label_t *labels;
	uint32_t n_sets;
	if (store_view_attrsets(v, qp->p, &sets, &labels, &n_sets, err) < 0)
		return -1;
	uint8_t *used = xcalloc((size_t)n_sets + 1, 1);
	uint32_t last_series = 0;
	int rc = 0;
	for (uint32_t i = 0; i < qp->n_heads && rc == 0; i++) {
		const store_chunk_head_t *h = &qp->heads[i];
		if (h->series != last_series) {
			const store_series_t *s = query_part_sel(qp, h)->s;
			for (uint32_t j = 0; j < s->n_labels; j++)
				if (!slice_eq_cstr(s->labels[j].key, MODEL_PROFILE_NAME_KEY))
					label_add(ls, &s->labels[j], 0);
			last_series = h->series;
		}
		if (n_sets == 0)
			continue;
		const store_entry_t *e;
		uint32_t n;
		rc = store_view_entries(v, qp->p, h, &e, &n, err);
		for (uint32_t k = 0; rc == 0 && k < n; k++)
			if (e[k].attrset <= n_sets)
				used[e[k].attrset] = 1;
	}
	for (uint32_t a = 1; rc == 0 && a <= n_sets; a++)
		for (uint32_t k = 0; used[a] && k < sets[a].count; k++)
			label_add(ls, &labels[sets[a].first + k], 1);
	free(used);
	return rc;
}

static int slice_sort_cmp(const void *a, const void *b)
{
	return slice_cmp(*(const slice_t *)a, *(const slice_t *)b);
}

typedef struct {
	slice_t name;
	label_values_t *v;
} named_values_t;

static int named_cmp(const void *a, const void *b)
{
	return slice_cmp(((const named_values_t *)a)->name, ((const named_values_t *)b)->name);
}

static int write_labels(buf_t *json, label_set_t *ls)
{
	named_values_t *order = xmalloc(((size_t)ls->n + 1) * sizeof *order);
	for (uint32_t i = 0; i < ls->n; i++)
		order[i] = (named_values_t){ls->names[i], &ls->vals[i]};
	qsort(order, ls->n, sizeof *order, named_cmp);
	int rc = buf_puts(json, "{\"labels\":[");
	for (uint32_t i = 0; i < ls->n && rc == 0; i++) {
		label_values_t *lv = order[i].v;
		qsort(lv->values, lv->n, sizeof *lv->values, slice_sort_cmp);
		uint32_t shown = lv->n > LIMIT_LABEL_VALUES ? LIMIT_LABEL_VALUES : lv->n;
		rc |= buf_puts(json, i ? ",{\"name\":" : "{\"name\":");
		rc |= buf_json_str(json, order[i].name);
		rc |= buf_puts(json, lv->attribute ? ",\"source\":\"sample\"" : ",\"source\":\"series\"");
		rc |= buf_puts(json, ",\"values\":[");
		for (uint32_t k = 0; k < shown; k++) {
			if (k)
				rc |= buf_putc(json, ',');
			rc |= buf_json_str(json, lv->values[k]);
		}
		rc |= buf_puts(json, lv->n > shown ? "],\"truncated\":true}" : "]}");
	}
	rc |= buf_puts(json, "]}");
	free(order);
	return rc;
}

int query_labels(store_t *s, const query_params_t *q, buf_t *json, err_t *err)
{
	query_type_t t;
	if (query_check(q, 1, &t, err) < 0)
		return -1;
	label_set_t ls;
	memset(&ls, 0, sizeof ls);
	u64map_init(&ls.ix);
	store_view_t *v = NULL;
	int rc = store_view_open(s, q->project, q->from_ns, q->until_ns, &v, err);
	uint32_t np = rc == 0 ? store_view_partitions(v) : 0;
	for (uint32_t p = 0; p < np && rc == 0; p++) {
		query_part_t qp;
		rc = query_part_load(v, p, q, &t, &qp, err);
		if (rc == 0)
			rc = add_partition(v, &qp, &ls, err);
		query_part_free(&qp);
	}
	if (rc == 0 && write_labels(json, &ls) < 0)
		rc = query_err_too_large(err);
	if (v)
		store_view_close(v);
	label_set_free(&ls);
	return rc;
}
