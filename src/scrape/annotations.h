/* Scrape targets from one Kubernetes Pod object and its annotations (OPS:
 * Annotations, Scraped profile types, Port and container, Scrape attribution). Pure: no I/O, no threads, no
 * allocation, no global state; every pod field is untrusted JSON and is checked for type and length. */
#ifndef KILN_SCRAPE_ANNOTATIONS_H
#define KILN_SCRAPE_ANNOTATIONS_H

#include <stddef.h>

#include <jansson.h>

#include "base/err.h"
#include "base/limits.h"
#include "scrape/target.h"

#define ANNOT_PREFIX "profiles.kiln.dev" /* always read, before the extra prefixes */

typedef struct {
	const char *const
	    *extra_prefixes; /* extraAnnotationPrefixes in order; each valid (annot_prefix_valid) */
	size_t n_extra;
	int default_port; /* defaultPort: 0 = none; outside 1..65535 counts as none */
} annot_settings_t;

/* Why an annotated type gives no target (OPS: Scrape log lines `profile scrape targets skipped`). */
enum annot_skip_reason { ANNOT_NO_PORT, ANNOT_INVALID_PORT, ANNOT_INVALID_TARGET };

typedef struct {
	int reason; /* enum annot_skip_reason */
	int type;   /* enum scrape_type */
	char namespace_[LIMIT_SCRAPE_NAME_BYTES];
	char pod[LIMIT_SCRAPE_NAME_BYTES];
	char detail[160]; /* for people: which annotation and what is wrong (no query values) */
} annot_skip_t;

/* "no_port", "invalid_port", "invalid_target"; "?" for others. */
const char *annot_skip_reason_name(int reason);

/* 1 when p can be an annotation prefix: a DNS-1123 subdomain (lowercase
 * alphanumeric labels joined by '.', '-' inside labels, ≤ 253 bytes), as the
 * API server checks prefixes. The OPS: Scrape settings check behind `profile scraping is disabled`. */
int annot_prefix_valid(const char *p);

/* The targets of one pod. out and skips each hold SCRAPE_TYPES entries; *n
 * and *n_skips get how many were written, in type order (cpu, memory,
 * goroutine, block, mutex). A type gives a target or a skip when the first
 * prefix (ANNOT_PREFIX, then s->extra_prefixes in order) whose
 * `PREFIX/TYPE.scrape` is "true" has valid settings; every setting of that
 * type is read from that prefix only. A pod not Running, or whose podIP is
 * not an IPv4/IPv6 address, gives neither (returns 0).
 * Returns -1 with err (400) only when pod is not a Pod object with a valid
 * metadata.name and metadata.namespace (DNS names, < LIMIT_SCRAPE_NAME_BYTES). */
int annot_pod_targets(const json_t *pod, const annot_settings_t *s, scrape_target_t *out, size_t *n,
                      annot_skip_t *skips, size_t *n_skips, err_t *err);

/* The workload of a pod (OPS: Scrape attribution) into out, "" when metadata.name is unusable;
 * *kind (may be NULL) gets "Deployment", "ReplicaSet", "StatefulSet",
 * "DaemonSet", "Job", "CronJob" or "Pod". The controller owner reference
 * (controller: true; else the first one) decides:
 * - ReplicaSet: its name minus "-<pod-template-hash>" (the pod label when the
 *   name ends with it, else a last segment of 1–10 characters of the hash
 *   alphabet [bcdfghjklmnpqrstvwxz2456789]) is the Deployment; a name without
 *   such a suffix stays the ReplicaSet;
 * - Job named "<cronjob>-<8 or more digits>" (the scheduled minute CronJobs
 *   put in their Job names) is the CronJob, any other Job is the Job;
 * - StatefulSet, DaemonSet: their name;
 * - none, another kind, or an unusable name: the pod name. */
void annot_pod_workload(const json_t *pod, char out[LIMIT_SCRAPE_NAME_BYTES], const char **kind);

#endif
