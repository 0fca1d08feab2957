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
typedef struct kiln_config {
	char *data_dir;
	char *role;                                 /* all | sensor | ingestor | query */
	int workers;                                /* 0 = one per core */
	listener_options listeners[LISTENER_COUNT]; /* listeners (api/options.h) */
	ingest_options limits;                      /* limits, receivers.profiles.maxDecodedSampleRows */
	store_retention_options retention;          /* retention */
	store_options store;                        /* store (SPEC S8) */
	scrape_options scrape;                      /* receivers.profiles.scrape */
	k8s_options kubernetes;                     /* kubernetes */
} kiln_config;

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
