/* Series as Pyroscope's query API names them (query/pyro.h): the series
 * with chunks in a range (from their chunk heads; nothing is decoded),
 * their profile type ids and labels, label listings over them, and the
 * merge query of a profile type id and a selector. */
#include "query/pyro.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "query/query_int.h"
#include "wire/sample_type_config.h"

slice_t query_pyro_name(const store_series_t *s, slice_t sample_type)
{
	slice_t name = query_series_profile(s);
	if (name.n)
		return name;
	name = pyro_stc_profile_name(NULL, &sample_type, 1);
	return name.n ? name : slice_cstr(QUERY_PYRO_UNKNOWN_NAME);
}

/* Takes prefix p (then ':' unless last) off the front of *id: 1 when it was there. */
static int take(slice_t *id, slice_t p, int last)
{
	if (id->n < p.n + !last || (p.n && memcmp(id->p, p.p, p.n) != 0) || (!last && id->p[p.n] != ':'))
		return 0;
	id->p += p.n + !last;
	id->n -= p.n + !last;
	return 1;
}

int query_pyro_is(const store_series_t *s, const query_type_t *t, slice_t id)
{
	int alias = !slice_eq(s->type, t->type);
	slice_t pt = alias ? slice_cstr("cpu") : s->period_type;
	slice_t pu = alias ? slice_cstr("nanoseconds") : s->period_unit;
	return take(&id, query_pyro_name(s, t->sample_type), 0) && take(&id, t->sample_type, 0) &&
	       take(&id, t->sample_unit, 0) && take(&id, pt, 0) && take(&id, pu, 1) && id.n == 0;
}

/* Calls fn for series s as type (sample_type:unit) with the given period. */
static void emit(const store_series_t *s, slice_t type, slice_t period_type, slice_t period_unit,
                 const int64_t t_ns[2], buf_t *id, query_pyro_series_fn fn, void *ctx)
{
	const uint8_t *colon = memchr(type.p, ':', type.n);
	slice_t st = colon ? slice_make(type.p, (size_t)(colon - type.p)) : type;
	slice_t su = colon ? slice_make(colon + 1, type.n - st.n - 1) : slice_make("", 0);
	query_pyro_series_t ps = {
	    .service = s->service,
	    .name = query_pyro_name(s, st),
	    .sample_type = st,
	    .sample_unit = su,
	    .period_type = period_type,
	    .period_unit = period_unit,
	    .labels = s->labels,
	    .n_labels = s->n_labels,
	    .first_ns = t_ns[0],
	    .last_ns = t_ns[1],
	};
	id->n = 0;
	buf_append(id, ps.name.p, ps.name.n);
	buf_putc(id, ':');
	buf_append(id, type.p, type.n);
	buf_putc(id, ':');
	buf_append(id, period_type.p, period_type.n);
	buf_putc(id, ':');
	buf_append(id, period_unit.p, period_unit.n);
	ps.id = buf_slice(id);
	fn(&ps, ctx);
}

int query_pyro_series(store_t *s, slice_t project, int64_t from_ns, int64_t until_ns, query_pyro_series_fn fn,
                      void *ctx, err_t *err)
{
	query_params_t q = {.project = project, .from_ns = from_ns, .until_ns = until_ns};
	if (query_check(&q, 0, NULL, err) < 0)
		return -1;
	buf_t id;
	buf_init(&id, SIZE_MAX);
	store_view_t *v = NULL;
	int rc = store_view_open(s, project, from_ns, until_ns, &v, err);
	uint32_t np = rc == 0 ? store_view_partitions(v) : 0;
	for (uint32_t p = 0; p < np && rc == 0; p++) {
		query_part_t qp;
		rc = query_part_load(v, p, &q, NULL, &qp, err);
		for (uint32_t i = 0; rc == 0 && i < qp.n_heads;) {
			const store_series_t *ss = query_part_sel(&qp, &qp.heads[i])->s;
			int64_t t[2] = {qp.heads[i].t_ns, qp.heads[i].t_ns};
			for (; i < qp.n_heads && qp.heads[i].series == ss->local; i++) {
				t[0] = qp.heads[i].t_ns < t[0] ? qp.heads[i].t_ns : t[0];
				t[1] = qp.heads[i].t_ns > t[1] ? qp.heads[i].t_ns : t[1];
			}
			emit(ss, ss->type, ss->period_type, ss->period_unit, t, &id, fn, ctx);
			if (ss->cpu_alias)
				emit(ss, slice_cstr("cpu:nanoseconds"), slice_cstr("cpu"),
				     slice_cstr("nanoseconds"), t, &id, fn, ctx);
		}
		query_part_free(&qp);
	}
	if (v)
		store_view_close(v);
	buf_free(&id);
	return rc;
}

uint32_t query_pyro_labels(const query_pyro_series_t *s, slice_t *names, slice_t *values)
{
	static const char *const pseudo[QUERY_PYRO_PSEUDO_LABELS] = {
	    "service_name", "__name__",        "__profile_type__", "__type__",
	    "__unit__",     "__period_type__", "__period_unit__"};
	const slice_t own[QUERY_PYRO_PSEUDO_LABELS] = {
	    s->service, s->name, s->id, s->sample_type, s->sample_unit, s->period_type, s->period_unit};
	uint32_t n = 0;
	for (; n < QUERY_PYRO_PSEUDO_LABELS; n++) {
		names[n] = slice_cstr(pseudo[n]);
		values[n] = own[n];
	}
	for (uint32_t i = 0; i < s->n_labels; i++) {
		slice_t k = s->labels[i].key;
		if (slice_eq_cstr(k, "__name__") || slice_eq_cstr(k, "service_name"))
			continue;
		names[n] = k;
		values[n++] = s->labels[i].value;
	}
	return n;
}

int query_pyro_match(const sel_t *sel, uint32_t n_sel, const query_pyro_series_t *s, const slice_t *names,
                     const slice_t *values, uint32_t n)
{
	for (uint32_t i = 0; i < n_sel; i++)
		if ((!sel[i].metric.n || slice_eq(sel[i].metric, s->id)) &&
		    sel_match_labels(&sel[i], names, values, n))
			return 1;
	return n_sel == 0;
}

int query_pyro_query(slice_t id, const sel_t *sel, const char *id_what, const char *sel_what, arena_t *a,
                     query_params_t *q, err_t *err)
{
	/* NAME:SAMPLE_TYPE:SAMPLE_UNIT:PERIOD_TYPE:PERIOD_UNIT: q->type is parts 2 and 3 */
	size_t colon[4];
	uint32_t nc = 0;
	for (size_t i = 0; i < id.n; i++)
		if (id.p[i] == ':' && nc++ < 4)
			colon[nc - 1] = i;
	if (nc != 4 || colon[0] == 0 || colon[1] == colon[0] + 1)
		return err_set(err, 400,
		               "%s \"%.*s\" is not NAME:SAMPLE_TYPE:SAMPLE_UNIT:PERIOD_TYPE:PERIOD_UNIT",
		               id_what, (int)(id.n > 128 ? 128 : id.n), (const char *)id.p);
	q->pyro_id = id;
	q->type = slice_make(id.p + colon[0] + 1, colon[2] - colon[0] - 1);
	model_label_t *labels = arena_alloc(a, (size_t)sel->n * sizeof *labels + 1);
	sel_matcher_t *matchers = arena_alloc(a, (size_t)sel->n * sizeof *matchers + 1);
	q->n_labels = q->n_matchers = 0;
	q->service = slice_make("", 0);
	for (uint32_t i = 0; i < sel->n; i++) {
		static const char *const op_name[] = {"=", "!=", "=~", "!~"};
		const sel_matcher_t *m = &sel->m[i];
		int service = slice_eq_cstr(m->name, "service_name");
		if (m->op == SEL_EQ && slice_eq_cstr(m->name, "__name__") && slice_eq(m->value, id))
			continue;
		if (service && m->op != SEL_EQ)
			return err_set(err, 501,
			               "%s: service_name takes = only (the service to merge), not %s",
			               sel_what, op_name[m->op]);
		if (service)
			q->service = m->value;
		else if (m->op == SEL_EQ && m->value.n)
			labels[q->n_labels++] = (model_label_t){.key = m->name, .value = m->value};
		else /* a copy shares the compiled regex, which outlives the query */
			matchers[q->n_matchers++] = *m;
	}
	q->labels = labels;
	q->matchers = matchers;
	if (!q->service.n)
		return err_set(err, 400, "%s must name the service: {service_name=\"NAME\", …}", sel_what);
	return 0;
}

typedef struct {
	const sel_t *sel;
	uint32_t n_sel;
	slice_t label;
	int with_empty;
	arena_t *a;
	u64map_t ix;
	slice_t *found;
	size_t cap;
	uint32_t n;
	slice_t *names, *values; /* one series' labels */
	size_t cap_names, cap_values;
} pyro_list_t;

static void list_add(pyro_list_t *l, slice_t s)
{
	int inserted;
	uint32_t k = query_intern(&l->ix, &l->found, &l->cap, &l->n, s, &inserted);
	if (inserted) /* the series' slices last only for the callback */
		l->found[k] = arena_slice(l->a, s);
}

static void list_series(const query_pyro_series_t *ps, void *ctx)
{
	pyro_list_t *l = ctx;
	size_t cap = (size_t)ps->n_labels + QUERY_PYRO_PSEUDO_LABELS;
	l->names = xgrow(l->names, &l->cap_names, cap, sizeof *l->names);
	l->values = xgrow(l->values, &l->cap_values, cap, sizeof *l->values);
	uint32_t n = query_pyro_labels(ps, l->names, l->values);
	if (!query_pyro_match(l->sel, l->n_sel, ps, l->names, l->values, n))
		return;
	slice_t value = slice_make("", 0);
	for (uint32_t i = 0; i < n; i++) {
		if (!l->label.n)
			list_add(l, l->names[i]);
		else if (slice_eq(l->names[i], l->label))
			value = l->values[i];
	}
	if (l->label.n && (value.n || l->with_empty))
		list_add(l, value);
}

static int slice_qcmp(const void *a, const void *b)
{
	return slice_cmp(*(const slice_t *)a, *(const slice_t *)b);
}

int query_pyro_list(store_t *s, slice_t project, int64_t from_ns, int64_t until_ns, const sel_t *sel,
                    uint32_t n_sel, slice_t label, int with_empty, arena_t *a, slice_t **out, uint32_t *n,
                    err_t *err)
{
	pyro_list_t l = {.sel = sel, .n_sel = n_sel, .label = label, .with_empty = with_empty, .a = a};
	u64map_init(&l.ix);
	int rc = query_pyro_series(s, project, from_ns, until_ns, list_series, &l, err);
	if (l.n > 1)
		qsort(l.found, l.n, sizeof *l.found, slice_qcmp);
	*out = arena_alloc(a, (size_t)l.n * sizeof **out + 1);
	if (l.n)
		memcpy(*out, l.found, (size_t)l.n * sizeof **out);
	*n = rc == 0 ? l.n : 0;
	free(l.found);
	free(l.names);
	free(l.values);
	u64map_free(&l.ix);
	return rc;
}
