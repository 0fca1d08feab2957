/* Shared by the benchmark programs: read a whole input file into a buffer
 * bounded by the body limit (what a push may carry). */
#ifndef KILN_BENCH_FILE_H
#define KILN_BENCH_FILE_H

#include <stdio.h>

#include "base/buf.h"
#include "base/limits.h"

/* 0, or -1 after printing why (unreadable, or larger than LIMIT_BODY_BYTES). */
static inline int bench_read_file(const char *path, buf_t *out)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	buf_init(out, LIMIT_BODY_BYTES);
	unsigned char tmp[65536];
	size_t n;
	while ((n = fread(tmp, 1, sizeof tmp, f)) > 0)
		if (buf_append(out, tmp, n) < 0) {
			fprintf(stderr, "%s: larger than %u bytes\n", path, LIMIT_BODY_BYTES);
			fclose(f);
			return -1;
		}
	fclose(f);
	return 0;
}

#endif
