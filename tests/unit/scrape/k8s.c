/* Tests of src/scrape/k8s.c and k8s_pods.c against the Kubernetes API stand-in
 * (tests/k8s-standin/server.mjs, a real HTTP server in a child process): list,
 * watch, 410s, reconnects, token changes, oversized events, a never-blocked loop. */
#include "testutil.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <event2/event.h>
#include <jansson.h>

#include "scrape/k8s.h"
#include "scrape/k8s_int.h"

extern char **environ;

typedef struct {
	pid_t pid;
	char url[64];
	char token_path[64];
	struct event_base *base;
	struct event *tick;
	k8s_watcher_t *w;
	json_t *seen; /* "ns/name" → the last pod upserted */
	int upserts, deletes, syncs;
	int ticks; /* of a 10 ms timer on the loop */
	char last_delete[300];
} fx;

/* ---- the stand-in ---- */

static void standin_start(fx *f)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_addclose(&fa, p[0]);
	char *argv[] = {"node", "tests/k8s-standin/server.mjs", "--token", "tok-1", NULL};
	assert_int_equal(posix_spawnp(&f->pid, "node", &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	char line[64] = {0};
	size_t n = 0;
	while (n < sizeof line - 1 && read(p[0], line + n, 1) == 1 && line[n] != '\n')
		n++;
	close(p[0]);
	int port = 0;
	assert_int_equal(sscanf(line, "listening %d", &port), 1);
	snprintf(f->url, sizeof f->url, "http://127.0.0.1:%d", port);
}

static size_t collect(char *p, size_t size, size_t nmemb, void *ud)
{
	size_t n = size * nmemb;
	char **s = ud;
	size_t old = *s ? strlen(*s) : 0;
	*s = realloc(*s, old + n + 1);
	memcpy(*s + old, p, n);
	(*s)[old + n] = '\0';
	return n;
}

/* A blocking control request; returns the answer body parsed as JSON. */
static json_t *ctl(fx *f, const char *method, const char *path, const char *body)
{
	char url[256];
	snprintf(url, sizeof url, "%s%s", f->url, path);
	char *out = NULL;
	CURL *e = curl_easy_init();
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	if (body)
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &out);
	assert_int_equal(curl_easy_perform(e), CURLE_OK);
	curl_easy_cleanup(e);
	json_t *j = json_loads(out ? out : "null", JSON_DECODE_ANY, NULL);
	free(out);
	return j;
}

static void ctl_do(fx *f, const char *method, const char *path, const char *body)
{
	json_decref(ctl(f, method, path, body));
}

static void ctl_pod(fx *f, const char *spec)
{
	ctl_do(f, "POST", "/control/pods", spec);
}

static int requests_of(fx *f, const char *kind)
{
	json_t *all = ctl(f, "GET", "/control/requests", NULL);
	int n = 0;
	size_t i;
	json_t *r;
	json_array_foreach(all, i, r)
	{
		n += strcmp(json_string_value(json_object_get(r, "kind")), kind) == 0;
	}
	json_decref(all);
	return n;
}

/* The query parameter key of the last API request of that kind ("" if none); static storage. */
static const char *last_request(fx *f, const char *kind, const char *key)
{
	static char out[1024];
	out[0] = '\0';
	json_t *all = ctl(f, "GET", "/control/requests", NULL);
	size_t i;
	json_t *r;
	json_array_foreach(all, i, r)
	{
		if (strcmp(json_string_value(json_object_get(r, "kind")), kind) != 0)
			continue;
		json_t *v = strcmp(key, "auth") == 0 ? json_object_get(r, "auth")
		                                     : json_object_get(json_object_get(r, "query"), key);
		snprintf(out, sizeof out, "%s", json_is_string(v) ? json_string_value(v) : "");
	}
	json_decref(all);
	return out;
}

/* ---- the watcher and its loop ---- */

static void on_upsert(void *ctx, const json_t *pod)
{
	fx *f = ctx;
	const json_t *md = json_object_get(pod, "metadata");
	char key[300];
	snprintf(key, sizeof key, "%s/%s", json_string_value(json_object_get(md, "namespace")),
	         json_string_value(json_object_get(md, "name")));
	json_object_set_new(f->seen, key, json_deep_copy(pod));
	f->upserts++;
}

static void on_delete(void *ctx, const char *ns, const char *name)
{
	fx *f = ctx;
	snprintf(f->last_delete, sizeof f->last_delete, "%s/%s", ns, name);
	json_object_del(f->seen, f->last_delete);
	f->deletes++;
}

static void on_synced(void *ctx)
{
	((fx *)ctx)->syncs++;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	(*(int *)arg)++;
}

static void watcher_start(fx *f, int token_refresh_ms)
{
	FILE *t = fopen(f->token_path, "w");
	fputs("tok-1\n", t);
	fclose(t);
	static const k8s_callbacks_t cb = {on_upsert, on_delete, on_synced};
	k8s_config_t c = {.api_server = f->url,
	                  .token_file = f->token_path,
	                  .ca_file = "",
	                  .node = "node-a",
	                  .token_refresh_ms = token_refresh_ms,
	                  .backoff_min_ms = 100,
	                  .backoff_max_ms = 400};
	err_t err = {0};
	f->w = k8s_watch_start(f->base, &c, &cb, f, &err);
	assert_non_null(f->w);
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void run_for(fx *f, int ms)
{
	int64_t end = mono_ms() + ms;
	while (mono_ms() < end)
		event_base_loop(f->base, EVLOOP_ONCE);
}

static int setup(void **state)
{
	fx *f = calloc(1, sizeof *f);
	standin_start(f);
	snprintf(f->token_path, sizeof f->token_path, "/tmp/kiln-k8s-token-%d", (int)getpid());
	f->base = event_base_new();
	f->seen = json_object();
	f->tick = event_new(f->base, -1, EV_PERSIST, on_tick, &f->ticks);
	struct timeval tv = {0, 10000};
	event_add(f->tick, &tv);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;
	k8s_watch_free(f->w);
	event_free(f->tick);
	event_base_free(f->base);
	json_decref(f->seen);
	kill(f->pid, SIGTERM);
	waitpid(f->pid, NULL, 0);
	unlink(f->token_path);
	free(f);
	return 0;
}

/* Runs the loop until expr holds; fails the test after timeout_ms. */
#define UNTIL(f, expr, timeout_ms)                                                                           \
	do {                                                                                                 \
		int64_t _end = mono_ms() + (timeout_ms);                                                     \
		while (!(expr)) {                                                                            \
			if (mono_ms() > _end)                                                                \
				fail_msg("line %d: timed out waiting for %s", __LINE__, #expr);              \
			event_base_loop((f)->base, EVLOOP_ONCE);                                             \
		}                                                                                            \
	} while (0)

static const char *annotation(fx *f, const char *key, const char *name)
{
	json_t *pod = json_object_get(f->seen, key);
	json_t *a = json_object_get(json_object_get(json_object_get(pod, "metadata"), "annotations"), name);
	return json_is_string(a) ? json_string_value(a) : NULL;
}

/* ---- tests ---- */

static void test_config_errors(void **state)
{
	fx *f = *state;
	static const k8s_callbacks_t cb = {on_upsert, on_delete, on_synced};
	err_t err = {0};
	unsetenv("NODE_NAME");
	k8s_config_t c = {.api_server = f->url, .token_file = ""};
	assert_null(k8s_watch_start(f->base, &c, &cb, f, &err));
	assert_int_equal(err.status, 400);
	assert_non_null(strstr(err.msg, "NODE_NAME"));
	c.node = "n";
	c.api_server = "ftp://x";
	assert_null(k8s_watch_start(f->base, &c, &cb, f, &err));
	assert_non_null(strstr(err.msg, "https://"));
	unsetenv("KUBERNETES_SERVICE_HOST");
	c.api_server = NULL;
	assert_null(k8s_watch_start(f->base, &c, &cb, f, &err));
	assert_non_null(strstr(err.msg, "KUBERNETES_SERVICE_HOST"));
}

static void test_initial_list_paged(void **state)
{
	fx *f = *state;
	char spec[256];
	for (int i = 0; i < 130; i++) {
		snprintf(spec, sizeof spec, "{\"name\":\"p%03d\",\"ip\":\"10.0.%d.%d\"}", i, i / 200,
		         i % 200 + 1);
		ctl_pod(f, spec);
	}
	ctl_pod(f, "{\"name\":\"pending\",\"phase\":\"Pending\"}");
	ctl_pod(f, "{\"name\":\"noip\"}");
	ctl_pod(f, "{\"name\":\"elsewhere\",\"node\":\"node-b\",\"ip\":\"10.9.9.9\"}");
	ctl_pod(f, "{\"name\":\"web-7d4b9c-x2x\",\"namespace\":\"shop\",\"ip\":\"10.1.0.5\","
	           "\"labels\":{\"pod-template-hash\":\"7d4b9c\"},\"owner\":{\"kind\":\"ReplicaSet\","
	           "\"name\":\"web-7d4b9c\"},"
	           "\"containers\":[{\"name\":\"app\"}],\"initContainers\":[{\"name\":\"proxy\","
	           "\"restartPolicy\":\"Always\"},"
	           "{\"name\":\"migrate\"}]}");
	watcher_start(f, 60000);
	UNTIL(f, f->syncs == 1, 5000);
	assert_int_equal(f->upserts, 131);
	assert_int_equal(json_object_size(f->seen), 131);
	assert_null(json_object_get(f->seen, "default/pending"));
	assert_null(json_object_get(f->seen, "default/elsewhere"));
	assert_int_equal(requests_of(f, "list"), 2); /* limit=100: two pages */
	assert_string_equal(last_request(f, "list", "limit"), "100");
	assert_string_not_equal(last_request(f, "list", "continue"), "");
	assert_string_equal(last_request(f, "list", "fieldSelector"), "spec.nodeName=node-a");
	UNTIL(f, requests_of(f, "watch") == 1, 5000);
	assert_string_equal(last_request(f, "watch", "allowWatchBookmarks"), "true");
	assert_string_equal(last_request(f, "watch", "auth"), "Bearer tok-1");

	k8s_pod_info_t info;
	assert_int_equal(k8s_pod_by_ip(f->w, "10.1.0.5", &info), 1);
	assert_string_equal(info.namespace_, "shop");
	assert_string_equal(info.name, "web-7d4b9c-x2x");
	assert_string_equal(info.workload, "web");
	assert_string_equal(info.owner_kind, "ReplicaSet");
	assert_int_equal(info.containers, 2); /* app + the native sidecar, not the plain init container */
	assert_string_equal(info.container, "");
	assert_int_equal(k8s_pod_by_ip(f->w, "10.0.0.1", &info), 1);
	assert_string_equal(info.container, "app");
	assert_string_equal(info.workload, "p000");
	assert_int_equal(k8s_pod_by_ip(f->w, "10.9.9.9", &info), 0);
}

static void test_watch_events(void **state)
{
	fx *f = *state;
	ctl_pod(f, "{\"name\":\"a\",\"ip\":\"10.0.0.1\"}");
	watcher_start(f, 60000);
	UNTIL(f, f->syncs == 1 && requests_of(f, "watch") == 1, 5000);

	ctl_pod(f, "{\"name\":\"b\",\"ip\":\"10.0.0.2\"}"); /* ADDED */
	UNTIL(f, json_object_get(f->seen, "default/b") != NULL, 5000);

	ctl_pod(f, "{\"name\":\"b\",\"ip\":\"10.0.0.2\",\"annotations\":{\"profiles.kiln.dev/"
	           "cpu.scrape\":\"true\"}}");
	UNTIL(f, annotation(f, "default/b", "profiles.kiln.dev/cpu.scrape") != NULL, 5000); /* MODIFIED */
	assert_string_equal(annotation(f, "default/b", "profiles.kiln.dev/cpu.scrape"), "true");

	ctl_do(f, "DELETE", "/control/pods/default/b", NULL); /* DELETED */
	UNTIL(f, f->deletes == 1, 5000);
	assert_string_equal(f->last_delete, "default/b");
	k8s_pod_info_t info;
	assert_int_equal(k8s_pod_by_ip(f->w, "10.0.0.2", &info), 0);

	ctl_pod(f, "{\"name\":\"a\",\"ip\":\"10.0.0.1\",\"phase\":\"Succeeded\"}"); /* no longer Running */
	UNTIL(f, f->deletes == 2, 5000);
	assert_string_equal(f->last_delete, "default/a");
	assert_int_equal(k8s_pod_by_ip(f->w, "10.0.0.1", &info), 0);

	ctl_pod(f, "{\"name\":\"c\",\"phase\":\"Pending\"}"); /* never Running: nothing to report */
	ctl_pod(f, "{\"name\":\"d\",\"ip\":\"10.0.0.4\"}");
	UNTIL(f, json_object_get(f->seen, "default/d") != NULL, 5000);
	assert_int_equal(f->deletes, 2);
	assert_null(json_object_get(f->seen, "default/c"));
	assert_int_equal(requests_of(f, "list"), 1);
}

static void test_bookmark_then_drop_resumes(void **state)
{
	fx *f = *state;
	ctl_pod(f, "{\"name\":\"a\",\"ip\":\"10.0.0.1\"}");
	watcher_start(f, 60000);
	UNTIL(f, f->syncs == 1 && requests_of(f, "watch") == 1, 5000);
	json_t *bm = ctl(f, "POST", "/control/bookmark", NULL);
	char rv[32];
	snprintf(rv, sizeof rv, "%s", json_string_value(json_object_get(bm, "resourceVersion")));
	json_decref(bm);
	run_for(f, 100); /* let the bookmark arrive */
	ctl_do(f, "POST", "/control/drop", NULL);
	UNTIL(f, requests_of(f, "watch") == 2, 5000);
	assert_string_equal(last_request(f, "watch", "resourceVersion"), rv);
	/* a pod added while reconnecting still arrives, from the watch */
	ctl_pod(f, "{\"name\":\"b\",\"ip\":\"10.0.0.2\"}");
	UNTIL(f, json_object_get(f->seen, "default/b") != NULL, 5000);
	assert_int_equal(requests_of(f, "list"), 1); /* no re-list */
	assert_int_equal(f->syncs, 1);
}

static void test_410_event_relists(void **state)
{
	fx *f = *state;
	ctl_pod(f, "{\"name\":\"a\",\"ip\":\"10.0.0.1\"}");
	watcher_start(f, 60000);
	UNTIL(f, f->syncs == 1 && requests_of(f, "watch") == 1, 5000);
	ctl_do(f, "POST", "/control/compact?as=event", NULL);
	UNTIL(f, f->syncs == 2, 5000);
	assert_int_equal(requests_of(f, "list"), 2);
	assert_non_null(json_object_get(f->seen, "default/a"));
	ctl_pod(f, "{\"name\":\"b\",\"ip\":\"10.0.0.2\"}"); /* the new watch works */
	UNTIL(f, json_object_get(f->seen, "default/b") != NULL, 5000);
}

static void test_410_http_relists_and_drops_missing(void **state)
{
	fx *f = *state;
	ctl_pod(f, "{\"name\":\"a\",\"ip\":\"10.0.0.1\"}");
	ctl_pod(f, "{\"name\":\"gone\",\"ip\":\"10.0.0.9\"}");
	watcher_start(f, 60000);
	UNTIL(f, f->syncs == 1 && requests_of(f, "watch") == 1, 5000);
	/* the watch is cut and history forgotten; the pod vanishes unseen */
	ctl_do(f, "POST", "/control/compact?as=http", NULL);
	ctl_do(f, "DELETE", "/control/pods/default/gone", NULL);
	UNTIL(f, f->syncs == 2, 5000);
	assert_int_equal(requests_of(f, "list"), 2);
	assert_int_equal(f->deletes, 1);
	assert_string_equal(f->last_delete, "default/gone");
	k8s_pod_info_t info;
	assert_int_equal(k8s_pod_by_ip(f->w, "10.0.0.9", &info), 0);
	assert_int_equal(k8s_pod_by_ip(f->w, "10.0.0.1", &info), 1);
}

static void test_token_change_picked_up(void **state)
{
	fx *f = *state;
	watcher_start(f, 200);
	UNTIL(f, f->syncs == 1 && requests_of(f, "watch") == 1, 5000);
	FILE *t = fopen(f->token_path, "w");
	fputs("tok-2\n", t);
	fclose(t);
	ctl_do(f, "POST", "/control/token", "tok-2");
	run_for(f, 500); /* the periodic re-read */
	ctl_do(f, "POST", "/control/drop", NULL);
	UNTIL(f, requests_of(f, "watch") >= 2, 5000);
	assert_string_equal(last_request(f, "watch", "auth"), "Bearer tok-2");
	ctl_pod(f, "{\"name\":\"b\",\"ip\":\"10.0.0.2\"}");
	UNTIL(f, json_object_get(f->seen, "default/b") != NULL, 5000);
}

static void test_token_reread_on_401(void **state)
{
	fx *f = *state;
	watcher_start(f, 600000); /* no periodic re-read during the test */
	UNTIL(f, f->syncs == 1 && requests_of(f, "watch") == 1, 5000);
	FILE *t = fopen(f->token_path, "w");
	fputs("tok-3", t);
	fclose(t);
	ctl_do(f, "POST", "/control/token", "tok-3");
	ctl_do(f, "POST", "/control/drop", NULL);
	ctl_pod(f, "{\"name\":\"b\",\"ip\":\"10.0.0.2\"}");
	UNTIL(f, json_object_get(f->seen, "default/b") != NULL, 5000);
	assert_string_equal(last_request(f, "watch", "auth"), "Bearer tok-3");
}

static void test_oversized_event_refused(void **state)
{
	fx *f = *state;
	ctl_pod(f, "{\"name\":\"big\",\"ip\":\"10.0.0.1\"}");
	watcher_start(f, 60000);
	UNTIL(f, f->syncs == 1 && requests_of(f, "watch") == 1, 5000);
	ctl_pod(f, "{\"name\":\"big\",\"ip\":\"10.0.0.1\",\"padBytes\":4300000,"
	           "\"annotations\":{\"k\":\"v\"}}");
	UNTIL(f, requests_of(f, "watch") >= 2, 5000); /* refused, reconnected */
	assert_null(annotation(f, "default/big", "k"));
	assert_int_equal(f->upserts, 1);
	ctl_pod(
	    f,
	    "{\"name\":\"big\",\"ip\":\"10.0.0.1\",\"padBytes\":1000000,\"annotations\":{\"k\":\"small\"}}");
	/* the replayed oversized event still blocks the stream until history is compacted */
	ctl_do(f, "POST", "/control/compact?as=event", NULL);
	UNTIL(f, f->syncs == 2, 5000);
	assert_string_equal(annotation(f, "default/big", "k"), "small");
}

/* Stalls the stand-in (requests in flight and new ones get no answer), then
 * checks that a 10 ms timer on the loop kept firing for a second. */
static void stall_and_check_loop(fx *f)
{
	ctl_do(f, "POST", "/control/stall?on=1", NULL);
	ctl_do(f, "POST", "/control/drop", NULL);
	int before = f->ticks;
	run_for(f, 1000);
	assert_true(f->ticks - before >= 50);
	ctl_do(f, "POST", "/control/stall?on=0", NULL);
	ctl_do(f, "POST", "/control/drop", NULL);
}

static void test_loop_never_blocked(void **state)
{
	fx *f = *state;
	ctl_pod(f, "{\"name\":\"a\",\"ip\":\"10.0.0.1\"}");
	ctl_do(f, "POST", "/control/stall?on=1", NULL);
	watcher_start(f, 60000); /* the first list request hangs */
	stall_and_check_loop(f);
	UNTIL(f, f->syncs == 1 && requests_of(f, "watch") >= 1, 5000);
	stall_and_check_loop(f); /* now a watch hangs */
	ctl_pod(f, "{\"name\":\"b\",\"ip\":\"10.0.0.2\"}");
	UNTIL(f, json_object_get(f->seen, "default/b") != NULL, 5000);
	/* the hung list and its retry; the hung watch resumed without a list */
	assert_int_equal(requests_of(f, "list"), 2);
}

static void test_workload_names(void **state)
{
	struct {
		const char *pod, *workload, *kind;
	} cases[] = {
	    {"{\"metadata\":{\"name\":\"web-5f7c9-abcde\",\"labels\":{\"pod-template-hash\":\"5f7c9\"},"
	     "\"ownerReferences\":[{\"kind\":\"ReplicaSet\",\"name\":\"web-5f7c9\",\"controller\":true}]}}",
	     "web", "Deployment"},
	    {"{\"metadata\":{\"name\":\"rs-x\",\"ownerReferences\":[{\"kind\":\"ReplicaSet\",\"name\":"
	     "\"lonely\",\"controller\":true}]}}",
	     "lonely", "ReplicaSet"},
	    {"{\"metadata\":{\"name\":\"db-0\",\"ownerReferences\":[{\"kind\":\"StatefulSet\",\"name\":"
	     "\"db\",\"controller\":true}]}}",
	     "db", "StatefulSet"},
	    {"{\"metadata\":{\"name\":\"agent-x\",\"ownerReferences\":[{\"kind\":\"DaemonSet\",\"name\":"
	     "\"agent\",\"controller\":true}]}}",
	     "agent", "DaemonSet"},
	    {"{\"metadata\":{\"name\":\"nightly-28571520-q\",\"ownerReferences\":[{\"kind\":\"Job\",\"name\":"
	     "\"nightly-28571520\",\"controller\":true}]}}",
	     "nightly", "CronJob"},
	    {"{\"metadata\":{\"name\":\"once-x\",\"ownerReferences\":[{\"kind\":\"Job\",\"name\":\"once\","
	     "\"controller\":true}]}}",
	     "once", "Job"},
	    {"{\"metadata\":{\"name\":\"solo\",\"ownerReferences\":[{\"kind\":\"Node\",\"name\":\"n1\"}]}}",
	     "solo", "Pod"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		json_t *pod = json_loads(cases[i].pod, 0, NULL);
		assert_non_null(pod);
		char w[254], kind[64];
		k8s_pod_workload(pod, w, sizeof w, kind);
		assert_string_equal(w, cases[i].workload);
		assert_string_equal(kind, cases[i].kind);
		assert_int_equal(k8s_pod_is_live(pod), 0);
		json_decref(pod);
	}
}

/* The detached watcher (k8s_int.h): list page, then watch lines cut mid-line. */
static void detached_upsert(void *ctx, const json_t *pod)
{
	((int *)ctx)[0]++;
}

static void detached_delete(void *ctx, const char *ns, const char *name)
{
	((int *)ctx)[1]++;
}

static void detached_synced(void *ctx)
{
	((int *)ctx)[2]++;
}

static void test_detached_feed(void **state)
{
	static const char list[] = "{\"metadata\": {\"resourceVersion\": \"5\"}, \"items\": [{\"metadata\": "
	                           "{\"namespace\": \"ns\", \"name\": \"a\"}, \"status\": {\"phase\": "
	                           "\"Running\", \"podIP\": \"10.0.0.1\"}}]}";
	static const char watch[] = "{\"type\": \"DELETED\", \"object\": {\"metadata\": {\"namespace\": "
	                            "\"ns\", \"name\": \"a\"}}}\n";
	int seen[3] = {0};
	k8s_callbacks_t cb = {detached_upsert, detached_delete, detached_synced};
	k8s_watcher_t *w = k8s_watch_detached(&cb, seen);
	assert_int_equal(k8s_watch_feed(w, list, 10, 0), 0);
	assert_int_equal(k8s_watch_feed(w, list + 10, sizeof list - 11, 1), 1); /* now watching */
	assert_int_equal(seen[0], 1);
	assert_int_equal(seen[2], 1);
	k8s_pod_info_t info;
	assert_int_equal(k8s_pod_by_ip(w, "10.0.0.1", &info), 1);
	assert_int_equal(k8s_watch_feed(w, watch, 20, 0), 1);
	assert_int_equal(seen[1], 0); /* half a line: nothing yet */
	assert_int_equal(k8s_watch_feed(w, watch + 20, sizeof watch - 21, 0), 1);
	assert_int_equal(seen[1], 1);
	assert_int_equal(k8s_pod_by_ip(w, "10.0.0.1", &info), 0);
	k8s_watch_free(w);
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_workload_names),
	    cmocka_unit_test(test_detached_feed),
	    cmocka_unit_test_setup_teardown(test_config_errors, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_initial_list_paged, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_watch_events, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bookmark_then_drop_resumes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_410_event_relists, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_410_http_relists_and_drops_missing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_token_change_picked_up, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_token_reread_on_401, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_oversized_event_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_loop_never_blocked, setup, teardown),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
