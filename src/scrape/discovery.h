/* Pod discovery wired to the scrape loop (OPS: Discovery, OPS: Annotations, OPS: Scrape log lines): the pods
 * of the sensor's node from the Kubernetes watch (scrape/k8s.c), each turned into targets by its annotations
 * (scrape/annotations.c), together with the static targets, become the scraper's target set after every
 * change (debounced). */
#ifndef KILN_SCRAPE_DISCOVERY_H
#define KILN_SCRAPE_DISCOVERY_H

#include "net/loop.h"
#include "scrape/k8s.h"
#include "scrape/options.h"
#include "scrape/scraper.h"

#define DISCOVERY_DEBOUNCE_MS 100 /* changes within this time make one rebuild */

typedef struct discovery discovery_t;

/* Loop thread. Starts watching the pods of node (required) with the
 * kubernetes settings k, the scrape settings c (annotation prefixes, default
 * port, interval, static targets), feeding scraper s (not NULL). NULL (logged)
 * when an extraAnnotationPrefixes entry is invalid or the watch cannot start. */
discovery_t *discovery_start(const scrape_options_t *c, const k8s_options_t *k, const char *node,
                             loop_t *loop, scraper_t *s);

/* The watcher, for push attribution (k8s_pod_by_ip); NULL for NULL. */
k8s_watcher_t *discovery_watcher(discovery_t *d);

/* Loop thread: stops the watch and the pending rebuild. NULL is a no-op. */
void discovery_stop(discovery_t *d);
/* After loop_free (pushes may look pods up until then). NULL is a no-op. */
void discovery_free(discovery_t *d);

#endif
