/* Defaults of the sensor's settings and their release (scrape/options.h). */
#include "scrape/options.h"

#include <stdlib.h>
#include <string.h>

void scrape_options_defaults(scrape_options_t *o)
{
	memset(o, 0, sizeof *o);
	o->interval_ns = 60 * 1000000000LL;
}

void scrape_options_free(scrape_options_t *o)
{
	for (uint32_t i = 0; i < o->n_prefixes; i++)
		free(o->prefixes[i]);
	for (uint32_t i = 0; i < o->n_statics; i++) {
		scrape_static_options_t *t = &o->statics[i];
		char *strs[] = {t->name,       t->url, t->host,      t->service,
		                t->namespace_, t->pod, t->container, t->workload};
		for (size_t k = 0; k < sizeof strs / sizeof *strs; k++)
			free(strs[k]);
		for (int k = 0; k < SCRAPE_TYPES; k++) {
			free(t->types[k].path);
			free(t->types[k].scheme);
			free(t->types[k].sample_types);
		}
	}
	memset(o, 0, sizeof *o);
}

void k8s_options_free(k8s_options_t *o)
{
	free(o->api_server);
	free(o->token_file);
	free(o->ca_file);
	free(o->node);
	memset(o, 0, sizeof *o);
}
