/* The OPS: Scraped profile types table of scrape types: names, default requests, timeouts and
 * windows, for the annotation rules, static targets and the scrape loop.
 * Constant data only. */
#include "scrape/target.h"

#include <string.h>

#define SEC 1000000000LL

static const scrape_type_info_t types[SCRAPE_TYPES] = {
    [SCRAPE_CPU] = {"cpu", "process_cpu", "/debug/pprof/profile?seconds=10", 20 * SEC, 10, 15},
    [SCRAPE_MEMORY] = {"memory", "memory", "/debug/pprof/heap", 10 * SEC, 0, 0},
    [SCRAPE_GOROUTINE] = {"goroutine", "goroutines", "/debug/pprof/goroutine", 10 * SEC, 0, 0},
    [SCRAPE_BLOCK] = {"block", "block", "/debug/pprof/block?seconds=30", 40 * SEC, 30, 35},
    [SCRAPE_MUTEX] = {"mutex", "mutex", "/debug/pprof/mutex?seconds=30", 40 * SEC, 30, 35},
};

const scrape_type_info_t *scrape_type_get(int type)
{
	return type >= 0 && type < SCRAPE_TYPES ? &types[type] : NULL;
}

const char *scrape_type_name(int type)
{
	const scrape_type_info_t *t = scrape_type_get(type);
	return t ? t->name : NULL;
}

int scrape_type_parse(const char *s)
{
	for (int i = 0; s && i < SCRAPE_TYPES; i++)
		if (strcmp(s, types[i].name) == 0)
			return i;
	return -1;
}

int scrape_type_scraped(int type, int64_t interval_ns)
{
	const scrape_type_info_t *t = scrape_type_get(type);
	return t && t->timeout_ns <= interval_ns;
}
