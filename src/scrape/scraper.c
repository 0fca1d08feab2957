/* The scrape loop (OPS: Scrape requests, Scrape limits, Scrape log lines): one libevent timer per target at
 * its stable offset in the interval, libcurl multi driven by the loop's sockets (socket API), the body handed
 * to the push job (ingest/push.h) like a push, with the scrape decoder (bounded gunzip, .sample_types, rows,
 * heap delta) and no rate limit. It never blocks the loop and never waits for one target to scrape another.
 */
#include "scrape/scraper.h"

#include <curl/curl.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "base/u64map.h"
#include "ingest/push.h"
#include "scrape/delta.h"
#include "wire/compress.h"

typedef struct target_state target_state_t;

/* One scrape: the transfer on the loop, then the push job (decode on a
 * worker, store, usage after the commit). */
typedef struct {
	ingest_push_t push; /* first: the job's callbacks get &push */
	scrape_push_t sp;
	scraper_t *s;
	target_state_t *ts;
	scrape_target_t t; /* a copy: the target set may change meanwhile */
	scrape_delta_t *delta;
	CURL *easy; /* while the transfer runs */
	int slot;   /* index in s->transfers */
	buf_t body;
	int too_large;
	int result;
	char detail[320];
	int64_t started_ns;
	char errbuf[CURL_ERROR_SIZE];
} scrape_job_t;

struct target_state {
	scraper_t *s;
	scrape_target_t t;
	char masked[LIMIT_SCRAPE_URL_BYTES];
	int64_t offset_ns, next_due_ns; /* monotonic */
	struct event *timer;
	scrape_job_t *job;                       /* the scrape in progress, if any */
	int removed;                             /* no longer in the set: freed when its job ends */
	int last_result;                         /* -1 before the first */
	int64_t last_scrape_ns, last_success_ns; /* wall clock */
	uint32_t consecutive;
	uint64_t counts[SCRAPE_RESULTS];
	scrape_delta_t *delta; /* memory targets */
};

#define SKIP_REASONS 8

struct scraper {
	scraper_opts_t o;
	struct event_base *base;
	CURLM *multi;
	struct event *curl_timer;
	struct curl_slist *no_headers;
	target_state_t **targets;
	size_t n_targets;
	scrape_job_t *transfers[LIMIT_SCRAPE_INFLIGHT];
	uint32_t inflight;
	uint64_t results[SCRAPE_TYPES][SCRAPE_RESULTS];
	int stopped;
	struct {
		char reason[32];
		int active;
	} skips[SKIP_REASONS];
};

static const char *type_name(int type)
{
	return type >= 0 && type < SCRAPE_TYPES ? scrape_type_name(type) : "unknown";
}

/* A value safe inside a logfmt quoted string. */
static void log_safe(const char *in, char *out, size_t n)
{
	size_t o = 0;
	for (; *in && o + 1 < n; in++)
		out[o++] = (*in == '"' || *in == '\\' || (unsigned char)*in < 0x20) ? '\'' : *in;
	out[o] = 0;
}

/* ---- results: state, counters, the OPS: Scrape log lines log lines ---- */

static void target_free(target_state_t *ts)
{
	if (ts->timer)
		event_free(ts->timer);
	scrape_delta_free(ts->delta);
	free(ts);
}

static void job_free(scrape_job_t *j)
{
	buf_free(&j->body);
	free(j);
}

/* Loop thread: the scrape of j is over (any result). Frees j. */
static void job_finish(scrape_job_t *j)
{
	scraper_t *s = j->s;
	target_state_t *ts = j->ts;
	ts->job = NULL;
	int r = j->result;
	s->results[ts->t.type][r]++;
	ts->counts[r]++;
	ts->last_result = r;
	ts->last_scrape_ns = j->started_ns;
	const scrape_target_t *t = &ts->t;
	if (r == SCRAPE_OK) {
		ts->last_success_ns = j->started_ns;
		if (ts->consecutive)
			log_info("profile scrape target recovered",
			         "namespace=\"%s\" pod=\"%s\" type=%s key=\"%s\" url=\"%s\" failures=%u",
			         t->namespace_, t->pod, type_name(t->type), t->key, ts->masked,
			         ts->consecutive);
		ts->consecutive = 0;
	} else {
		ts->consecutive++;
		if (ts->consecutive == 1 || ts->consecutive % 10 == 0) {
			char detail[sizeof j->detail];
			log_safe(j->detail, detail, sizeof detail);
			log_warn("profile scrape failed",
			         "result=%s namespace=\"%s\" pod=\"%s\" type=%s consecutive=%u key=\"%s\" "
			         "url=\"%s\" error=\"%s\"",
			         scrape_result_name(r), t->namespace_, t->pod, type_name(t->type),
			         ts->consecutive, t->key, ts->masked, detail);
		}
	}
	if (ts->removed)
		target_free(ts);
	job_free(j);
}

/* ---- the push job's scrape decoder and reply ---- */

static void add_label(model_label_t *l, uint32_t *n, const char *key, const char *value)
{
	if (!*value)
		return;
	l[*n].key = slice_cstr(key);
	l[*n].value = slice_cstr(value);
	(*n)++;
}

int scrape_push_decode(ingest_push_t *p, err_t *err)
{
	scrape_push_t *sp = p->ctx;
	const scrape_target_t *t = sp->t;
	buf_t plain;
	buf_init(&plain, LIMIT_SCRAPE_DECODED_BYTES);
	int rc = -1;
	sp->result = SCRAPE_VALIDATION_ERROR;
	if (gz_is_gzip(p->body)) {
		if (gz_inflate(p->body, &plain, err) < 0) {
			if (err->status == 413)
				sp->result = SCRAPE_TOO_LARGE;
			goto out;
		}
		p->body = buf_slice(&plain);
	}
	model_label_t labels[4];
	uint32_t n = 0;
	add_label(labels, &n, "k8s.namespace.name", t->namespace_);
	add_label(labels, &n, "k8s.pod.name", t->pod);
	add_label(labels, &n, "k8s.container.name", t->container);
	add_label(labels, &n, "workload", t->workload);
	sp->pprof.req = (ingest_pprof_req_t){
	    .project = slice_cstr(SCRAPE_PROJECT),
	    .service = slice_cstr(t->service),
	    .profile_name = slice_cstr(scrape_type_get(t->type)->profile_name),
	    .labels = labels,
	    .n_labels = n,
	    .max_rows = t->sample_types[0] ? LIMIT_SCRAPE_DECODE_ROWS : sp->max_rows,
	    .now_ns = time_now_ns(),
	};
	sp->pprof.retention_days = 0; /* stored at receive time: always in the window */
	if (ingest_pprof_decode(p, err) < 0 ||
	    scrape_filter_sample_types(p->batch, t->sample_types, err) < 0 ||
	    scrape_check_rows(p->batch, sp->max_rows, err) < 0)
		goto out;
	if (t->type == SCRAPE_MEMORY && sp->delta)
		scrape_delta_apply(sp->delta, p->batch);
	p->samples = 0;
	for (uint32_t i = 0; i < p->batch->n_profiles; i++)
		p->samples += p->batch->profiles[i].samples_count;
	sp->result = SCRAPE_OK;
	rc = 0;
out:
	buf_free(&plain);
	p->body = slice_make(NULL, 0); /* plain is gone */
	return rc;
}

/* Loop thread: the push of a scraped body is over (stored, refused, or
 * nothing to store). */
static void job_pushed(ingest_push_t *p, const err_t *err)
{
	scrape_job_t *j = (scrape_job_t *)p;
	j->result = j->sp.result;
	if (err && j->result == SCRAPE_OK && store_busy(err)) {
		j->result = SCRAPE_STORE_BUSY; /* skipped: the next interval scrapes again */
		snprintf(j->detail, sizeof j->detail, "%.300s", err->msg);
	} else if (err && j->result == SCRAPE_OK)
		log_warn("scraped profile not stored", "status=%d error=\"%s\"", err->status, err->msg);
	else if (err)
		snprintf(j->detail, sizeof j->detail, "%.300s", err->msg);
	buf_free(&j->body);
	job_finish(j);
}

/* Hands a fetched body to the push job under project and key default. */
static void job_push(scrape_job_t *j)
{
	scraper_t *s = j->s;
	j->push.env = (ingest_push_env_t){
	    .loop = s->o.loop,
	    .pool = s->o.pool,
	    .store = s->o.store,
	    .usage = s->o.usage,
	};
	snprintf(j->push.caller.project, sizeof j->push.caller.project, SCRAPE_PROJECT);
	snprintf(j->push.caller.key, sizeof j->push.caller.key, SCRAPE_PROJECT);
	j->push.caller.anonymous = 1;
	j->push.body = buf_slice(&j->body);
	j->push.decode = scrape_push_decode;
	j->push.reply = job_pushed;
	j->push.ctx = &j->sp;
	j->sp.t = &j->t;
	j->sp.delta = j->delta;
	j->sp.max_rows = s->o.max_rows;
	ingest_push_start(&j->push);
}

/* ---- libcurl multi on libevent (socket API) ---- */

static void check_done(scraper_t *s);

static void on_socket_event(evutil_socket_t fd, short what, void *arg)
{
	scraper_t *s = arg;
	int action = ((what & EV_READ) ? CURL_CSELECT_IN : 0) | ((what & EV_WRITE) ? CURL_CSELECT_OUT : 0);
	int running;
	curl_multi_socket_action(s->multi, fd, action, &running);
	check_done(s);
}

static int on_curl_socket(CURL *e, curl_socket_t fd, int what, void *userp, void *socketp)
{
	scraper_t *s = userp;
	struct event *ev = socketp;
	if (what == CURL_POLL_REMOVE) {
		if (ev)
			event_free(ev);
		curl_multi_assign(s->multi, fd, NULL);
		return 0;
	}
	short kind = (short)(((what & CURL_POLL_IN) ? EV_READ : 0) | ((what & CURL_POLL_OUT) ? EV_WRITE : 0) |
	                     EV_PERSIST);
	if (ev) {
		event_del(ev);
		event_assign(ev, s->base, fd, kind, on_socket_event, s);
	} else {
		ev = xcheck(event_new(s->base, fd, kind, on_socket_event, s));
		curl_multi_assign(s->multi, fd, ev);
	}
	event_add(ev, NULL);
	return 0;
}

static void on_curl_timer(evutil_socket_t fd, short what, void *arg)
{
	scraper_t *s = arg;
	int running;
	curl_multi_socket_action(s->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	check_done(s);
}

static int on_curl_timer_change(CURLM *m, long timeout_ms, void *userp)
{
	scraper_t *s = userp;
	if (timeout_ms < 0) {
		evtimer_del(s->curl_timer);
		return 0;
	}
	struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
	evtimer_add(s->curl_timer, &tv);
	return 0;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg)
{
	scrape_job_t *j = arg;
	size_t n = size * nmemb;
	if (buf_append(&j->body, p, n) < 0) {
		j->too_large = 1;
		return 0; /* aborts the transfer */
	}
	return n;
}

/* The result of a finished transfer, from curl's code and the HTTP status. */
static int classify(scrape_job_t *j, CURLcode rc, long status)
{
	if (j->too_large || rc == CURLE_FILESIZE_EXCEEDED) {
		snprintf(j->detail, sizeof j->detail, "the response is larger than %u MiB",
		         LIMIT_SCRAPE_BODY_BYTES >> 20);
		return SCRAPE_TOO_LARGE;
	}
	if (rc == CURLE_OPERATION_TIMEDOUT) {
		snprintf(j->detail, sizeof j->detail, "no complete answer within %llds",
		         (long long)(j->t.timeout_ns / NS_PER_SEC));
		return SCRAPE_TIMEOUT;
	}
	if (rc != CURLE_OK) {
		snprintf(j->detail, sizeof j->detail, "%s",
		         j->errbuf[0] ? j->errbuf : curl_easy_strerror(rc));
		return SCRAPE_CONNECTION_ERROR;
	}
	snprintf(j->detail, sizeof j->detail, "HTTP %ld", status);
	if (status >= 300 && status < 400)
		return SCRAPE_HTTP_3XX;
	if (status >= 400 && status < 500)
		return SCRAPE_HTTP_4XX;
	if (status == 500 &&
	    memmem(j->body.p ? (const void *)j->body.p : "", j->body.n, "cpu profiling already in use", 28))
		return SCRAPE_TARGET_BUSY;
	if (status >= 500)
		return SCRAPE_HTTP_5XX;
	if (status < 200 || status >= 300)
		return SCRAPE_CONNECTION_ERROR;
	return SCRAPE_OK;
}

static void check_done(scraper_t *s)
{
	CURLMsg *msg;
	int left;
	while ((msg = curl_multi_info_read(s->multi, &left))) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		CURL *e = msg->easy_handle;
		CURLcode rc = msg->data.result;
		scrape_job_t *j = NULL;
		long status = 0;
		curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&j);
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
		curl_multi_remove_handle(s->multi, e);
		curl_easy_cleanup(e);
		j->easy = NULL;
		s->transfers[j->slot] = NULL;
		s->inflight--;
		j->result = classify(j, rc, status);
		if (j->result == SCRAPE_OK && !s->stopped) {
			job_push(j);
			continue;
		}
		job_finish(j);
	}
}

/* ---- the schedule ---- */

static void schedule(target_state_t *ts, int64_t now)
{
	int64_t iv = ts->s->o.interval_ns;
	int64_t next = ts->next_due_ns ? ts->next_due_ns + iv : 0;
	if (next <= now)
		next = scrape_next_due(now, iv, ts->offset_ns);
	ts->next_due_ns = next;
	int64_t d = next - now;
	struct timeval tv = {(time_t)(d / NS_PER_SEC), (suseconds_t)((d % NS_PER_SEC) / 1000)};
	evtimer_add(ts->timer, &tv);
}

static void start_scrape(target_state_t *ts)
{
	scraper_t *s = ts->s;
	scrape_job_t *j = xcalloc(1, sizeof *j);
	j->s = s;
	j->ts = ts;
	j->t = ts->t;
	j->delta = ts->delta;
	j->started_ns = time_now_ns();
	buf_init(&j->body, LIMIT_SCRAPE_BODY_BYTES);
	ts->job = j;
	if (s->inflight >= LIMIT_SCRAPE_INFLIGHT) {
		j->result = SCRAPE_SKIPPED_CONCURRENCY;
		snprintf(j->detail, sizeof j->detail, "%d scrapes already in flight; retried next interval",
		         LIMIT_SCRAPE_INFLIGHT);
		job_finish(j);
		return;
	}
	CURL *e = xcheck(curl_easy_init());
	long timeout_ms = (long)(j->t.timeout_ns / 1000000);
	curl_easy_setopt(e, CURLOPT_URL, j->t.url);
	curl_easy_setopt(e, CURLOPT_PRIVATE, j);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, j);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, j->errbuf);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);        /* OPS: Scrape requests: http_3xx */
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, s->no_headers); /* OPS: Scrape requests: no request headers */
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);        /* OPS: Annotations: https unverified */
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms > 0 ? timeout_ms : 1L);
	curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)LIMIT_SCRAPE_BODY_BYTES);
	/* A target is scraped again only an interval (>= 10 s) later: keeping its
	 * connection buys nothing, and with thousands of targets libcurl's
	 * connection cache (scanned in full for the oldest idle connection each
	 * time one is added to a full cache) cost a fifth of the sensor's CPU
	 * (bench/scrape.sh). */
	curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
	int slot = 0;
	while (s->transfers[slot])
		slot++;
	j->slot = slot;
	j->easy = e;
	s->transfers[slot] = j;
	s->inflight++;
	curl_multi_add_handle(s->multi, e);
}

static void on_due(evutil_socket_t fd, short what, void *arg)
{
	target_state_t *ts = arg;
	schedule(ts, time_mono_ns());
	if (ts->job)
		return; /* the previous scrape (decode) is still running: this round is left out */
	start_scrape(ts);
}

/* ---- the target set ---- */

static target_state_t *target_new(scraper_t *s, const scrape_target_t *t)
{
	target_state_t *ts = xcalloc(1, sizeof *ts);
	ts->s = s;
	ts->t = *t;
	ts->last_result = -1;
	scrape_mask_url(t->url, ts->masked, sizeof ts->masked);
	ts->offset_ns = scrape_offset_ns(t->key, s->o.interval_ns);
	ts->timer = xcheck(evtimer_new(s->base, on_due, ts));
	if (t->type == SCRAPE_MEMORY)
		ts->delta = scrape_delta_new(LIMIT_SCRAPE_DELTA_ENTRIES);
	schedule(ts, time_mono_ns());
	return ts;
}

void scraper_set_targets(scraper_t *s, const scrape_target_t *t, size_t n)
{
	u64map_t old;
	u64map_init(&old);
	for (size_t i = 0; i < s->n_targets; i++)
		u64map_put(&old, hash_bytes(s->targets[i]->t.key, strlen(s->targets[i]->t.key), 0),
		           (uint32_t)i);
	uint8_t *taken = xcalloc(s->n_targets ? s->n_targets : 1, 1);
	target_state_t **next = xcalloc(n ? n : 1, sizeof *next);
	size_t k = 0;
	u64map_t seen;
	u64map_init(&seen);
	for (size_t i = 0; i < n; i++) {
		if (t[i].type < 0 || t[i].type >= SCRAPE_TYPES || t[i].timeout_ns > s->o.interval_ns ||
		    !t[i].key[0])
			continue;
		uint64_t h = hash_bytes(t[i].key, strlen(t[i].key), 0);
		int inserted;
		u64map_get_or_put(&seen, h, 1, &inserted);
		if (!inserted)
			continue;
		uint32_t ix;
		if (u64map_get(&old, h, &ix) && !taken[ix] && !strcmp(s->targets[ix]->t.key, t[i].key)) {
			taken[ix] = 1;
			target_state_t *ts = s->targets[ix];
			ts->t = t[i];
			scrape_mask_url(t[i].url, ts->masked, sizeof ts->masked);
			next[k++] = ts;
		} else {
			next[k++] = target_new(s, &t[i]);
		}
	}
	for (size_t i = 0; i < s->n_targets; i++) {
		if (taken[i])
			continue;
		target_state_t *ts = s->targets[i];
		if (ts->job) {
			ts->removed = 1;
			event_free(ts->timer);
			ts->timer = NULL;
		} else {
			target_free(ts);
		}
	}
	free(s->targets);
	s->targets = next;
	s->n_targets = k;
	free(taken);
	u64map_free(&old);
	u64map_free(&seen);
}

void scraper_report_skip_reason(scraper_t *s, const char *reason, const char *namespace_, const char *pod,
                                const char *type, uint32_t count)
{
	int slot = -1, free_slot = -1;
	for (int i = 0; i < SKIP_REASONS; i++) {
		if (!strcmp(s->skips[i].reason, reason))
			slot = i;
		else if (!s->skips[i].reason[0] && free_slot < 0)
			free_slot = i;
	}
	if (slot < 0) {
		if (free_slot < 0 || !count)
			return;
		slot = free_slot;
		snprintf(s->skips[slot].reason, sizeof s->skips[slot].reason, "%s", reason);
	}
	if (count && !s->skips[slot].active)
		log_warn("profile scrape targets skipped",
		         "reason=%s namespace=\"%s\" pod=\"%s\" type=%s count=%u", reason,
		         namespace_ ? namespace_ : "", pod ? pod : "", type ? type : "", count);
	s->skips[slot].active = count > 0;
}

/* ---- /api/targets and /metrics ---- */

static void put_time(buf_t *out, const char *name, int64_t ns)
{
	if (!ns) {
		buf_printf(out, ",\"%s\":null", name);
		return;
	}
	time_t secs = (time_t)(ns / NS_PER_SEC);
	struct tm tm;
	gmtime_r(&secs, &tm);
	char b[40];
	strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%S", &tm);
	buf_printf(out, ",\"%s\":\"%s.%03dZ\"", name, b, (int)((ns % NS_PER_SEC) / 1000000));
}

static void put_field(buf_t *out, const char *name, const char *value, int first)
{
	buf_printf(out, "%s\"%s\":", first ? "" : ",", name);
	buf_json_str(out, slice_cstr(value));
}

static int by_key(const void *a, const void *b)
{
	return strcmp((*(target_state_t *const *)a)->t.key, (*(target_state_t *const *)b)->t.key);
}

void scraper_write_targets(scraper_t *s, buf_t *out)
{
	target_state_t **sorted = xcalloc(s->n_targets ? s->n_targets : 1, sizeof *sorted);
	memcpy(sorted, s->targets, s->n_targets * sizeof *sorted);
	qsort(sorted, s->n_targets, sizeof *sorted, by_key);
	buf_puts(out, "{\"targets\":[");
	for (size_t i = 0; i < s->n_targets; i++) {
		const target_state_t *ts = sorted[i];
		buf_puts(out, i ? ",{" : "{");
		put_field(out, "key", ts->t.key, 1);
		put_field(out, "type", type_name(ts->t.type), 0);
		put_field(out, "url", ts->masked, 0);
		put_field(out, "namespace", ts->t.namespace_, 0);
		put_field(out, "pod", ts->t.pod, 0);
		put_field(out, "container", ts->t.container, 0);
		put_field(out, "service", ts->t.service, 0);
		if (ts->last_result < 0)
			buf_puts(out, ",\"last_result\":null");
		else
			put_field(out, "last_result", scrape_result_name(ts->last_result), 0);
		put_time(out, "last_scrape", ts->last_scrape_ns);
		put_time(out, "last_success", ts->last_success_ns);
		buf_printf(out, ",\"consecutive_failures\":%u,\"in_progress\":%s,\"results\":{",
		           ts->consecutive, ts->job ? "true" : "false");
		for (int r = 0; r < SCRAPE_RESULTS; r++)
			buf_printf(out, "%s\"%s\":%llu", r ? "," : "", scrape_result_name(r),
			           (unsigned long long)ts->counts[r]);
		buf_puts(out, "}}");
	}
	buf_puts(out, "]}\n");
	free(sorted);
}

void scraper_write_metrics(scraper_t *s, buf_t *out)
{
	buf_puts(out,
	         "# HELP kiln_scrape_results_total Scrapes of pprof endpoints, by profile type and result.\n"
	         "# TYPE kiln_scrape_results_total counter\n");
	for (int t = 0; t < SCRAPE_TYPES; t++)
		for (int r = 0; r < SCRAPE_RESULTS; r++)
			buf_printf(out, "kiln_scrape_results_total{type=\"%s\",result=\"%s\"} %llu\n",
			           type_name(t), scrape_result_name(r), (unsigned long long)s->results[t][r]);
	buf_printf(out,
	           "# HELP kiln_scrape_targets Scrape targets (one per endpoint and profile type).\n"
	           "# TYPE kiln_scrape_targets gauge\n"
	           "kiln_scrape_targets %zu\n"
	           "# HELP kiln_scrape_inflight Scrape transfers running now.\n"
	           "# TYPE kiln_scrape_inflight gauge\n"
	           "kiln_scrape_inflight %u\n",
	           s->n_targets, s->inflight);
}

/* ---- life cycle ---- */

scraper_t *scraper_new(const scraper_opts_t *o)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return NULL;
	scraper_t *s = xcalloc(1, sizeof *s);
	s->o = *o;
	s->base = loop_base(o->loop);
	s->multi = xcheck(curl_multi_init());
	s->curl_timer = xcheck(evtimer_new(s->base, on_curl_timer, s));
	s->no_headers = xcheck(curl_slist_append(NULL, "Accept:")); /* curl's only default header */
	curl_multi_setopt(s->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
	curl_multi_setopt(s->multi, CURLMOPT_SOCKETDATA, s);
	curl_multi_setopt(s->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer_change);
	curl_multi_setopt(s->multi, CURLMOPT_TIMERDATA, s);
	return s;
}

void scraper_stop(scraper_t *s)
{
	if (!s || s->stopped)
		return;
	s->stopped = 1;
	for (size_t i = 0; i < s->n_targets; i++)
		evtimer_del(s->targets[i]->timer);
	for (int i = 0; i < LIMIT_SCRAPE_INFLIGHT; i++) {
		scrape_job_t *j = s->transfers[i];
		if (!j)
			continue;
		curl_multi_remove_handle(s->multi, j->easy);
		curl_easy_cleanup(j->easy);
		s->transfers[i] = NULL;
		s->inflight--;
		j->ts->job = NULL;
		if (j->ts->removed)
			target_free(j->ts);
		job_free(j);
	}
	curl_multi_cleanup(s->multi);
	s->multi = NULL;
	event_free(s->curl_timer);
	s->curl_timer = NULL;
	for (size_t i = 0; i < s->n_targets; i++) {
		event_free(s->targets[i]->timer);
		s->targets[i]->timer = NULL;
	}
}

void scraper_free(scraper_t *s)
{
	if (!s)
		return;
	scraper_stop(s);
	for (size_t i = 0; i < s->n_targets; i++)
		target_free(s->targets[i]);
	free(s->targets);
	curl_slist_free_all(s->no_headers);
	free(s);
	curl_global_cleanup();
}
