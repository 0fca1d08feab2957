/* libFuzzer target for scrape/k8s.c and k8s_pods.c: the pod list page and
 * the watch stream as the API server would send them, played into a
 * detached watcher (k8s_watch_feed: no loop, no curl). Input: one byte that
 * sets where each answer is cut in two (chunk boundaries), then the list
 * page, a NUL, and the watch event lines. It checks for crashes, leaks and
 * UB, and that every pod reported is live and found by its IP. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/log.h"
#include "scrape/k8s_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
	k8s_watcher_t *w;
	unsigned upserts, deletes, syncs;
} fuzz_ctx;

static int terminated(const char *s, size_t n)
{
	return strnlen(s, n) < n;
}

static void pod_upsert(void *arg, const json_t *pod)
{
	fuzz_ctx *f = arg;
	const char *ip = k8s_json_str(pod, "status", "podIP");
	k8s_pod_info_t info;
	if (!k8s_pod_is_live(pod) || !ip || !k8s_pod_by_ip(f->w, ip, &info))
		abort();
	if (!terminated(info.namespace_, sizeof info.namespace_) ||
	    !terminated(info.name, sizeof info.name) || !terminated(info.workload, sizeof info.workload) ||
	    !terminated(info.owner_kind, sizeof info.owner_kind) ||
	    !terminated(info.container, sizeof info.container) || info.containers < 0)
		abort();
	f->upserts++;
}

static void pod_delete(void *arg, const char *ns, const char *name)
{
	fuzz_ctx *f = arg;
	if (!ns || !name)
		abort();
	f->deletes++;
}

static void synced(void *arg)
{
	((fuzz_ctx *)arg)->syncs++;
}

/* One answer in two pieces, cut at cut/255 of its length. */
static void answer(k8s_watcher_t *w, const char *p, size_t n, uint8_t cut)
{
	size_t at = n * cut / 255;
	k8s_watch_feed(w, p, at, 0);
	k8s_watch_feed(w, p + at, n - at, 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int quiet;
	if (!quiet) {
		log_set_level(LOG_ERROR); /* unreadable events are logged as warnings */
		quiet = 1;
	}
	if (size < 1 || size > (1u << 20))
		return 0;
	uint8_t cut = data[0];
	const char *p = (const char *)data + 1;
	size_t n = size - 1;
	const char *nul = memchr(p, '\0', n);
	size_t list_n = nul ? (size_t)(nul - p) : n;
	k8s_callbacks_t cb = {pod_upsert, pod_delete, synced};
	fuzz_ctx f = {0};
	f.w = k8s_watch_detached(&cb, &f);
	answer(f.w, p, list_n, cut);
	if (nul) {
		const char *ev = nul + 1;
		size_t ev_n = n - list_n - 1;
		answer(f.w, ev, ev_n, (uint8_t)(255 - cut));
		answer(f.w, ev, ev_n, cut); /* again: after a relist, or a watch that resumed */
	}
	k8s_watch_free(f.w);
	return 0;
}
