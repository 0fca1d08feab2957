/* Starting the scraper from kiln serve's config: the checks of OPS: Scrape settings
 * with their log lines, and the static targets of
 * receivers.profiles.scrape.static (hosts outside Kubernetes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "scrape/annotations.h"
#include "scrape/scraper.h"

void scrape_skips_add(scrape_skips_t *sk, int reason, const char *namespace_, const char *pod, int type)
{
	if (reason < 0 || reason >= SCRAPE_SKIP_REASONS)
		return;
	if (sk->count[reason]++ == 0) {
		sk->type[reason] = type;
		snprintf(sk->namespace_[reason], LIMIT_SCRAPE_NAME_BYTES, "%s", namespace_ ? namespace_ : "");
		snprintf(sk->pod[reason], LIMIT_SCRAPE_NAME_BYTES, "%s", pod ? pod : "");
	}
}

void scraper_report_skips(scraper_t *s, const scrape_skips_t *sk)
{
	for (int r = 0; r < SCRAPE_SKIP_REASONS; r++)
		scraper_report_skip_reason(s, annot_skip_reason_name(r), sk->namespace_[r], sk->pod[r],
		                           sk->count[r] ? scrape_type_name(sk->type[r]) : "", sk->count[r]);
}

/* The enum annot_skip_reason of a reason name; -1 when unknown. */
static int skip_reason(const char *name)
{
	for (int r = 0; r < SCRAPE_SKIP_REASONS; r++)
		if (!strcmp(annot_skip_reason_name(r), name))
			return r;
	return -1;
}

size_t scrape_static_targets(const scrape_options_t *c, int log, scrape_target_t **out, scrape_skips_t *sk)
{
	scrape_target_t *t = xcalloc((size_t)c->n_statics * SCRAPE_TYPES + 1, sizeof *t);
	size_t n = 0;
	for (uint32_t i = 0; i < c->n_statics; i++)
		for (int type = 0; type < SCRAPE_TYPES; type++) {
			/* A type whose timeout exceeds the interval is named by the
			 * log line of OPS: Scrape settings and not scraped: not a target, not a skip. */
			if (!c->statics[i].types[type].scrape || !scrape_type_scraped(type, c->interval_ns))
				continue;
			const char *reason;
			char msg[320];
			if (scrape_static_target(&c->statics[i], type, &t[n], &reason, msg, sizeof msg) == 0) {
				n++;
				continue;
			}
			if (log)
				log_warn("static scrape target is invalid", "target=\"%s\" type=%s error=\"%s\"",
				         c->statics[i].name, scrape_type_name(type), msg);
			scrape_skips_add(sk, skip_reason(reason), c->statics[i].namespace_, c->statics[i].name, type);
		}
	*out = t;
	return n;
}

scraper_t *scraper_from_config(const scrape_options_t *sc, uint32_t max_rows, loop_t *loop, pool_t *pool,
                               store_t *store, usage_t *usage)
{
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
	scraper_opts_t o = {loop, pool, store, usage, sc->interval_ns, max_rows};
	scraper_t *s = scraper_new(&o);
	if (!s) {
		log_error("profile scraping is disabled", "reason=\"libcurl could not be initialized\"");
		return NULL;
	}
	scrape_target_t *t;
	scrape_skips_t sk = {0};
	size_t n = scrape_static_targets(sc, 1, &t, &sk);
	scraper_report_skips(s, &sk);
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
