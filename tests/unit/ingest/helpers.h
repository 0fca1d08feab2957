/* Helpers shared by the ingest unit tests (keys, usage): temporary data
 * directories, removed with everything in them. */
#ifndef KILN_TESTS_INGEST_HELPERS_H
#define KILN_TESTS_INGEST_HELPERS_H

#include <stdio.h>
#include <stdlib.h>

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

#endif
