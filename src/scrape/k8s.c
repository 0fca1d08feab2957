/* The pod list/watch loop against the Kubernetes API (OPS: Discovery): one request
 * at a time on libcurl's multi socket API driven by libevent, so the loop never
 * waits on the API server. It reports pods; it does not turn them into targets. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <event2/event.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/log.h"
#include "scrape/k8s_int.h"

#define DEFAULT_TOKEN_FILE "/var/run/secrets/kubernetes.io/serviceaccount/token"
#define DEFAULT_CA_FILE "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"

enum req_kind { REQ_NONE, REQ_LIST, REQ_WATCH };

/* Why the write callback ended a transfer (curl then reports a write error). */
enum abort_reason { ABORT_NONE, ABORT_RELIST, ABORT_TOO_LONG, ABORT_BAD_EVENT, ABORT_ERROR_EVENT };

/* One socket curl asked us to watch. */
typedef struct k8s_sock {
	struct event *ev;
	struct k8s_sock *next, *prev;
} k8s_sock_t;

struct k8s_watcher {
	struct event_base *base;
	k8s_callbacks_t cb;
	void *ctx;
	char *api, *token_file, *ca_file, *node;
	int token_refresh_ms, backoff_min_ms, backoff_max_ms, watch_timeout_s;
	char *token;

	CURLM *multi;
	CURL *easy; /* the one request in flight, or NULL */
	struct curl_slist *headers;
	k8s_sock_t *socks;
	struct event *curl_timer, *token_timer, *retry_timer;
	int stopped;

	enum req_kind kind;
	long status;
	enum abort_reason abort;
	buf_t body; /* a list page, or the start of an error answer */
	buf_t line; /* the watch event being received */
	int64_t started_ms;
	int events; /* watch events handled by this request */

	char rv[LIMIT_K8S_RV_BYTES]; /* resourceVersion to watch from; "" = list first */
	char *list_continue; /* next page of the list in progress */
	unsigned gen;        /* list generation, stamps the pod table */
	int next_is_list;    /* what retry_timer starts */
	int backoff_ms;
	uint64_t rng;

	k8s_pod_table_t pods;
};

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void start_request(k8s_watcher_t *w, enum req_kind kind);

/* ---- token ---- */

/* Re-reads the token file; keeps the previous token when it cannot. */
static void read_token(k8s_watcher_t *w)
{
	if (!w->token_file[0])
		return;
	FILE *f = fopen(w->token_file, "rb");
	if (!f) {
		log_warn("k8s token unreadable", "file=\"%s\" error=\"%s\"", w->token_file, strerror(errno));
		return;
	}
	char *p = xmalloc(LIMIT_K8S_TOKEN_BYTES + 1);
	size_t n = fread(p, 1, LIMIT_K8S_TOKEN_BYTES + 1, f);
	fclose(f);
	if (n > LIMIT_K8S_TOKEN_BYTES) {
		log_warn("k8s token too large", "file=\"%s\" max_bytes=%u", w->token_file,
		         LIMIT_K8S_TOKEN_BYTES);
		free(p);
		return;
	}
	while (n && isspace((unsigned char)p[n - 1]))
		n--;
	p[n] = '\0';
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)p[i] < 0x21 || (unsigned char)p[i] > 0x7e) {
			log_warn("k8s token has bytes a header cannot carry", "file=\"%s\"", w->token_file);
			free(p);
			return;
		}
	}
	free(w->token);
	w->token = p;
}

static void on_token_timer(evutil_socket_t fd, short what, void *arg)
{
	k8s_watcher_t *w = arg;
	read_token(w);
	struct timeval tv = {w->token_refresh_ms / 1000, (w->token_refresh_ms % 1000) * 1000};
	evtimer_add(w->token_timer, &tv);
}

/* ---- curl multi on libevent ---- */

static void finish_request(k8s_watcher_t *w, CURLcode rc);

static void check_done(k8s_watcher_t *w)
{
	CURLMsg *m;
	int left;
	while (w->multi && (m = curl_multi_info_read(w->multi, &left))) {
		if (m->msg == CURLMSG_DONE && m->easy_handle == w->easy)
			finish_request(w, m->data.result);
	}
}

static void on_socket_event(evutil_socket_t fd, short what, void *arg)
{
	k8s_watcher_t *w = arg;
	int flags = (what & EV_READ ? CURL_CSELECT_IN : 0) | (what & EV_WRITE ? CURL_CSELECT_OUT : 0);
	int running;
	curl_multi_socket_action(w->multi, fd, flags, &running);
	check_done(w);
}

static void on_curl_timer(evutil_socket_t fd, short what, void *arg)
{
	k8s_watcher_t *w = arg;
	int running;
	curl_multi_socket_action(w->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	check_done(w);
}

static int on_curl_socket(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
	k8s_watcher_t *w = userp;
	k8s_sock_t *ks = socketp;
	if (what == CURL_POLL_REMOVE) {
		if (ks) {
			event_free(ks->ev);
			if (ks->prev)
				ks->prev->next = ks->next;
			else
				w->socks = ks->next;
			if (ks->next)
				ks->next->prev = ks->prev;
			free(ks);
			curl_multi_assign(w->multi, s, NULL);
		}
		return 0;
	}
	short kind = EV_PERSIST | (what & CURL_POLL_IN ? EV_READ : 0) | (what & CURL_POLL_OUT ? EV_WRITE : 0);
	if (!ks) {
		ks = xcalloc(1, sizeof *ks);
		ks->ev = xcheck(event_new(w->base, s, kind, on_socket_event, w));
		ks->next = w->socks;
		if (w->socks)
			w->socks->prev = ks;
		w->socks = ks;
		curl_multi_assign(w->multi, s, ks);
	} else {
		event_del(ks->ev);
		event_assign(ks->ev, w->base, s, kind, on_socket_event, w);
	}
	event_add(ks->ev, NULL);
	return 0;
}

static int on_curl_timeout(CURLM *m, long timeout_ms, void *userp)
{
	k8s_watcher_t *w = userp;
	if (timeout_ms < 0) {
		evtimer_del(w->curl_timer);
	} else {
		struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
		evtimer_add(w->curl_timer, &tv);
	}
	return 0;
}

/* ---- events ---- */

static void set_rv(k8s_watcher_t *w, const json_t *obj)
{
	const char *rv = k8s_json_str(obj, "metadata", "resourceVersion");
	if (rv && rv[0] && strlen(rv) < sizeof w->rv)
		snprintf(w->rv, sizeof w->rv, "%s", rv);
}

static void forget_pod(k8s_watcher_t *w, const char *ns, const char *name)
{
	if (ns && name && k8s_pods_remove(&w->pods, ns, name))
		w->cb.pod_delete(w->ctx, ns, name);
}

/* A pod from a list page or an ADDED/MODIFIED event. */
static void apply_pod(k8s_watcher_t *w, const json_t *pod)
{
	const char *ns = k8s_json_str(pod, "metadata", "namespace"),
	           *name = k8s_json_str(pod, "metadata", "name");
	if (!k8s_pod_is_live(pod)) {
		forget_pod(w, ns, name);
		return;
	}
	if (k8s_pods_put(&w->pods, pod, w->gen) < 0) {
		log_warn("k8s pod ignored",
		         "namespace=\"%s\" name=\"%s\" reason=\"no name, or more than %d pods\"",
		         ns ? ns : "", name ? name : "", LIMIT_K8S_PODS);
		return;
	}
	w->cb.pod_upsert(w->ctx, pod);
}

/* One line of the watch stream; sets w->abort to end the stream. */
static void handle_event(k8s_watcher_t *w, const char *p, size_t n)
{
	while (n && isspace((unsigned char)p[n - 1]))
		n--;
	if (!n)
		return;
	json_error_t jerr;
	json_t *ev = json_loadb(p, n, 0, &jerr);
	const char *type = k8s_json_str(ev, "type", NULL);
	const json_t *obj = json_object_get(ev, "object");
	if (!type || !json_is_object(obj)) {
		log_warn("k8s watch event unreadable", "error=\"%s\"", ev ? "no type or object" : jerr.text);
		w->abort = ABORT_BAD_EVENT;
	} else if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0) {
		set_rv(w, obj);
		apply_pod(w, obj);
	} else if (strcmp(type, "DELETED") == 0) {
		set_rv(w, obj);
		forget_pod(w, k8s_json_str(obj, "metadata", "namespace"),
		           k8s_json_str(obj, "metadata", "name"));
	} else if (strcmp(type, "BOOKMARK") == 0) {
		set_rv(w, obj);
	} else if (strcmp(type, "ERROR") == 0) {
		json_int_t code = json_integer_value(json_object_get(obj, "code"));
		const char *msg = k8s_json_str(obj, "message", NULL);
		if (code == 410) {
			log_info("k8s watch expired, listing again", "resource_version=%s", w->rv);
			w->abort = ABORT_RELIST;
		} else {
			log_warn("k8s watch error event", "code=%lld message=\"%s\"", (long long)code,
			         msg ? msg : "");
			w->abort = ABORT_ERROR_EVENT;
		}
	}
	w->events++;
	json_decref(ev);
}

/* Splits the stream into lines of at most LIMIT_K8S_EVENT_BYTES. 0 ends the stream. */
static int feed_watch(k8s_watcher_t *w, const char *p, size_t n)
{
	while (n && w->abort == ABORT_NONE) {
		const char *nl = memchr(p, '\n', n);
		size_t take = nl ? (size_t)(nl - p) : n;
		if (buf_append(&w->line, p, take) < 0) {
			log_warn("k8s watch event too large", "max_bytes=%u resource_version=%s",
			         LIMIT_K8S_EVENT_BYTES, w->rv);
			w->abort = ABORT_TOO_LONG;
			break;
		}
		if (!nl)
			break;
		handle_event(w, (const char *)w->line.p, w->line.n);
		buf_reset(&w->line);
		p += take + 1;
		n -= take + 1;
	}
	return w->abort == ABORT_NONE;
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
	k8s_watcher_t *w = ud;
	size_t n = size * nmemb;
	if (!w->status)
		curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &w->status);
	if (w->status == 200 && w->kind == REQ_WATCH)
		return feed_watch(w, p, n) ? n : 0;
	if (w->status != 200) { /* keep the start of an error answer for the log */
		size_t room = LIMIT_K8S_ERROR_BYTES - w->body.n;
		buf_append(&w->body, p, n < room ? n : room);
		return n;
	}
	if (buf_append(&w->body, p, n) < 0) {
		log_warn("k8s pod list page too large", "max_bytes=%u", LIMIT_K8S_LIST_BYTES);
		w->abort = ABORT_TOO_LONG;
		return 0;
	}
	return n;
}

/* ---- requests ---- */

static void url_escape(buf_t *b, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~')
			buf_putc(b, c);
		else
			buf_printf(b, "%%%02X", c);
	}
}

static void start_request(k8s_watcher_t *w, enum req_kind kind)
{
	buf_t url;
	buf_init(&url, SIZE_MAX);
	buf_printf(&url, "%s/api/v1/pods?fieldSelector=", w->api);
	url_escape(&url, "spec.nodeName=");
	url_escape(&url, w->node);
	if (kind == REQ_LIST) {
		buf_printf(&url, "&limit=%d", LIMIT_K8S_LIST_PAGE);
		if (w->list_continue) {
			buf_puts(&url, "&continue=");
			url_escape(&url, w->list_continue);
		} else {
			w->gen++;
		}
	} else {
		buf_printf(&url, "&watch=1&allowWatchBookmarks=true&timeoutSeconds=%d&resourceVersion=",
		           w->watch_timeout_s);
		url_escape(&url, w->rv);
	}
	buf_putc(&url, 0);

	w->kind = kind;
	w->status = 0;
	w->abort = ABORT_NONE;
	w->events = 0;
	w->started_ms = now_ms();
	buf_reset(&w->body);
	buf_reset(&w->line);
	if (!w->multi) { /* detached: k8s_watch_feed plays the answer */
		buf_free(&url);
		return;
	}

	curl_slist_free_all(w->headers);
	w->headers = xcheck(curl_slist_append(NULL, "Accept: application/json"));
	if (w->token && w->token[0]) {
		buf_t h;
		buf_init(&h, SIZE_MAX);
		buf_printf(&h, "Authorization: Bearer %s", w->token);
		buf_putc(&h, 0);
		w->headers = xcheck(curl_slist_append(w->headers, (const char *)h.p));
		buf_free(&h);
	}

	CURL *e = xcheck(curl_easy_init());
	curl_easy_setopt(e, CURLOPT_URL, (const char *)url.p);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, w->headers);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, w);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS,
	                 kind == REQ_LIST ? 60000L : (long)(w->watch_timeout_s + 30) * 1000L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	if (w->ca_file[0])
		curl_easy_setopt(e, CURLOPT_CAINFO, w->ca_file);
	w->easy = e;
	buf_free(&url);
	curl_multi_add_handle(w->multi, e);
}

/* Next attempt after an error: the delay doubles up to the ceiling, ±20%. */
static void retry_later(k8s_watcher_t *w, int relist)
{
	w->next_is_list = relist;
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	int64_t d = w->backoff_ms;
	d += (int64_t)(w->rng % (uint64_t)(d * 2 / 5 + 1)) - d / 5;
	if (w->backoff_ms < w->backoff_max_ms)
		w->backoff_ms = w->backoff_ms * 2 < w->backoff_max_ms ? w->backoff_ms * 2 : w->backoff_max_ms;
	struct timeval tv = {(time_t)(d / 1000), (suseconds_t)(d % 1000) * 1000};
	if (w->retry_timer) /* else detached: the next k8s_watch_feed starts it */
		evtimer_add(w->retry_timer, &tv);
}

static void on_retry_timer(evutil_socket_t fd, short what, void *arg)
{
	k8s_watcher_t *w = arg;
	start_request(w, w->next_is_list ? REQ_LIST : REQ_WATCH);
}

static void relist(k8s_watcher_t *w, int later)
{
	free(w->list_continue);
	w->list_continue = NULL;
	if (later)
		retry_later(w, 1);
	else
		start_request(w, REQ_LIST);
}

/* A list page arrived whole: report it, then the next page or the watch. */
static void list_page_done(k8s_watcher_t *w)
{
	json_error_t jerr;
	json_t *list = json_loadb((const char *)w->body.p, w->body.n, 0, &jerr);
	const json_t *items = json_object_get(list, "items");
	const char *rv = k8s_json_str(list, "metadata", "resourceVersion");
	if (!json_is_array(items) || !rv || !rv[0] || strlen(rv) >= sizeof w->rv) {
		log_warn("k8s pod list unreadable", "error=\"%s\"",
		         list ? "no items or resourceVersion" : jerr.text);
		json_decref(list);
		relist(w, 1);
		return;
	}
	size_t i;
	const json_t *pod;
	json_array_foreach(items, i, pod)
	{
		apply_pod(w, pod);
	}
	const char *cont = k8s_json_str(list, "metadata", "continue");
	free(w->list_continue);
	w->list_continue = cont && cont[0] ? xstrdup(cont) : NULL;
	snprintf(w->rv, sizeof w->rv, "%s", rv);
	json_decref(list);
	w->backoff_ms = w->backoff_min_ms;
	if (w->list_continue) {
		start_request(w, REQ_LIST);
		return;
	}
	char ns[64], name[254];
	while (k8s_pods_take_stale(&w->pods, w->gen, ns, name))
		w->cb.pod_delete(w->ctx, ns, name);
	w->cb.synced(w->ctx);
	start_request(w, REQ_WATCH);
}

static void finish_request(k8s_watcher_t *w, CURLcode rc)
{
	enum req_kind kind = w->kind;
	long status = w->status;
	if (w->easy) {
		if (!status)
			curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &status);
		curl_multi_remove_handle(w->multi, w->easy);
		curl_easy_cleanup(w->easy);
		w->easy = NULL;
	}
	w->kind = REQ_NONE;

	if (w->abort == ABORT_RELIST || status == 410) {
		if (status == 410)
			log_info("k8s resourceVersion gone (410), listing again", "resource_version=%s",
			         w->rv);
		relist(w, 0);
		return;
	}
	if (rc == CURLE_OK && status == 200) {
		if (kind == REQ_LIST) {
			list_page_done(w);
		} else if (w->events || now_ms() - w->started_ms >= 1000) {
			w->backoff_ms = w->backoff_min_ms; /* the server ended a healthy watch */
			start_request(w, REQ_WATCH);
		} else {
			retry_later(w, 0);
		}
		return;
	}
	if (w->events && w->abort == ABORT_NONE)
		w->backoff_ms = w->backoff_min_ms; /* the stream worked before it broke */
	if (status == 401 || status == 403) {
		read_token(w);
	}
	if (w->abort == ABORT_NONE) {
		log_warn(kind == REQ_LIST ? "k8s pod list failed" : "k8s pod watch failed",
		         "api_server=\"%s\" status=%ld error=\"%s\" body=\"%.*s\"", w->api, status,
		         rc == CURLE_OK ? "" : curl_easy_strerror(rc),
		         (int)(w->body.n < 200 ? w->body.n : 200), w->body.p ? (const char *)w->body.p : "");
	}
	if (kind == REQ_LIST || !w->rv[0])
		relist(w, 1);
	else
		retry_later(w, 0);
}

/* ---- lifecycle ---- */

static char *default_api_server(void)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
	if (!host || !host[0])
		return NULL;
	buf_t b;
	buf_init(&b, SIZE_MAX);
	buf_printf(&b, strchr(host, ':') ? "https://[%s]" : "https://%s", host);
	if (port && port[0])
		buf_printf(&b, ":%s", port);
	buf_putc(&b, 0);
	size_t n;
	return (char *)buf_steal(&b, &n);
}

/* A watcher with c's settings and no I/O yet; NULL with err when c is unusable. */
static k8s_watcher_t *watcher_new(const k8s_config_t *c, const k8s_callbacks_t *cb, void *ctx, err_t *err)
{
	const char *node = c->node && c->node[0] ? c->node : getenv("NODE_NAME");
	if (!node || !node[0]) {
		err_set(err, 400, "kubernetes: no node name: set NODE_NAME (from spec.nodeName) or --node");
		return NULL;
	}
	char *api = c->api_server && c->api_server[0] ? xstrdup(c->api_server) : default_api_server();
	if (!api) {
		err_set(err, 400,
		        "kubernetes: no API server: set kubernetes.apiServer or run in a pod "
		        "(KUBERNETES_SERVICE_HOST is not set)");
		return NULL;
	}
	if (strncmp(api, "https://", 8) != 0 && strncmp(api, "http://", 7) != 0) {
		err_set(err, 400, "kubernetes.apiServer \"%.200s\": must start with https:// (or http://)",
		        api);
		free(api);
		return NULL;
	}
	size_t n = strlen(api);
	while (n && api[n - 1] == '/')
		api[--n] = '\0';

	k8s_watcher_t *w = xcalloc(1, sizeof *w);
	w->cb = *cb;
	w->ctx = ctx;
	w->api = api;
	w->node = xstrdup(node);
	w->token_file = xstrdup(c->token_file ? c->token_file : DEFAULT_TOKEN_FILE);
	w->ca_file = xstrdup(c->ca_file ? c->ca_file : DEFAULT_CA_FILE);
	if (strncmp(api, "http://", 7) == 0)
		w->ca_file[0] = '\0';
	w->token_refresh_ms = c->token_refresh_ms > 0 ? c->token_refresh_ms : 60000;
	w->backoff_min_ms = c->backoff_min_ms > 0 ? c->backoff_min_ms : 1000;
	w->backoff_max_ms = c->backoff_max_ms > 0 ? c->backoff_max_ms : 30000;
	if (w->backoff_max_ms < w->backoff_min_ms)
		w->backoff_max_ms = w->backoff_min_ms;
	w->watch_timeout_s = c->watch_timeout_s > 0 ? c->watch_timeout_s : 300;
	w->backoff_ms = w->backoff_min_ms;
	w->rng = ((uint64_t)(uintptr_t)w ^ (uint64_t)now_ms() * 0x9E3779B97F4A7C15ull) | 1;
	buf_init(&w->body, LIMIT_K8S_LIST_BYTES);
	buf_init(&w->line, LIMIT_K8S_EVENT_BYTES);
	k8s_pods_init(&w->pods);
	return w;
}

k8s_watcher_t *k8s_watch_start(struct event_base *base, const k8s_config_t *c, const k8s_callbacks_t *cb,
                               void *ctx, err_t *err)
{
	k8s_watcher_t *w = watcher_new(c, cb, ctx, err);
	if (!w)
		return NULL;
	w->base = base;
	w->multi = xcheck(curl_multi_init());
	curl_multi_setopt(w->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
	curl_multi_setopt(w->multi, CURLMOPT_SOCKETDATA, w);
	curl_multi_setopt(w->multi, CURLMOPT_TIMERFUNCTION, on_curl_timeout);
	curl_multi_setopt(w->multi, CURLMOPT_TIMERDATA, w);
	w->curl_timer = xcheck(evtimer_new(base, on_curl_timer, w));
	w->retry_timer = xcheck(evtimer_new(base, on_retry_timer, w));
	w->token_timer = xcheck(evtimer_new(base, on_token_timer, w));

	read_token(w);
	struct timeval tv = {w->token_refresh_ms / 1000, (w->token_refresh_ms % 1000) * 1000};
	evtimer_add(w->token_timer, &tv);
	log_info("k8s pod discovery started", "api_server=\"%s\" node=\"%s\"", w->api, w->node);
	start_request(w, REQ_LIST);
	return w;
}

void k8s_watch_stop(k8s_watcher_t *w)
{
	if (!w || w->stopped)
		return;
	w->stopped = 1;
	if (w->easy) {
		curl_multi_remove_handle(w->multi, w->easy);
		curl_easy_cleanup(w->easy);
		w->easy = NULL;
	}
	curl_multi_cleanup(w->multi);
	w->multi = NULL;
	while (w->socks) { /* sockets curl did not hand back */
		k8s_sock_t *ks = w->socks;
		w->socks = ks->next;
		event_free(ks->ev);
		free(ks);
	}
	event_free(w->curl_timer);
	event_free(w->retry_timer);
	event_free(w->token_timer);
	w->curl_timer = w->retry_timer = w->token_timer = NULL;
	curl_slist_free_all(w->headers);
	w->headers = NULL;
}

void k8s_watch_free(k8s_watcher_t *w)
{
	if (!w)
		return;
	k8s_watch_stop(w);
	k8s_pods_free(&w->pods);
	buf_free(&w->body);
	buf_free(&w->line);
	free(w->list_continue);
	free(w->token);
	free(w->api);
	free(w->node);
	free(w->token_file);
	free(w->ca_file);
	free(w);
}

k8s_watcher_t *k8s_watch_detached(const k8s_callbacks_t *cb, void *ctx)
{
	k8s_config_t c = {.api_server = "http://detached.invalid", .token_file = "", .node = "detached"};
	err_t err;
	k8s_watcher_t *w = watcher_new(&c, cb, ctx, &err);
	w->stopped = 1; /* no request, socket or timer to stop */
	start_request(w, REQ_LIST);
	return w;
}

int k8s_watch_feed(k8s_watcher_t *w, const char *p, size_t n, int end)
{
	if (w->kind == REQ_NONE) /* a retry was due */
		start_request(w, w->next_is_list ? REQ_LIST : REQ_WATCH);
	w->status = 200;
	int ok = on_write((char *)p, 1, n, w) == n;
	if (!ok || end)
		finish_request(w, ok ? CURLE_OK : CURLE_WRITE_ERROR);
	return w->kind == REQ_WATCH;
}

int k8s_pod_by_ip(k8s_watcher_t *w, const char *ip, k8s_pod_info_t *out)
{
	return w && ip ? k8s_pod_lookup_ip(&w->pods, ip, out) : 0;
}
