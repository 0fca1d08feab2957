/* Opening the store a config names, for kiln serve and the operator
 * commands (kiln keys, kiln usage) alike. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "cli/cli.h"
#include "cli/config.h"
#include "store/store.h"

/* The contents of a secret file without its trailing newline; NULL + err
 * (a longer file or a NUL byte would otherwise send a cut password). */
static char *read_secret(const char *path, err_t *err)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		err_set(err, 400, "store.passwordFile %s: %s", path, strerror(errno));
		return NULL;
	}
	char buf[LIMIT_SECRET_BYTES + 3]; /* room for "\r\n" and one byte to spot a longer file */
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = 0;
	if (n > LIMIT_SECRET_BYTES) {
		err_set(err, 400, "store.passwordFile %s: longer than %d bytes", path, LIMIT_SECRET_BYTES);
		return NULL;
	}
	if (memchr(buf, 0, n)) {
		err_set(err, 400, "store.passwordFile %s: contains a NUL byte", path);
		return NULL;
	}
	return xstrdup(buf);
}

/* Test-only (KILN_TEST_HOLD_WRITER=PATH, OPS: The write queue): before each group
 * of batches the writer waits while PATH exists, with PATH.held existing
 * meanwhile, so a black-box test can fill the queue of a running server
 * deterministically. */
static void hold_while_exists(void *arg, const model_batch_t *const *batches, size_t n)
{
	(void)batches;
	(void)n;
	const char *path = arg;
	if (access(path, F_OK) != 0)
		return;
	char held[4096];
	snprintf(held, sizeof held, "%s.held", path);
	int fd = open(held, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
	struct timespec ms10 = {0, 10 * 1000000L};
	while (access(path, F_OK) == 0)
		nanosleep(&ms10, NULL);
	unlink(held);
}

store_t *cli_store_open(const config_t *cfg, int keys_usage_only, err_t *err)
{
	store_config_t sc = {.dir = cfg->data_dir,
	                     .retention_days = store_retention_days(&cfg->retention, ""),
	                     .keys_usage_only = keys_usage_only,
	                     .queue_batches = (uint32_t)cfg->store.queue_batches,
	                     .queue_mib = (uint32_t)cfg->store.queue_mib};
	const char *hold = getenv("KILN_TEST_HOLD_WRITER");
	if (hold && *hold) {
		sc.hold = hold_while_exists;
		sc.hold_arg = (void *)hold;
	}
	char *password = NULL;
	if (!strcmp(cfg->store.engine, "clickhouse")) {
		sc.engine = STORE_ENGINE_CLICKHOUSE;
		sc.ch_url = cfg->store.url;
		sc.ch_database = cfg->store.database;
		sc.ch_user = cfg->store.user;
		sc.ch_password = cfg->store.password;
		sc.ch_cluster = cfg->store.cluster;
		sc.ch_replicated = cfg->store.replicated;
		sc.ch_max_answer_mib = (uint32_t)cfg->store.max_answer_mib;
		if (cfg->store.password_file) {
			if (!(password = read_secret(cfg->store.password_file, err)))
				return NULL;
			sc.ch_password = password;
		}
	}
	store_t *s = store_open(&sc, err);
	free(password);
	return s;
}
