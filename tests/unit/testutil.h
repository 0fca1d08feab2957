/* Shared includes and helpers for the cmocka unit tests (tests/unit/<module>/<file>.c
 * tests src/<module>/<file>.c). */
#ifndef KILN_TESTS_TESTUTIL_H
#define KILN_TESTS_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Directory of the real-profile fixtures (tests/data; the tests run from the repository root). */
static inline const char *testdata_dir(void)
{
	const char *d = getenv("KILN_TESTDATA");
	return d ? d : "tests/data";
}

/* Reads a whole file (malloc'd) or fails the test. */
static inline unsigned char *read_file_or_fail(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fail_msg("cannot open %s", path);
	}
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *p = malloc((size_t)len + 1);
	if (fread(p, 1, (size_t)len, f) != (size_t)len) {
		fail_msg("short read %s", path);
	}
	fclose(f);
	*n = (size_t)len;
	return p;
}

#endif
