/* Private to scrape/k8s*.c: the table of pods the watcher has reported, which
 * decides what a re-list or a non-Running pod deletes and answers k8s_pod_by_ip.
 * Written on the loop thread only; a mutex lets other threads read it. */
#ifndef KILN_SCRAPE_K8S_INT_H
#define KILN_SCRAPE_K8S_INT_H

#include <pthread.h>

#include "scrape/k8s.h"

typedef struct {
	char ip[64];
	unsigned gen; /* the list generation that last saw the pod */
	k8s_pod_info_t info;
} k8s_pod_entry_t;

typedef struct {
	pthread_mutex_t mu;
	k8s_pod_entry_t *v;
	size_t n, cap;
} k8s_pod_table_t;

/* The string at obj.a (or obj.a.b when b is not NULL); NULL when absent or not a string. */
const char *k8s_json_str(const json_t *obj, const char *a, const char *b);

void k8s_pods_init(k8s_pod_table_t *t);
void k8s_pods_free(k8s_pod_table_t *t);
/* Records a live pod (k8s_pod_is_live) seen in list generation gen. 0 ok,
 * -1 when the pod lacks namespace/name, a field is too long for k8s_pod_info_t
 * (or the podIP for its 64 bytes), or the table holds LIMIT_K8S_PODS others. */
int k8s_pods_put(k8s_pod_table_t *t, const json_t *pod, unsigned gen);
/* Forgets ns/name; 1 when it was known. */
int k8s_pods_remove(k8s_pod_table_t *t, const char *ns, const char *name);
/* Removes one pod not seen in generation gen, copying its namespace and name
 * out (ns ≥ 64, name ≥ 254 bytes); 0 when none is left. */
int k8s_pods_take_stale(k8s_pod_table_t *t, unsigned gen, char *ns, char *name);
/* k8s_pod_by_ip's work: copies the pod with status.podIP ip; 1 found. */
int k8s_pod_lookup_ip(k8s_pod_table_t *t, const char *ip, k8s_pod_info_t *out);
/* Number of pods known. */
size_t k8s_pods_count(k8s_pod_table_t *t);

/* Tests and fuzzing: a watcher with no loop, API server, token or timers.
 * It "requests" as a started one does, and k8s_watch_feed plays the answers.
 * Free it with k8s_watch_free; callbacks run inside k8s_watch_feed. */
k8s_watcher_t *k8s_watch_detached(const k8s_callbacks_t *cb, void *ctx);
/* As if n bytes of a 200 answer arrived for the request in flight (a list page
 * until one ends a full list, then the watch stream; a retry that was due
 * starts first), in any pieces; end: the answer is complete (curl finished
 * it). Returns 1 when the request now in flight is the watch, else 0. */
int k8s_watch_feed(k8s_watcher_t *w, const char *p, size_t n, int end);

#endif
