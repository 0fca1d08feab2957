/* Who is calling and may they: key identification per listener (OPS: Roles and listeners, OPS: Projects and
 * keys, OPS: Trusting X-Scope-OrgID) and the request counters behind /metrics. The rate limit (OPS: Rate
 * limits) and usage counting (OPS: Usage) are the push job's (ingest/push.c). */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "api/api.h"

#define DEFAULT_NAME "default"

/* The value of cookie `name` in a Cookie header, or an empty slice. */
static slice_t cookie_value(const slice_t *cookie, const char *name)
{
	slice_t none = {NULL, 0};
	if (!cookie)
		return none;
	size_t nl = strlen(name), i = 0;
	while (i < cookie->n) {
		while (i < cookie->n && (cookie->p[i] == ' ' || cookie->p[i] == ';'))
			i++;
		size_t start = i;
		while (i < cookie->n && cookie->p[i] != ';')
			i++;
		if (i - start > nl && memcmp(cookie->p + start, name, nl) == 0 &&
		    cookie->p[start + nl] == '=')
			return slice_make(cookie->p + start + nl + 1, i - start - nl - 1);
	}
	return none;
}

/* The password of `Authorization: Basic base64(user:password)` into out
 * (LIMIT_KEY_BYTES + 1 bytes at least): 1, or 0 when it is not Basic, not
 * base64, has no ':' or an empty or over-long password. */
static int basic_password(slice_t authorization, char *out, slice_t *key)
{
	const uint8_t *p = authorization.p, *end = p + authorization.n;
	if (authorization.n < 6 || strncasecmp((const char *)p, "basic", 5) != 0 ||
	    (p[5] != ' ' && p[5] != '\t'))
		return 0;
	for (p += 5; p < end && (*p == ' ' || *p == '\t'); p++)
		;
	while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '='))
		end--;
	static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char text[LIMIT_KEY_BYTES * 2];
	size_t n = 0;
	uint32_t acc = 0;
	int bits = 0;
	for (; p < end; p++) {
		const char *d = *p ? strchr(alphabet, *p) : NULL;
		if (!d)
			return 0;
		acc = (acc << 6) | (uint32_t)(d - alphabet);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (n == sizeof text)
				return 0;
			text[n++] = (char)((acc >> bits) & 0xff);
		}
	}
	const char *colon = memchr(text, ':', n);
	if (!colon)
		return 0;
	size_t len = n - (size_t)(colon + 1 - text);
	if (!len || len > LIMIT_KEY_BYTES)
		return 0;
	memcpy(out, colon + 1, len);
	*key = slice_make(out, len);
	return 1;
}

/* The caller of a listener without auth: project default, or the project
 * X-Scope-OrgID names where the listener trusts it (OPS: Trusting
 * X-Scope-OrgID); its traffic is counted under the key name default either way. */
static int anonymous_caller(const api_listener_t *l, const slice_t *scope_org_id, ingest_caller_t *c,
                            err_t *err)
{
	snprintf(c->project, sizeof c->project, DEFAULT_NAME);
	snprintf(c->key, sizeof c->key, DEFAULT_NAME);
	c->anonymous = 1;
	if (!l->trust_scope_org_id || !scope_org_id || !scope_org_id->n)
		return 0;
	if (!keys_name_valid(*scope_org_id))
		return err_set(
		    err, 400,
		    "X-Scope-OrgID \"%.*s\" is not a project name: use 1 to 64 of A-Z a-z 0-9 _ . -",
		    (int)(scope_org_id->n > 64 ? 64 : scope_org_id->n), (const char *)scope_org_id->p);
	snprintf(c->project, sizeof c->project, "%.*s", (int)scope_org_id->n, (const char *)scope_org_id->p);
	return 0;
}

int api_identify(const api_listener_t *l, const slice_t *x_kiln_key, const slice_t *authorization,
                 const slice_t *cookie, const slice_t *scope_org_id, int need, ingest_caller_t *c, err_t *err)
{
	if (!l->auth_required)
		return anonymous_caller(l, scope_org_id, c, err);
	slice_t key = {NULL, 0};
	char basic[LIMIT_KEY_BYTES + 1];
	if (x_kiln_key && x_kiln_key->n)
		key = *x_kiln_key;
	else if (authorization && !keys_parse_bearer(*authorization, &key) &&
	         !basic_password(*authorization, basic, &key))
		key.n = 0;
	if (!key.n && l->listener == API_LISTENER_UI)
		key = cookie_value(cookie, "kiln_key");
	if (!key.n)
		return err_set(err, 401,
		               "this listener requires a key: send it in the x-kiln-key header "
		               "(or Authorization: Bearer KEY, or HTTP Basic with the key as the password)");
	keys_info_t info;
	if (!l->api->keys || !keys_lookup(l->api->keys, key, &info)) {
		if (l->api->keys && !keys_ready(l->api->keys)) {
			err_set(err, 503,
			        "keys cannot be checked yet: the store holding them is unreachable");
			if (err)
				err->retry_after = 5;
			return -1;
		}
		return err_set(err, 401,
		               "the key in x-kiln-key (or Authorization: Bearer) is unknown or revoked");
	}
	if (!(info.scope & need))
		return err_set(err, 403, "key %s may only %s; %s needs a key with scope %s or both",
		               info.name, info.scope == KEY_SCOPE_QUERY ? "query" : "push profiles",
		               need == KEY_SCOPE_QUERY ? "querying" : "pushing profiles",
		               need == KEY_SCOPE_QUERY ? "query" : "ingest");
	snprintf(c->project, sizeof c->project, "%s", info.project);
	snprintf(c->key, sizeof c->key, "%s", info.name);
	c->anonymous = 0;
	return 0;
}

static const int counted_statuses[8] = {200, 400, 401, 403, 404, 413, 429, 503};

void api_count(api_ctx_t *a, int listener, int status, size_t bytes_in)
{
	if (listener < 0 || listener >= API_LISTENER_COUNT)
		return;
	int cls = status / 100;
	atomic_fetch_add(&a->metrics.requests[listener][cls >= 1 && cls <= 5 ? cls : 0], 1);
	for (int i = 0; i < 8; i++)
		if (counted_statuses[i] == status)
			atomic_fetch_add(&a->metrics.status_counts[listener][i], 1);
	atomic_fetch_add(&a->metrics.bytes_in[listener], bytes_in);
}

int api_retention_days(const api_ctx_t *a, const char *project)
{
	return a->retention ? store_retention_days(a->retention, project) : 14;
}

typedef struct {
	buf_t *out;
	const ingest_caller_t *c;
} metrics_usage_ctx_t;

static void write_usage_totals(slice_t project, slice_t key, const uint64_t counts[USAGE_COUNTERS], void *ctx)
{
	static const char *results[USAGE_COUNTERS] = {"accepted", "rate_limited", "too_large", "invalid",
	                                              "out_of_window"};
	metrics_usage_ctx_t *m = ctx;
	if (!slice_eq_cstr(project, m->c->project))
		return; /* a key sees its own project only */
	for (int i = 0; i < USAGE_COUNTERS; i++)
		buf_printf(m->out, "kiln_samples_total{key=\"%.*s\",result=\"%s\"} %llu\n", (int)key.n,
		           (const char *)key.p, results[i], (unsigned long long)counts[i]);
}

/* One histogram of store times (store_time_bounds_ns) from counts that are not cumulative. */
static void write_time_histogram(buf_t *out, const char *name, const char *help, const uint64_t *buckets,
                                 uint64_t ns_sum)
{
	buf_printf(out, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
	unsigned long long n = 0;
	for (int i = 0; i < STORE_TIME_BUCKETS; i++) {
		n += buckets[i];
		buf_printf(out, "%s_bucket{le=\"%g\"} %llu\n", name, store_time_bounds_ns[i] / 1e9, n);
	}
	n += buckets[STORE_TIME_BUCKETS];
	buf_printf(out, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name, n, name,
	           ns_sum / 1e9, name, n);
}

void api_metrics_write(api_ctx_t *a, const ingest_caller_t *c, buf_t *out)
{
	buf_puts(out, "# HELP kiln_requests_total Requests answered, by listener and status.\n"
	              "# TYPE kiln_requests_total counter\n");
	for (int l = 0; l < API_LISTENER_COUNT; l++) {
		for (int i = 0; i < 8; i++)
			buf_printf(out, "kiln_requests_total{listener=\"%s\",status=\"%d\"} %llu\n",
			           api_listener_names[l], counted_statuses[i],
			           (unsigned long long)atomic_load(&a->metrics.status_counts[l][i]));
		static const char *classes[6] = {"other", "1xx", "2xx", "3xx", "4xx", "5xx"};
		for (int k = 0; k < 6; k++)
			buf_printf(out, "kiln_requests_by_class_total{listener=\"%s\",class=\"%s\"} %llu\n",
			           api_listener_names[l], classes[k],
			           (unsigned long long)atomic_load(&a->metrics.requests[l][k]));
	}
	buf_puts(out, "# HELP kiln_received_bytes_total Request body bytes received, by listener.\n"
	              "# TYPE kiln_received_bytes_total counter\n");
	for (int l = 0; l < API_LISTENER_COUNT; l++)
		buf_printf(out, "kiln_received_bytes_total{listener=\"%s\"} %llu\n", api_listener_names[l],
		           (unsigned long long)atomic_load(&a->metrics.bytes_in[l]));
	buf_puts(out, "# HELP kiln_samples_total Samples pushed with this project's keys, by result.\n"
	              "# TYPE kiln_samples_total counter\n");
	if (a->usage) {
		metrics_usage_ctx_t m = {out, c};
		usage_totals(a->usage, write_usage_totals, &m);
	}
	store_stats_t st;
	store_get_stats(a->store, &st);
	buf_printf(out,
	           "# HELP kiln_store_queue_depth Batches waiting for the store writer.\n"
	           "# TYPE kiln_store_queue_depth gauge\n"
	           "kiln_store_queue_depth %u\n"
	           "# HELP kiln_store_commit_seconds_max Longest group commit since start.\n"
	           "# TYPE kiln_store_commit_seconds_max gauge\n"
	           "kiln_store_commit_seconds_max %.6f\n"
	           "# HELP kiln_store_partitions Day partitions on disk.\n"
	           "# TYPE kiln_store_partitions gauge\n"
	           "kiln_store_partitions %u\n"
	           "# HELP kiln_store_partitions_damaged_total Damaged partition files found (skipped by "
	           "queries, moved "
	           "aside by the writer).\n"
	           "# TYPE kiln_store_partitions_damaged_total counter\n"
	           "kiln_store_partitions_damaged_total %llu\n"
	           "# HELP kiln_store_blocks_sealed_total Blocks written by sealing hours of the embedded "
	           "engine's partitions.\n"
	           "# TYPE kiln_store_blocks_sealed_total counter\n"
	           "kiln_store_blocks_sealed_total %llu\n"
	           "# HELP kiln_store_chunks_sealed_total Stored profiles (chunks) those blocks took in.\n"
	           "# TYPE kiln_store_chunks_sealed_total counter\n"
	           "kiln_store_chunks_sealed_total %llu\n"
	           "# HELP kiln_store_hours_summed_total Rows of summed hours and days the compactor "
	           "wrote.\n"
	           "# TYPE kiln_store_hours_summed_total counter\n"
	           "kiln_store_hours_summed_total %llu\n"
	           "# HELP kiln_store_hours_used_total Summed hours and days queries added instead of "
	           "reading their profiles.\n"
	           "# TYPE kiln_store_hours_used_total counter\n"
	           "kiln_store_hours_used_total %llu\n"
	           "# HELP kiln_inflight_requests Requests being worked on.\n"
	           "# TYPE kiln_inflight_requests gauge\n"
	           "kiln_inflight_requests %u\n",
	           store_queue_depth(a->store), st.commit_ns_max / 1e9, st.partitions,
	           (unsigned long long)st.damaged, (unsigned long long)st.sealed_blocks,
	           (unsigned long long)st.sealed_chunks, (unsigned long long)st.hours_written,
	           (unsigned long long)st.hours_used, api_inflight(a));
	write_time_histogram(out, "kiln_store_commit_seconds", "Group commits of the store writer.",
	                     st.commit_buckets, st.commit_ns_sum);
	write_time_histogram(out, "kiln_store_ack_seconds",
	                     "Time from a batch entering the store's write queue to its acknowledgement as "
	                     "stored (durable).",
	                     st.ack_buckets, st.ack_ns_sum);
	if (a->scraper)
		scraper_write_metrics(a->scraper, out);
}
