/* The pure rules of the scrape loop (OPS: Scrape settings, OPS: Scraped profile types, OPS: Scrape requests,
 * OPS: Scrape limits): settings checks, static targets (per-type defaults from target.c), URL masking, the
 * schedule, .sample_types and the row limit. No I/O, no state. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/limits.h"
#include "scrape/delta.h"
#include "scrape/scraper.h"

#define SEC 1000000000LL

static const char *const result_names[SCRAPE_RESULTS] = {
    "ok",       "connection_error", "timeout",          "http_4xx",  "http_3xx",
    "http_5xx", "target_busy",      "validation_error", "too_large", "skipped_concurrency",
    "store_busy",
};

const char *scrape_result_name(int result)
{
	return result >= 0 && result < SCRAPE_RESULTS ? result_names[result] : "unknown";
}

void scrape_mask_url(const char *url, char *out, size_t n)
{
	if (!n)
		return;
	size_t o = 0;
#define PUT(c)                                                                                                         \
	do {                                                                                                               \
		if (o + 1 < n)                                                                                                 \
			out[o++] = (c);                                                                                            \
	} while (0)
	const char *p = url;
	/* userinfo: scheme://user:PASSWORD@host */
	const char *auth = strstr(url, "://");
	if (auth) {
		auth += 3;
		size_t hostlen = strcspn(auth, "/?#");
		const char *at = memchr(auth, '@', hostlen);
		const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
		if (colon) {
			for (; p <= colon; p++)
				PUT(*p);
			for (const char *m = "***"; *m; m++)
				PUT(*m);
			p = at;
		}
	}
	for (; *p && *p != '?'; p++)
		PUT(*p);
	if (*p == '?') {
		PUT('?');
		p++;
	}
	while (*p) {
		size_t len = strcspn(p, "&#");
		const char *eq = memchr(p, '=', len);
		size_t keylen = eq ? (size_t)(eq - p) : len;
		int keep = !eq || (keylen == 7 && !memcmp(p, "seconds", 7)) || eq + 1 == p + len;
		for (size_t i = 0; i < (keep ? len : keylen + 1); i++)
			PUT(p[i]);
		if (!keep)
			for (const char *m = "***"; *m; m++)
				PUT(*m);
		p += len;
		if (*p == '#')
			break; /* a fragment is never sent; not shown */
		if (*p == '&') {
			PUT('&');
			p++;
		}
	}
#undef PUT
	out[o] = 0;
}

int64_t scrape_offset_ns(const char *key, int64_t interval_ns)
{
	int64_t ms = interval_ns / 1000000;
	if (ms <= 0)
		return 0;
	return (int64_t)(hash_bytes(key, strlen(key), 0) % (uint64_t)ms) * 1000000;
}

int64_t scrape_next_due(int64_t now_ns, int64_t interval_ns, int64_t offset_ns)
{
	int64_t r = (now_ns - offset_ns) % interval_ns;
	if (r < 0)
		r += interval_ns;
	return now_ns - r + interval_ns;
}

/* A Kubernetes annotation prefix: a DNS subdomain (lowercase letters,
 * digits, '-', '.', alphanumeric at both ends, ≤ 253 bytes). */
static int valid_prefix(const char *p)
{
	size_t n = strlen(p);
	if (n == 0 || n > 253)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (!alnum && !((c == '-' || c == '.') && i > 0 && i + 1 < n))
			return 0;
	}
	return 1;
}

int scrape_check_settings(int64_t interval_ns, char *const *prefixes, uint32_t n_prefixes, int type_ok[SCRAPE_TYPES],
                          char *invalid, size_t invalid_n, char *reason, size_t reason_n)
{
	if (invalid_n)
		invalid[0] = 0;
	if (interval_ns < LIMIT_SCRAPE_INTERVAL_MIN_NS) {
		snprintf(reason, reason_n, "interval %.3gs is below the minimum of 10s", (double)interval_ns / SEC);
		return -1;
	}
	for (uint32_t i = 0; i < n_prefixes; i++)
		if (!valid_prefix(prefixes[i])) {
			snprintf(reason, reason_n,
			         "extraAnnotationPrefixes[%u] '%.64s' is not a DNS subdomain (lowercase letters, digits, - and .)",
			         i, prefixes[i]);
			return -1;
		}
	size_t o = 0;
	for (int t = 0; t < SCRAPE_TYPES; t++) {
		type_ok[t] = scrape_type_get(t)->timeout_ns <= interval_ns;
		if (!type_ok[t] && o < invalid_n)
			o += (size_t)snprintf(invalid + o, invalid_n - o, "%s%s", o ? "," : "",
			                      scrape_type_name(t));
	}
	return 0;
}

/* The `seconds` query value of path: 1 and *v when present, 0 when absent,
 * -1 when not a number. */
static int seconds_param(const char *path, long *v)
{
	const char *q = strchr(path, '?');
	while (q) {
		q++;
		if (!strncmp(q, "seconds=", 8)) {
			char *end;
			*v = strtol(q + 8, &end, 10);
			return (end == q + 8 || (*end && *end != '&')) ? -1 : 1;
		}
		q = strchr(q, '&');
	}
	return 0;
}

int scrape_static_target(const scrape_static_options_t *c, int type, scrape_target_t *t, const char **reason,
                         char *msg, size_t msg_n)
{
	const scrape_type_options_t *tc = &c->types[type];
	memset(t, 0, sizeof *t);
	t->type = type;
	*reason = "invalid_target";
	const char *scheme = tc->scheme ? tc->scheme : "http";
	const char *hostport = NULL;
	char hp[300];
	if (c->url) {
		const char *sep = strstr(c->url, "://");
		if (!sep || (strncmp(c->url, "http://", 7) && strncmp(c->url, "https://", 8))) {
			snprintf(msg, msg_n, "url %.200s must start with http:// or https://", c->url);
			return -1;
		}
		if (!tc->scheme)
			scheme = !strncmp(c->url, "https", 5) ? "https" : "http";
		hostport = sep + 3;
		size_t n = strcspn(hostport, "/?#");
		if (hostport[n] && strcmp(hostport + n, "/")) {
			snprintf(msg, msg_n, "url %.200s must be scheme://host:port without a path (set types.TYPE.path)",
			         c->url);
			return -1;
		}
		snprintf(hp, sizeof hp, "%.*s", (int)(n < 299 ? n : 299), hostport);
		/* A port that is given must be a number 1-65535. */
		const char *colon = strrchr(hp, ':');
		if (colon && !strchr(colon, ']')) {
			char *end;
			long port = strtol(colon + 1, &end, 10);
			if (end == colon + 1 || *end || port < 1 || port > 65535) {
				*reason = "invalid_port";
				snprintf(msg, msg_n, "url %.200s has an invalid port", c->url);
				return -1;
			}
		}
	} else {
		snprintf(hp, sizeof hp, strchr(c->host, ':') ? "[%.200s]:%d" : "%.200s:%d", c->host, c->port);
	}
	if (strcmp(scheme, "http") && strcmp(scheme, "https")) {
		snprintf(msg, msg_n, "%s.scheme %.32s must be http or https", scrape_type_name(type), scheme);
		return -1;
	}
	const scrape_type_info_t *ti = scrape_type_get(type);
	const char *path = tc->path && *tc->path ? tc->path : ti->default_path;
	if (path[0] != '/') {
		snprintf(msg, msg_n, "%s.path %.200s must start with /", scrape_type_name(type), path);
		return -1;
	}
	int64_t window = (int64_t)ti->default_seconds * SEC, timeout = ti->timeout_ns;
	char extra[32] = "";
	if (window) {
		long secs = 0;
		int has = seconds_param(path, &secs);
		if (has == 0) {
			secs = (long)(window / SEC);
			snprintf(extra, sizeof extra, "%cseconds=%ld", strchr(path, '?') ? '&' : '?', secs);
		} else if (has < 0 || secs < 1 || secs > ti->max_seconds) {
			snprintf(msg, msg_n, "%s.path %.200s: seconds must be from 1 to %d", ti->name, path, ti->max_seconds);
			return -1;
		}
		window = (int64_t)secs * SEC;
	}
	int n = snprintf(t->url, sizeof t->url, "%s://%s%s%s", scheme, hp, path, extra);
	if (n < 0 || (size_t)n >= sizeof t->url) {
		snprintf(msg, msg_n, "the url of %s is longer than %d bytes", scrape_type_name(type),
		         LIMIT_SCRAPE_URL_BYTES - 1);
		return -1;
	}
	t->https = !strcmp(scheme, "https");
	t->timeout_ns = timeout;
	t->window_ns = window;
	snprintf(t->sample_types, sizeof t->sample_types, "%s", tc->sample_types ? tc->sample_types : "");
	snprintf(t->namespace_, sizeof t->namespace_, "%s", c->namespace_ ? c->namespace_ : "");
	snprintf(t->pod, sizeof t->pod, "%s", c->pod ? c->pod : "");
	snprintf(t->container, sizeof t->container, "%s", c->container ? c->container : "");
	snprintf(t->workload, sizeof t->workload, "%s", c->workload ? c->workload : "");
	/* service.name: the service setting, else the workload, else the target's name (OPS: Scrape
	 * attribution). */
	const char *svc = c->service && *c->service ? c->service : c->workload && *c->workload ? c->workload : c->name;
	snprintf(t->service, sizeof t->service, "%s", svc);
	snprintf(t->key, sizeof t->key, "static/%.200s/%s", c->name, scrape_type_name(type));
	return 0;
}

/* Next comma-separated name of *p (spaces trimmed) into name; 0 at the end. */
static int next_name(const char **p, char *name, size_t n)
{
	while (**p == ',' || **p == ' ')
		(*p)++;
	if (!**p)
		return 0;
	size_t len = strcspn(*p, ",");
	size_t k = len;
	while (k && (*p)[k - 1] == ' ')
		k--;
	snprintf(name, n, "%.*s", (int)k, *p);
	*p += len;
	return 1;
}

int scrape_filter_sample_types(model_batch_t *b, const char *list, err_t *err)
{
	if (!list || !*list)
		return 0;
	uint8_t *drop = malloc(b->n_profiles ? b->n_profiles : 1);
	if (!drop)
		abort();
	memset(drop, 1, b->n_profiles);
	char name[128];
	const char *p = list;
	int rc = 0;
	while (rc == 0 && next_name(&p, name, sizeof name)) {
		int found = 0;
		for (uint32_t i = 0; i < b->n_profiles; i++)
			if (slice_eq_cstr(b->profiles[i].sample_type, name)) {
				drop[i] = 0;
				found = 1;
			}
		if (!found) {
			char have[256] = "";
			size_t o = 0;
			for (uint32_t i = 0; i < b->n_profiles && o < sizeof have; i++)
				o += (size_t)snprintf(have + o, sizeof have - o, "%s%.*s", i ? "," : "", (int)b->profiles[i].sample_type.n,
				                      (const char *)b->profiles[i].sample_type.p);
			rc = err_set(err, 400, "sample type %s (from .sample_types) is not in the profile; it has %s", name,
			             o ? have : "none");
		}
	}
	if (rc == 0)
		scrape_drop_profiles(b, drop);
	free(drop);
	return rc;
}

int scrape_check_rows(const model_batch_t *b, uint32_t max_rows, err_t *err)
{
	if (!max_rows)
		max_rows = LIMIT_SAMPLE_ROWS;
	for (uint32_t i = 0; i < b->n_profiles; i++)
		if (b->profiles[i].samples_count > max_rows)
			return err_set(err, 413, "profile %.*s has %" PRIu32 " rows; the limit is %" PRIu32
			                         " (receivers.profiles.maxDecodedSampleRows)",
			               (int)b->profiles[i].sample_type.n, (const char *)b->profiles[i].sample_type.p,
			               b->profiles[i].samples_count, max_rows);
	return 0;
}
