/* The delta rule (API: Aggregation over time) for scraped Go heap profiles: their alloc_*
 * values are cumulative since the process started, so the store gets the
 * growth between two consecutive scrapes of one target instead. inuse_*
 * (snapshots) pass through untouched. Knows batches, not HTTP or targets. */
#ifndef KILN_SCRAPE_DELTA_H
#define KILN_SCRAPE_DELTA_H

#include <stdint.h>

#include "model/model.h"

/* Previous cumulative values of one target key: (alloc sample type, stack
 * node id, attribute set id, sample time) → value. Holds at most
 * max_entries values (one scrape's alloc rows); a scrape with more resets it.
 * Not thread-safe: one user at a time (the target's scrape in progress). */
typedef struct scrape_delta scrape_delta_t;

enum scrape_delta_outcome {
	SCRAPE_DELTA_NO_ALLOC, /* the batch has no alloc_* profile: nothing to do, the state is dropped */
	SCRAPE_DELTA_FIRST,    /* no previous scrape: alloc_* profiles removed, values remembered */
	SCRAPE_DELTA_APPLIED,  /* alloc_* values replaced by their growth (zero rows dropped) */
	SCRAPE_DELTA_RESET,    /* a value went down (restart) or too many rows: alloc_* removed, values
	                          remembered as the new baseline (or forgotten when too many) */
};

scrape_delta_t *scrape_delta_new(uint32_t max_entries);
void scrape_delta_free(scrape_delta_t *d); /* NULL is a no-op */

/* Applies the rule to the finished batch b in place (profiles whose sample
 * type starts with "alloc_") and remembers b's cumulative values for the
 * next call. Returns an enum scrape_delta_outcome. */
int scrape_delta_apply(scrape_delta_t *d, model_batch_t *b);

/* The same rule for the profiles pick(p, ctx) says are cumulative (the
 * alloc_* test above; Pyroscope's sample_type_config "cumulative": true for
 * /ingest): the outcomes read "cumulative" for "alloc_*". */
typedef int (*scrape_delta_pick_fn)(const model_profile_t *p, void *ctx);
int scrape_delta_apply_picked(scrape_delta_t *d, model_batch_t *b, scrape_delta_pick_fn pick, void *ctx);

/* Values d remembers (what it costs). */
uint32_t scrape_delta_entries(const scrape_delta_t *d);

/* Removes the profiles i of b with drop[i] != 0, keeping the others in
 * order (their samples stay where they are). */
void scrape_drop_profiles(model_batch_t *b, const uint8_t *drop);

#endif
