/* kiln: one binary, subcommands. `kiln serve` is the daemon; the others are
 * small HTTP clients of a running server. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static void usage(FILE *f)
{
	fputs("usage: kiln <command> [options]\n"
	      "\n"
	      "  serve   [--config FILE] [--data DIR] [--ui ADDR] [--upload ADDR] [--otlp-http ADDR]\n"
	      "          [--otlp-grpc ADDR] [--role all|sensor|ingestor|query] [--node NAME]\n"
	      "          run the server (ADDR = host:port, :port or off)\n"
	      "  upload  FILE --service NAME [--url http://HOST:8028] [--label K=V ...]\n"
	      "          push a pprof file (raw or gzip)\n"
	      "  top     --service NAME --type TYPE [--from T] [--until T] [--limit N] [--url http://HOST:4040]\n"
	      "          print the top functions by self value\n"
	      "  export  --service NAME --type TYPE [--from T] [--until T] [--url http://HOST:4040] > out.pb.gz\n"
	      "          write the merged profile as gzip pprof to stdout\n"
	      "  keys    create --project P --name N [--scope ingest|query|both] | list | revoke NAME  [--data DIR]\n"
	      "          manage ingestion and query keys (docs/OPERATIONS.md)\n"
	      "  usage   [--data DIR] [--project P] [--from T] [--until T]\n"
	      "          samples accepted and rejected per day and key\n"
	      "\n"
	      "TYPE is SAMPLE_TYPE:UNIT, e.g. cpu:nanoseconds; T is unix seconds or now-1h.\n",
	      f);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "serve"))
		return cli_serve(argc - 1, argv + 1);
	if (!strcmp(cmd, "upload"))
		return cli_upload(argc - 1, argv + 1);
	if (!strcmp(cmd, "top"))
		return cli_top(argc - 1, argv + 1);
	if (!strcmp(cmd, "export"))
		return cli_export(argc - 1, argv + 1);
	if (!strcmp(cmd, "keys"))
		return cli_keys(argc - 1, argv + 1);
	if (!strcmp(cmd, "usage"))
		return cli_usage(argc - 1, argv + 1);
	if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "kiln: unknown command %s\n", cmd);
	usage(stderr);
	return 2;
}
