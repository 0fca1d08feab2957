/* POST /profiling/upload (SPEC S2.1): parse the query on the loop thread,
 * decode on a worker, commit through the store writer, answer 200 only once
 * the store reports the data durable. Nothing of a refused request is stored. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/params.h"
#include "base/alloc.h"
#include "base/arena.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "ingest/ingest.h"

typedef struct {
	api_ctx *api;
	api_caller caller;
	http_req *req;
	arena_t *arena;
	ingest_pprof_req in;
	ingest_result res;
	kn_err err;
	int failed;
} upload_job;

static void upload_job_free(upload_job *j)
{
	atomic_fetch_sub(&j->api->_inflight, 1);
	arena_free(j->arena);
	free(j);
}

/* Loop thread: the last step of every upload. */
static void upload_reply(void *arg)
{
	upload_job *j = arg;
	api_count(j->api, LISTENER_UPLOAD, j->failed ? j->err.status : 200, j->req->body.n);
	if (j->failed) {
		api_reply_error(j->req, &j->err);
	} else {
		char body[96];
		int n = snprintf(body, sizeof body, "{\"profiles\":%u,\"samples\":%llu}", j->res.profiles,
		                 (unsigned long long)j->res.samples);
		http_respond(j->req, 200, "application/json", NULL, body, (size_t)n);
	}
	upload_job_free(j);
}

/* Writer thread: the batch is durable (or refused). */
static void upload_stored(void *arg, const kn_err *err)
{
	upload_job *j = arg;
	if (err) {
		j->err = *err;
		j->failed = 1;
	} else {
		api_account(j->api, &j->caller, j->res.samples, NULL);
	}
	loop_post(j->api->loop, upload_reply, j);
}

/* Worker thread: gunzip + decode + validate, then hand to the writer. */
static void upload_work(void *arg)
{
	upload_job *j = arg;
	model_batch *b = NULL;
	if (ingest_pprof(&j->in, buf_slice(&j->req->body), &b, &j->res, &j->err) < 0) {
		/* The sample count of an undecodable request is unknown: it counts 1. */
		api_account(j->api, &j->caller, 1, &j->err);
		goto refused;
	}
	/* S5.3: a profile placed outside the retention window is refused whole. */
	int days = api_retention_days(j->api, j->caller.project);
	int64_t t = j->in.from_ns ? j->in.from_ns : j->in.now_ns;
	if (t < j->in.now_ns - days * NS_PER_DAY || t > j->in.now_ns + INGEST_FUTURE_NS) {
		err_set(&j->err, 400,
		        "from=%lld is outside the window Kiln stores: the last %d days (the project's retention) up "
		        "to 10 minutes from now",
		        (long long)(t / NS_PER_SEC), days);
		api_account_reason(j->api, &j->caller, 0, USAGE_OUT_OF_WINDOW, j->res.samples);
		goto refused;
	}
	if (api_admit(j->api, &j->caller, j->res.samples, &j->err) < 0)
		goto refused;
	store_submit(j->api->store, b, upload_stored, j);
	return;
refused:
	model_batch_free(b);
	j->failed = 1;
	loop_post(j->api->loop, upload_reply, j);
}

int api_upload_on_headers(http_req *r, void *ctx)
{
	api_listener *l = ctx;
	kn_err err = {0};
	if (!slice_eq_cstr(r->path, "/profiling/upload") && !slice_eq_cstr(r->path, "/ingest")) {
		err_set(&err, 404, "no route %.*s on the upload listener: POST /profiling/upload?serviceName=NAME",
		        (int)(r->path.n > 128 ? 128 : r->path.n), (const char *)r->path.p);
		goto refuse;
	}
	if (!slice_eq_cstr(r->method, "POST")) {
		err_set(&err, 405, "method %.*s not allowed: POST a pprof profile to /profiling/upload",
		        (int)(r->method.n > 16 ? 16 : r->method.n), (const char *)r->method.p);
		goto refuse;
	}
	/* The key is checked before the body is read: a refused sender costs no upload. */
	api_caller c;
	if (api_identify(l, http_header(r, "x-kiln-key"), http_header(r, "authorization"), NULL, KEY_SCOPE_INGEST,
	                 &c, &err) < 0)
		goto refuse;
	return 0;
refuse:
	api_count(l->api, LISTENER_UPLOAD, err.status, 0);
	api_reply_error(r, &err);
	return 1;
}

static int set_label(upload_job *j, model_label *labels, uint32_t *n, const char *key, const char *value)
{
	if (!value || !*value)
		return 0;
	labels[*n].key = slice_cstr(key);
	labels[*n].value = slice_cstr(value);
	(*n)++;
	return 1;
}

/* S2.1a: a push without namespace and pod from a pod IP the watch knows takes
 * that pod's namespace, pod, workload and (one container) container, each
 * only where the request gives none. */
static void attribute_pod(upload_job *j, http_req *r, const char **ns, const char **pod, const char **workload,
                          const char **container)
{
	k8s_pod_info info;
	if ((*ns && **ns) || (*pod && **pod) || !api_peer_pod(j->api, r->peer, &info))
		return;
	*ns = arena_strndup(j->arena, info.namespace_, strlen(info.namespace_));
	*pod = arena_strndup(j->arena, info.name, strlen(info.name));
	if ((!*workload || !**workload) && info.workload[0])
		*workload = arena_strndup(j->arena, info.workload, strlen(info.workload));
	if ((!*container || !**container) && info.containers == 1 && info.container[0])
		*container = arena_strndup(j->arena, info.container, strlen(info.container));
}

static int parse_upload(upload_job *j, http_req *r)
{
	api_ctx *api = j->api;
	kn_err *err = &j->err;
	params_t p;
	if (params_parse(r->query, j->arena, &p, err) < 0)
		return -1;
	const char *service = params_get(&p, "serviceName");
	const char *workload = params_get(&p, "workload");
	const char *ns = params_get(&p, "namespace"), *pod = params_get(&p, "pod");
	const char *container = params_get(&p, "container");
	attribute_pod(j, r, &ns, &pod, &workload, &container);
	if ((!service || !*service) && (!workload || !*workload))
		return err_set(err, 400, "missing service: give serviceName=NAME or workload=NAME in the query string");

	model_label *extra;
	uint32_t n_extra;
	if (params_labels(&p, j->arena, &extra, &n_extra, err) < 0)
		return -1;
	model_label *labels = arena_alloc(j->arena, (n_extra + 4) * sizeof *labels);
	uint32_t n = 0;
	set_label(j, labels, &n, "k8s.namespace.name", ns);
	set_label(j, labels, &n, "k8s.pod.name", pod);
	set_label(j, labels, &n, "k8s.container.name", container);
	set_label(j, labels, &n, "workload", workload);
	for (uint32_t i = 0; i < n_extra; i++) {
		/* Explicit parameters win over label.* of the same key. */
		int dup = 0;
		for (uint32_t k = 0; k < n; k++)
			dup |= slice_eq(labels[k].key, extra[i].key);
		if (!dup)
			labels[n++] = extra[i];
	}

	int64_t now = time_now_ns();
	const char *from = params_get(&p, "from"), *until = params_get(&p, "until");
	int64_t from_ns = 0, until_ns = 0;
	if (from && *from && time_parse(from, now, &from_ns) < 0)
		return err_set(err, 400, "from=%.64s is not unix seconds", from);
	if (until && *until && time_parse(until, now, &until_ns) < 0)
		return err_set(err, 400, "until=%.64s is not unix seconds", until);
	if (from_ns && until_ns && until_ns < from_ns)
		return err_set(err, 400, "until (%.32s) is before from (%.32s)", until, from);

	const slice_t *ce = http_header(r, "content-encoding");
	j->in = (ingest_pprof_req){
	    .project = slice_cstr(j->caller.project),
	    .service = slice_cstr(service && *service ? service : workload),
	    .labels = labels,
	    .n_labels = n,
	    .from_ns = from_ns,
	    .until_ns = until_ns,
	    .content_gzip = ce && slice_eq_cstr(*ce, "gzip"),
	    .max_rows = api->limits ? api->limits->max_rows : 0,
	    .now_ns = now,
	};
	return 0;
}

void api_upload_on_request(http_req *r, void *ctx)
{
	api_listener *l = ctx;
	upload_job *j = xcalloc(1, sizeof *j);
	j->api = l->api;
	atomic_fetch_add(&j->api->_inflight, 1);
	j->req = r;
	j->arena = arena_new();
	if (api_identify(l, http_header(r, "x-kiln-key"), http_header(r, "authorization"), NULL, KEY_SCOPE_INGEST,
	                 &j->caller, &j->err) < 0) {
		j->failed = 1;
		upload_reply(j);
		return;
	}
	if (parse_upload(j, r) < 0) {
		api_account(j->api, &j->caller, 1, &j->err);
		j->failed = 1;
		upload_reply(j);
		return;
	}
	pool_submit(j->api->pool, upload_work, j);
}
