/* Subcommands of the kiln binary. Each returns the process exit status. */
#ifndef KILN_CLI_CLI_H
#define KILN_CLI_CLI_H

int cli_serve(int argc, char **argv);
int cli_upload(int argc, char **argv);
int cli_top(int argc, char **argv);
int cli_export(int argc, char **argv);
int cli_keys(int argc, char **argv);  /* keys create|list|revoke */
int cli_usage(int argc, char **argv); /* usage table from usage.db */

#endif
