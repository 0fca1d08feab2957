/* The store's settings as the config file gives them (OPS: Retention, OPS: Storage): the
 * `store:` block (engine and ClickHouse connection) and the `retention:`
 * block. The config loader (cli/config.c) fills them over these defaults;
 * kiln serve turns them into a store_config_t and store_set_retention calls. */
#ifndef KILN_STORE_OPTIONS_H
#define KILN_STORE_OPTIONS_H

#include <stdint.h>

#include "base/limits.h"

/* store: engine local (default, under the data directory) or clickhouse.
 * Strings are malloc'd; NULL = not set. */
typedef struct {
	char *engine; /* "local" | "clickhouse" */
	char *url, *database, *user, *password, *cluster;
	char *password_file; /* passwordFile: read at start (a mounted Secret) */
	int replicated;
	int max_answer_mib; /* maxAnswerMiB: ceiling on one ClickHouse answer (0: LIMIT_CH_ANSWER_BYTES) */
	/* queueBatches, queueMiB: caps on the batches waiting for the writer, either engine
	 * (0: LIMIT_STORE_QUEUE_BATCHES, LIMIT_STORE_QUEUE_BYTES; OPS: The write queue) */
	int queue_batches, queue_mib;
} store_options_t;

/* retention: days for every project, the cap, and per-project days. */
typedef struct {
	int days;            /* retention.days: default for every project, default 14 */
	int max_days;        /* retention.maxDays: the cap, default 14 (OPS: Retention) */
	uint32_t n_projects; /* retention.projects: {NAME: days} */
	struct {
		char *project;
		int days;
	} projects[LIMIT_RETENTION_PROJECTS];
} store_retention_options_t;

void store_options_defaults(store_options_t *o);
void store_options_free(store_options_t *o);
void store_retention_defaults(store_retention_options_t *r);
void store_retention_free(store_retention_options_t *r);
/* The retention of project (its own setting, else the default), capped at
 * max_days. */
int store_retention_days(const store_retention_options_t *r, const char *project);

#endif
