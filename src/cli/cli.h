/* Subcommands of the kiln binary. Each returns the process exit status. */
#ifndef KILN_CLI_CLI_H
#define KILN_CLI_CLI_H

#include "base/err.h"

int cli_serve(int argc, char **argv);
int cli_upload(int argc, char **argv);
int cli_top(int argc, char **argv);
int cli_export(int argc, char **argv);
int cli_keys(int argc, char **argv);  /* keys create|list|revoke */
int cli_usage(int argc, char **argv); /* the usage table of the store */

/* The store the config names (OPS: Storage): the embedded one under cfg->data_dir
 * or ClickHouse (store.*; passwordFile read here). keys_usage_only: for the
 * operator commands, which use only keys and usage and run beside a server
 * (store_config_t.keys_usage_only). NULL + err. */
struct store;
struct config;
struct store *cli_store_open(const struct config *cfg, int keys_usage_only, err_t *err);

#endif
