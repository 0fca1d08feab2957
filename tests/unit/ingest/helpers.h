/* Helpers shared by the ingest unit tests (keys, usage): temporary data
 * directories, removed with everything in them, and the embedded store over
 * one, opened as `kiln serve` or as `kiln keys` / `kiln usage` do. */
#ifndef KILN_TESTS_INGEST_HELPERS_H
#define KILN_TESTS_INGEST_HELPERS_H

#include <stdio.h>
#include <stdlib.h>

#include "store/store.h"
#include "testutil.h"

static inline char *temp_dir(void)
{
	char *d = strdup("/tmp/kiln-ingest-XXXXXX");
	assert_non_null(mkdtemp(d));
	return d;
}

static inline void remove_dir(char *d)
{
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
	assert_int_equal(system(cmd), 0);
	free(d);
}

/* The embedded store of dir: a server's (lock, writer, keys.db and usage.db
 * created) or, with keys_usage_only, the operator commands' beside it. */
static inline store_t *open_store(const char *dir, int keys_usage_only)
{
	store_config_t c = {.dir = dir, .keys_usage_only = keys_usage_only};
	err_t err = {0};
	store_t *s = store_open(&c, &err);
	if (!s)
		fail_msg("store_open %s: %s", dir, err.msg);
	return s;
}

#endif
