/* The span view (API: Span links, GET /api/span): the flame graph of the samples
 * linked to one span, found through the store's span index over the whole
 * retention; when the span has none, where to look instead (the service and
 * minutes of the rest of its trace, else the caller's hints). */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/arena.h"
#include "base/timeutil.h"
#include "query/query_int.h"

#define SPAN_SEARCH_BACK (14 * NS_PER_DAY) /* the retention (OPS: Retention) */
#define SPAN_SEARCH_AHEAD NS_PER_DAY       /* pushed samples may be up to 10 min ahead (API: Frames) */
#define NS_PER_MIN (60 * NS_PER_SEC)

static const char cpu_type[] = "cpu:nanoseconds";

/* The hits of one partition, copied out of the view. */
typedef struct {
	uint32_t p;
	store_span_hit_t *hits;
	uint32_t n;
} span_part_t;

/* What the hits hold of one (service, type, profile name). A cpu_alias
 * series counts for its own type and for cpu:nanoseconds. */
typedef struct {
	slice_t service, type, profile; /* view lifetime */
	slice_t id;                     /* its type id among the service's kinds (API: Type ids; set_ids) */
	int64_t samples;                /* linked sample rows (entries), or hits when not decoded */
	int64_t from_ns, until_ns;
} span_kind_t;

typedef struct {
	store_view_t *v;
	span_part_t *parts;
	uint32_t n_parts;
	size_t cap_parts;
	span_kind_t *kinds;
	uint32_t n_kinds;
	size_t cap_kinds;
	arena_t *ids; /* the kinds' ids */
} span_ctx_t;

static void ctx_reset(span_ctx_t *c)
{
	for (uint32_t i = 0; i < c->n_parts; i++)
		free(c->parts[i].hits);
	c->n_parts = 0;
	c->n_kinds = 0;
}

static void ctx_free(span_ctx_t *c)
{
	ctx_reset(c);
	free(c->parts);
	free(c->kinds);
	arena_free(c->ids);
	store_view_close(c->v);
}

/* Hits of (span_id, trace_id) in every partition of the view. */
static int collect(span_ctx_t *c, slice_t span_id, slice_t trace_id, err_t *err)
{
	uint32_t np = store_view_partitions(c->v);
	for (uint32_t p = 0; p < np; p++) {
		const store_span_hit_t *hits;
		uint32_t n;
		if (store_view_span_chunks(c->v, p, span_id, trace_id, &hits, &n, err) < 0)
			return -1;
		if (!n)
			continue;
		c->parts = xgrow(c->parts, &c->cap_parts, (size_t)c->n_parts + 1, sizeof *c->parts);
		span_part_t *sp = &c->parts[c->n_parts++];
		sp->p = p;
		sp->n = n;
		sp->hits = xmalloc((size_t)n * sizeof *hits);
		memcpy(sp->hits, hits, (size_t)n * sizeof *hits);
	}
	return 0;
}

static void kind_add(span_ctx_t *c, slice_t service, slice_t type, slice_t profile, int64_t samples,
                     const store_chunk_head_t *h)
{
	span_kind_t *k = NULL;
	for (uint32_t i = 0; i < c->n_kinds && !k; i++)
		if (slice_eq(c->kinds[i].service, service) && slice_eq(c->kinds[i].type, type) &&
		    slice_eq(c->kinds[i].profile, profile))
			k = &c->kinds[i];
	int64_t end = num_sat_add(h->t_ns, h->duration_ns > 0 ? h->duration_ns : 0);
	if (!k) {
		c->kinds = xgrow(c->kinds, &c->cap_kinds, (size_t)c->n_kinds + 1, sizeof *c->kinds);
		k = &c->kinds[c->n_kinds++];
		*k = (span_kind_t){service, type, profile, type, 0, h->t_ns, end};
	}
	k->samples = num_sat_add(k->samples, samples);
	if (h->t_ns < k->from_ns)
		k->from_ns = h->t_ns;
	if (end > k->until_ns)
		k->until_ns = end;
}

/* Linked entries of hit h: its chunk's entries with the hit's attrset. */
static int hit_samples(store_view_t *v, uint32_t p, const store_span_hit_t *h, int64_t *out, err_t *err)
{
	const store_entry_t *e;
	uint32_t n;
	if (store_view_entries(v, p, &h->head, &e, &n, err) < 0)
		return -1;
	int64_t k = 0;
	for (uint32_t i = 0; i < n; i++)
		k += e[i].attrset == h->attrset;
	*out = k;
	return 0;
}

/* Sorts the collected hits into kinds; with decode, counts linked entries
 * (else each hit counts 1: enough to rank services without reading chunks). */
static int classify(span_ctx_t *c, int decode, err_t *err)
{
	for (uint32_t i = 0; i < c->n_parts; i++) {
		const span_part_t *sp = &c->parts[i];
		const store_series_t *series;
		uint32_t n_series;
		if (store_view_series(c->v, sp->p, &series, &n_series, err) < 0)
			return -1;
		for (uint32_t k = 0; k < sp->n; k++) {
			const store_span_hit_t *h = &sp->hits[k];
			if (h->head.series == 0 || h->head.series > n_series)
				return err_set(err, 500, "partition %u: span index names series %u of %u",
				               sp->p, h->head.series, n_series);
			const store_series_t *s = &series[h->head.series - 1];
			int64_t samples = 1;
			if (decode && hit_samples(c->v, sp->p, h, &samples, err) < 0)
				return -1;
			if (!samples)
				continue;
			slice_t profile = query_series_profile(s);
			kind_add(c, s->service, s->type, profile, samples, &h->head);
			if (s->cpu_alias && s->period > 0 && !slice_eq_cstr(s->type, cpu_type))
				kind_add(c, s->service, slice_make(cpu_type, sizeof cpu_type - 1), profile,
				         samples, &h->head);
		}
	}
	return 0;
}

/* The kinds of service, for the type ids (NULL when it has none): malloc'd, *n of them. */
static query_kind_t *service_kinds(const span_ctx_t *c, slice_t service, uint32_t *n)
{
	query_kind_t *k = xmalloc(((size_t)c->n_kinds + 1) * sizeof *k);
	*n = 0;
	for (uint32_t i = 0; i < c->n_kinds; i++)
		if (slice_eq(c->kinds[i].service, service))
			k[(*n)++] = (query_kind_t){c->kinds[i].type, c->kinds[i].profile};
	return k;
}

/* Sets every kind's id among the kinds of its service. */
static void set_ids(span_ctx_t *c)
{
	if (!c->ids)
		c->ids = arena_new();
	for (uint32_t i = 0; i < c->n_kinds; i++) {
		uint32_t n, at = 0;
		query_kind_t *k = service_kinds(c, c->kinds[i].service, &n);
		slice_t *id = xmalloc(((size_t)n + 1) * sizeof *id);
		query_kind_ids(k, n, c->ids, id);
		for (uint32_t j = 0; j < n; j++)
			if (slice_eq(k[j].type, c->kinds[i].type) &&
			    slice_eq(k[j].profile, c->kinds[i].profile))
				at = j;
		c->kinds[i].id = id[at];
		free(id);
		free(k);
	}
}

/* The hinted service when the kinds have it, else the one with most samples
 * in a single type (a Go CPU profile counts its rows once per type), ties by name. */
static slice_t choose_service(const span_ctx_t *c, slice_t hint)
{
	const span_kind_t *best = NULL;
	for (uint32_t i = 0; i < c->n_kinds; i++) {
		const span_kind_t *k = &c->kinds[i];
		if (hint.n && slice_eq(k->service, hint))
			return hint;
		if (!best || k->samples > best->samples ||
		    (k->samples == best->samples && slice_cmp(k->service, best->service) < 0))
			best = k;
	}
	return best ? best->service : slice_make("", 0);
}

/* The kind of service to show: the asked type (NULL when absent; a
 * SAMPLE:UNIT of several names: the first of them, the query then merges
 * them all), else cpu:nanoseconds when present, else the type with most
 * samples, ties by id. */
static const span_kind_t *choose_type(const span_ctx_t *c, slice_t service, const query_type_t *asked)
{
	const span_kind_t *best = NULL;
	for (uint32_t i = 0; i < c->n_kinds; i++) {
		const span_kind_t *k = &c->kinds[i];
		if (!slice_eq(k->service, service))
			continue;
		if (asked) {
			if (slice_eq(k->type, asked->type) &&
			    (!asked->named || slice_eq(k->profile, asked->profile)))
				return k;
			continue;
		}
		if (slice_eq_cstr(k->type, cpu_type))
			return k;
		if (!best || k->samples > best->samples ||
		    (k->samples == best->samples && slice_cmp(k->id, best->id) < 0))
			best = k;
	}
	return best;
}

/* The time range of every kind of service. */
static void service_range(const span_ctx_t *c, slice_t service, int64_t *from_ns, int64_t *until_ns)
{
	*from_ns = INT64_MAX;
	*until_ns = INT64_MIN;
	for (uint32_t i = 0; i < c->n_kinds; i++) {
		if (!slice_eq(c->kinds[i].service, service))
			continue;
		if (c->kinds[i].from_ns < *from_ns)
			*from_ns = c->kinds[i].from_ns;
		if (c->kinds[i].until_ns > *until_ns)
			*until_ns = c->kinds[i].until_ns;
	}
}

static int64_t floor_min_s(int64_t ns)
{
	int64_t m = ns / NS_PER_MIN;
	return (ns % NS_PER_MIN < 0 ? m - 1 : m) * 60;
}

/* [from_ns, until_ns) widened to whole minutes, at least one, in unix seconds. */
static void whole_minutes(int64_t from_ns, int64_t until_ns, int64_t *from_s, int64_t *until_s)
{
	*from_s = floor_min_s(from_ns);
	*until_s = -floor_min_s(-until_ns);
	if (*until_s <= *from_s)
		*until_s = *from_s + 60;
}

/* ,"types":[…] of service: its type ids (API: Type ids). */
static int write_types(buf_t *json, const span_ctx_t *c, slice_t service)
{
	uint32_t n;
	query_kind_t *k = service_kinds(c, service, &n);
	int rc = buf_puts(json, ",\"types\":");
	rc |= query_json_kinds(json, k, n);
	free(k);
	return rc;
}

/* {"samples":N,"service":S,"from":F,"until":U (the object is left open). */
static int write_head(buf_t *json, int64_t samples, slice_t service, int64_t from_s, int64_t until_s)
{
	int rc = buf_puts(json, "{\"samples\":");
	rc |= query_json_i64(json, samples);
	rc |= buf_puts(json, ",\"service\":");
	rc |= buf_json_str(json, service);
	rc |= buf_puts(json, ",\"from\":");
	rc |= query_json_i64(json, from_s);
	rc |= buf_puts(json, ",\"until\":");
	rc |= query_json_i64(json, until_s);
	return rc;
}

/* The flame graph of kind k's linked samples, of type id type. */
static int write_linked(span_ctx_t *c, slice_t project, const span_kind_t *k, slice_t type, buf_t *json,
                        err_t *err)
{
	query_params_t q = {.project = project, .service = k->service, .type = type};
	q.from_ns = k->from_ns;
	q.until_ns = k->until_ns > k->from_ns ? k->until_ns : k->from_ns + 1;
	query_merged_t m;
	memset(&m, 0, sizeof m);
	if (query_check(&q, 0, &m.type, err) < 0)
		return err_set(err, 500, "stored profile type \"%.*s\" is malformed", (int)type.n,
		               (const char *)type.p);
	query_part_t *parts = xcalloc((size_t)c->n_parts + 1, sizeof *parts);
	uint32_t n;
	int rc = 0;
	for (n = 0; n < c->n_parts && rc == 0; n++)
		rc = query_part_from_hits(c->v, c->parts[n].p, &q, &m.type, c->parts[n].hits, c->parts[n].n,
		                          &parts[n], err);
	m.arena = arena_new();
	if (rc == 0)
		rc = query_merge_parts(c->v, parts, c->n_parts, &m.type, q.from_ns, q.until_ns, m.arena,
		                       &m.tree, err);
	for (uint32_t i = 0; i < n; i++)
		query_part_free(&parts[i]);
	free(parts);
	if (rc < 0) {
		arena_free(m.arena);
		return -1;
	}
	query_names_build(&m.tree, &m.names);
	int64_t from_s, until_s;
	whole_minutes(k->from_ns, k->until_ns, &from_s, &until_s);
	rc = write_head(json, k->samples, k->service, from_s, until_s);
	rc |= buf_putc(json, ',');
	rc |= query_json_type(json, &m.type);
	rc |= buf_puts(json, "\"total\":");
	rc |= query_json_i64(json, m.tree.total[0]);
	rc |= write_types(json, c, k->service);
	rc |= buf_puts(json, ",\"root\":");
	rc |= query_flame_root(json, &m);
	rc |= buf_putc(json, '}');
	query_merged_close(&m);
	return rc < 0 ? query_err_too_large(err) : 0;
}

/* span_id (required) and trace_id: any string of at most 64 bytes (pprof
 * labels are free-form; OTLP ids are 16 and 32 hex digits), no control characters. */
static int check_id(slice_t id, const char *name, int required, int otlp_digits, err_t *err)
{
	if (required && id.n == 0)
		return err_set(err, 400, "%s is required", name);
	if (id.n > LIMIT_SPAN_ID_BYTES)
		return err_set(err, 400, "%s must be at most %d bytes (an OTLP %s is %d hex digits), got %zu",
		               name, LIMIT_SPAN_ID_BYTES, name, otlp_digits, id.n);
	for (size_t i = 0; i < id.n; i++)
		if (id.p[i] < 0x20 || id.p[i] == 0x7f)
			return err_set(err, 400, "%s must not contain control characters", name);
	return 0;
}

int query_span(store_t *s, slice_t project, slice_t trace_id, slice_t span_id, const query_span_opts_t *o,
               buf_t *json, err_t *err)
{
	static const query_span_opts_t none = {0};
	if (!o)
		o = &none;
	if (check_id(span_id, "span_id", 1, 16, err) < 0 || check_id(trace_id, "trace_id", 0, 32, err) < 0)
		return -1;
	if (o->from_ns && o->until_ns && o->from_ns >= o->until_ns)
		return err_set(err, 400, "from must be before until");
	query_type_t asked;
	if (o->type.n) {
		query_params_t tq = {.service = o->service, .type = o->type, .from_ns = 0, .until_ns = 1};
		if (query_check(&tq, 0, &asked, err) < 0)
			return -1;
	}
	int64_t now = o->now_ns ? o->now_ns : time_now_ns();
	int64_t from = now - SPAN_SEARCH_BACK, until = now + SPAN_SEARCH_AHEAD;
	if (o->from_ns && o->from_ns < from)
		from = o->from_ns;
	if (o->until_ns && o->until_ns > until)
		until = o->until_ns;
	span_ctx_t c;
	memset(&c, 0, sizeof c);
	if (store_view_open(s, project, from, until, &c.v, err) < 0)
		return -1;
	int rc = -1;
	if (collect(&c, span_id, trace_id, err) < 0 || classify(&c, 1, err) < 0)
		goto out;
	set_ids(&c);
	slice_t service = choose_service(&c, o->service);
	const span_kind_t *k = c.n_kinds ? choose_type(&c, service, o->type.n ? &asked : NULL) : NULL;
	if (k) {
		rc = write_linked(&c, project, k, o->type.n ? o->type : k->id, json, err);
		goto out;
	}
	/* No samples to show: the span's own samples of other types, else the
	 * rest of its trace, else the hints, else the last hour. */
	int64_t from_s, until_s, from_ns, until_ns;
	int own = c.n_kinds > 0;
	if (!own && trace_id.n) {
		ctx_reset(&c);
		if (collect(&c, slice_make("", 0), trace_id, err) < 0 || classify(&c, 0, err) < 0)
			goto out;
		service = choose_service(&c, o->service);
	}
	if (c.n_kinds) {
		service_range(&c, service, &from_ns, &until_ns);
		whole_minutes(from_ns, until_ns, &from_s, &until_s);
	} else if (o->from_ns || o->until_ns) {
		service = o->service;
		/* One end alone: its minute. */
		from_ns = o->from_ns ? o->from_ns : o->until_ns;
		until_ns = o->until_ns ? o->until_ns : o->from_ns;
		whole_minutes(from_ns, until_ns, &from_s, &until_s);
	} else {
		service = o->service;
		until_s = -floor_min_s(-now);
		from_s = until_s - 3600;
	}
	int w = write_head(json, 0, service, from_s, until_s);
	if (own)
		w |= write_types(json, &c, service);
	w |= buf_putc(json, '}');
	rc = w < 0 ? query_err_too_large(err) : 0;
out:
	ctx_free(&c);
	return rc;
}
