/* Series as Pyroscope's query API names them (query/pyro.h): the series
 * with chunks in a range (from their chunk heads; nothing is decoded) and
 * their profile type ids. */
#include "query/pyro.h"

#include <string.h>

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
