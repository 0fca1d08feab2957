/* The Connect querier's requests (api/querier_int.h): each method's field
 * numbers and Connect JSON schema, the binary decoder both codecs end in,
 * the checks (times, selectors, enums, bounds) and the query a Select
 * method makes. No listener, store or loop: the fuzz target calls it
 * through api_querier_decode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/querier_int.h"
#include "base/alloc.h"
#include "base/limits.h"
#include "base/timeutil.h"
#include "query/pyro.h"
#include "wire/pb.h"
#include "wire/pb_json.h"

#define MS_PER_HOUR 3600000LL

/* Field numbers of each request (0: the method has no such field). */
static const struct {
	const char *name;
	uint32_t start, end, label, matchers, type_id, selector, max_nodes, format, label_names;
	uint32_t group_by, step, aggregation, limit, spans;
} methods[QR_COUNT] = {
    [QR_PROFILE_TYPES] = {"ProfileTypes", 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    [QR_LABEL_NAMES] = {"LabelNames", 2, 3, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    [QR_LABEL_VALUES] = {"LabelValues", 3, 4, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    [QR_MERGE_STACKS] = {"SelectMergeStacktraces", 3, 4, 0, 0, 1, 2, 5, 6, 0, 0, 0, 0, 0, 0},
    [QR_SERIES] = {"Series", 3, 4, 0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0},
    [QR_STATS] = {"GetProfileStats", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    [QR_MERGE_PROFILE] = {"SelectMergeProfile", 3, 4, 0, 0, 1, 2, 5, 0, 0, 0, 0, 0, 0, 0},
    [QR_SELECT_SERIES] = {"SelectSeries", 3, 4, 0, 0, 1, 2, 0, 0, 0, 5, 6, 7, 9, 0},
    [QR_SPAN_PROFILE] = {"SelectMergeSpanProfile", 4, 5, 0, 0, 1, 2, 6, 0, 0, 0, 0, 0, 0, 3},
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
static const pb_json_msg_t *const json_schema[QR_COUNT] = {
    &j_profile_types, &j_label_names,  &j_label_values,  &j_merge_stacks, &j_series,
    &j_stats,         &j_merge_stacks, &j_select_series, &j_span_profile};
static const char *const json_root[QR_COUNT] = {
    "ProfileTypesRequest",           "LabelNamesRequest",   "LabelValuesRequest",
    "SelectMergeStacktracesRequest", "SeriesRequest",       "GetProfileStatsRequest",
    "SelectMergeProfileRequest",     "SelectSeriesRequest", "SelectMergeSpanProfileRequest"};

int qr_method_of(slice_t name)
{
	for (int i = 0; i < QR_COUNT; i++)
		if (slice_eq_cstr(name, methods[i].name))
			return i;
	return -1;
}

static int bad_field(err_t *err, const char *msg_name, uint32_t field)
{
	return err_set(err, 400, "%s: field %u: malformed protobuf", msg_name, field);
}

/* The query of a Select method from its profile_typeID and label_selector,
 * as /pyroscope/render's (query_pyro_query). */
static int merge_query(qr_req_t *r, const char *msg, err_t *err)
{
	r->q = (query_params_t){.project = r->project, .from_ns = r->from_ns, .until_ns = r->until_ns};
	r->sel = xcalloc(1, sizeof *r->sel);
	if (sel_parse(r->selector, &r->sel[0], err) < 0)
		return -1;
	r->n_sel = 1;
	char id_what[96], sel_what[96];
	snprintf(id_what, sizeof id_what, "%s: profile_typeID", msg);
	snprintf(sel_what, sizeof sel_what, "%s: label_selector", msg);
	return query_pyro_query(r->type_id, &r->sel[0], id_what, sel_what, r->arena, &r->q, err);
}

/* A group_by label name (spans 0) or a span id (spans 1) of the request. */
static int add_string(qr_req_t *r, int spans, slice_t s, const char *msg, err_t *err)
{
	slice_t **v = spans ? &r->spans : &r->group_by;
	uint32_t *n = spans ? &r->n_spans : &r->n_group_by;
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

/* Decodes r->pb (the method's request) into j. 0, or -1 + err. */
static int decode(qr_req_t *r, err_t *err)
{
	const char *msg = json_root[r->m];
	const __typeof__(methods[0]) *mf = &methods[r->m];
	int64_t start = 0, end = 0;
	pb_reader_t rd = pb_reader_make(buf_slice(&r->pb));
	while (!pb_done(&rd)) {
		uint32_t f;
		int wt;
		if (pb_key(&rd, &f, &wt) < 0)
			return err_set(err, 400, "%s: malformed protobuf at byte %zu", msg,
			               (size_t)(rd.p - r->pb.p));
		uint64_t v;
		slice_t s;
		if (f == mf->step && wt == 1) {
			if (pb_fixed64(&rd, &v) < 0)
				return bad_field(err, msg, f);
			memcpy(&r->step_s, &v, sizeof r->step_s);
		} else if ((f == mf->start || f == mf->end || f == mf->max_nodes || f == mf->format ||
		            f == mf->aggregation || f == mf->limit) &&
		           wt == 0) {
			if (pb_varint(&rd, &v) < 0)
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
				r->tree = v == 2;
			else if (f == mf->aggregation)
				r->average = v == 1;
			else if (f == mf->limit)
				r->limit = (int64_t)v;
			else if (f == mf->start)
				start = (int64_t)v;
			else if (f == mf->end)
				end = (int64_t)v;
			else if (f == mf->max_nodes)
				r->max_nodes = (int64_t)v;
		} else if ((f == mf->label || f == mf->matchers || f == mf->type_id || f == mf->selector ||
		            f == mf->label_names || f == mf->group_by || f == mf->spans) &&
		           wt == 2) {
			if (pb_bytes(&rd, &s) < 0)
				return bad_field(err, msg, f);
			if (f == mf->group_by || f == mf->spans) {
				if (add_string(r, f == mf->spans, s, msg, err) < 0)
					return -1;
				continue;
			}
			if (f == mf->label_names) {
				if (r->n_keep >= LIMIT_SELECTOR_MATCHERS)
					return err_set(err, 400, "%s: more than %d label_names", msg,
					               LIMIT_SELECTOR_MATCHERS);
				r->keep = xrealloc(r->keep, ((size_t)r->n_keep + 1) * sizeof *r->keep);
				r->keep[r->n_keep++] = s;
				continue;
			}
			if (f != mf->matchers) {
				*(f == mf->label     ? &r->label
				  : f == mf->type_id ? &r->type_id
				                     : &r->selector) = s;
				continue;
			}
			if (r->n_sel >= LIMIT_SELECTOR_MATCHERS)
				return err_set(err, 400, "%s: more than %d matchers", msg,
				               LIMIT_SELECTOR_MATCHERS);
			r->sel = xrealloc(r->sel, ((size_t)r->n_sel + 1) * sizeof *r->sel);
			if (sel_parse(s, &r->sel[r->n_sel], err) < 0)
				return -1;
			r->n_sel++;
		} else if (pb_skip(&rd, wt) < 0) {
			return bad_field(err, msg, f);
		}
	}
	if (start > end && end)
		return err_set(err, 400, "%s: start %lld is after end %lld (Unix milliseconds)", msg,
		               (long long)start, (long long)end);
	if (start < 0 || end < 0 || start > INT64_MAX / 1000000 || end > INT64_MAX / 1000000)
		return err_set(err, 400, "%s: start and end are Unix milliseconds from 0", msg);
	if (r->m == QR_STATS) { /* everything kept: from the epoch to a day ahead */
		start = 1;      /* not 0: absent */
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
	r->from_ns = start * 1000000;
	r->until_ns = end * 1000000;
	r->start_ms = start;
	if (r->m == QR_SELECT_SERIES && !(r->step_s >= 0.001 && r->step_s <= 100 * 366 * 86400.0))
		return err_set(err, 400, "%s: step must be from 0.001 (1 ms) to 3162240000 seconds, got %g",
		               msg, r->step_s);
	if (r->m == QR_SPAN_PROFILE && !r->n_spans)
		return err_set(err, 400, "%s: span_selector must list at least one span id", msg);
	if (r->m == QR_LABEL_VALUES && !r->label.n)
		return err_set(err, 400, "%s: name (the label) is required", msg);
	if (r->m == QR_MERGE_STACKS || r->m == QR_MERGE_PROFILE || r->m == QR_SELECT_SERIES ||
	    r->m == QR_SPAN_PROFILE)
		return merge_query(r, msg, err);
	return 0;
}

int qr_req_decode(qr_req_t *r, slice_t body, err_t *err)
{
	int rc = r->json ? pb_json_to_pb(body, json_schema[r->m], json_root[r->m], &r->pb, err)
	                 : buf_append(&r->pb, body.p, body.n);
	if (rc < 0 || decode(r, err) < 0) {
		if (!err->status)
			err_set(err, 400, "malformed request");
		return -1;
	}
	return 0;
}

void qr_req_init(qr_req_t *r, enum qr_method m, int json, slice_t project, arena_t *a)
{
	memset(r, 0, sizeof *r);
	r->m = m;
	r->json = json;
	r->project = project;
	r->arena = a;
	buf_init(&r->pb, QUERIER_MAX_BODY);
}

void qr_req_free(qr_req_t *r)
{
	for (uint32_t i = 0; i < r->n_sel; i++)
		sel_free(&r->sel[i]);
	free(r->sel);
	free(r->keep);
	free(r->group_by);
	free(r->spans);
	buf_free(&r->pb);
}

int api_querier_decode(slice_t method, int json, slice_t body, err_t *err)
{
	int m = qr_method_of(method);
	if (m < 0)
		return err_set(err, 404, "no method %.*s", (int)(method.n > 64 ? 64 : method.n),
		               (const char *)method.p);
	arena_t *a = arena_new();
	qr_req_t r;
	qr_req_init(&r, (enum qr_method)m, json, slice_cstr("default"), a);
	int rc = qr_req_decode(&r, body, err);
	qr_req_free(&r);
	arena_free(a);
	return rc;
}
