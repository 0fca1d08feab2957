/* Push attribution (API: Push attribution): a push that arrives at a sensor from a pod IP
 * the pod watch knows gets that pod's namespace, pod, workload and (when it
 * has one container) container, unless the request names them. Any thread:
 * k8s_pod_by_ip is thread-safe and the watcher outlives the worker pool. */
#include <string.h>

#include "api/api.h"

/* The text IP of a peer "ip:port" or "[v6]:port" into out; 0 when malformed. */
static int peer_ip(slice_t peer, char *out, size_t n)
{
	const char *p = (const char *)peer.p;
	size_t len = peer.n;
	if (len && p[0] == '[') {
		const char *end = memchr(p, ']', len);
		if (!end)
			return 0;
		p++;
		len = (size_t)(end - p);
	} else {
		while (len && p[len - 1] != ':')
			len--;
		if (!len)
			return 0;
		len--;
	}
	if (!len || len >= n)
		return 0;
	memcpy(out, p, len);
	out[len] = 0;
	return 1;
}

int api_peer_pod(const api_ctx_t *a, slice_t peer, k8s_pod_info_t *out)
{
	char ip[64];
	return a->k8s && peer_ip(peer, ip, sizeof ip) && k8s_pod_by_ip(a->k8s, ip, out);
}

/* 1 when p has a series label key with a non-empty value. */
static int has_label(const model_batch_t *b, const model_profile_t *p, const char *key)
{
	for (uint32_t i = 0; i < p->labels_count; i++) {
		const model_label_t *l = &b->series_labels[p->labels_first + i];
		if (slice_eq_cstr(l->key, key) && l->value.n)
			return 1;
	}
	return 0;
}

/* Re-lays p's labels at the end of the batch's label array with the pod's
 * added where p lacks them, then finishes p again (sorts the labels and
 * recomputes its series id; its samples are merged already). */
static void add_pod_labels(model_batch_t *b, model_profile_t *p, const k8s_pod_info_t *pod)
{
	const struct {
		const char *key, *value;
	} add[] = {{"k8s.namespace.name", pod->namespace_},
	           {"k8s.pod.name", pod->name},
	           {"workload", pod->workload},
	           {"k8s.container.name", pod->containers == 1 ? pod->container : ""}};
	int need[4] = {0};
	for (size_t k = 0; k < 4; k++)
		need[k] = add[k].value[0] && !has_label(b, p, add[k].key);
	uint32_t first = p->labels_first, n = p->labels_count;
	p->labels_first = b->n_series_labels;
	p->labels_count = 0;
	for (uint32_t i = 0; i < n; i++) {
		model_label_t l = b->series_labels[first + i]; /* by value: adding may move the array */
		int replaced = 0;                            /* an empty value the pod's replaces */
		for (size_t k = 0; k < 4 && !l.value.n; k++)
			replaced |= need[k] && slice_eq_cstr(l.key, add[k].key);
		if (!replaced)
			model_profile_add_label(b, p, l.key, l.value);
	}
	for (size_t k = 0; k < 4; k++)
		if (need[k])
			model_profile_add_label(b, p, slice_cstr(add[k].key), slice_cstr(add[k].value));
	model_profile_finish(b, p);
}

void api_attribute_batch(const api_ctx_t *a, slice_t peer, model_batch_t *b)
{
	k8s_pod_info_t pod;
	if (!b || !b->n_profiles || !api_peer_pod(a, peer, &pod))
		return;
	for (uint32_t i = 0; i < b->n_profiles; i++) {
		model_profile_t *p = &b->profiles[i];
		if (has_label(b, p, "k8s.namespace.name") || has_label(b, p, "k8s.pod.name"))
			continue; /* the request names its pod */
		add_pod_labels(b, p, &pod);
	}
}
