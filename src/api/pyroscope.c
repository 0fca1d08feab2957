/* Pyroscope's push (API: Push: POST /ingest (Pyroscope)): POST /ingest and
 * POST /pyroscope/ingest on the upload and UI listeners. name=APP{k=v,...}
 * names the service (a service_name label wins) and the series labels;
 * from/until take Pyroscope's unit-by-length timestamps; the body is pprof
 * (format=pprof) or folded text (format=groups or lines; without a format,
 * folded text unless it reads as pprof), gzipped or not, run through the push
 * job (ingest/push.h) with the pprof or the folded decoder, so limits, rate
 * limits, usage and durability are /profiling/upload's.
 * Answers are Pyroscope's: 200 with an empty body, errors as
 * {"code":"...","message":"..."}. A multipart/form-data body (the Go SDK's:
 * parts profile, sample_type_config, prev_profile) has its own decoder
 * (api/pyroscope_multipart.c), folded text (groups, lines) its own
 * (ingest/folded_push.c), and so does JFR (format=jfr: the body or its
 * multipart part jfr, ingest/jfr_push.c); trie, tree and speedscope are
 * refused with 415. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/params.h"
#include "base/alloc.h"
#include "base/arena.h"
#include "base/timeutil.h"
#include "ingest/folded_push.h"
#include "ingest/jfr_push.h"
#include "wire/folded.h"
#include "wire/multipart.h"
#include "wire/pyroscope.h"
#include "wire/pyroscope_push.h"

typedef struct {
	ingest_push_t push; /* first: the job's callbacks get &push */
	ingest_pprof_push_t pprof;
	ingest_folded_push_t folded; /* folded text: its decoder's state, over pprof */
	ingest_jfr_push_t jfr;       /* format=jfr: its decoder's state, over pprof */
	const api_listener_t *l;
	http_req_t *req;
	arena_t *arena;
	pyro_name_t name;               /* the labels' slices point here and into the arena */
	api_pyro_multipart_t multipart; /* a multipart/form-data body (api/pyroscope_multipart.c) */
} pyro_job_t;

uint64_t api_content_length(const http_req_t *r)
{
	return api_length_value(http_header(r, "content-length"));
}

uint64_t api_length_value(const slice_t *cl)
{
	uint64_t v = 0;
	for (size_t i = 0; cl && i < cl->n && cl->p[i] >= '0' && cl->p[i] <= '9'; i++)
		v = v > UINT64_MAX / 10 - 1 ? UINT64_MAX : v * 10 + (uint64_t)(cl->p[i] - '0');
	return v;
}

int api_is_pyroscope_path(slice_t path)
{
	return slice_eq_cstr(path, "/ingest") || slice_eq_cstr(path, "/pyroscope/ingest");
}

/* Sends err as Pyroscope's error body (with Retry-After when it has one). */
static void reply_error(const api_listener_t *l, http_req_t *r, const err_t *err, size_t bytes_in)
{
	int status = err->status ? err->status : 500;
	buf_t body;
	buf_init(&body, SIZE_MAX);
	pyro_error_json(status, err->msg, &body);
	char extra[64] = "";
	if (err->retry_after > 0)
		snprintf(extra, sizeof extra, "Retry-After: %d\r\n", err->retry_after);
	api_count(l->api, l->listener, status, bytes_in);
	http_respond(r, status, "application/json", extra[0] ? extra : NULL, body.p, body.n);
	buf_free(&body);
}

static void pyro_reply(ingest_push_t *p, const err_t *err)
{
	pyro_job_t *j = (pyro_job_t *)p;
	if (err) {
		reply_error(j->l, j->req, err, j->req->body.n);
	} else {
		api_count(j->l->api, j->l->listener, 200, j->req->body.n);
		http_respond(j->req, 200, NULL, NULL, "", 0);
	}
	arena_free(j->arena);
	free(j);
}

int api_pyroscope_on_headers(http_req_t *r, void *ctx)
{
	const api_listener_t *l = ctx;
	err_t err = {0};
	uint64_t length = api_content_length(r);
	if (!slice_eq_cstr(r->method, "POST")) {
		err_set(&err, 405, "method %.*s not allowed: POST a profile to %.*s?name=APP{k=v}",
		        (int)(r->method.n > 16 ? 16 : r->method.n), (const char *)r->method.p, (int)r->path.n,
		        (const char *)r->path.p);
	} else if (length > LIMIT_BODY_BYTES) {
		err_set(&err, 413, "request body is %llu bytes; the limit is %u MiB",
		        (unsigned long long)length, LIMIT_BODY_BYTES >> 20);
	} else {
		/* The key is checked before the body is read: a refused sender costs no upload. */
		ingest_caller_t c;
		if (api_identify(l, http_header(r, "x-kiln-key"), http_header(r, "authorization"), NULL,
		                 http_header(r, "x-scope-orgid"), KEY_SCOPE_INGEST, &c, &err) == 0)
			return 0;
	}
	reply_error(l, r, &err, 0);
	return 1;
}

/* 415 naming a format other than pprof, groups and lines (none given: 0), or
 * the content type that stands for trie or tree without a format. */
static int pyro_format_refused(const char *format, const slice_t *ct, err_t *err)
{
	/* Pyroscope reads these content types as its trie and tree formats when format= is absent. */
	int trie = ct && slice_eq_cstr(*ct, "binary/octet-stream+trie");
	if ((!format || !*format) && (trie || (ct && slice_eq_cstr(*ct, "binary/octet-stream+tree"))))
		return err_set(
		    err, 415,
		    "Content-Type %s (Pyroscope's %s format) is not supported: Kiln's /ingest takes "
		    "pprof and folded text (format=pprof, groups or lines)",
		    trie ? "binary/octet-stream+trie" : "binary/octet-stream+tree", trie ? "trie" : "tree");
	if (!format || !*format || strcmp(format, "pprof") == 0 || strcmp(format, "groups") == 0 ||
	    strcmp(format, "lines") == 0 || strcmp(format, "jfr") == 0)
		return 0;
	if (strcmp(format, "trie") == 0 || strcmp(format, "tree") == 0 || strcmp(format, "speedscope") == 0)
		return err_set(err, 415,
		               "format=%s is not supported: Kiln's /ingest takes pprof and folded text "
		               "(format=pprof, groups or lines)",
		               format);
	return err_set(err, 415,
	               "format=%.32s is not a format Kiln's /ingest knows: it takes pprof and folded text "
	               "(format=pprof, groups or lines)",
	               format);
}

/* 415 for the formats Kiln does not take (pyro_format_refused); a multipart/form-data body
 * carries pprof parts (api/pyroscope_multipart.c). */
static int check_format(const params_t *p, http_req_t *r, err_t *err)
{
	const char *format = params_get(p, "format");
	const slice_t *ct = http_header(r, "content-type");
	if (pyro_format_refused(format, ct, err) < 0)
		return -1;
	return 0;
}

/* Folded text (format=groups or lines, or no format: decided on the body)
 * goes to the folded decoder, with the query's units, aggregationType and
 * sampleRate (they live in the job's arena); format=pprof stays pprof;
 * format=jfr goes to the JFR decoder, multipart or not. */
static void pick_decoder(pyro_job_t *j, const params_t *p)
{
	const char *format = params_get(p, "format");
	const slice_t *ct = http_header(j->req, "content-type");
	if (format && strcmp(format, "jfr") == 0) {
		j->jfr =
		    (ingest_jfr_push_t){&j->pprof, ct ? *ct : slice_make("", 0), params_get(p, "sampleRate")};
		j->push.ctx = &j->jfr;
		j->push.decode = ingest_jfr_decode;
		return;
	}
	if ((format && strcmp(format, "pprof") == 0) ||
	    (ct && ct->n >= 10 && strncasecmp((const char *)ct->p, "multipart/", 10) == 0))
		return;
	j->folded = (ingest_folded_push_t){
	    .pprof = &j->pprof,
	    .format = !format || !*format            ? INGEST_FOLDED_SNIFF
	              : strcmp(format, "lines") == 0 ? FOLDED_LINES
	                                             : FOLDED_GROUPS,
	    .units = params_get(p, "units"),
	    .aggregation = params_get(p, "aggregationType"),
	    .sample_rate = params_get(p, "sampleRate"),
	};
	j->push.ctx = &j->folded;
	j->push.decode = ingest_folded_decode;
}

static int parse_time(const params_t *p, const char *key, int64_t now, int64_t *ns, err_t *err)
{
	const char *v = params_get(p, key);
	*ns = 0;
	if (v && *v && pyro_time_parse(v, now, ns) < 0)
		return err_set(err, 400,
		               "%s=%.64s is not a time: unix seconds (13 digits: ms, 16: µs, 19: ns) or "
		               "now-DURATION",
		               key, v);
	return 0;
}

static int parse_ingest(pyro_job_t *j, err_t *err)
{
	params_t p;
	if (params_parse(j->req->query, j->arena, &p, err) < 0 || check_format(&p, j->req, err) < 0)
		return -1;
	const char *name = params_get(&p, "name");
	if (!name || !*name)
		return err_set(err, 400, "missing name: give name=APP{k=v,...} in the query string");
	if (pyro_name_parse(slice_cstr(name), &j->name, err) < 0)
		return -1;
	slice_t service = j->name.app;
	model_label_t *labels = arena_alloc(j->arena, (j->name.n_labels + 1) * sizeof *labels);
	slice_t profile_name = slice_make("", 0); /* API: Profile names */
	uint32_t n = pyro_labels_to_series(j->name.labels, j->name.n_labels, &service, &profile_name, labels);
	int64_t now = time_now_ns(), from_ns, until_ns;
	if (parse_time(&p, "from", now, &from_ns, err) < 0 ||
	    parse_time(&p, "until", now, &until_ns, err) < 0)
		return -1;
	if (from_ns && until_ns && until_ns < from_ns)
		return err_set(err, 400, "until is before from");
	api_pprof_req_init(j->l->api, j->req, &j->push, &j->pprof, now);
	j->pprof.req.service = service;
	j->pprof.req.profile_name = profile_name;
	j->pprof.req.pyro_derive_name = 1; /* API: Profile names: none given → Pyroscope's */
	j->pprof.req.labels = labels;
	j->pprof.req.n_labels = n;
	j->pprof.req.from_ns = from_ns;
	j->pprof.req.until_ns = until_ns;
	pick_decoder(j, &p);
	return 0;
}

void api_pyroscope_on_request(http_req_t *r, void *ctx)
{
	const api_listener_t *l = ctx;
	pyro_job_t *j = xcalloc(1, sizeof *j);
	j->l = l;
	j->req = r;
	j->arena = arena_new();
	j->push.ctx = &j->pprof;
	j->push.body = buf_slice(&r->body);
	if (api_push_begin(l, &j->push, http_header(r, "x-kiln-key"), http_header(r, "authorization"),
	                   http_header(r, "x-scope-orgid"), r->peer, ingest_pprof_decode, pyro_reply) < 0)
		return;
	err_t err = {0};
	if (parse_ingest(j, &err) < 0) {
		ingest_push_refuse(&j->push, &err);
		return;
	}
	const slice_t *ct = http_header(r, "content-type");
	if (ct && multipart_is(*ct) && j->push.decode != ingest_jfr_decode) {
		j->multipart = (api_pyro_multipart_t){&j->pprof, *ct, l->api->pyro_deltas};
		j->push.ctx = &j->multipart;
		j->push.decode = api_pyro_multipart_decode;
	}
	ingest_push_start(&j->push);
}
