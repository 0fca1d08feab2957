/* kiln serve's settings: defaults, then the YAML config file (--config), then
 * flags. Only what is implemented is read; unknown keys are reported. */
#ifndef KILN_BASE_CONFIG_H
#define KILN_BASE_CONFIG_H

#include <stdint.h>

#include "base/err.h"

enum { LISTENER_UPLOAD, LISTENER_OTLP_HTTP, LISTENER_OTLP_GRPC, LISTENER_UI, LISTENER_COUNT };

typedef struct {
	char *addr; /* "host:port", ":port" or "off" */
	int auth_required;
	char *tls_cert, *tls_key;
} listener_config;

typedef struct {
	char *data_dir;
	char *role; /* all | sensor | ingestor | query */
	listener_config listeners[LISTENER_COUNT];
	uint32_t max_rows; /* receivers.profiles.maxDecodedSampleRows */
	int workers;       /* 0 = one per core */
	double samples_per_second; /* limits.samplesPerSecond: per key (S6.2), default 20000 */
	int retention_days;        /* retention.days: default for every project, default 14 */
	int retention_max_days;    /* retention.maxDays: the cap, default 14 (S6.4) */
	uint32_t n_project_retention; /* retention.projects: {NAME: days} */
	struct {
		char *project;
		int days;
	} project_retention[64];
} kiln_config;

/* The retention of project (its own setting, else the default), capped. */
int config_retention_days(const kiln_config *c, const char *project);

extern const char *const listener_names[LISTENER_COUNT]; /* "upload", "otlp_http", ... */

void config_defaults(kiln_config *c);
/* Reads the YAML file over the current values. 400-style err on bad content. */
int config_load_file(kiln_config *c, const char *path, kn_err *err);
/* Checks values (role, addresses). */
int config_validate(const kiln_config *c, kn_err *err);
/* Replaces a string setting (frees the old value). */
void config_set(char **field, const char *value);
void config_free(kiln_config *c);

#endif
