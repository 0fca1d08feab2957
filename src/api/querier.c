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
 * unimplemented. The decode step (querier_decode) runs without a
 * listener, for the fuzz target. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
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
#include "wire/pb_json.h"
#include "wire/pprof.h"

#define QUERIER_SERVICE "/querier.v1.QuerierService/"
#define QUERIER_MAX_BODY (1u << 20) /* a query request: selectors and times */
#define MS_PER_HOUR 3600000LL

enum method {
	M_PROFILE_TYPES,
	M_LABEL_NAMES,
	M_LABEL_VALUES,
	M_MERGE_STACKS,
	M_SERIES,
	M_STATS,
	M_MERGE_PROFILE,
	M_SELECT_SERIES,
	M_SPAN_PROFILE,
	M_COUNT
};

/* Field numbers of each request (0: the method has no such field). */
static const struct {
	const char *name;
	uint32_t start, end, label, matchers, type_id, selector, max_nodes, format, label_names;
	uint32_t group_by, step, aggregation, limit, spans;
} methods[M_COUNT] = {
    [M_PROFILE_TYPES] = {"ProfileTypes", 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    [M_LABEL_NAMES] = {"LabelNames", 2, 3, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    [M_LABEL_VALUES] = {"LabelValues", 3, 4, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    [M_MERGE_STACKS] = {"SelectMergeStacktraces", 3, 4, 0, 0, 1, 2, 5, 6, 0, 0, 0, 0, 0, 0},
    [M_SERIES] = {"Series", 3, 4, 0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0},
    [M_STATS] = {"GetProfileStats", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    [M_MERGE_PROFILE] = {"SelectMergeProfile", 3, 4, 0, 0, 1, 2, 5, 0, 0, 0, 0, 0, 0, 0},
    [M_SELECT_SERIES] = {"SelectSeries", 3, 4, 0, 0, 1, 2, 0, 0, 0, 5, 6, 7, 9, 0},
    [M_SPAN_PROFILE] = {"SelectMergeSpanProfile", 4, 5, 0, 0, 1, 2, 6, 0, 0, 0, 0, 0, 0, 3},
};

PB_JSON_MSG(j_profile_types, {"start", "start", 1, PB_J_I64, PB_J_SINGLE, NULL},
            {"end", "end", 2, PB_J_I64, PB_J_SINGLE, NULL});
PB_JSON_MSG(j_label_names, {"matchers", "matchers", 1, PB_J_STRING, PB_J_REPEATED, NULL},
            {"start", "start", 2, PB_J_I64, PB_J_SINGLE, NULL},
            {"end", "end", 3, PB_J_I64, PB_J_SINGLE, NULL});
PB_JSON_MSG(j_label_values, {"name", "name", 1, PB_J_STRING, PB_J_SINGLE, NULL},
            {"matchers", "matchers", 2, PB_J_STRING, PB_J_REPEATED, NULL},
            {"start", "start", 3, PB_J_I64, PB_J_SINGLE, NULL},
            {"end", "end", 4, PB_J_I64, PB_J_SINGLE, NULL});
/* Enums by name or number (protojson). */
PB_JSON_MSG(e_format, {"PROFILE_FORMAT_UNSPECIFIED", NULL, 0, 0, 0, NULL},
            {"PROFILE_FORMAT_FLAMEGRAPH", NULL, 1, 0, 0, NULL}, {"PROFILE_FORMAT_TREE", NULL, 2, 0, 0, NULL});
PB_JSON_MSG(e_aggregation, {"TIME_SERIES_AGGREGATION_TYPE_SUM", NULL, 0, 0, 0, NULL},
            {"TIME_SERIES_AGGREGATION_TYPE_AVERAGE", NULL, 1, 0, 0, NULL});
PB_JSON_MSG(j_merge_stacks, {"profileTypeID", "profile_typeID", 1, PB_J_STRING, PB_J_SINGLE, NULL},
            {"labelSelector", "label_selector", 2, PB_J_STRING, PB_J_SINGLE, NULL},
            {"start", "start", 3, PB_J_I64, PB_J_SINGLE, NULL},
            {"end", "end", 4, PB_J_I64, PB_J_SINGLE, NULL},
            {"maxNodes", "max_nodes", 5, PB_J_I64, PB_J_ONEOF, NULL},
            {"format", "format", 6, PB_J_ENUM, PB_J_SINGLE, &e_format});
PB_JSON_MSG(j_select_series, {"profileTypeID", "profile_typeID", 1, PB_J_STRING, PB_J_SINGLE, NULL},
            {"labelSelector", "label_selector", 2, PB_J_STRING, PB_J_SINGLE, NULL},
            {"start", "start", 3, PB_J_I64, PB_J_SINGLE, NULL},
            {"end", "end", 4, PB_J_I64, PB_J_SINGLE, NULL},
            {"groupBy", "group_by", 5, PB_J_STRING, PB_J_REPEATED, NULL},
            {"step", "step", 6, PB_J_DOUBLE, PB_J_SINGLE, NULL},
            {"aggregation", "aggregation", 7, PB_J_ENUM, PB_J_ONEOF, &e_aggregation},
            {"limit", "limit", 9, PB_J_I64, PB_J_ONEOF, NULL});
PB_JSON_MSG(j_span_profile, {"profileTypeID", "profile_typeID", 1, PB_J_STRING, PB_J_SINGLE, NULL},
            {"labelSelector", "label_selector", 2, PB_J_STRING, PB_J_SINGLE, NULL},
            {"spanSelector", "span_selector", 3, PB_J_STRING, PB_J_REPEATED, NULL},
            {"start", "start", 4, PB_J_I64, PB_J_SINGLE, NULL},
            {"end", "end", 5, PB_J_I64, PB_J_SINGLE, NULL},
            {"maxNodes", "max_nodes", 6, PB_J_I64, PB_J_ONEOF, NULL});
PB_JSON_MSG(j_series, {"matchers", "matchers", 1, PB_J_STRING, PB_J_REPEATED, NULL},
            {"labelNames", "label_names", 2, PB_J_STRING, PB_J_REPEATED, NULL},
            {"start", "start", 3, PB_J_I64, PB_J_SINGLE, NULL},
            {"end", "end", 4, PB_J_I64, PB_J_SINGLE, NULL});
static const pb_json_msg_t j_stats = {NULL, 0};
static const pb_json_msg_t *const json_schema[M_COUNT] = {
    &j_profile_types, &j_label_names,  &j_label_values,  &j_merge_stacks, &j_series,
    &j_stats,         &j_merge_stacks, &j_select_series, &j_span_profile};
static const char *const json_root[M_COUNT] = {
    "ProfileTypesRequest",           "LabelNamesRequest",   "LabelValuesRequest",
    "SelectMergeStacktracesRequest", "SeriesRequest",       "GetProfileStatsRequest",
    "SelectMergeProfileRequest",     "SelectSeriesRequest", "SelectMergeSpanProfileRequest"};

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
	enum method m;
	int json;
	int64_t from_ns, until_ns;
	slice_t label;     /* LabelValues: the name */
	slice_t type_id;   /* SelectMergeStacktraces: the profile type id */
	int64_t max_nodes; /* 0: absent */
	slice_t selector;  /* SelectMergeStacktraces: label_selector */
	slice_t *keep;     /* Series: label_names (n_keep; none: every label) */
	uint32_t n_keep;
	int tree;          /* SelectMergeStacktraces: format 2, tree bytes */
	slice_t *group_by; /* SelectSeries: group_by (n_group_by) */
	uint32_t n_group_by;
	double step_s;    /* SelectSeries: step, seconds */
	int average;      /* SelectSeries: aggregation 1 */
	int64_t limit;    /* SelectSeries: limit (0: absent) */
	int64_t start_ms; /* the request's start, as asked (SelectSeries' grid) */
	slice_t *spans;   /* SelectMergeSpanProfile: span_selector (n_spans) */
	uint32_t n_spans;
	int64_t oldest_ns, newest_ns; /* GetProfileStats (oldest 0: none yet) */
	query_params_t q;             /* SelectMergeStacktraces: the query */
	sel_t *sel;                   /* the matchers, parsed */
	uint32_t n_sel;
	buf_t pb; /* the request as protobuf (JSON transcoded into it) */
	arena_t *arena;
	strset_t found;          /* ProfileTypes: ids; LabelNames: names; LabelValues: values */
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

static int method_of(slice_t path)
{
	size_t n = sizeof QUERIER_SERVICE - 1;
	slice_t m = slice_make(path.p + n, path.n - n);
	for (int i = 0; i < M_COUNT; i++)
		if (slice_eq_cstr(m, methods[i].name))
			return i;
	return -1;
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

/* The labels of series ps as Pyroscope shows them, into j->names/values; their count. */
static uint32_t series_labels(qjob_t *j, const query_pyro_series_t *ps)
{
	j->names = xgrow(j->names, &j->cap_names, (size_t)ps->n_labels + 8, sizeof *j->names);
	j->values = xgrow(j->values, &j->cap_values, (size_t)ps->n_labels + 8, sizeof *j->values);
	uint32_t n = 0;
#define LABEL(k, v) (j->names[n] = slice_cstr(k), j->values[n++] = (v))
	LABEL("service_name", ps->service);
	LABEL("__name__", ps->name);
	LABEL("__profile_type__", ps->id);
	LABEL("__type__", ps->sample_type);
	LABEL("__unit__", ps->sample_unit);
	LABEL("__period_type__", ps->period_type);
	LABEL("__period_unit__", ps->period_unit);
#undef LABEL
	for (uint32_t i = 0; i < ps->n_labels; i++) {
		slice_t k = ps->labels[i].key;
		if (slice_eq_cstr(k, "__name__") || slice_eq_cstr(k, "service_name"))
			continue;
		j->names[n] = k;
		j->values[n++] = ps->labels[i].value;
	}
	return n;
}

/* Series: the label set of j->names/values[0..n) (those of label_names
 * when given), sorted by name, as one string "name\0value\0…" added to
 * j->found. */
static void series_key(qjob_t *j, uint32_t n)
{
	uint32_t *ix = xmalloc(((size_t)n + 1) * sizeof *ix), k = 0;
	for (uint32_t i = 0; i < n; i++) {
		int keep = j->n_keep == 0 && j->values[i].n;
		for (uint32_t w = 0; w < j->n_keep && !keep; w++)
			keep = slice_eq(j->keep[w], j->names[i]) && j->values[i].n;
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
	if (j->m == M_PROFILE_TYPES) {
		strset_add(&j->found, ps->id);
		return;
	}
	if (j->m == M_STATS) {
		if (!j->oldest_ns || ps->first_ns < j->oldest_ns)
			j->oldest_ns = ps->first_ns;
		if (ps->last_ns > j->newest_ns)
			j->newest_ns = ps->last_ns;
		return;
	}
	uint32_t n = series_labels(j, ps);
	int match = j->n_sel == 0;
	for (uint32_t i = 0; i < j->n_sel && !match; i++)
		match = (!j->sel[i].metric.n || slice_eq(j->sel[i].metric, ps->id)) &&
		        sel_match_labels(&j->sel[i], j->names, j->values, n);
	if (!match)
		return;
	if (j->m == M_SERIES) {
		series_key(j, n);
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (j->m == M_LABEL_NAMES)
			strset_add(&j->found, j->names[i]);
		else if (slice_eq(j->names[i], j->label) && j->values[i].n)
			strset_add(&j->found, j->values[i]);
	}
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
	if (j->json) {
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
	if (j->json)
		buf_puts(o, "{\"labelsSet\":[");
	for (uint32_t i = 0; i < j->found.n; i++) {
		slice_t key = j->found.s[i];
		size_t set = 0;
		if (j->json)
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
		if (j->json)
			buf_puts(o, "]}");
		else
			pb_end(o, set);
	}
	if (j->json)
		buf_puts(o, "]}");
}

static void write_answer(qjob_t *j)
{
	strset_t *f = &j->found;
	if (f->n > 1)
		qsort(f->s, f->n, sizeof *f->s, slice_qcmp);
	buf_t *o = &j->out;
	if (j->m == M_PROFILE_TYPES) {
		static const char *const json_key[5] = {"name", "sampleType", "sampleUnit", "periodType",
		                                        "periodUnit"};
		static const uint32_t field[5] = {2, 4, 5, 6, 7};
		if (j->json)
			buf_puts(o, "{\"profileTypes\":[");
		for (uint32_t i = 0; i < f->n; i++) {
			slice_t part[5];
			id_parts(f->s[i], part);
			if (j->json) {
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
		if (j->json)
			buf_puts(o, "]}");
		return;
	}
	if (j->m == M_STATS) {
		int64_t oldest = j->oldest_ns / 1000000, newest = j->newest_ns / 1000000;
		if (j->json)
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
	if (j->m == M_SERIES) {
		write_series(j);
		return;
	}
	if (j->json)
		buf_puts(o, "{\"names\":[");
	for (uint32_t i = 0; i < f->n; i++) {
		if (!j->json) {
			pb_put_bytes(o, 1, f->s[i]);
			continue;
		}
		if (i)
			buf_putc(o, ',');
		buf_json_str(o, f->s[i]);
	}
	if (j->json)
		buf_puts(o, "]}");
}

static void qjob_free(qjob_t *j)
{
	for (uint32_t i = 0; i < j->n_sel; i++)
		sel_free(&j->sel[i]);
	free(j->sel);
	free(j->keep);
	free(j->group_by);
	free(j->spans);
	free(j->names);
	free(j->values);
	free(j->found.s);
	u64map_free(&j->found.ix);
	arena_free(j->arena);
	buf_free(&j->pb);
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
		api_call_respond(&j->call, 200, j->json ? "application/json" : "application/proto", 0,
		                 j->out.p, j->out.n);
	}
	atomic_fetch_sub(&api->_inflight, 1);
	qjob_free(j);
}

/* The FlameGraph of a merged tree: SelectMergeStacktracesResponse. */
static void write_flamegraph(qjob_t *j, const query_levels_t *lv)
{
	buf_t *o = &j->out;
	if (j->json) {
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
	int rc = query_tree_bytes(tree, query_max_nodes(j->max_nodes), &t);
	if (j->json) {
		buf_puts(&j->out, "{\"tree\":\"");
		put_base64(&j->out, buf_slice(&t));
		buf_puts(&j->out, "\"}");
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
	if (j->json)
		buf_puts(o, "{\"series\":[");
	for (uint32_t i = 0; i < n; i++) {
		const query_pyro_ts_t *t = &ts[i];
		size_t mark = 0;
		if (j->json)
			buf_puts(o, i ? ",{\"labels\":[" : "{\"labels\":[");
		else
			mark = pb_begin(o, 1);
		for (uint32_t k = 0; k < t->n_labels; k++) {
			write_label(j, k, t->labels[k].key, t->labels[k].value);
		}
		if (j->json)
			buf_puts(o, "],\"points\":[");
		for (uint32_t k = 0; k < t->n_points; k++) {
			if (j->json) {
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
		if (j->json)
			buf_puts(o, "]}");
		else
			pb_end(o, mark);
	}
	if (j->json)
		buf_puts(o, "]}");
}

static int select_series(qjob_t *j)
{
	query_pyro_select_t r = {
	    .q = j->q,
	    .group_by = j->group_by,
	    .n_group_by = j->n_group_by,
	    .start_ms = j->start_ms,
	    .step_ms = (int64_t)(j->step_s * 1000),
	    .average = j->average,
	    .limit = j->limit,
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
	int rc = j->m == M_SPAN_PROFILE ? query_pyro_span_merge(j->l->api->store, &j->q, j->spans, j->n_spans,
	                                                        j->arena, &tree, &j->err)
	                                : query_merge(j->l->api->store, &j->q, j->arena, &tree, &j->err);
	if (rc < 0)
		return -1;
	if (j->m == M_MERGE_PROFILE) {
		model_tree_t cut; /* max_nodes absent: the whole profile */
		query_tree_cut(&tree, j->max_nodes > 0 ? query_max_nodes(j->max_nodes) : 0, j->arena, &cut);
		if (!j->json)
			return pprof_encode(&cut, &j->out, &j->err);
		buf_t pb;
		buf_init(&pb, SIZE_MAX);
		int prc = pprof_encode(&cut, &pb, &j->err);
		if (prc == 0)
			prc = api_pprof_json(buf_slice(&pb), &j->out, &j->err);
		buf_free(&pb);
		return prc;
	}
	if (j->tree)
		return write_tree(j, &tree);
	query_levels_t lv;
	query_levels_single(&tree, query_max_nodes(j->max_nodes), j->arena, &lv);
	write_flamegraph(j, &lv);
	return 0;
}

static void querier_work(void *arg)
{
	qjob_t *j = arg;
	api_ctx_t *api = j->l->api;
	if (j->m == M_SELECT_SERIES) {
		j->failed = select_series(j) < 0;
	} else if (j->m == M_MERGE_STACKS || j->m == M_MERGE_PROFILE || j->m == M_SPAN_PROFILE) {
		j->failed = merge_stacks(j) < 0;
	} else {
		j->failed = query_pyro_series(api->store, slice_cstr(j->caller.project), j->from_ns,
		                              j->until_ns, on_series, j, &j->err) < 0;
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

static int bad_field(err_t *err, const char *msg_name, uint32_t field)
{
	return err_set(err, 400, "%s: field %u: malformed protobuf", msg_name, field);
}

/* The query of SelectMergeStacktraces/Profile from its type id and
 * label_selector: service_name="S" is the service (other operators on it:
 * 501, unimplemented), other `=` matchers filter on series labels or sample
 * attributes as /api's label.K=V, `!=`, `=~`, `!~` on series labels
 * (query_params_t.matchers). */
static int merge_query(qjob_t *j, const char *msg, err_t *err)
{
	j->q = (query_params_t){
	    .project = slice_cstr(j->caller.project), .from_ns = j->from_ns, .until_ns = j->until_ns};
	slice_t id = j->type_id;
	uint32_t colons = 0;
	size_t type_at = 0, type_end = 0;
	for (size_t i = 0; i < id.n; i++) {
		if (id.p[i] != ':')
			continue;
		if (++colons == 1)
			type_at = i + 1;
		else if (colons == 3)
			type_end = i;
	}
	if (colons != 4 || type_at < 2)
		return err_set(
		    err, 400,
		    "%s: profile_typeID \"%.*s\" is not NAME:SAMPLE_TYPE:SAMPLE_UNIT:PERIOD_TYPE:PERIOD_UNIT "
		    "(see ProfileTypes)",
		    msg, (int)(id.n > 128 ? 128 : id.n), (const char *)id.p);
	j->q.pyro_id = id;
	j->q.type = slice_make(id.p + type_at, type_end - type_at);
	j->sel = xcalloc(1, sizeof *j->sel);
	if (sel_parse(j->selector, &j->sel[0], err) < 0)
		return -1;
	j->n_sel = 1;
	const sel_t *sel = &j->sel[0];
	model_label_t *labels = arena_alloc(j->arena, (size_t)sel->n * sizeof *labels + 1);
	sel_matcher_t *matchers = arena_alloc(j->arena, (size_t)sel->n * sizeof *matchers + 1);
	for (uint32_t i = 0; i < sel->n; i++) {
		const sel_matcher_t *m = &sel->m[i];
		if (m->op != SEL_EQ && !slice_eq_cstr(m->name, "service_name")) {
			/* a copy shares the compiled regex, which outlives the query */
			matchers[j->q.n_matchers++] = *m;
			continue;
		}
		static const char *const op_name[] = {"=", "!=", "=~", "!~"};
		if (m->op != SEL_EQ)
			return err_set(
			    err, 501, "%s: label_selector: service_name takes = only, not %s (on %.*s)", msg,
			    op_name[m->op], (int)(m->name.n > 64 ? 64 : m->name.n), (const char *)m->name.p);
		if (slice_eq_cstr(m->name, "service_name"))
			j->q.service = m->value;
		else
			labels[j->q.n_labels++] = (model_label_t){.key = m->name, .value = m->value};
	}
	j->q.labels = labels;
	j->q.matchers = matchers;
	if (!j->q.service.n)
		return err_set(err, 400,
		               "%s: label_selector must name the service: {service_name=\"NAME\", …}", msg);
	return 0;
}

/* A group_by label name (spans 0) or a span id (spans 1) of the request. */
static int add_string(qjob_t *j, int spans, slice_t s, const char *msg, err_t *err)
{
	slice_t **v = spans ? &j->spans : &j->group_by;
	uint32_t *n = spans ? &j->n_spans : &j->n_group_by;
	uint32_t most = spans ? LIMIT_SPAN_SELECTOR : LIMIT_SELECTOR_MATCHERS;
	if (*n >= most)
		return err_set(err, 400, "%s: more than %u %s", msg, most,
		               spans ? "span ids" : "group_by labels");
	if (spans) {
		if (!s.n || s.n > LIMIT_SPAN_ID_BYTES)
			return err_set(err, 400,
			               "%s: span_selector: a span id is 1 to %d bytes (16 hex digits)", msg,
			               LIMIT_SPAN_ID_BYTES);
		for (size_t i = 0; i < s.n; i++)
			if (s.p[i] < 0x20 || s.p[i] == 0x7f)
				return err_set(err, 400,
				               "%s: span_selector: a span id has no control characters", msg);
	}
	*v = xrealloc(*v, ((size_t)*n + 1) * sizeof **v);
	(*v)[(*n)++] = s;
	return 0;
}

/* Decodes j->pb (the method's request) into j. 0, or -1 + err. */
static int decode(qjob_t *j, err_t *err)
{
	const char *msg = json_root[j->m];
	const __typeof__(methods[0]) *mf = &methods[j->m];
	int64_t start = 0, end = 0;
	pb_reader_t r = pb_reader_make(buf_slice(&j->pb));
	while (!pb_done(&r)) {
		uint32_t f;
		int wt;
		if (pb_key(&r, &f, &wt) < 0)
			return err_set(err, 400, "%s: malformed protobuf at byte %zu", msg,
			               (size_t)(r.p - j->pb.p));
		uint64_t v;
		slice_t s;
		if (f == mf->step && wt == 1) {
			if (pb_fixed64(&r, &v) < 0)
				return bad_field(err, msg, f);
			memcpy(&j->step_s, &v, sizeof j->step_s);
		} else if ((f == mf->start || f == mf->end || f == mf->max_nodes || f == mf->format ||
		            f == mf->aggregation || f == mf->limit) &&
		           wt == 0) {
			if (pb_varint(&r, &v) < 0)
				return bad_field(err, msg, f);
			if (f == mf->format && v > 2)
				return err_set(
				    err, 400,
				    "%s: format %llu is not a ProfileFormat: 1 (PROFILE_FORMAT_FLAMEGRAPH) "
				    "or 2 (PROFILE_FORMAT_TREE)",
				    msg, (unsigned long long)v);
			if (f == mf->aggregation && v > 1)
				return err_set(
				    err, 400,
				    "%s: aggregation %llu is not a TimeSeriesAggregationType: 0 (sum) or 1 "
				    "(average)",
				    msg, (unsigned long long)v);
			if (f == mf->format)
				j->tree = v == 2;
			else if (f == mf->aggregation)
				j->average = v == 1;
			else if (f == mf->limit)
				j->limit = (int64_t)v;
			else if (f == mf->start)
				start = (int64_t)v;
			else if (f == mf->end)
				end = (int64_t)v;
			else if (f == mf->max_nodes)
				j->max_nodes = (int64_t)v;
		} else if ((f == mf->label || f == mf->matchers || f == mf->type_id || f == mf->selector ||
		            f == mf->label_names || f == mf->group_by || f == mf->spans) &&
		           wt == 2) {
			if (pb_bytes(&r, &s) < 0)
				return bad_field(err, msg, f);
			if (f == mf->group_by || f == mf->spans) {
				if (add_string(j, f == mf->spans, s, msg, err) < 0)
					return -1;
				continue;
			}
			if (f == mf->label_names) {
				if (j->n_keep >= LIMIT_SELECTOR_MATCHERS)
					return err_set(err, 400, "%s: more than %d label_names", msg,
					               LIMIT_SELECTOR_MATCHERS);
				j->keep = xrealloc(j->keep, ((size_t)j->n_keep + 1) * sizeof *j->keep);
				j->keep[j->n_keep++] = s;
				continue;
			}
			if (f != mf->matchers) {
				*(f == mf->label     ? &j->label
				  : f == mf->type_id ? &j->type_id
				                     : &j->selector) = s;
				continue;
			}
			if (j->n_sel >= LIMIT_SELECTOR_MATCHERS)
				return err_set(err, 400, "%s: more than %d matchers", msg,
				               LIMIT_SELECTOR_MATCHERS);
			j->sel = xrealloc(j->sel, ((size_t)j->n_sel + 1) * sizeof *j->sel);
			if (sel_parse(s, &j->sel[j->n_sel], err) < 0)
				return -1;
			j->n_sel++;
		} else if (pb_skip(&r, wt) < 0) {
			return bad_field(err, msg, f);
		}
	}
	if (start > end && (end || j->m == M_SELECT_SERIES))
		return err_set(err, 400, "%s: start %lld is after end %lld (Unix milliseconds)", msg,
		               (long long)start, (long long)end);
	if (start < 0 || end < 0 || start > INT64_MAX / 1000000 || end > INT64_MAX / 1000000)
		return err_set(err, 400, "%s: start and end are Unix milliseconds from 0", msg);
	if (j->m == M_STATS) { /* everything kept: from the epoch to a day ahead */
		start = 1;     /* not 0: absent */
		end = time_now_ns() / 1000000 + 24 * MS_PER_HOUR;
	}
	/* Absent times: the last hour, as /api's default range. */
	int64_t now_ms = time_now_ns() / 1000000;
	if (!end)
		end = now_ms > start ? now_ms : start + 1;
	if (!start)
		start = end - MS_PER_HOUR > 0 ? end - MS_PER_HOUR : 0;
	if (start == end)
		end++; /* an instant: the millisecond that starts there */
	j->from_ns = start * 1000000;
	j->until_ns = end * 1000000;
	j->start_ms = start;
	if (j->m == M_SELECT_SERIES && !(j->step_s >= 0.001 && j->step_s <= 100 * 366 * 86400.0))
		return err_set(err, 400, "%s: step must be from 0.001 (1 ms) to 3162240000 seconds, got %g",
		               msg, j->step_s);
	if (j->m == M_SPAN_PROFILE && !j->n_spans)
		return err_set(err, 400, "%s: span_selector must list at least one span id", msg);
	if (j->m == M_LABEL_VALUES && !j->label.n)
		return err_set(err, 400, "%s: name (the label) is required", msg);
	if (j->m == M_MERGE_STACKS || j->m == M_MERGE_PROFILE || j->m == M_SELECT_SERIES ||
	    j->m == M_SPAN_PROFILE)
		return merge_query(j, msg, err);
	return 0;
}

/* The body of j's method (j->m, j->json set) into j. 0, or -1 + j->err. */
static int decode_body(qjob_t *j, slice_t body)
{
	int rc = j->json ? pb_json_to_pb(body, json_schema[j->m], json_root[j->m], &j->pb, &j->err)
	                 : buf_append(&j->pb, body.p, body.n);
	if (rc < 0 || decode(j, &j->err) < 0) {
		if (!j->err.status)
			err_set(&j->err, 400, "malformed request");
		return -1;
	}
	return 0;
}

static qjob_t *qjob_new(void)
{
	qjob_t *j = xcalloc(1, sizeof *j);
	j->arena = arena_new();
	j->found.arena = j->arena;
	u64map_init(&j->found.ix);
	buf_init(&j->pb, QUERIER_MAX_BODY);
	buf_init(&j->out, SIZE_MAX);
	return j;
}

int api_querier_decode(slice_t method, int json, slice_t body, err_t *err)
{
	qjob_t *j = qjob_new();
	int rc = -1;
	for (int i = 0; i < M_COUNT; i++)
		if (slice_eq_cstr(method, methods[i].name))
			j->m = (enum method)i, rc = 0;
	j->json = json;
	memcpy(j->caller.project, "default", sizeof "default");
	if (rc < 0)
		err_set(err, 404, "no method %.*s", (int)(method.n > 64 ? 64 : method.n),
		        (const char *)method.p);
	else if ((rc = decode_body(j, body)) < 0)
		*err = j->err;
	qjob_free(j);
	return rc;
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
	j->m = (enum method)method_of(c->path);
	j->json = slice_eq_cstr(api_media_type(api_call_header(c, "content-type")), "application/json");
	if (decode_body(j, c->body) < 0) {
		j->failed = 1;
		querier_reply(j);
		return;
	}
	pool_submit(api->pool, querier_work, j);
}
