/* POST /profiling/upload (API: Push: POST /profiling/upload): parse the query on the loop thread,
 * then the push job (ingest/push.h) with the pprof decoder: decode on a
 * worker, commit through the store writer, answer 200 only once the store
 * reports the data durable. Nothing of a refused request is stored. */
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
	ingest_push_t push; /* first: the job's callbacks get &push */
	ingest_pprof_push_t pprof;
	api_ctx_t *api;
	http_req_t *req;
	arena_t *arena;
} upload_job_t;

/* Loop thread: the last step of every upload. */
static void upload_reply(ingest_push_t *p, const err_t *err)
{
	upload_job_t *j = (upload_job_t *)p;
	api_count(j->api, API_LISTENER_UPLOAD, err ? err->status : 200, j->req->body.n);
	if (err) {
		api_reply_error(j->req, err);
	} else {
		char body[96];
		int n = snprintf(body, sizeof body, "{\"profiles\":%u,\"samples\":%llu}",
		                 j->pprof.res.profiles, (unsigned long long)j->pprof.res.samples);
		http_respond(j->req, 200, "application/json", NULL, body, (size_t)n);
	}
	arena_free(j->arena);
	free(j);
}

int api_upload_on_headers(http_req_t *r, void *ctx)
{
	api_listener_t *l = ctx;
	err_t err = {0};
	if (api_is_pyroscope_path(r->path))
		return api_pyroscope_on_headers(r, ctx);
	if (api_is_connect_path(r->path))
		return api_connect_on_headers(r, ctx);
	if (!slice_eq_cstr(r->path, "/profiling/upload")) {
		err_set(&err, 404,
		        "no route %.*s on the upload listener: POST /profiling/upload?serviceName=NAME",
		        (int)(r->path.n > 128 ? 128 : r->path.n), (const char *)r->path.p);
		goto refuse;
	}
	if (!slice_eq_cstr(r->method, "POST")) {
		err_set(&err, 405, "method %.*s not allowed: POST a pprof profile to /profiling/upload",
		        (int)(r->method.n > 16 ? 16 : r->method.n), (const char *)r->method.p);
		goto refuse;
	}
	/* The key is checked before the body is read: a refused sender costs no upload. */
	ingest_caller_t c;
	if (api_identify(l, http_header(r, "x-kiln-key"), http_header(r, "authorization"), NULL,
	                 http_header(r, "x-scope-orgid"), KEY_SCOPE_INGEST, &c, &err) < 0)
		goto refuse;
	return 0;
refuse:
	api_count(l->api, API_LISTENER_UPLOAD, err.status, 0);
	api_reply_error(r, &err);
	return 1;
}

static int set_label(model_label_t *labels, uint32_t *n, const char *key, const char *value)
{
	if (!value || !*value)
		return 0;
	labels[*n].key = slice_cstr(key);
	labels[*n].value = slice_cstr(value);
	(*n)++;
	return 1;
}

/* API: Push attribution: a push that names neither namespace nor pod, nor a service or
 * workload, is named after the workload of the pod the watch knows at the
 * sender's IP. Its labels (namespace, pod, workload, container) are the push
 * job's attribution (api_attribute_batch), as for every push. */
static const char *pod_workload(upload_job_t *j, http_req_t *r, const char *ns, const char *pod)
{
	k8s_pod_info_t info;
	if ((ns && *ns) || (pod && *pod) || !api_peer_pod(j->api, r->peer, &info) || !info.workload[0])
		return NULL;
	return arena_strndup(j->arena, info.workload, strlen(info.workload));
}

static int parse_upload(upload_job_t *j, http_req_t *r, err_t *err)
{
	api_ctx_t *api = j->api;
	params_t p;
	if (params_parse(r->query, j->arena, &p, err) < 0)
		return -1;
	const char *service = params_get(&p, "serviceName");
	const char *workload = params_get(&p, "workload");
	const char *ns = params_get(&p, "namespace"), *pod = params_get(&p, "pod");
	const char *container = params_get(&p, "container");
	if ((!service || !*service) && (!workload || !*workload))
		service = pod_workload(j, r, ns, pod);
	if ((!service || !*service) && (!workload || !*workload))
		return err_set(err, 400,
		               "missing service: give serviceName=NAME or workload=NAME in the query string");

	model_label_t *extra;
	uint32_t n_extra;
	if (params_labels(&p, j->arena, &extra, &n_extra, err) < 0)
		return -1;
	model_label_t *labels = arena_alloc(j->arena, (n_extra + 4) * sizeof *labels);
	uint32_t n = 0;
	set_label(labels, &n, "k8s.namespace.name", ns);
	set_label(labels, &n, "k8s.pod.name", pod);
	set_label(labels, &n, "k8s.container.name", container);
	set_label(labels, &n, "workload", workload);
	for (uint32_t i = 0; i < n_extra; i++) {
		/* Explicit parameters win over label.* of the same key. */
		int dup = 0;
		for (uint32_t k = 0; k < n; k++)
			dup |= slice_eq(labels[k].key, extra[i].key);
		if (!dup)
			labels[n++] = extra[i];
	}

	/* API: Profile names: profile=NAME keeps this kind apart from others with its sample types. */
	const char *profile = params_get(&p, "profile");
	if (profile && *profile && !model_profile_name_valid(slice_cstr(profile)))
		return err_set(err, 400,
		               "profile=%.64s%s is not a profile name: 1 to %d of a-z 0-9 _ . - (e.g. block, "
		               "mutex, process_cpu)",
		               profile, strlen(profile) > 64 ? "…" : "", LIMIT_PROFILE_NAME_BYTES);

	int64_t now = time_now_ns();
	const char *from = params_get(&p, "from"), *until = params_get(&p, "until");
	int64_t from_ns = 0, until_ns = 0;
	if (from && *from && time_parse(from, now, &from_ns) < 0)
		return err_set(err, 400, "from=%.64s is not unix seconds", from);
	if (until && *until && time_parse(until, now, &until_ns) < 0)
		return err_set(err, 400, "until=%.64s is not unix seconds", until);
	if (from_ns && until_ns && until_ns < from_ns)
		return err_set(err, 400, "until (%.32s) is before from (%.32s)", until, from);

	api_pprof_req_init(api, r, &j->push, &j->pprof, now);
	j->pprof.req.service = slice_cstr(service && *service ? service : workload);
	j->pprof.req.profile_name = slice_cstr(profile ? profile : "");
	j->pprof.req.labels = labels;
	j->pprof.req.n_labels = n;
	j->pprof.req.from_ns = from_ns;
	j->pprof.req.until_ns = until_ns;
	return 0;
}

void api_pprof_req_init(const api_ctx_t *api, const http_req_t *r, const ingest_push_t *p,
                        ingest_pprof_push_t *pp, int64_t now_ns)
{
	const slice_t *ce = http_header(r, "content-encoding");
	pp->retention_days = api_retention_days(api, p->caller.project);
	pp->req = (ingest_pprof_req_t){
	    .project = slice_cstr(p->caller.project),
	    .content_gzip = ce && slice_eq_cstr(*ce, "gzip"),
	    .max_rows = api->limits ? api->limits->max_rows : 0,
	    .now_ns = now_ns,
	};
}

void api_upload_on_request(http_req_t *r, void *ctx)
{
	if (api_is_pyroscope_path(r->path)) {
		api_pyroscope_on_request(r, ctx);
		return;
	}
	if (api_is_connect_path(r->path)) {
		api_connect_on_request(r, ctx);
		return;
	}
	api_listener_t *l = ctx;
	upload_job_t *j = xcalloc(1, sizeof *j);
	j->api = l->api;
	j->req = r;
	j->arena = arena_new();
	j->push.ctx = &j->pprof;
	j->push.body = buf_slice(&r->body);
	if (api_push_begin(l, &j->push, http_header(r, "x-kiln-key"), http_header(r, "authorization"),
	                   http_header(r, "x-scope-orgid"), r->peer, ingest_pprof_decode, upload_reply) < 0)
		return;
	err_t err = {0};
	if (parse_upload(j, r, &err) < 0) {
		ingest_push_refuse(&j->push, &err);
		return;
	}
	ingest_push_start(&j->push);
}
