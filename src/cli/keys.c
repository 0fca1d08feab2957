/* `kiln keys create|list|revoke` and `kiln usage`: operator commands that work
 * on the keys and usage of the store a data directory or config names,
 * directly (no server needed; a running server picks key changes up within a
 * second). The store opens for keys and usage only, so it runs beside a server. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/timeutil.h"
#include "cli/cli.h"
#include "cli/config.h"
#include "store/store.h"
#include "ingest/keys.h"
#include "ingest/usage.h"

typedef struct {
	const char *data, *project, *name, *scope, *from, *until, *config;
	const char *positional;
	store_t *store; /* the store --data or --config names, open for keys and usage only */
} keys_opts_t;

static void keys_usage(FILE *f)
{
	fputs("usage: kiln keys create --project P --name N [--scope ingest|query|both (default ingest)] "
	      "[WHERE]\n"
	      "       kiln keys list [WHERE]\n"
	      "       kiln keys revoke NAME [WHERE]\n"
	      "       kiln usage [--project P] [--from T] [--until T] [WHERE]\n"
	      "WHERE is --data DIR (default ./kiln-data) or --config FILE: the server's config, whose store\n"
	      "(store.engine clickhouse) then holds the keys and usage of every kiln process on it.\n"
	      "Names are 1-64 of A-Z a-z 0-9 _ . -; T is unix seconds or now-7d.\n",
	      f);
}

/* Parses argv[first..]; -1 (after a message) on a usage error. */
static int parse_keys_opts(int argc, char **argv, int first, keys_opts_t *o)
{
	memset(o, 0, sizeof *o);
	o->data = "./kiln-data";
	for (int i = first; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		const char **field = !strcmp(a, "--data")      ? &o->data
		                     : !strcmp(a, "--config")  ? &o->config
		                     : !strcmp(a, "--project") ? &o->project
		                     : !strcmp(a, "--name")    ? &o->name
		                     : !strcmp(a, "--scope")   ? &o->scope
		                     : !strcmp(a, "--from")    ? &o->from
		                     : !strcmp(a, "--until")   ? &o->until
		                                               : NULL;
		if (field) {
			if (!v) {
				fprintf(stderr, "kiln: %s needs a value\n", a);
				return -1;
			}
			*field = v;
			i++;
		} else if (a[0] != '-' && !o->positional) {
			o->positional = a;
		} else {
			fprintf(stderr, "kiln: unexpected argument %s\n", a);
			return -1;
		}
	}
	return 0;
}

/* Opens the store --config names (else the embedded one under --data) for
 * keys and usage only (o->store). -1 after a message. */
static int open_store(keys_opts_t *o, const char *cmd)
{
	config_t cfg;
	config_defaults(&cfg);
	err_t err = {0};
	int rc = -1;
	if (!o->config) {
		config_set(&cfg.data_dir, o->data);
	} else if (config_load_file(&cfg, o->config, &err) < 0 || config_validate(&cfg, &err) < 0) {
		fprintf(stderr, "kiln %s: %s\n", cmd, err.msg);
		goto out;
	}
	if (!(o->store = cli_store_open(&cfg, 1, &err))) {
		fprintf(stderr, "kiln %s: %s\n", cmd, err.msg);
		goto out;
	}
	rc = 0;
out:
	config_free(&cfg);
	return rc;
}

static void format_time(int64_t ns, char out[32])
{
	if (ns <= 0) {
		strcpy(out, "-");
		return;
	}
	time_t t = (time_t)(ns / NS_PER_SEC);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void print_key_row(const keys_row_t *r, void *ctx)
{
	char created[32], revoked[32];
	format_time(r->created_ns, created);
	format_time(r->revoked_ns, revoked);
	printf("%-24s %-20s %-6s %-20s %s\n", r->name, r->project, keys_scope_name(r->scope), created,
	       revoked);
	(*(int *)ctx)++;
}

static int keys_create_cmd(const keys_opts_t *o)
{
	if (!o->project || !o->name || o->positional) {
		fputs("kiln keys create: --project and --name are required\n", stderr);
		keys_usage(stderr);
		return 2;
	}
	int scope = o->scope ? keys_scope_parse(o->scope) : KEY_SCOPE_INGEST;
	if (!scope) {
		fprintf(stderr, "kiln keys create: --scope must be ingest, query or both, not %s\n",
		        o->scope);
		return 2;
	}
	char key[KEY_TEXT_MAX];
	err_t err = {0};
	if (keys_create(o->store, o->project, o->name, scope, key, sizeof key, &err) < 0) {
		fprintf(stderr, "kiln keys create: %s\n", err.msg);
		return 1;
	}
	printf("%s\n", key);
	fflush(stdout);
	fprintf(stderr,
	        "created key '%s' for project '%s' (scope %s) in the %s store of %s; it is shown only this "
	        "once\n",
	        o->name, o->project, keys_scope_name(scope), store_engine_name(o->store),
	        o->config ? o->config : o->data);
	return 0;
}

static int keys_list_cmd(const keys_opts_t *o)
{
	if (o->positional || o->project || o->name || o->scope) {
		keys_usage(stderr);
		return 2;
	}
	printf("%-24s %-20s %-6s %-20s %s\n", "NAME", "PROJECT", "SCOPE", "CREATED", "REVOKED");
	int n = 0;
	err_t err = {0};
	if (keys_list(o->store, print_key_row, &n, &err) < 0) {
		fprintf(stderr, "kiln keys list: %s\n", err.msg);
		return 1;
	}
	return 0;
}

static int keys_revoke_cmd(const keys_opts_t *o)
{
	if (!o->positional || o->project || o->scope) {
		fputs("kiln keys revoke: give the key's NAME\n", stderr);
		keys_usage(stderr);
		return 2;
	}
	err_t err = {0};
	int rc = keys_revoke(o->store, o->positional, &err);
	if (rc < 0) {
		fprintf(stderr, "kiln keys revoke: %s\n", err.msg);
		return 1;
	}
	fprintf(stderr, rc == 0 ? "revoked key '%s'\n" : "key '%s' was already revoked\n", o->positional);
	return 0;
}

int cli_keys(int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : NULL;
	keys_opts_t o;
	if (!sub || !strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
		keys_usage(sub ? stdout : stderr);
		return sub ? 0 : 2;
	}
	if (parse_keys_opts(argc, argv, 2, &o) < 0 || o.from || o.until) {
		keys_usage(stderr);
		return 2;
	}
	int (*cmd)(const keys_opts_t *) = !strcmp(sub, "create")   ? keys_create_cmd
	                                  : !strcmp(sub, "list")   ? keys_list_cmd
	                                  : !strcmp(sub, "revoke") ? keys_revoke_cmd
	                                                           : NULL;
	if (!cmd) {
		fprintf(stderr, "kiln keys: unknown subcommand %s\n", sub);
		keys_usage(stderr);
		return 2;
	}
	if (open_store(&o, "keys") < 0)
		return 1;
	int rc = cmd(&o);
	store_close(o.store);
	return rc;
}

static void print_usage_row(const usage_row_t *r, void *ctx)
{
	char day[11];
	time_day_str(r->day, day);
	printf("%-10s %-20.*s %-24.*s %12llu %12llu %12llu %12llu %12llu\n", day, (int)r->project.n,
	       (const char *)r->project.p, (int)r->key.n, (const char *)r->key.p,
	       (unsigned long long)r->counts[USAGE_ACCEPTED],
	       (unsigned long long)r->counts[USAGE_RATE_LIMITED],
	       (unsigned long long)r->counts[USAGE_TOO_LARGE], (unsigned long long)r->counts[USAGE_INVALID],
	       (unsigned long long)r->counts[USAGE_OUT_OF_WINDOW]);
	(*(int *)ctx)++;
}

int cli_usage(int argc, char **argv)
{
	keys_opts_t o;
	if (parse_keys_opts(argc, argv, 1, &o) < 0 || o.positional || o.name || o.scope) {
		keys_usage(stderr);
		return 2;
	}
	int64_t now = time_now_ns(), from = 0, until = 0;
	if ((o.from && time_parse(o.from, now, &from) < 0) ||
	    (o.until && time_parse(o.until, now, &until) < 0)) {
		fprintf(stderr, "kiln usage: --from/--until take unix seconds, now or now-7d, not %s\n",
		        o.from && time_parse(o.from, now, &from) < 0 ? o.from : o.until);
		return 2;
	}
	if (open_store(&o, "usage") < 0)
		return 1;
	printf("%-10s %-20s %-24s %12s %12s %12s %12s %12s\n", "DAY", "PROJECT", "KEY", "ACCEPTED",
	       "RATE_LIMITED", "TOO_LARGE", "INVALID", "OUT_OF_WINDOW");
	err_t err = {0};
	int n = 0;
	usage_t *u = usage_open(o.store);
	int rc = usage_rows(u, slice_cstr(o.project), from, until, print_usage_row, &n, &err);
	usage_close(u);
	store_close(o.store);
	if (rc < 0)
		fprintf(stderr, "kiln usage: %s\n", err.msg);
	else if (n == 0)
		fprintf(stderr, "kiln usage: no usage recorded%s\n",
		        o.project || o.from || o.until ? " in this selection" : " yet");
	return rc < 0 ? 1 : 0;
}
