/* Starting the scraper from kiln serve's config: the S3.1 settings checks
 * with their log lines, and the static targets of
 * receivers.profiles.scrape.static (hosts outside Kubernetes). */
#include <stdio.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/log.h"
#include "scrape/scraper.h"

/* Static targets into a fresh array (*out, caller frees); skips are logged. */
static size_t static_targets(scraper *s, const scrape_config *c, scrape_target **out)
{
	scrape_target *t = xcalloc((size_t)c->n_statics * SCRAPE_TYPES + 1, sizeof *t);
	size_t n = 0;
	for (uint32_t i = 0; i < c->n_statics; i++)
		for (int type = 0; type < SCRAPE_TYPES; type++) {
			if (!c->statics[i].types[type].scrape)
				continue;
			const char *reason;
			char msg[320];
			if (scrape_static_target(&c->statics[i], type, &t[n], &reason, msg, sizeof msg) == 0) {
				n++;
				continue;
			}
			log_warn("static scrape target is invalid", "target=\"%s\" type=%s error=\"%s\"", c->statics[i].name,
			         config_scrape_type_names[type], msg);
			scraper_report_skipped(s, reason, c->statics[i].namespace_, c->statics[i].name,
			                       config_scrape_type_names[type], 1);
		}
	*out = t;
	return n;
}

scraper *scraper_from_config(const kiln_config *c, kn_loop *loop, kn_pool *pool, store_t *store, usage_t *usage)
{
	const scrape_config *sc = &c->scrape;
	if (!sc->enabled)
		return NULL;
	int type_ok[SCRAPE_TYPES];
	char invalid[64], reason[256];
	if (scrape_check_settings(sc->interval_ns, sc->prefixes, sc->n_prefixes, type_ok, invalid, sizeof invalid,
	                          reason, sizeof reason) < 0) {
		for (char *r = reason; *r; r++)
			if (*r == '"' || *r == '\\')
				*r = '\'';
		log_error("profile scraping is disabled", "reason=\"%s\"", reason);
		return NULL;
	}
	if (invalid[0])
		log_warn("profile types with invalid scrape settings are not scraped",
		         "types=%s interval=%llds reason=\"the type's timeout exceeds the interval (cpu needs 20s, block "
		         "and mutex 40s)\"",
		         invalid, (long long)(sc->interval_ns / 1000000000LL));
	scraper_opts o = {loop, pool, store, usage, sc->interval_ns, c->max_rows};
	scraper *s = scraper_new(&o);
	if (!s) {
		log_error("profile scraping is disabled", "reason=\"libcurl could not be initialized\"");
		return NULL;
	}
	scrape_target *t;
	size_t n = static_targets(s, sc, &t);
	size_t kept = 0;
	for (size_t i = 0; i < n; i++)
		if (type_ok[t[i].type])
			t[kept++] = t[i];
	scraper_set_targets(s, t, kept);
	log_info("profile scraping started", "interval=%llds static_targets=%zu", (long long)(sc->interval_ns / 1000000000LL),
	         kept);
	free(t);
	return s;
}
