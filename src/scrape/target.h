/* A scrape target: one profile type of one endpoint (OPS: Scrape settings). Made from pod
 * annotations (scrape/annotations.c) or static config; consumed by the scrape
 * loop (scrape/scraper.c). Plain data, owned by whoever holds the array. */
#ifndef KILN_SCRAPE_TARGET_H
#define KILN_SCRAPE_TARGET_H

#include <stdint.h>

#include "base/limits.h"

enum scrape_type { SCRAPE_CPU, SCRAPE_MEMORY, SCRAPE_GOROUTINE, SCRAPE_BLOCK, SCRAPE_MUTEX, SCRAPE_TYPES };

typedef struct {
	int type;                         /* enum scrape_type */
	char url[LIMIT_SCRAPE_URL_BYTES]; /* http(s)://POD_IP:PORT/path?query, seconds already set */
	int https;                        /* scheme https: no certificate verification (OPS: Annotations) */
	int64_t timeout_ns; /* OPS: Scraped profile types per type: cpu 20 s, memory/goroutine 10 s,
	                       block/mutex 40 s */
	int64_t window_ns;  /* the profile's `seconds` for cpu/block/mutex; 0 for snapshots */
	char sample_types[LIMIT_SCRAPE_SAMPLE_TYPES_BYTES]; /* ".sample_types": comma list; "" keeps all */
	/* Attribution (OPS: Scrape attribution). Empty strings when unknown (static targets). */
	char namespace_[LIMIT_SCRAPE_NAME_BYTES];
	char pod[LIMIT_SCRAPE_NAME_BYTES];
	char container[LIMIT_SCRAPE_NAME_BYTES];
	char workload[LIMIT_SCRAPE_NAME_BYTES];
	char service[LIMIT_SCRAPE_NAME_BYTES]; /* service.name: the workload unless PREFIX/service_name */
	/* stable identity: "ns/pod/type" or "static/NAME/type" (deltas, state) */
	char key[2 * LIMIT_SCRAPE_NAME_BYTES + 32];
} scrape_target_t;

/* "cpu", "memory", "goroutine", "block", "mutex"; NULL for other numbers.
 * scrape_type_parse is the inverse: -1 for other strings (and NULL). */
const char *scrape_type_name(int type);
int scrape_type_parse(const char *s);

/* What is fixed per type (OPS: Scraped profile types). */
typedef struct {
	const char *name;         /* "cpu", … */
	const char *profile_name; /* its series' __name__ (API: Profile names): "process_cpu", … */
	const char *default_path; /* the default request, e.g. "/debug/pprof/profile?seconds=10" */
	int64_t timeout_ns;       /* per-request timeout; also the least interval that can scrape it */
	int default_seconds;      /* window when the path sets no `seconds`; 0 = a snapshot type */
	int max_seconds;          /* largest `seconds` that leaves 5 s of the timeout; 0 for snapshots */
} scrape_type_info_t;

/* The row of type in OPS: Scraped profile types; NULL when type is not an enum scrape_type. Static data. */
const scrape_type_info_t *scrape_type_get(int type);
/* 1 when type is scraped at interval_ns: its timeout fits in it (OPS: Scrape settings). */
int scrape_type_scraped(int type, int64_t interval_ns);

#endif
