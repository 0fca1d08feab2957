/* What the watcher reads out of Pod objects (liveness, workload, containers)
 * and the bounded table of known pods behind k8s_pod_by_ip. No I/O here; the
 * list/watch machinery is in k8s.c. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "scrape/k8s_int.h"

const char *k8s_json_str(const json_t *obj, const char *a, const char *b)
{
	const json_t *o = json_object_get(obj, a);
	if (b)
		o = json_object_get(o, b);
	return json_is_string(o) ? json_string_value(o) : NULL;
}

static void copy_str(char *out, size_t n, const char *s, size_t len)
{
	if (!n)
		return;
	if (len >= n)
		len = n - 1;
	memcpy(out, s, len);
	out[len] = '\0';
}

int k8s_pod_is_live(const json_t *pod)
{
	const char *phase = k8s_json_str(pod, "status", "phase");
	const char *ip = k8s_json_str(pod, "status", "podIP");
	return phase && strcmp(phase, "Running") == 0 && ip && ip[0];
}

/* The owner reference with controller: true, else NULL. */
static const json_t *controller_ref(const json_t *pod)
{
	const json_t *refs = json_object_get(json_object_get(pod, "metadata"), "ownerReferences");
	size_t i;
	const json_t *r;
	json_array_foreach(refs, i, r)
	{
		if (json_is_true(json_object_get(r, "controller")))
			return r;
	}
	return NULL;
}

static int ends_with_dash_digits(const char *s, size_t len, size_t min_digits, size_t *cut)
{
	size_t d = 0;
	while (d < len && isdigit((unsigned char)s[len - 1 - d]))
		d++;
	if (d < min_digits || d + 1 >= len || s[len - 1 - d] != '-')
		return 0;
	*cut = len - 1 - d;
	return 1;
}

void k8s_pod_workload(const json_t *pod, char *out, size_t n, char *kind)
{
	const json_t *ref = controller_ref(pod);
	const char *rkind = ref ? k8s_json_str(ref, "kind", NULL) : NULL;
	const char *rname = ref ? k8s_json_str(ref, "name", NULL) : NULL;
	if (!rkind || !rname || !rname[0]) {
		const char *name = k8s_json_str(pod, "metadata", "name");
		copy_str(out, n, name ? name : "", name ? strlen(name) : 0);
		if (kind)
			copy_str(kind, 64, "Pod", 3);
		return;
	}
	size_t len = strlen(rname), cut;
	const char *wkind = rkind;
	if (strcmp(rkind, "ReplicaSet") == 0) {
		const json_t *labels = json_object_get(json_object_get(pod, "metadata"), "labels");
		const char *hash = k8s_json_str(labels, "pod-template-hash", NULL);
		size_t hl = hash ? strlen(hash) : 0;
		if (hl && hl + 1 < len && rname[len - hl - 1] == '-' && strcmp(rname + len - hl, hash) == 0) {
			len -= hl + 1;
			wkind = "Deployment";
		}
	} else if (strcmp(rkind, "Job") == 0 && ends_with_dash_digits(rname, len, 8, &cut)) {
		len = cut;
		wkind = "CronJob";
	}
	copy_str(out, n, rname, len);
	if (kind)
		copy_str(kind, 64, wkind, strlen(wkind));
}

/* Containers that run for the pod's life: spec.containers plus native
 * sidecars (init containers with restartPolicy Always). The only one's name
 * goes to out when there is exactly one. */
static int count_containers(const json_t *pod, char *out, size_t n)
{
	const json_t *spec = json_object_get(pod, "spec");
	const char *only = NULL;
	int count = 0;
	size_t i;
	const json_t *c;
	json_array_foreach(json_object_get(spec, "containers"), i, c)
	{
		count++;
		only = k8s_json_str(c, "name", NULL);
	}
	json_array_foreach(json_object_get(spec, "initContainers"), i, c)
	{
		const char *rp = k8s_json_str(c, "restartPolicy", NULL);
		if (rp && strcmp(rp, "Always") == 0) {
			count++;
			only = k8s_json_str(c, "name", NULL);
		}
	}
	copy_str(out, n, count == 1 && only ? only : "", count == 1 && only ? strlen(only) : 0);
	return count;
}

void k8s_pods_init(k8s_pod_table_t *t)
{
	memset(t, 0, sizeof *t);
	pthread_mutex_init(&t->mu, NULL);
}

void k8s_pods_free(k8s_pod_table_t *t)
{
	free(t->v);
	pthread_mutex_destroy(&t->mu);
	memset(t, 0, sizeof *t);
}

static k8s_pod_entry_t *find_locked(k8s_pod_table_t *t, const char *ns, const char *name)
{
	for (size_t i = 0; i < t->n; i++) {
		if (strcmp(t->v[i].info.name, name) == 0 && strcmp(t->v[i].info.namespace_, ns) == 0)
			return &t->v[i];
	}
	return NULL;
}

int k8s_pods_put(k8s_pod_table_t *t, const json_t *pod, unsigned gen)
{
	const char *ns = k8s_json_str(pod, "metadata", "namespace");
	const char *name = k8s_json_str(pod, "metadata", "name");
	const char *ip = k8s_json_str(pod, "status", "podIP");
	k8s_pod_entry_t e = {.gen = gen};
	if (!ns || !name || !ip || strlen(ns) >= sizeof e.info.namespace_ ||
	    strlen(name) >= sizeof e.info.name || strlen(ip) >= sizeof e.ip)
		return -1;
	copy_str(e.ip, sizeof e.ip, ip, strlen(ip));
	copy_str(e.info.namespace_, sizeof e.info.namespace_, ns, strlen(ns));
	copy_str(e.info.name, sizeof e.info.name, name, strlen(name));
	k8s_pod_workload(pod, e.info.workload, sizeof e.info.workload, NULL);
	const json_t *ref = controller_ref(pod);
	const char *rkind = ref ? k8s_json_str(ref, "kind", NULL) : NULL;
	copy_str(e.info.owner_kind, sizeof e.info.owner_kind, rkind ? rkind : "", rkind ? strlen(rkind) : 0);
	e.info.containers = count_containers(pod, e.info.container, sizeof e.info.container);

	int rc = 0;
	pthread_mutex_lock(&t->mu);
	k8s_pod_entry_t *old = find_locked(t, ns, name);
	if (old) {
		*old = e;
	} else if (t->n >= LIMIT_K8S_PODS) {
		rc = -1;
	} else {
		t->v = xgrow(t->v, &t->cap, t->n + 1, sizeof *t->v);
		t->v[t->n++] = e;
	}
	pthread_mutex_unlock(&t->mu);
	return rc;
}

static void remove_at_locked(k8s_pod_table_t *t, k8s_pod_entry_t *e)
{
	*e = t->v[--t->n];
}

int k8s_pods_remove(k8s_pod_table_t *t, const char *ns, const char *name)
{
	pthread_mutex_lock(&t->mu);
	k8s_pod_entry_t *e = find_locked(t, ns, name);
	if (e)
		remove_at_locked(t, e);
	pthread_mutex_unlock(&t->mu);
	return e != NULL;
}

int k8s_pods_take_stale(k8s_pod_table_t *t, unsigned gen, char *ns, char *name)
{
	int found = 0;
	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < t->n && !found; i++) {
		k8s_pod_entry_t *e = &t->v[i];
		if (e->gen == gen)
			continue;
		copy_str(ns, sizeof e->info.namespace_, e->info.namespace_, strlen(e->info.namespace_));
		copy_str(name, sizeof e->info.name, e->info.name, strlen(e->info.name));
		remove_at_locked(t, e);
		found = 1;
	}
	pthread_mutex_unlock(&t->mu);
	return found;
}

size_t k8s_pods_count(k8s_pod_table_t *t)
{
	pthread_mutex_lock(&t->mu);
	size_t n = t->n;
	pthread_mutex_unlock(&t->mu);
	return n;
}

int k8s_pod_lookup_ip(k8s_pod_table_t *t, const char *ip, k8s_pod_info_t *out)
{
	int found = 0;
	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < t->n; i++) {
		if (strcmp(t->v[i].ip, ip) == 0) {
			*out = t->v[i].info;
			found = 1;
			break;
		}
	}
	pthread_mutex_unlock(&t->mu);
	return found;
}
