/* Pod watch → annotation targets + static targets → scraper_set_targets. The
 * live pods are kept as their JSON objects (a jansson object keyed by
 * "namespace/name", at most LIMIT_K8S_PODS); every change schedules one rebuild
 * of the whole set DISCOVERY_DEBOUNCE_MS later. Loop thread only. */
#include "scrape/discovery.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "scrape/annotations.h"

struct discovery {
	scraper_t *scraper;
	k8s_watcher_t *watcher;
	struct event *rebuild;
	json_t *pods; /* "ns/name" → Pod */
	annot_settings_t settings;
	scrape_target_t *statics;
	size_t n_statics;
	scrape_skips_t static_skips;
	int64_t
	    interval_ns; /* types whose timeout exceeds it are not scraped: their skips are not reported */
	int full_logged; /* the LIMIT_K8S_PODS warning was logged */
};

static void pod_key(const char *ns, const char *name, char *out, size_t n)
{
	snprintf(out, n, "%s/%s", ns ? ns : "", name ? name : "");
}

static void schedule(discovery_t *d)
{
	if (evtimer_pending(d->rebuild, NULL))
		return;
	struct timeval tv = {0, DISCOVERY_DEBOUNCE_MS * 1000};
	evtimer_add(d->rebuild, &tv);
}

static void on_upsert(void *ctx, const json_t *pod)
{
	discovery_t *d = ctx;
	json_t *meta = json_object_get(pod, "metadata");
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	const char *name = json_string_value(json_object_get(meta, "name"));
	if (!ns || !name)
		return;
	char key[2 * LIMIT_SCRAPE_NAME_BYTES + 2];
	pod_key(ns, name, key, sizeof key);
	if (!json_object_get(d->pods, key) && json_object_size(d->pods) >= LIMIT_K8S_PODS) {
		if (!d->full_logged)
			log_warn("too many pods on the node: the rest are not scraped", "max=%d",
			         LIMIT_K8S_PODS);
		d->full_logged = 1;
		return;
	}
	json_object_set(d->pods, key, (json_t *)pod);
	schedule(d);
}

static void on_delete(void *ctx, const char *ns, const char *name)
{
	discovery_t *d = ctx;
	char key[2 * LIMIT_SCRAPE_NAME_BYTES + 2];
	pod_key(ns, name, key, sizeof key);
	if (json_object_del(d->pods, key) == 0)
		schedule(d);
}

static void on_synced(void *ctx)
{
	schedule(ctx);
}

/* The whole target set: static targets, then every pod's in key order. */
static void rebuild(evutil_socket_t fd, short what, void *arg)
{
	discovery_t *d = arg;
	size_t cap = d->n_statics + json_object_size(d->pods) * SCRAPE_TYPES + 1;
	scrape_target_t *t = xcalloc(cap, sizeof *t);
	memcpy(t, d->statics, d->n_statics * sizeof *t);
	size_t n = d->n_statics;
	scrape_skips_t sk = d->static_skips;
	const char *key;
	json_t *pod;
	json_object_foreach(d->pods, key, pod)
	{
		annot_skip_t skips[SCRAPE_TYPES];
		size_t got = 0, n_skips = 0;
		err_t err;
		if (annot_pod_targets(pod, &d->settings, t + n, &got, skips, &n_skips, &err) < 0)
			continue;
		n += got;
		for (size_t i = 0; i < n_skips; i++)
			if (scrape_type_scraped(skips[i].type, d->interval_ns))
				scrape_skips_add(&sk, skips[i].reason, skips[i].namespace_, skips[i].pod,
				                 skips[i].type);
	}
	scraper_set_targets(d->scraper, t, n);
	scraper_report_skips(d->scraper, &sk);
	free(t);
}

discovery_t *discovery_start(const scrape_options_t *c, const k8s_options_t *k, const char *node,
                             loop_t *loop, scraper_t *s)
{
	for (uint32_t i = 0; i < c->n_prefixes; i++)
		if (!annot_prefix_valid(c->prefixes[i])) {
			log_error("profile scraping is disabled",
			          "reason=\"extraAnnotationPrefixes[%u] is not a DNS subdomain\"", i);
			return NULL;
		}
	discovery_t *d = xcalloc(1, sizeof *d);
	d->scraper = s;
	d->pods = xcheck(json_object());
	d->settings = (annot_settings_t){(const char *const *)c->prefixes, c->n_prefixes, c->default_port};
	d->interval_ns = c->interval_ns;
	d->n_statics = scrape_static_targets(c, 0, &d->statics, &d->static_skips);
	d->rebuild = xcheck(evtimer_new(loop_base(loop), rebuild, d));
	k8s_config_t kc = {
	    .api_server = k->api_server, .token_file = k->token_file, .ca_file = k->ca_file, .node = node};
	static const k8s_callbacks_t cb = {on_upsert, on_delete, on_synced};
	err_t err;
	d->watcher = k8s_watch_start(loop_base(loop), &kc, &cb, d, &err);
	if (!d->watcher) {
		log_error("pod discovery cannot start", "node=%s error=\"%s\"", node, err.msg);
		discovery_stop(d);
		discovery_free(d);
		return NULL;
	}
	log_info("pod discovery started", "node=%s api_server=%s", node,
	         k->api_server ? k->api_server : "in-cluster");
	return d;
}

k8s_watcher_t *discovery_watcher(discovery_t *d)
{
	return d ? d->watcher : NULL;
}

void discovery_stop(discovery_t *d)
{
	if (!d)
		return;
	k8s_watch_stop(d->watcher);
	if (d->rebuild) {
		event_free(d->rebuild);
		d->rebuild = NULL;
	}
}

void discovery_free(discovery_t *d)
{
	if (!d)
		return;
	discovery_stop(d);
	k8s_watch_free(d->watcher);
	json_decref(d->pods);
	free(d->statics);
	free(d);
}
