/* What the JFR unit tests (tests/unit/wire/jfr*.c) share: reading a
 * recording or oracle file of tests/data/jfr. */
#ifndef KILN_TESTS_UNIT_WIRE_JFR_DATA_H
#define KILN_TESTS_UNIT_WIRE_JFR_DATA_H

#include "testutil.h"

#include "base/buf.h"
#include "wire/compress.h"

/* Reads tests/data/jfr/name, inflated (every file there is gzip) into out. */
static inline slice_t load(const char *name, buf_t *out)
{
	char path[512];
	size_t n;
	snprintf(path, sizeof path, "%s/jfr/%s", testdata_dir(), name);
	unsigned char *raw = read_file_or_fail(path, &n);
	err_t err = {0};
	buf_init(out, 256u << 20);
	if (gz_inflate(slice_make(raw, n), out, &err) < 0)
		fail_msg("%s: %s", name, err.msg);
	free(raw);
	return slice_make(out->p, out->n);
}

#endif
