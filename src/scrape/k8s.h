/* Kubernetes pod discovery for the sensor (OPS: Discovery): list then watch the pods
 * of one node over libcurl's multi socket API on the libevent loop, so a slow or
 * dead API server never blocks it. No client library; no targets (annotations.c). */
#ifndef KILN_SCRAPE_K8S_H
#define KILN_SCRAPE_K8S_H

#include <jansson.h>

#include "base/err.h"
#include "base/limits.h"

struct event_base;

/* Bounds on what the API server can make the watcher hold: LIMIT_K8S_* in
 * base/limits.h. */

typedef struct {
	const char *
	    api_server; /* NULL: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT; http:// allowed */
	const char *token_file; /* NULL: /var/run/secrets/kubernetes.io/serviceaccount/token; "" = no token */
	const char *ca_file;    /* NULL: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt (https only) */
	const char *node;       /* NULL: $NODE_NAME; required one way or the other */
	/* Tuning, 0 = default; tests shorten them. */
	int token_refresh_ms; /* re-read the token file this often (60,000) */
	int backoff_min_ms;   /* first reconnect delay after an error, doubling (1,000) */
	int backoff_max_ms;   /* ceiling of the delay, before ±20% jitter (30,000) */
	int watch_timeout_s;  /* timeoutSeconds of one watch request (300) */
} k8s_config_t;

/* Called on the loop thread, never re-entered. A callback must not call
 * k8s_watch_stop or k8s_watch_free (post to the loop to do that).
 * - pod_upsert: a Running pod with a pod IP was listed, added or modified
 *   (also for repeats with no change). pod is the full Pod object, borrowed
 *   for the call (json_incref to keep it).
 * - pod_delete: a pod reported by pod_upsert is gone: deleted, no longer
 *   Running, lost its IP, or missing from a re-list.
 * - synced: a full list (the first, or a re-list after 410) was reported;
 *   pod_delete has already been called for every earlier pod it lacks, so a
 *   consumer may also drop any pod it has not seen since the list began. */
typedef struct {
	void (*pod_upsert)(void *ctx, const json_t *pod);
	void (*pod_delete)(void *ctx, const char *ns, const char *name);
	void (*synced)(void *ctx);
} k8s_callbacks_t;

typedef struct k8s_watcher k8s_watcher_t;

/* Starts discovery on base (the loop thread must call this): reads the token,
 * then lists pods with fieldSelector=spec.nodeName=NODE and watches from the
 * list's resourceVersion, forever: reconnects with backoff, re-lists on 410.
 * c's strings are copied; cb and ctx must outlive the watcher. NULL with err
 * set (400) when the config is unusable (no node, no API server address, bad
 * URL scheme); a missing or unreadable token is not fatal (logged, retried). */
k8s_watcher_t *k8s_watch_start(struct event_base *base, const k8s_config_t *c, const k8s_callbacks_t *cb,
                               void *ctx, err_t *err);

/* Loop thread: cancels the request in flight and every timer; no callback
 * runs afterwards. The pod table stays readable. Idempotent. */
void k8s_watch_stop(k8s_watcher_t *w);

/* Loop thread: stops (if needed) and frees. NULL is a no-op. Call before
 * freeing the event base. */
void k8s_watch_free(k8s_watcher_t *w);

/* What push attribution (API: Push attribution) needs of one pod. */
typedef struct {
	char namespace_[64];
	char name[254];
	char workload[254];  /* OPS: Scrape attribution: Deployment (ReplicaSet minus pod-template-hash),
	                        StatefulSet, …, else the  pod name */
	char owner_kind[64]; /* kind of the controller owner reference; "" when none */
	char container[254]; /* the only container (init sidecars included) when there is one; else "" */
	int containers;      /* running containers: spec.containers + native sidecars */
} k8s_pod_info_t;

/* Any thread: fills *out for the Running pod whose status.podIP is ip (text
 * form, e.g. "10.1.2.3" or "fd00::3"). 1 found, 0 not known. */
int k8s_pod_by_ip(k8s_watcher_t *w, const char *ip, k8s_pod_info_t *out);

/* The workload name of a Pod object by the rule of OPS: Scrape attribution, into out (n bytes, truncated):
 * the controller owner's name; a ReplicaSet's minus "-<pod-template-hash>"
 * (its Deployment); a Job named "<name>-<8+ digits>" (how a CronJob names its
 * Jobs) gives CronJob <name>; no controller: the pod's name. kind (may be NULL, ≥ 64 bytes) gets the workload
 * kind ("Deployment", "StatefulSet", …, "Pod"). Pure; any thread. */
void k8s_pod_workload(const json_t *pod, char *out, size_t n, char *kind);

/* 1 when the pod counts as present: status.phase "Running" and a non-empty
 * status.podIP. Pure. */
int k8s_pod_is_live(const json_t *pod);

#endif
