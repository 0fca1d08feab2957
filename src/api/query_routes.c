/* The query API (API: Query: /api/services, types, flamegraph, top, timeline,
 * pprof) plus /healthz: parameters parsed on the loop thread, the query run
 * on a worker, the reply sent from the loop thread. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/params.h"
#include "api/ui_assets.h"
#include "base/alloc.h"
#include "base/arena.h"
#include "base/timeutil.h"
#include "query/query.h"

#define UI_MAX_BODY (64u << 10) /* a request body other than a push (the sign-in form) */

enum route {
	R_SERVICES,
	R_TYPES,
	R_FLAME,
	R_TOP,
	R_TIMELINE,
	R_PPROF,
	R_SPAN,
	R_USAGE,
	R_LABELS,
	R_METRICS,
	R_TARGETS
};

static const struct {
	const char *path;
	enum route route;
	int needs_service, needs_type;
} routes[] = {
    {"/api/services", R_SERVICES, 0, 0}, {"/api/types", R_TYPES, 1, 0},
    {"/api/flamegraph", R_FLAME, 1, 1},  {"/api/top", R_TOP, 1, 1},
    {"/api/timeline", R_TIMELINE, 1, 1}, {"/api/pprof", R_PPROF, 1, 1},
    {"/api/span", R_SPAN, 0, 0},         {"/api/usage", R_USAGE, 0, 0},
    {"/api/labels", R_LABELS, 1, 1},
};

typedef struct {
	api_ctx_t *api;
	ingest_caller_t caller;
	http_req_t *req;
	arena_t *arena;
	enum route route;
	query_params_t q;
	uint32_t limit;
	int64_t step_s;
	slice_t trace_id, span_id;
	query_span_opts_t span;
	err_t err;
	int failed;
	buf_t out;
} query_job_t;

uint32_t api_inflight(api_ctx_t *a)
{
	return atomic_load(&a->_inflight);
}

void api_format_error(int status, const char *msg, buf_t *body, const char **content_type, void *ctx)
{
	buf_puts(body, "{\"error\":");
	buf_json_str(body, slice_cstr(msg));
	buf_puts(body, "}\n");
	*content_type = "application/json";
}

void api_reply_error(http_req_t *r, const err_t *err)
{
	buf_t body;
	buf_init(&body, SIZE_MAX);
	const char *ct;
	api_format_error(err->status, err->msg, &body, &ct, NULL);
	char extra[64] = "";
	if (err->retry_after > 0)
		snprintf(extra, sizeof extra, "Retry-After: %d\r\n", err->retry_after);
	http_respond(r, err->status ? err->status : 500, ct, extra[0] ? extra : NULL, body.p, body.n);
	buf_free(&body);
}

static void query_reply(void *arg)
{
	query_job_t *j = arg;
	api_count(j->api, API_LISTENER_UI, j->failed ? j->err.status : 200, 0);
	if (j->failed) {
		api_reply_error(j->req, &j->err);
	} else if (j->route == R_METRICS) {
		http_respond(j->req, 200, "text/plain; version=0.0.4", NULL, j->out.p, j->out.n);
	} else if (j->route == R_PPROF) {
		http_respond(j->req, 200, "application/octet-stream",
		             "Content-Disposition: attachment; filename=\"profile.pb.gz\"\r\n", j->out.p,
		             j->out.n);
	} else {
		http_respond(j->req, 200, "application/json", "Cache-Control: no-store\r\n", j->out.p,
		             j->out.n);
	}
	buf_free(&j->out);
	arena_free(j->arena);
	atomic_fetch_sub(&j->api->_inflight, 1);
	free(j);
}

static void query_work(void *arg)
{
	query_job_t *j = arg;
	store_t *s = j->api->store;
	int rc = -1;
	switch (j->route) {
	case R_SERVICES:
		rc = query_services(s, &j->q, &j->out, &j->err);
		break;
	case R_TYPES:
		rc = query_types(s, &j->q, &j->out, &j->err);
		break;
	case R_FLAME:
		rc = query_flamegraph(s, &j->q, &j->out, &j->err);
		break;
	case R_TOP:
		rc = query_top(s, &j->q, j->limit, &j->out, &j->err);
		break;
	case R_TIMELINE:
		rc = query_timeline(s, &j->q, j->step_s, &j->out, &j->err);
		break;
	case R_PPROF:
		rc = query_pprof(s, &j->q, &j->out, &j->err);
		break;
	case R_LABELS:
		rc = query_labels(s, &j->q, &j->out, &j->err);
		break;
	case R_SPAN:
		rc = query_span(s, j->q.project, j->trace_id, j->span_id, &j->span, &j->out, &j->err);
		break;
	case R_METRICS: /* written on the loop thread */
	case R_TARGETS:
		rc = 0;
		break;
	case R_USAGE:
		rc = j->api->usage ? usage_query(j->api->usage, j->q.project, j->q.from_ns, j->q.until_ns,
		                                 &j->out, &j->err)
		                   : buf_puts(&j->out, "{\"days\":[]}");
		break;
	}
	j->failed = rc < 0;
	loop_post(j->api->loop, query_reply, j);
}

/* A misspelt parameter (lable.x, servce) would silently widen the query: refuse it. */
static int check_known(const params_t *p, err_t *err)
{
	static const char *known[] = {"from", "until", "service", "type", "limit", "step"};
	for (uint32_t i = 0; i < p->n; i++) {
		const char *k = p->items[i].key;
		int ok = strncmp(k, "label.", 6) == 0;
		for (size_t n = 0; n < sizeof known / sizeof *known; n++)
			ok |= !strcmp(k, known[n]);
		if (!ok)
			return err_set(err, 400,
			               "unknown parameter %.64s; known: service, type, from, until, limit, "
			               "step, label.NAME",
			               k);
	}
	return 0;
}

static int is_hex(slice_t s, size_t n)
{
	if (s.n != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s.p[i] >= '0' && s.p[i] <= '9') || (s.p[i] >= 'a' && s.p[i] <= 'f') ||
		      (s.p[i] >= 'A' && s.p[i] <= 'F')))
			return 0;
	return 1;
}

/* /api/span: ids plus optional hints (service, from, until, type) that a trace
 * viewer knows; from/until stay 0 when absent (no last-hour default here). */
static int parse_span(query_job_t *j, const params_t *p)
{
	err_t *err = &j->err;
	static const char *known[] = {"trace_id", "span_id", "service", "from", "until", "type"};
	for (uint32_t i = 0; i < p->n; i++) {
		int ok = 0;
		for (size_t n = 0; n < sizeof known / sizeof *known; n++)
			ok |= !strcmp(p->items[i].key, known[n]);
		if (!ok)
			return err_set(
			    err, 400,
			    "unknown parameter %.64s; known: trace_id, span_id, service, from, until, type",
			    p->items[i].key);
	}
	j->q.project = slice_cstr(j->caller.project);
	j->trace_id = slice_cstr(params_get(p, "trace_id"));
	j->span_id = slice_cstr(params_get(p, "span_id"));
	j->span.service = slice_cstr(params_get(p, "service"));
	j->span.type = slice_cstr(params_get(p, "type"));
	int64_t now = time_now_ns();
	const char *f = params_get(p, "from"), *u = params_get(p, "until");
	if (f && *f && time_parse(f, now, &j->span.from_ns) < 0)
		return err_set(err, 400, "from=%.64s is not unix seconds or now-DURATION", f);
	if (u && *u && time_parse(u, now, &j->span.until_ns) < 0)
		return err_set(err, 400, "until=%.64s is not unix seconds or now-DURATION", u);
	j->span.now_ns = now;
	/* With a trace id the ids are OTLP/W3C ones: 32 and 16 hex digits. A span
	 * id alone may be any pprof label value (query_span checks its length). */
	if (j->trace_id.n) {
		if (!is_hex(j->trace_id, 32))
			return err_set(err, 400, "trace_id must be 32 hex digits (a W3C trace id)");
		if (!is_hex(j->span_id, 16))
			return err_set(
			    err, 400, "span_id must be 16 hex digits (a W3C span id) when trace_id is given");
	}
	return 0;
}

static int parse_query(query_job_t *j, const params_t *p, int needs_service, int needs_type)
{
	err_t *err = &j->err;
	if (check_known(p, err) < 0)
		return -1;
	j->q.project = slice_cstr(j->caller.project);
	int64_t now = time_now_ns();
	if (params_range(p, now, &j->q.from_ns, &j->q.until_ns, err) < 0)
		return -1;
	/* The store clamps every view to the project's retention (OPS: Retention). */
	const char *service = params_get(p, "service");
	const char *type = params_get(p, "type");
	if (needs_service && (!service || !*service))
		return err_set(err, 400, "missing service=NAME (see /api/services)");
	if (needs_type && (!type || !*type))
		return err_set(err, 400,
		               "missing type=SAMPLE_TYPE:UNIT, e.g. type=cpu:nanoseconds (see /api/types)");
	if (needs_type && !strchr(type, ':'))
		return err_set(err, 400, "type=%.64s must be SAMPLE_TYPE:UNIT, e.g. cpu:nanoseconds", type);
	j->q.service = slice_cstr(service);
	j->q.type = slice_cstr(type);
	model_label_t *labels;
	if (params_labels(p, j->arena, &labels, &j->q.n_labels, err) < 0)
		return -1;
	j->q.labels = labels;
	const char *limit = params_get(p, "limit");
	if (limit && *limit) {
		char *end;
		long v = strtol(limit, &end, 10);
		if (*end || v < 0 || v > LIMIT_QUERY_ROWS)
			return err_set(err, 400, "limit=%.32s must be a number from 0 (all) to %d", limit,
			               LIMIT_QUERY_ROWS);
		j->limit = (uint32_t)v;
	} else {
		j->limit = 100;
	}
	const char *step = params_get(p, "step");
	if (step && *step) {
		int64_t ns;
		if (time_parse_duration(step, &ns) < 0 || ns < NS_PER_SEC)
			return err_set(err, 400,
			               "step=%.32s must be a duration of at least 1s (e.g. 10s, 1m)", step);
		j->step_s = ns / NS_PER_SEC;
		if ((j->q.until_ns - j->q.from_ns) / ns > 100000)
			return err_set(err, 400, "step=%.32s gives more than 100000 points over the range",
			               step);
	}
	return 0;
}

/* The UI's screens have URLs of their own (shareable, API: Query) that serve the
 * single page, which reads its state from the URL. */
static int is_ui_screen(slice_t path)
{
	static const char *screens[] = {"/profiles", "/span", "/usage", "/targets"};
	for (size_t i = 0; i < sizeof screens / sizeof *screens; i++)
		if (slice_eq_cstr(path, screens[i]))
			return 1;
	return 0;
}

int api_ui_on_headers(http_req_t *r, void *ctx)
{
	if (api_is_pyroscope_path(r->path))
		return api_pyroscope_on_headers(r, ctx);
	if (api_is_connect_path(r->path))
		return api_connect_on_headers(r, ctx);
	api_listener_t *l = ctx;
	err_t err;
	/* Only a push takes a large body here; the rest keeps the 64 KiB of a sign-in form. */
	if (http_header(r, "transfer-encoding") || api_content_length(r) > UI_MAX_BODY) {
		err_set(&err, 413, "request body over %u KiB: only POST /ingest takes a large body here",
		        UI_MAX_BODY >> 10);
		api_count(l->api, API_LISTENER_UI, 413, 0);
		api_reply_error(r, &err);
		return 1;
	}
	int get = slice_eq_cstr(r->method, "GET") || slice_eq_cstr(r->method, "HEAD");
	if (get || (slice_eq_cstr(r->method, "POST") && slice_eq_cstr(r->path, "/login")))
		return 0;
	err_set(&err, 405, "method %.*s not allowed: the query API is read-only (GET)",
	        (int)(r->method.n > 16 ? 16 : r->method.n), (const char *)r->method.p);
	api_count(l->api, API_LISTENER_UI, 405, 0);
	api_reply_error(r, &err);
	return 1;
}

static const char login_page[] =
    "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Kiln: sign in</title>"
    "<style>:root{color-scheme:light dark;font-family:system-ui,sans-serif}body{max-width:30rem;margin:4rem "
    "auto}"
    "input{width:100%;padding:.4rem;margin:.4rem 0}</style></head><body><h1>Kiln</h1>"
    "<form method=\"post\" action=\"/login\"><label for=\"key\">Query key</label>"
    "<input id=\"key\" name=\"key\" type=\"password\" autocomplete=\"off\" required autofocus>"
    "<button type=\"submit\">Sign in</button></form></body></html>\n";

/* POST /login (form field key): a valid query key becomes an HttpOnly cookie. */
static void login(api_listener_t *l, http_req_t *r)
{
	arena_t *a = arena_new();
	params_t p;
	err_t err = {0};
	const char *key = NULL;
	if (params_parse(buf_slice(&r->body), a, &p, &err) == 0)
		key = params_get(&p, "key");
	slice_t k = slice_cstr(key);
	ingest_caller_t c;
	if (!key || !*key) {
		err_set(&err, 400, "sign in with a form field key=QUERY_KEY");
	} else if (api_identify(l, &k, NULL, NULL, NULL, KEY_SCOPE_QUERY, &c, &err) == 0) {
		char hdr[256];
		snprintf(
		    hdr, sizeof hdr,
		    "Location: /\r\nSet-Cookie: kiln_key=%.100s; HttpOnly; SameSite=Strict; Path=/%s\r\n",
		    key, l->tls ? "; Secure" : "");
		api_count(l->api, API_LISTENER_UI, 303, r->body.n);
		http_respond(r, 303, "text/plain", hdr, "signed in\n", 10);
		arena_free(a);
		return;
	}
	api_count(l->api, API_LISTENER_UI, err.status, r->body.n);
	api_reply_error(r, &err);
	arena_free(a);
}

void api_ui_on_request(http_req_t *r, void *ctx)
{
	if (api_is_pyroscope_path(r->path)) {
		api_pyroscope_on_request(r, ctx);
		return;
	}
	if (api_is_connect_path(r->path)) {
		api_connect_on_request(r, ctx);
		return;
	}
	if (api_is_render_path(r->path)) {
		api_render_on_request(r, ctx);
		return;
	}
	api_listener_t *l = ctx;
	api_ctx_t *api = l->api;
	if (slice_eq_cstr(r->path, "/healthz")) {
		api_count(api, API_LISTENER_UI, 200, 0);
		http_respond(r, 200, "text/plain", NULL, "ok\n", 3);
		return;
	}
	if (slice_eq_cstr(r->path, "/login")) {
		if (slice_eq_cstr(r->method, "POST")) {
			login(l, r);
		} else {
			api_count(api, API_LISTENER_UI, 200, 0);
			http_respond(r, 200, "text/html; charset=utf-8", NULL, login_page,
			             sizeof login_page - 1);
		}
		return;
	}
	int found = -1;
	for (size_t i = 0; i < sizeof routes / sizeof *routes; i++)
		if (slice_eq_cstr(r->path, routes[i].path))
			found = (int)i;
	int metrics = slice_eq_cstr(r->path, "/metrics");
	int targets = slice_eq_cstr(r->path, "/api/targets");
	if (found < 0 && !metrics && !targets) {
		const ui_asset_t *a = ui_asset_find(is_ui_screen(r->path) ? slice_make("/", 1) : r->path);
		api_count(api, API_LISTENER_UI, a ? 200 : 404, 0);
		if (a) {
			http_respond(r, 200, a->content_type, "Cache-Control: no-cache\r\n", a->data,
			             a->size);
			return;
		}
		err_t err;
		err_set(&err, 404, "no route %.*s; the API is documented in docs/API.md",
		        (int)(r->path.n > 128 ? 128 : r->path.n), (const char *)r->path.p);
		api_reply_error(r, &err);
		return;
	}
	query_job_t *j = xcalloc(1, sizeof *j);
	j->api = api;
	atomic_fetch_add(&api->_inflight, 1);
	j->req = r;
	j->arena = arena_new();
	buf_init(&j->out, SIZE_MAX);
	if (api_identify(l, http_header(r, "x-kiln-key"), http_header(r, "authorization"),
	                 http_header(r, "cookie"), http_header(r, "x-scope-orgid"), KEY_SCOPE_QUERY,
	                 &j->caller, &j->err) < 0) {
		j->failed = 1;
		query_reply(j);
		return;
	}
	if (metrics) {
		api_metrics_write(api, &j->caller, &j->out);
		j->route = R_METRICS;
		query_reply(j);
		return;
	}
	if (targets) { /* scrape state lives on this thread; scraped data belongs to project default */
		if (api->scraper && !strcmp(j->caller.project, SCRAPE_PROJECT))
			scraper_write_targets(api->scraper, &j->out);
		else
			buf_puts(&j->out, "{\"targets\":[]}\n");
		j->route = R_TARGETS;
		query_reply(j);
		return;
	}
	j->route = routes[found].route;
	params_t p;
	if (params_parse(r->query, j->arena, &p, &j->err) < 0 ||
	    (j->route == R_SPAN
	         ? parse_span(j, &p)
	         : parse_query(j, &p, routes[found].needs_service, routes[found].needs_type)) < 0) {
		j->failed = 1;
		query_reply(j);
		return;
	}
	pool_submit(api->pool, query_work, j);
}
