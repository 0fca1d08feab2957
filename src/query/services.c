/* The services list (busiest first by CPU) and the profile types of a service,
 * from series and chunk heads only: nothing is decoded. A cpu_alias series
 * (samples:count with a CPU period) also counts as cpu:nanoseconds. Types are
 * listed by their ids (API: Type ids): kinds of one SAMPLE:UNIT with
 * different profile names show apart; CPU of every name ranks the service. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/u64map.h"
#include "query/query_int.h"

typedef struct {
	slice_t name;
	int64_t cpu_ns;
	query_kind_t *kinds; /* the listing's type ids are made from these (API: Type ids) */
	uint32_t n_kinds;
	size_t cap_kinds;
} service_info_t;

typedef struct {
	slice_t *names;
	size_t cap_names;
	uint32_t n;
	u64map_t ix;
	service_info_t *svc;
	size_t cap_svc;
} service_set_t;

static service_info_t *service_get(service_set_t *ss, slice_t name)
{
	int inserted;
	uint32_t id = query_intern(&ss->ix, &ss->names, &ss->cap_names, &ss->n, name, &inserted);
	if (inserted) {
		ss->svc = xgrow(ss->svc, &ss->cap_svc, ss->n, sizeof *ss->svc);
		service_info_t *si = &ss->svc[id];
		memset(si, 0, sizeof *si);
		si->name = name;
	}
	return &ss->svc[id];
}

static void service_set_free(service_set_t *ss)
{
	for (uint32_t i = 0; i < ss->n; i++)
		free(ss->svc[i].kinds);
	free(ss->svc);
	free(ss->names);
	u64map_free(&ss->ix);
}

/* Adds the series of partition qp that have chunks in the range. */
static void add_partition(service_set_t *ss, const query_part_t *qp)
{
	static const char cpu_ns[] = "cpu:nanoseconds";
	uint32_t i = 0;
	while (i < qp->n_heads) {
		const query_sel_t *sel = query_part_sel(qp, &qp->heads[i]);
		const store_series_t *s = sel->s;
		int is_cpu = slice_eq_cstr(s->type, cpu_ns);
		int64_t scale = is_cpu ? 1 : s->cpu_alias && s->period > 0 ? s->period : 0;
		int64_t cpu = 0;
		for (; i < qp->n_heads && qp->heads[i].series == s->local; i++)
			cpu = num_sat_add(cpu, num_sat_mul(qp->heads[i].total, scale));
		service_info_t *si = service_get(ss, s->service);
		si->cpu_ns = num_sat_add(si->cpu_ns, cpu);
		slice_t profile = query_series_profile(s);
		query_kind_add(&si->kinds, &si->cap_kinds, &si->n_kinds, s->type, profile);
		if (s->cpu_alias)
			query_kind_add(&si->kinds, &si->cap_kinds, &si->n_kinds,
			               slice_make(cpu_ns, sizeof cpu_ns - 1), profile);
	}
}

static int busiest_cmp(const void *a, const void *b)
{
	const service_info_t *x = a, *y = b;
	if (x->cpu_ns != y->cpu_ns)
		return x->cpu_ns > y->cpu_ns ? -1 : 1;
	return slice_cmp(x->name, y->name);
}

/* Collects the services (all, or q->service) with series in q's range and
 * writes them with fn while the view (which owns the strings) is open. */
static int with_services(store_t *s, const query_params_t *q, int (*fn)(buf_t *, service_set_t *),
                         buf_t *json, err_t *err)
{
	service_set_t ss;
	memset(&ss, 0, sizeof ss);
	u64map_init(&ss.ix);
	store_view_t *v = NULL;
	int rc = store_view_open(s, q->project, q->from_ns, q->until_ns, &v, err);
	uint32_t np = rc == 0 ? store_view_partitions(v) : 0;
	for (uint32_t p = 0; p < np && rc == 0; p++) {
		query_part_t qp;
		rc = query_part_load(v, p, q, NULL, &qp, err);
		if (rc == 0)
			add_partition(&ss, &qp);
		query_part_free(&qp);
	}
	if (rc == 0 && fn(json, &ss) < 0)
		rc = query_err_too_large(err);
	if (v)
		store_view_close(v);
	service_set_free(&ss);
	return rc;
}

static int write_services(buf_t *json, service_set_t *ss)
{
	if (ss->n > 1)
		qsort(ss->svc, ss->n, sizeof *ss->svc, busiest_cmp);
	int rc = buf_puts(json, "{\"services\":[");
	for (uint32_t i = 0; i < ss->n && rc == 0; i++) {
		rc |= buf_puts(json, i ? ",{\"name\":" : "{\"name\":");
		rc |= buf_json_str(json, ss->svc[i].name);
		rc |= buf_puts(json, ",\"types\":");
		rc |= query_json_kinds(json, ss->svc[i].kinds, ss->svc[i].n_kinds);
		rc |= buf_puts(json, ",\"cpu_nanoseconds\":");
		rc |= query_json_i64(json, ss->svc[i].cpu_ns);
		rc |= buf_putc(json, '}');
	}
	rc |= buf_puts(json, "]}");
	return rc;
}

static int write_types_only(buf_t *json, service_set_t *ss)
{
	int rc = buf_puts(json, "{\"types\":");
	if (ss->n)
		rc |= query_json_kinds(json, ss->svc[0].kinds, ss->svc[0].n_kinds);
	else
		rc |= buf_puts(json, "[]");
	rc |= buf_putc(json, '}');
	return rc;
}

int query_services(store_t *s, const query_params_t *q, buf_t *json, err_t *err)
{
	if (query_check(q, 0, NULL, err) < 0)
		return -1;
	query_params_t all = *q;
	all.service = slice_make("", 0);
	all.n_labels = 0;
	return with_services(s, &all, write_services, json, err);
}

int query_types(store_t *s, const query_params_t *q, buf_t *json, err_t *err)
{
	if (query_check(q, 1, NULL, err) < 0)
		return -1;
	query_params_t one = *q;
	one.n_labels = 0;
	return with_services(s, &one, write_types_only, json, err);
}
