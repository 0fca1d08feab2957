/* The sensor's settings as the config file gives them: receivers.profiles.scrape
 * (OPS: Scrape settings, Discovery, Annotations) and kubernetes (OPS: Discovery). Values are kept as given;
 * the scraper and discovery check them (interval, prefixes) and log what they refuse. The config loader
 * (cli/config.c) fills them over scrape_options_defaults; strings are malloc'd, NULL = not set. */
#ifndef KILN_SCRAPE_OPTIONS_H
#define KILN_SCRAPE_OPTIONS_H

#include <stdint.h>

#include "base/limits.h"
#include "scrape/target.h"

/* One profile type of a static scrape target (OPS: Discovery, OPS: Annotations): the same settings
 * as the pod annotations. NULL strings take the type's default. */
typedef struct {
	int scrape; /* scrape: true */
	char *path, *scheme, *sample_types;
} scrape_type_options_t;

/* receivers.profiles.scrape.static[i]: a host outside Kubernetes. Either url
 * ("http://host:port", no path) or host + port. types[] is indexed by enum
 * scrape_type and named by scrape_type_name. */
typedef struct {
	char *name, *url, *host;
	int port;
	char *service, *namespace_, *pod, *container, *workload;
	scrape_type_options_t types[SCRAPE_TYPES];
} scrape_static_options_t;

/* receivers.profiles.scrape (OPS: Scrape settings). */
typedef struct {
	int enabled;
	int64_t interval_ns; /* default 1m */
	int default_port;
	char *prefixes[LIMIT_ANNOTATION_PREFIXES]; /* extraAnnotationPrefixes */
	uint32_t n_prefixes;
	scrape_static_options_t statics[LIMIT_STATIC_TARGETS]; /* static */
	uint32_t n_statics;
} scrape_options_t;

/* kubernetes: overrides of the watcher's in-cluster defaults; NULL keeps the
 * default (k8s_config_t). node: the config value; kiln serve puts --node, else
 * this, else $NODE_NAME here. */
typedef struct {
	char *api_server, *token_file, *ca_file, *node;
} k8s_options_t;

void scrape_options_defaults(scrape_options_t *o);
void scrape_options_free(scrape_options_t *o);
void k8s_options_free(k8s_options_t *o);

#endif
