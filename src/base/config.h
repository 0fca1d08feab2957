/* kiln serve's settings: defaults, then the YAML config file (--config), then
 * flags. Only what is implemented is read; unknown keys are reported. */
#ifndef KILN_BASE_CONFIG_H
#define KILN_BASE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/limits.h"

enum { LISTENER_UPLOAD, LISTENER_OTLP_HTTP, LISTENER_OTLP_GRPC, LISTENER_UI, LISTENER_COUNT };

typedef struct {
	char *addr; /* "host:port", ":port" or "off" */
	int auth_required;
	char *tls_cert, *tls_key;
} listener_config;

/* One profile type of a static scrape target (SPEC S3.2, S3.3): the same
 * settings as the pod annotations. NULL strings take the type's default. */
typedef struct {
	int scrape; /* scrape: true */
	char *path, *scheme, *sample_types;
} scrape_type_config;

#define CONFIG_SCRAPE_TYPES 5 /* cpu, memory, goroutine, block, mutex (enum scrape_type order) */

/* receivers.profiles.scrape.static[i]: a host outside Kubernetes. Either url
 * ("http://host:port", no path) or host + port. */
typedef struct {
	char *name, *url, *host;
	int port;
	char *service, *namespace_, *pod, *container, *workload;
	scrape_type_config types[CONFIG_SCRAPE_TYPES];
} static_target_config;

/* receivers.profiles.scrape (SPEC S3.1). Values are kept as given; the
 * scraper checks them (interval, prefixes) and logs what it refuses. */
typedef struct {
	int enabled;
	int64_t interval_ns; /* default 1m */
	int default_port;
	char *prefixes[LIMIT_ANNOTATION_PREFIXES]; /* extraAnnotationPrefixes */
	uint32_t n_prefixes;
	static_target_config statics[LIMIT_STATIC_TARGETS]; /* static */
	uint32_t n_statics;
} scrape_config;

/* kubernetes (SPEC S3.2): overrides of the sensor's in-cluster defaults; NULL
 * keeps the default (k8s_config). node: the config value; kiln serve puts
 * --node, else this, else $NODE_NAME here. */
typedef struct {
	char *api_server, *token_file, *ca_file, *node;
} kube_config;

typedef struct kiln_config {
	char *data_dir;
	char *role; /* all | sensor | ingestor | query */
	listener_config listeners[LISTENER_COUNT];
	uint32_t max_rows; /* receivers.profiles.maxDecodedSampleRows */
	int workers;       /* 0 = one per core */
	double samples_per_second; /* limits.samplesPerSecond: per key (S6.2), default 20000 */
	double bodies_mib;         /* limits.requestBodiesMiB: request bodies held at once, all
	                              listeners together (net/budget.h), default 512 */
	int retention_days;        /* retention.days: default for every project, default 14 */
	int retention_max_days;    /* retention.maxDays: the cap, default 14 (S6.4) */
	uint32_t n_project_retention; /* retention.projects: {NAME: days} */
	struct {
		char *project;
		int days;
	} project_retention[LIMIT_RETENTION_PROJECTS];
	/* store (SPEC S8): engine local (default, under data_dir) or clickhouse. */
	struct {
		char *engine;   /* "local" | "clickhouse" */
		char *url, *database, *user, *password, *cluster;
		char *password_file; /* passwordFile: read at start (a mounted Secret) */
		int replicated;
	} store;
	scrape_config scrape; /* receivers.profiles.scrape */
	kube_config kubernetes; /* kubernetes */
} kiln_config;

/* The names of CONFIG_SCRAPE_TYPES in order ("cpu", "memory", ...). */
extern const char *const config_scrape_type_names[CONFIG_SCRAPE_TYPES];

/* The retention of project (its own setting, else the default), capped. */
int config_retention_days(const kiln_config *c, const char *project);

extern const char *const listener_names[LISTENER_COUNT]; /* "upload", "otlp_http", ... */

void config_defaults(kiln_config *c);
/* Reads the YAML file over the current values. 400-style err on bad content. */
int config_load_file(kiln_config *c, const char *path, kn_err *err);
/* The same from n bytes of YAML in memory (tests, fuzzing); parse errors are
 * not printed, only reported in err. yaml need not be NUL-terminated. */
int config_load_yaml(kiln_config *c, const char *yaml, size_t n, kn_err *err);
/* Checks values (role, addresses). */
int config_validate(const kiln_config *c, kn_err *err);
/* Replaces a string setting (frees the old value). */
void config_set(char **field, const char *value);
void config_free(kiln_config *c);

#endif
