/* Pyroscope's legacy HTTP query API on the UI listener (API: Query:
 * Pyroscope HTTP API): GET /pyroscope/render,
 * /pyroscope/render-diff, /pyroscope/label-values and /pyroscope/labels, as
 * Grafana's older Pyroscope data source, Explore Profiles and Perses call
 * them. Parameters are read and checked on the loop thread, the query runs
 * on a worker over the same merge as /api/flamegraph (query_merge) and the
 * series as the Connect querier names them (query/pyro.h), and the answer —
 * flamebearer JSON (query/levels.h) or a JSON array of strings — is sent
 * from the loop thread. The caller is identified as for the /api routes (query-scope
 * keys); errors are /api's {"error": "..."}. Times are read as Pyroscope's
 * attime.Parse reads them, but strictly: what it would silently read as
 * "now" is a 400 here. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/params.h"
#include "base/alloc.h"
#include "base/arena.h"
#include "base/timeutil.h"
#include "query/levels.h"
#include "query/pyro.h"
#include "query/query.h"
#include "query/selector.h"

#define MS_PER_HOUR 3600000LL
#define TIME_MAX_NS (TIME_PARSE_MAX_SECONDS * NS_PER_SEC)

enum rroute { RR_RENDER, RR_DIFF, RR_VALUES, RR_NAMES, RR_COUNT };

static const char *const rpaths[RR_COUNT] = {"/pyroscope/render", "/pyroscope/render-diff",
                                             "/pyroscope/label-values", "/pyroscope/labels"};

/* One merge: render's query, or a side of render-diff. */
typedef struct {
	slice_t id; /* the profile type id (the selector's name) */
	sel_t sel;  /* the whole selector (its regexes are shared by q.matchers) */
	int parsed;
	query_params_t q;
	slice_t sample_type, sample_unit;
} rside_t;

typedef struct {
	api_ctx_t *api;
	http_req_t *req;
	ingest_caller_t caller;
	arena_t *arena;
	enum rroute route;
	rside_t side[2];
	int64_t max_nodes;
	int avg;              /* render: aggregation=avg */
	const char *group_by; /* render: the first groupBy (NULL: none) */
	const char *label;    /* label-values: label= */
	sel_t filter;         /* label listings: query= (parsed when has_filter) */
	int has_filter;
	int64_t from_ns, until_ns; /* label listings */
	slice_t *found;            /* listed strings (query_pyro_list), in the arena */
	uint32_t n_found;
	err_t err;
	int failed;
	buf_t out;
} rjob_t;

int api_is_render_path(slice_t path)
{
	for (int i = 0; i < RR_COUNT; i++)
		if (slice_eq_cstr(path, rpaths[i]))
			return 1;
	return 0;
}

/* ---- times, as Pyroscope's pkg/og/util/attime ---- */

static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* YYYYMMDD (a year after 1900, a real day) as UTC midnight: 1, else 0. */
static int parse_ymd(const char *b, int64_t *out_ns)
{
	int64_t y = 0, m = 0, d = 0;
	for (int i = 0; i < 8; i++)
		*(i < 4 ? &y : i < 6 ? &m : &d) = *(i < 4 ? &y : i < 6 ? &m : &d) * 10 + (b[i] - '0');
	static const int dim[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (y <= 1900 || m < 1 || m > 12 || d < 1 || d > dim[m - 1] - (m == 2 && !leap))
		return 0;
	*out_ns = days_from_civil(y, m, d) * 86400 * NS_PER_SEC;
	return 1;
}

/* Seconds per unit of an offset, by prefix as Pyroscope's getUnitMultiplier; 0: unknown. */
static int64_t unit_seconds(const char *u, size_t n)
{
	if (n >= 1 && u[0] == 's')
		return 1;
	if ((n >= 3 && !memcmp(u, "mon", 3)) || u[0] == 'M')
		return 30 * 86400;
	if (u[0] == 'm')
		return 60;
	static const struct {
		char c;
		int64_t s;
	} units[] = {{'h', 3600}, {'d', 86400}, {'w', 7 * 86400}, {'y', 365 * 86400}};
	for (size_t i = 0; i < sizeof units / sizeof *units; i++)
		if (u[0] == units[i].c)
			return units[i].s;
	return 0;
}

/* A time: digits (YYYYMMDD, else Unix seconds, or milliseconds with 13
 * digits, microseconds with 16, nanoseconds with 19), or [now]±OFFSET with
 * OFFSET one or more NUMBER UNIT (s, m/min, h, d, w, M/mon, y), or now;
 * '_', ',' and spaces are ignored. 0, or -1 when it is none of these or
 * outside 1970..2200. */
static int parse_time(const char *s, int64_t now_ns, int64_t *out_ns)
{
	char b[64];
	size_t n = 0;
	for (; *s; s++) {
		if (*s == '_' || *s == ',' || *s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
			continue;
		if (n + 1 >= sizeof b)
			return -1;
		b[n++] = *s;
	}
	b[n] = 0;
	size_t digits = strspn(b, "0123456789");
	if (n && digits == n) {
		if (n > 19)
			return -1;
		if (n == 8 && parse_ymd(b, out_ns))
			return 0;
		uint64_t v = strtoull(b, NULL, 10);
		uint64_t scale = n == 13 ? 1000000 : n == 16 ? 1000 : n == 19 ? 1 : (uint64_t)NS_PER_SEC;
		if (v > (uint64_t)TIME_MAX_NS / scale)
			return -1;
		*out_ns = (int64_t)(v * scale);
		return 0;
	}
	char *sign = strchr(b, '+');
	if (!sign)
		sign = strchr(b, '-');
	size_t ref = sign ? (size_t)(sign - b) : n;
	if (ref && (ref != 3 || memcmp(b, "now", 3) != 0))
		return -1;
	int64_t off = 0;
	for (size_t at = ref + 1; sign && at <= n;) {
		size_t nd = strspn(b + at, "0123456789");
		size_t nu = strcspn(b + at + nd, "0123456789");
		int64_t unit = nu ? unit_seconds(b + at + nd, nu) : 0;
		if (!nd || nd > 9 || !unit)
			return -1;
		off += strtoll(b + at, NULL, 10) * unit; /* < 10 offsets of < 1e9 × 3.2e7 s each */
		if (off > TIME_PARSE_MAX_SECONDS)
			return -1;
		at += nd + nu;
		if (at == n)
			break;
	}
	int64_t t = now_ns + (sign && *sign == '-' ? -off : off) * NS_PER_SEC;
	if (t < 0 || t > TIME_MAX_NS)
		return -1;
	*out_ns = t;
	return 0;
}

/* from/until (named fname/uname) of p into *from, *until: default the last
 * hour; from must be before until. */
static int parse_range(const params_t *p, const char *fname, const char *uname, int64_t *from, int64_t *until,
                       err_t *err)
{
	int64_t now = time_now_ns();
	const char *f = params_get(p, fname), *u = params_get(p, uname);
	static const char forms[] =
	    "now, now-1h (units s, m, h, d, w, M, y), Unix seconds, milliseconds (13 digits), "
	    "microseconds (16), nanoseconds (19) or YYYYMMDD";
	*until = now;
	if (u && *u && parse_time(u, now, until) < 0)
		return err_set(err, 400, "%s=%.64s is not a time: %s", uname, u, forms);
	*from = *until - MS_PER_HOUR * 1000000 > 0 ? *until - MS_PER_HOUR * 1000000 : 0;
	if (f && *f && parse_time(f, now, from) < 0)
		return err_set(err, 400, "%s=%.64s is not a time: %s", fname, f, forms);
	if (*from >= *until)
		return err_set(err, 400, "%s (%lld ms) must be before %s (%lld ms)", fname,
		               (long long)(*from / 1000000), uname, (long long)(*until / 1000000));
	return 0;
}

/* ---- parameters ---- */

/* Parses selector text (the parameter name) into *sel, the error naming name. */
static int parse_selector(const char *name, const char *text, sel_t *sel, err_t *err)
{
	if (sel_parse(slice_cstr(text), sel, err) == 0)
		return 0;
	char msg[sizeof err->msg];
	memcpy(msg, err->msg, sizeof msg);
	return err_set(err, 400, "%s: %s", name, msg);
}

/* One merge's query=, from=, until= (names qn, fn, un). */
static int parse_side(rjob_t *j, const params_t *p, rside_t *s, const char *qn, const char *fn,
                      const char *un)
{
	err_t *err = &j->err;
	const char *text = params_get(p, qn);
	if (!text || !*text)
		return err_set(err, 400,
		               "%s is required: PROFILE_TYPE_ID{service_name=\"NAME\", …}, e.g. "
		               "process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name=\"app\"}",
		               qn);
	if (parse_selector(qn, text, &s->sel, err) < 0)
		return -1;
	s->parsed = 1;
	s->id = s->sel.metric;
	for (uint32_t i = 0; i < s->sel.n && !s->id.n; i++)
		if (s->sel.m[i].op == SEL_EQ && slice_eq_cstr(s->sel.m[i].name, "__name__"))
			s->id = s->sel.m[i].value;
	if (!s->id.n)
		return err_set(err, 400,
		               "%s must start with a profile type id "
		               "NAME:SAMPLE_TYPE:SAMPLE_UNIT:PERIOD_TYPE:PERIOD_UNIT (see "
		               "/pyroscope/label-values?label=__name__)",
		               qn);
	s->q.project = slice_cstr(j->caller.project);
	char id_what[64];
	snprintf(id_what, sizeof id_what, "%s: the profile type id", qn);
	if (parse_range(p, fn, un, &s->q.from_ns, &s->q.until_ns, err) < 0 ||
	    query_pyro_query(s->id, &s->sel, id_what, qn, j->arena, &s->q, err) < 0)
		return -1;
	const uint8_t *colon = memchr(s->q.type.p, ':', s->q.type.n);
	s->sample_type = slice_make(s->q.type.p, (size_t)(colon - s->q.type.p));
	s->sample_unit = slice_make(colon + 1, s->q.type.n - s->sample_type.n - 1);
	return 0;
}

static int parse_render(rjob_t *j, const params_t *p)
{
	err_t *err = &j->err;
	int diff = j->route == RR_DIFF;
	if (diff ? parse_side(j, p, &j->side[0], "leftQuery", "leftFrom", "leftUntil") < 0 ||
	               parse_side(j, p, &j->side[1], "rightQuery", "rightFrom", "rightUntil") < 0
	         : parse_side(j, p, &j->side[0], "query", "from", "until") < 0)
		return -1;
	if (diff && !slice_eq(j->side[0].id, j->side[1].id))
		return err_set(err, 400, "leftQuery and rightQuery must have the same profile type id");
	j->max_nodes = 0;
	static const char *const mn_names[] = {"max-nodes", "maxNodes"}; /* maxNodes wins, as in Pyroscope */
	for (int i = 0; i < 2; i++) {
		const char *v = params_get(p, mn_names[i]);
		char *end;
		if (!v || !*v)
			continue;
		long long n = strtoll(v, &end, 10);
		if (*end || n < 0 || v[0] == '-' || v[0] == '+')
			return err_set(err, 400, "%s=%.32s must be a whole number from 0 (the default, %d)",
			               mn_names[i], v, LIMIT_FLAME_NODES);
		if (n)
			j->max_nodes = n;
	}
	j->max_nodes = query_max_nodes(j->max_nodes);
	const char *agg = params_get(p, "aggregation"), *format = params_get(p, "format");
	if (agg && strcmp(agg, "sum") && strcmp(agg, "avg"))
		return err_set(err, 400, "aggregation=%.32s must be sum or avg", agg);
	j->avg = agg && !strcmp(agg, "avg");
	if (format && *format && strcmp(format, "json"))
		return err_set(err, 400, "format=%.32s is not supported: json (the default)", format);
	j->group_by = params_get(p, "groupBy");
	if (j->group_by && !*j->group_by)
		j->group_by = NULL;
	return 0;
}

static int parse_listing(rjob_t *j, const params_t *p)
{
	if (j->route == RR_VALUES) {
		j->label = params_get(p, "label");
		if (!j->label || !*j->label)
			return err_set(
			    &j->err, 400,
			    "label is required: label=NAME (label=__name__ lists the profile type ids)");
	}
	const char *q = params_get(p, "query");
	if (q && *q) {
		if (parse_selector("query", q, &j->filter, &j->err) < 0)
			return -1;
		j->has_filter = 1;
	}
	return parse_range(p, "from", "until", &j->from_ns, &j->until_ns, &j->err);
}

/* ---- the work ---- */

static void write_strings(rjob_t *j)
{
	buf_putc(&j->out, '[');
	for (uint32_t i = 0; i < j->n_found; i++) {
		if (i)
			buf_putc(&j->out, ',');
		buf_json_str(&j->out, j->found[i]);
	}
	buf_puts(&j->out, "]\n");
}

/* The step Pyroscope's timeline takes for a range (pkg/querier/timeline
 * CalcPointInterval: the range over 1,500 points, at least 15 s, rounded up
 * to the next of its steps), in seconds. */
static int64_t pyro_step(int64_t from_ns, int64_t until_ns)
{
	static const struct {
		int64_t upto_ms, step_s; /* an interval up to upto_ms gets step_s */
	} steps[] = {{17500, 15},        {25000, 20},          {45000, 30},          {90000, 60},
	             {210000, 120},      {450000, 300},        {750000, 600},        {1050000, 900},
	             {1500000, 1200},    {2700000, 1800},      {5400000, 3600},      {9000000, 7200},
	             {16200000, 10800},  {32400000, 21600},    {86400000, 43200},    {172800000, 86400},
	             {604800000, 86400}, {1814400000, 604800}, {3628799999, 2592000}};
	/* Go takes the times in whole milliseconds, divides the range in
	 * nanoseconds by 1,500 and compares durations */
	int64_t iv_ns = (until_ns / 1000000 - from_ns / 1000000) * 1000000 / 1500;
	for (size_t i = 0; i < sizeof steps / sizeof *steps; i++)
		if (iv_ns <= steps[i].upto_ms * 1000000)
			return steps[i].step_s;
	return 31536000;
}

/* The timeline of aggregation=avg: per step of query_timeline's, the mean
 * of the totals of q's profiles in it (SelectSeries' average, on the steps
 * that hold them), truncated to an integer as Pyroscope's timeline does. */
static int write_timeline_avg(rjob_t *j, const query_params_t *q, int64_t step, buf_t *out)
{
	int64_t start = q->from_ns / NS_PER_SEC / step * step;
	int64_t n = ((q->until_ns - 1) / NS_PER_SEC + 1 - start + step - 1) / step;
	if (n > LIMIT_TIMELINE_POINTS)
		return err_set(&j->err, 400, "step %llds gives %lld points; at most %d are allowed",
		               (long long)step, (long long)n, LIMIT_TIMELINE_POINTS);
	query_pyro_select_t r = {
	    .q = *q, .start_ms = start * 1000, .step_ms = step * 1000, .average = 1, .in_step = 1};
	query_pyro_ts_t *ts;
	uint32_t n_ts, p = 0;
	if (query_pyro_select_series(j->api->store, &r, j->arena, &ts, &n_ts, &j->err) < 0)
		return -1;
	buf_printf(out, "{\"startTime\":%lld,\"samples\":[", (long long)start);
	for (int64_t k = 0; k < n; k++) { /* no group_by: at most one series */
		double v = 0;
		if (n_ts && p < ts[0].n_points && ts[0].ts_ms[p] == r.start_ms + k * r.step_ms)
			v = ts[0].value[p++];
		buf_printf(out, k ? ",%lld" : "%lld", (long long)v);
	}
	buf_printf(out, "],\"durationDelta\":%lld,\"watermarks\":null}", (long long)step);
	return 0;
}

/* {"startTime":S,"samples":[…],"durationDelta":STEP,"watermarks":null}: q's
 * totals per step (query_timeline's buckets), or with aggregation=avg their
 * means (write_timeline_avg). */
static int write_timeline(rjob_t *j, const query_params_t *q, int64_t step, buf_t *out)
{
	if (j->avg)
		return write_timeline_avg(j, q, step, out);
	buf_t tl;
	buf_init(&tl, SIZE_MAX);
	int rc = query_timeline(j->api->store, q, step, &tl, &j->err);
	buf_putc(&tl, 0);
	/* query.h: {"type",…,"step":N,"points":[[unix_s,value],…]} */
	const char *at = rc == 0 ? strstr((const char *)tl.p, "\"points\":[") : NULL;
	if (at) {
		at += strlen("\"points\":[");
		long long start =
		    at[0] == '[' ? strtoll(at + 1, NULL, 10) : q->from_ns / NS_PER_SEC / step * step;
		buf_printf(out, "{\"startTime\":%lld,\"samples\":[", start);
		for (int k = 0; *at == '['; k++) {
			char *end;
			strtoll(at + 1, &end, 10);
			long long v = strtoll(end + 1, &end, 10);
			buf_printf(out, k ? ",%lld" : "%lld", v);
			at = end + 1; /* past ']' */
			at += *at == ',';
		}
		buf_printf(out, "],\"durationDelta\":%lld,\"watermarks\":null}", (long long)step);
	} else if (rc == 0) {
		rc = err_set(&j->err, 500, "timeline: unexpected answer");
	}
	buf_free(&tl);
	return rc;
}

/* "groups": null, or {"VALUE": timeline, …} by the values of group_by over
 * the merged series ("*" for those without it), as Pyroscope's render. */
static int write_groups(rjob_t *j, const rside_t *s, int64_t step, slice_t whole)
{
	buf_t *o = &j->out;
	if (!j->group_by)
		return buf_puts(o, ",\"groups\":null");
	/* The series of the merge: its id and selector (the name matcher that gave the id left out). */
	sel_t merged = s->sel;
	merged.metric = s->id;
	merged.m = arena_alloc(j->arena, (size_t)s->sel.n * sizeof *s->sel.m + 1);
	merged.n = 0;
	for (uint32_t i = 0; i < s->sel.n; i++)
		if (!slice_eq_cstr(s->sel.m[i].name, "__name__"))
			merged.m[merged.n++] = s->sel.m[i];
	if (query_pyro_list(j->api->store, s->q.project, s->q.from_ns, s->q.until_ns, &merged, 1,
	                    slice_cstr(j->group_by), 1, j->arena, &j->found, &j->n_found, &j->err) < 0)
		return -1;
	if (j->n_found > LIMIT_LABEL_VALUES)
		return err_set(&j->err, 400, "groupBy=%.64s has %u values; at most %d: narrow the query",
		               j->group_by, j->n_found, LIMIT_LABEL_VALUES);
	int pseudo = !strcmp(j->group_by, "service_name") || !strncmp(j->group_by, "__", 2);
	query_params_t q = s->q;
	sel_matcher_t *m = arena_alloc(j->arena, ((size_t)q.n_matchers + 1) * sizeof *m);
	memcpy(m, q.matchers, (size_t)q.n_matchers * sizeof *m);
	m[q.n_matchers] = (sel_matcher_t){.name = slice_cstr(j->group_by), .op = SEL_EQ};
	q.matchers = m;
	q.n_matchers++;
	buf_puts(o, ",\"groups\":{");
	for (uint32_t i = 0; i < j->n_found; i++) {
		buf_puts(o, i ? "," : "");
		buf_json_str(o, j->found[i].n ? j->found[i] : slice_cstr("*"));
		buf_putc(o, ':');
		m[q.n_matchers - 1].value = j->found[i];
		if (pseudo) /* every merged series has the same value: the whole timeline */
			buf_append(o, whole.p, whole.n);
		else if (write_timeline(j, &q, step, o) < 0)
			return -1;
	}
	return buf_putc(o, '}');
}

static int render(rjob_t *j)
{
	rside_t *s = &j->side[0];
	model_tree_t tree[2];
	int diff = j->route == RR_DIFF;
	for (int i = 0; i <= diff; i++)
		if (query_merge(j->api->store, &j->side[i].q, j->arena, &tree[i], &j->err) < 0)
			return -1;
	query_levels_t lv;
	if (diff) {
		if (query_levels_diff(&tree[0], &tree[1], j->max_nodes, j->arena, &lv, &j->err) < 0)
			return -1;
	} else {
		query_levels_single(&tree[0], j->max_nodes, j->arena, &lv);
	}
	int rc = query_flamebearer_head(&j->out, &lv, s->sample_type, s->sample_unit);
	if (diff) {
		rc |= buf_puts(&j->out, ",\"timeline\":null,\"groups\":null");
	} else {
		int64_t step = pyro_step(s->q.from_ns, s->q.until_ns);
		buf_t whole;
		buf_init(&whole, SIZE_MAX);
		int bad = write_timeline(j, &s->q, step, &whole) < 0;
		rc |= buf_puts(&j->out, ",\"timeline\":");
		rc |= buf_append(&j->out, whole.p, whole.n);
		bad = bad || write_groups(j, s, step, buf_slice(&whole)) < 0;
		buf_free(&whole);
		if (bad)
			return -1;
	}
	rc |= buf_puts(&j->out, ",\"heatmap\":null");
	rc |= query_flamebearer_tail(&j->out, &lv);
	rc |= buf_putc(&j->out, '\n');
	return rc < 0 ? err_set(&j->err, 413, "the answer is too large: narrow the query or lower maxNodes")
	              : 0;
}

static void render_reply(void *arg)
{
	rjob_t *j = arg;
	api_count(j->api, API_LISTENER_UI, j->failed ? j->err.status : 200, 0);
	if (j->failed)
		api_reply_error(j->req, &j->err);
	else
		http_respond(j->req, 200, "application/json", "Cache-Control: no-store\r\n", j->out.p,
		             j->out.n);
	for (int i = 0; i < 2; i++)
		if (j->side[i].parsed)
			sel_free(&j->side[i].sel);
	if (j->has_filter)
		sel_free(&j->filter);
	buf_free(&j->out);
	arena_free(j->arena);
	atomic_fetch_sub(&j->api->_inflight, 1);
	free(j);
}

static void render_work(void *arg)
{
	rjob_t *j = arg;
	if (j->route == RR_RENDER || j->route == RR_DIFF) {
		j->failed = render(j) < 0;
	} else {
		/* label=__name__ lists the profile type ids, as Pyroscope's route does */
		slice_t label = slice_cstr(j->route == RR_NAMES            ? ""
		                           : !strcmp(j->label, "__name__") ? "__profile_type__"
		                                                           : j->label);
		j->failed =
		    query_pyro_list(j->api->store, slice_cstr(j->caller.project), j->from_ns, j->until_ns,
		                    j->has_filter ? &j->filter : NULL, (uint32_t)j->has_filter, label, 0,
		                    j->arena, &j->found, &j->n_found, &j->err) < 0;
		if (!j->failed)
			write_strings(j);
	}
	loop_post(j->api->loop, render_reply, j);
}

void api_render_on_request(http_req_t *r, void *ctx)
{
	api_listener_t *l = ctx;
	rjob_t *j = xcalloc(1, sizeof *j);
	j->api = l->api;
	atomic_fetch_add(&j->api->_inflight, 1);
	j->req = r;
	j->arena = arena_new();
	buf_init(&j->out, SIZE_MAX);
	for (int i = 0; i < RR_COUNT; i++)
		if (slice_eq_cstr(r->path, rpaths[i]))
			j->route = (enum rroute)i;
	params_t p;
	if (api_identify(l, http_header(r, "x-kiln-key"), http_header(r, "authorization"),
	                 http_header(r, "cookie"), http_header(r, "x-scope-orgid"), KEY_SCOPE_QUERY,
	                 &j->caller, &j->err) < 0 ||
	    params_parse(r->query, j->arena, &p, &j->err) < 0 ||
	    (j->route == RR_RENDER || j->route == RR_DIFF ? parse_render(j, &p) : parse_listing(j, &p)) < 0) {
		j->failed = 1;
		render_reply(j);
		return;
	}
	pool_submit(j->api->pool, render_work, j);
}
