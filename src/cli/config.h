/* kiln serve's settings: defaults, then the YAML config file (--config), then
 * flags. Only what is implemented is read; unknown keys are reported. The
 * loader (libfyaml) lives here, above every module; each module owns its
 * options struct and defaults, and the loader fills them. */
#ifndef KILN_CLI_CONFIG_H
#define KILN_CLI_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "api/options.h"
#include "base/err.h"
#include "ingest/options.h"
#include "scrape/options.h"
#include "store/options.h"

/* The whole file: what kiln serve itself uses (data directory, role,
 * workers), and each module's own options struct, which that module defines
 * with its defaults. */
typedef struct config {
	char *data_dir;
	char *role;                                 /* all | sensor | ingestor | query */
	int workers;                                /* 0 = one per core */
	api_listener_options_t listeners[API_LISTENER_COUNT]; /* listeners (api/options.h) */
	ingest_options_t limits;             /* limits, receivers.profiles.maxDecodedSampleRows */
	store_retention_options_t retention; /* retention */
	store_options_t store;               /* store (OPS: Storage) */
	scrape_options_t scrape;             /* receivers.profiles.scrape */
	k8s_options_t kubernetes;            /* kubernetes */
} config_t;

void config_defaults(config_t *c);
/* Reads the YAML file over the current values. 400-style err on bad content. */
int config_load_file(config_t *c, const char *path, err_t *err);
/* The same from n bytes of YAML in memory (tests, fuzzing); parse errors are
 * not printed, only reported in err. yaml need not be NUL-terminated. */
int config_load_yaml(config_t *c, const char *yaml, size_t n, err_t *err);
/* Checks values (role, addresses). */
int config_validate(const config_t *c, err_t *err);
/* Replaces a string setting (frees the old value). */
void config_set(char **field, const char *value);
void config_free(config_t *c);

#endif
