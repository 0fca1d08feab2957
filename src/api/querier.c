/* Pyroscope's Connect query API on the UI listener (API: Query:
 * querier.v1.QuerierService (Pyroscope Connect)): unary POST
 * /querier.v1.QuerierService/METHOD over HTTP/1.1 and h2c, application/proto
 * or application/json (Connect JSON: camelCase, int64 written as strings),
 * the caller identified as /api's (query-scope keys), errors as Connect
 * errors. The request is decoded and checked on the loop thread, the query
 * runs on a worker (query/pyro.h names the series as Pyroscope does), the
 * answer is sent from the loop thread. Built: ProfileTypes, LabelNames,
 * LabelValues, Series, GetProfileStats, SelectMergeStacktraces (flame graph
 * levels or tree bytes, query/levels.h), SelectMergeProfile (pprof; in JSON
 * through api/pprof_json.h; max_nodes cuts as the flame graph,
 * query_tree_cut), SelectSeries (query_pyro_select_series),
 * SelectMergeSpanProfile (query_pyro_span_merge); other methods answer
 * unimplemented. The request itself is decoded by api/querier_req.c
 * (querier_int.h), which needs no listener (the fuzz target's seam). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/querier_int.h"
#include "api/pprof_json.h"
#include "base/alloc.h"
#include "base/arena.h"
#include "base/hash.h"
#include "base/timeutil.h"
#include "base/u64map.h"
#include "query/levels.h"
#include "query/pyro.h"
#include "query/query.h"
#include "query/selector.h"
#include "wire/pb.h"
#include "wire/pprof.h"

/* A set of distinct strings, copied into an arena. */
typedef struct {
	arena_t *arena;
	u64map_t ix;
	slice_t *s;
	size_t cap;
	uint32_t n;
} strset_t;

typedef struct {
	const api_listener_t *l;
	api_call_t call;
	ingest_caller_t caller;
	qr_req_t r;                   /* the request, decoded (api/querier_int.h) */
	int64_t oldest_ns, newest_ns; /* GetProfileStats (oldest 0: none yet) */
	arena_t *arena;
	strset_t found;  /* ProfileTypes: ids; Series: label sets (series_key) */
	slice_t *listed; /* LabelNames: names; LabelValues: values (query_pyro_list, in arena) */
	uint32_t n_listed;
	slice_t *names, *values; /* one series' labels as the matchers see them */
	size_t cap_names, cap_values;
	err_t err;
	int failed;
	buf_t out;
} qjob_t;

int api_is_querier_path(slice_t path)
{
	size_t n = sizeof QUERIER_SERVICE - 1;
	return path.n >= n && memcmp(path.p, QUERIER_SERVICE, n) == 0;
}

/* The method of a /querier.v1.QuerierService/METHOD path, or -1. */
static int method_of(slice_t path)
{
	size_t n = sizeof QUERIER_SERVICE - 1;
	return qr_method_of(slice_make(path.p + n, path.n - n));
}

/* ---- distinct strings ---- */

static void strset_add(strset_t *ss, slice_t s)
{
	for (uint64_t seed = 0;; seed++) {
		uint64_t h = hash_slice(s, seed);
		uint32_t at;
		if (!h)
			continue; /* the map's empty key */
		if (!u64map_get(&ss->ix, h, &at)) {
			ss->s = xgrow(ss->s, &ss->cap, (size_t)ss->n + 1, sizeof *ss->s);
			ss->s[ss->n] = arena_slice(ss->arena, s);
			u64map_put(&ss->ix, h, ss->n++);
			return;
		}
		if (slice_eq(ss->s[at], s))
			return;
	}
}

static int slice_qcmp(const void *a, const void *b)
{
	return slice_cmp(*(const slice_t *)a, *(const slice_t *)b);
}

/* ---- the work ---- */

/* Series: the label set of j->names/values[0..n) (those of label_names
 * when given), sorted by name, as one string "name\0value\0…" added to
 * j->found. */
static void series_key(qjob_t *j, uint32_t n)
{
	uint32_t *ix = xmalloc(((size_t)n + 1) * sizeof *ix), k = 0;
	for (uint32_t i = 0; i < n; i++) {
		int keep = j->r.n_keep == 0 && j->values[i].n;
		for (uint32_t w = 0; w < j->r.n_keep && !keep; w++)
			keep = slice_eq(j->r.keep[w], j->names[i]) && j->values[i].n;
		if (!keep)
			continue;
		uint32_t at = k++; /* insertion sort by name: a series has few labels */
		while (at && slice_cmp(j->names[ix[at - 1]], j->names[i]) > 0) {
			ix[at] = ix[at - 1];
			at--;
		}
		ix[at] = i;
	}
	buf_t key;
	buf_init(&key, SIZE_MAX);
	for (uint32_t i = 0; i < k; i++) {
		buf_append(&key, j->names[ix[i]].p, j->names[ix[i]].n);
		buf_putc(&key, 0);
		buf_append(&key, j->values[ix[i]].p, j->values[ix[i]].n);
		buf_putc(&key, 0);
	}
	if (k)
		strset_add(&j->found, buf_slice(&key));
	buf_free(&key);
	free(ix);
}

static void on_series(const query_pyro_series_t *ps, void *ctx)
{
	qjob_t *j = ctx;
	if (j->r.m == QR_PROFILE_TYPES) {
		strset_add(&j->found, ps->id);
		return;
	}
	if (j->r.m == QR_STATS) {
		if (!j->oldest_ns || ps->first_ns < j->oldest_ns)
			j->oldest_ns = ps->first_ns;
		if (ps->last_ns > j->newest_ns)
			j->newest_ns = ps->last_ns;
		return;
	}
	/* QR_SERIES */
	size_t cap = (size_t)ps->n_labels + QUERY_PYRO_PSEUDO_LABELS;
	j->names = xgrow(j->names, &j->cap_names, cap, sizeof *j->names);
	j->values = xgrow(j->values, &j->cap_values, cap, sizeof *j->values);
	uint32_t n = query_pyro_labels(ps, j->names, j->values);
	if (query_pyro_match(j->r.sel, j->r.n_sel, ps, j->names, j->values, n))
		series_key(j, n);
}

/* The five parts of a profile type id (it has exactly four ':'). */
static void id_parts(slice_t id, slice_t part[5])
{
	size_t at = 0;
	for (int k = 0; k < 5; k++) {
		size_t e = at;
		while (e < id.n && (k == 4 || id.p[e] != ':'))
			e++;
		part[k] = slice_make(id.p + at, e - at);
		at = e + 1 < id.n ? e + 1 : id.n;
	}
}

/* The k-th LabelPair{name=1, value=2} of a list (field 1 of its message). */
static void write_label(qjob_t *j, uint32_t k, slice_t name, slice_t value)
{
	buf_t *o = &j->out;
	if (j->r.json) {
		buf_puts(o, k ? ",{\"name\":" : "{\"name\":");
		buf_json_str(o, name);
		buf_puts(o, ",\"value\":");
		buf_json_str(o, value);
		buf_putc(o, '}');
		return;
	}
	size_t pair = pb_begin(o, 1);
	pb_put_bytes(o, 1, name);
	pb_put_bytes(o, 2, value);
	pb_end(o, pair);
}

/* SeriesResponse{labels_set=2: [Labels{labels=1: [LabelPair{name=1, value=2}]}]}
 * from the keys of series_key, sorted. */
static void write_series(qjob_t *j)
{
	buf_t *o = &j->out;
	if (j->r.json)
		buf_puts(o, "{\"labelsSet\":[");
	for (uint32_t i = 0; i < j->found.n; i++) {
		slice_t key = j->found.s[i];
		size_t set = 0;
		if (j->r.json)
			buf_puts(o, i ? ",{\"labels\":[" : "{\"labels\":[");
		else
			set = pb_begin(o, 2);
		for (size_t at = 0, k = 0; at < key.n; k++) {
			slice_t name = slice_cstr((const char *)key.p + at);
			slice_t value =
			    slice_make(name.p + name.n + 1,
			               strnlen((const char *)name.p + name.n + 1, key.n - at - name.n - 1));
			at += name.n + value.n + 2;
			write_label(j, k, name, value);
		}
		if (j->r.json)
			buf_puts(o, "]}");
		else
			pb_end(o, set);
	}
	if (j->r.json)
		buf_puts(o, "]}");
}

static void write_answer(qjob_t *j)
{
	strset_t *f = &j->found;
	if (f->n > 1)
		qsort(f->s, f->n, sizeof *f->s, slice_qcmp);
	buf_t *o = &j->out;
	if (j->r.m == QR_PROFILE_TYPES) {
		static const char *const json_key[5] = {"name", "sampleType", "sampleUnit", "periodType",
		                                        "periodUnit"};
		static const uint32_t field[5] = {2, 4, 5, 6, 7};
		if (j->r.json)
			buf_puts(o, "{\"profileTypes\":[");
		for (uint32_t i = 0; i < f->n; i++) {
			slice_t part[5];
			id_parts(f->s[i], part);
			if (j->r.json) {
				buf_puts(o, i ? ",{\"ID\":" : "{\"ID\":");
				buf_json_str(o, f->s[i]);
				for (int k = 0; k < 5; k++) {
					buf_printf(o, ",\"%s\":", json_key[k]);
					buf_json_str(o, part[k]);
				}
				buf_putc(o, '}');
				continue;
			}
			size_t mark = pb_begin(o, 1);
			pb_put_bytes(o, 1, f->s[i]);
			for (int k = 0; k < 5; k++)
				if (part[k].n)
					pb_put_bytes(o, field[k], part[k]);
			pb_end(o, mark);
		}
		if (j->r.json)
			buf_puts(o, "]}");
		return;
	}
	if (j->r.m == QR_STATS) {
		int64_t oldest = j->oldest_ns / 1000000, newest = j->newest_ns / 1000000;
		if (j->r.json)
			buf_printf(o,
			           "{\"dataIngested\":%s,\"oldestProfileTime\":\"%lld\","
			           "\"newestProfileTime\":\"%lld\"}",
			           f->n || j->newest_ns ? "true" : "false", (long long)oldest,
			           (long long)newest);
		else if (j->newest_ns) {
			pb_put_uint(o, 1, 1);
			pb_put_int64(o, 2, oldest);
			pb_put_int64(o, 3, newest);
		}
		return;
	}
	if (j->r.m == QR_SERIES) {
		write_series(j);
		return;
	}
	if (j->r.json)
		buf_puts(o, "{\"names\":[");
	for (uint32_t i = 0; i < j->n_listed; i++) {
		if (!j->r.json) {
			pb_put_bytes(o, 1, j->listed[i]);
			continue;
		}
		if (i)
			buf_putc(o, ',');
		buf_json_str(o, j->listed[i]);
	}
	if (j->r.json)
		buf_puts(o, "]}");
}

static void qjob_free(qjob_t *j)
{
	qr_req_free(&j->r);
	free(j->names);
	free(j->values);
	free(j->found.s);
	u64map_free(&j->found.ix);
	arena_free(j->arena);
	buf_free(&j->out);
	free(j);
}

static void querier_reply(void *arg)
{
	qjob_t *j = arg;
	api_ctx_t *api = j->l->api;
	if (j->failed) {
		api_connect_error(j->l, &j->call, &j->err);
	} else {
		api_count(api, j->l->listener, 200, j->call.body.n);
		api_call_respond(&j->call, 200, j->r.json ? "application/json" : "application/proto", 0,
		                 j->out.p, j->out.n);
	}
	atomic_fetch_sub(&api->_inflight, 1);
	qjob_free(j);
}

/* The FlameGraph of a merged tree: SelectMergeStacktracesResponse. */
static void write_flamegraph(qjob_t *j, const query_levels_t *lv)
{
	buf_t *o = &j->out;
	if (j->r.json) {
		buf_puts(o, "{\"flamegraph\":{\"names\":[");
		for (uint32_t i = 0; i < lv->n_names; i++) {
			if (i)
				buf_putc(o, ',');
			buf_json_str(o, lv->names[i]);
		}
		buf_puts(o, "],\"levels\":[");
		for (uint32_t d = 0; d < lv->n_levels; d++) {
			buf_puts(o, d ? ",{\"values\":[" : "{\"values\":[");
			for (uint32_t k = 0; k < lv->len[d]; k++)
				buf_printf(o, k ? ",\"%lld\"" : "\"%lld\"", (long long)lv->levels[d][k]);
			buf_puts(o, "]}");
		}
		buf_printf(o, "],\"total\":\"%lld\",\"maxSelf\":\"%lld\"}}", (long long)lv->total,
		           (long long)lv->max_self);
		return;
	}
	size_t fg = pb_begin(o, 1);
	for (uint32_t i = 0; i < lv->n_names; i++)
		pb_put_bytes(o, 1, lv->names[i]);
	for (uint32_t d = 0; d < lv->n_levels; d++) {
		size_t level = pb_begin(o, 2);
		if (lv->len[d])
			pb_put_packed(o, 1, (const uint64_t *)lv->levels[d], lv->len[d]);
		pb_end(o, level);
	}
	pb_put_int64(o, 3, lv->total);
	pb_put_int64(o, 4, lv->max_self);
	pb_end(o, fg);
}

/* Standard base64 with padding (protojson's bytes). */
static void put_base64(buf_t *o, slice_t b)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	for (size_t i = 0; i < b.n; i += 3) {
		uint32_t v = (uint32_t)b.p[i] << 16 | (i + 1 < b.n ? (uint32_t)b.p[i + 1] << 8 : 0) |
		             (i + 2 < b.n ? b.p[i + 2] : 0);
		char q[4] = {a[v >> 18], a[(v >> 12) & 63], i + 1 < b.n ? a[(v >> 6) & 63] : '=',
		             i + 2 < b.n ? a[v & 63] : '='};
		buf_append(o, q, 4);
	}
}

/* SelectMergeStacktracesResponse{tree=2}: Pyroscope's tree bytes. */
static int write_tree(qjob_t *j, const model_tree_t *tree)
{
	buf_t t;
	buf_init(&t, SIZE_MAX);
	int rc = query_tree_bytes(tree, query_max_nodes(j->r.max_nodes), &t);
	if (j->r.json) { /* empty bytes left out, as protojson does */
		buf_puts(&j->out, t.n ? "{\"tree\":\"" : "{}");
		put_base64(&j->out, buf_slice(&t));
		buf_puts(&j->out, t.n ? "\"}" : "");
	} else if (t.n) {
		pb_put_bytes(&j->out, 2, buf_slice(&t));
	}
	buf_free(&t);
	return rc < 0 ? err_set(&j->err, 413, "the tree is too large: lower max_nodes") : 0;
}

/* SelectSeriesResponse{series=1: [Series{labels=1, points=2: [Point{value=1, timestamp=2}]}]}. */
static void write_select_series(qjob_t *j, const query_pyro_ts_t *ts, uint32_t n)
{
	buf_t *o = &j->out;
	if (j->r.json)
		buf_puts(o, "{\"series\":[");
	for (uint32_t i = 0; i < n; i++) {
		const query_pyro_ts_t *t = &ts[i];
		size_t mark = 0;
		if (j->r.json)
			buf_puts(o, i ? ",{\"labels\":[" : "{\"labels\":[");
		else
			mark = pb_begin(o, 1);
		for (uint32_t k = 0; k < t->n_labels; k++) {
			write_label(j, k, t->labels[k].key, t->labels[k].value);
		}
		if (j->r.json)
			buf_puts(o, "],\"points\":[");
		for (uint32_t k = 0; k < t->n_points; k++) {
			if (j->r.json) {
				buf_printf(o, "%s{\"value\":%.17g,\"timestamp\":\"%lld\"}", k ? "," : "",
				           t->value[k], (long long)t->ts_ms[k]);
				continue;
			}
			size_t pt = pb_begin(o, 2);
			uint64_t bits;
			memcpy(&bits, &t->value[k], sizeof bits);
			if (bits)
				pb_put_fixed64(o, 1, bits);
			pb_put_int64(o, 2, t->ts_ms[k]);
			pb_end(o, pt);
		}
		if (j->r.json)
			buf_puts(o, "]}");
		else
			pb_end(o, mark);
	}
	if (j->r.json)
		buf_puts(o, "]}");
}

static int select_series(qjob_t *j)
{
	query_pyro_select_t r = {
	    .q = j->r.q,
	    .group_by = j->r.group_by,
	    .n_group_by = j->r.n_group_by,
	    .start_ms = j->r.start_ms,
	    .step_ms = (int64_t)(j->r.step_s * 1000),
	    .average = j->r.average,
	    .limit = j->r.limit,
	};
	query_pyro_ts_t *ts;
	uint32_t n;
	if (query_pyro_select_series(j->l->api->store, &r, j->arena, &ts, &n, &j->err) < 0)
		return -1;
	write_select_series(j, ts, n);
	return 0;
}

static int merge_stacks(qjob_t *j)
{
	model_tree_t tree;
	int rc = j->r.m == QR_SPAN_PROFILE ? query_pyro_span_merge(j->l->api->store, &j->r.q, j->r.spans,
	                                                           j->r.n_spans, j->arena, &tree, &j->err)
	                                   : query_merge(j->l->api->store, &j->r.q, j->arena, &tree, &j->err);
	if (rc < 0)
		return -1;
	if (j->r.m == QR_MERGE_PROFILE) {
		model_tree_t cut; /* max_nodes absent: the whole profile */
		query_tree_cut(&tree, j->r.max_nodes > 0 ? query_max_nodes(j->r.max_nodes) : 0, j->arena,
		               &cut);
		if (!j->r.json)
			return pprof_encode(&cut, &j->out, &j->err);
		buf_t pb;
		buf_init(&pb, SIZE_MAX);
		int prc = pprof_encode(&cut, &pb, &j->err);
		if (prc == 0)
			prc = api_pprof_json(buf_slice(&pb), &j->out, &j->err);
		buf_free(&pb);
		return prc;
	}
	if (j->r.tree)
		return write_tree(j, &tree);
	query_levels_t lv;
	query_levels_single(&tree, query_max_nodes(j->r.max_nodes), j->arena, &lv);
	write_flamegraph(j, &lv);
	return 0;
}

static void querier_work(void *arg)
{
	qjob_t *j = arg;
	api_ctx_t *api = j->l->api;
	if (j->r.m == QR_SELECT_SERIES) {
		j->failed = select_series(j) < 0;
	} else if (j->r.m == QR_MERGE_STACKS || j->r.m == QR_MERGE_PROFILE || j->r.m == QR_SPAN_PROFILE) {
		j->failed = merge_stacks(j) < 0;
	} else if (j->r.m == QR_LABEL_NAMES || j->r.m == QR_LABEL_VALUES) {
		j->failed = query_pyro_list(api->store, slice_cstr(j->caller.project), j->r.from_ns,
		                            j->r.until_ns, j->r.sel, j->r.n_sel,
		                            j->r.m == QR_LABEL_VALUES ? j->r.label : slice_make("", 0), 0,
		                            j->arena, &j->listed, &j->n_listed, &j->err) < 0;
		if (!j->failed)
			write_answer(j);
	} else {
		j->failed = query_pyro_series(api->store, slice_cstr(j->caller.project), j->r.from_ns,
		                              j->r.until_ns, on_series, j, &j->err) < 0;
		if (!j->failed)
			write_answer(j);
	}

	loop_post(api->loop, querier_reply, j);
}

/* ---- the request ---- */

/* Method, route, codec, size, caller: what the headers tell. 0, or -1 + err. */
static int check_headers(const api_listener_t *l, const api_call_t *c, ingest_caller_t *who, err_t *err)
{
	if (api_connect_check(c, 0, QUERIER_MAX_BODY, err) < 0)
		return -1;
	if (api_identify(l, api_call_header(c, "x-kiln-key"), api_call_header(c, "authorization"),
	                 api_call_header(c, "cookie"), api_call_header(c, "x-scope-orgid"), KEY_SCOPE_QUERY,
	                 who, err) < 0)
		return -1;
	if (method_of(c->path) < 0)
		return err_set(err, 404,
		               "querier.v1.QuerierService method %.*s is not implemented (API: Query: "
		               "querier.v1.QuerierService)",
		               (int)(c->path.n > 128 ? 128 : c->path.n) - (int)(sizeof QUERIER_SERVICE - 1),
		               (const char *)c->path.p + sizeof QUERIER_SERVICE - 1);
	return 0;
}

static qjob_t *qjob_new(void)
{
	qjob_t *j = xcalloc(1, sizeof *j);
	j->arena = arena_new();
	j->found.arena = j->arena;
	u64map_init(&j->found.ix);
	buf_init(&j->out, SIZE_MAX);
	return j;
}

int api_querier_on_headers(const api_listener_t *l, api_call_t *c)
{
	err_t err = {0};
	ingest_caller_t who;
	if (check_headers(l, c, &who, &err) == 0)
		return 0;
	api_connect_error(l, c, &err);
	return 1;
}

void api_querier_on_request(const api_listener_t *l, api_call_t *c)
{
	qjob_t *j = qjob_new();
	api_ctx_t *api = l->api;
	atomic_fetch_add(&api->_inflight, 1);
	j->l = l;
	j->call = *c;
	if (check_headers(l, c, &j->caller, &j->err) < 0) {
		j->failed = 1;
		querier_reply(j);
		return;
	}
	qr_req_init(&j->r, (enum qr_method)method_of(c->path),
	            slice_eq_cstr(api_media_type(api_call_header(c, "content-type")), "application/json"),
	            slice_cstr(j->caller.project), j->arena);
	if (qr_req_decode(&j->r, c->body, &j->err) < 0) {
		j->failed = 1;
		querier_reply(j);
		return;
	}
	pool_submit(api->pool, querier_work, j);
}
