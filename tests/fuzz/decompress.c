/* libFuzzer target for wire/compress.c as the HTTP and gRPC servers use it:
 * the first byte picks the Content-Encoding, the rest is the body given to
 * body_decode with a small ceiling. It checks for crashes, leaks and UB, that
 * the output never passes the ceiling, and that failures carry a status. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/buf.h"
#include "wire/compress.h"

#define CEILING (1u << 20) /* smaller than production keeps runs fast; same bound logic */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const encodings[] = {"gzip",     "x-gzip", "zstd", "deflate",
	                                        "identity", "",       "GZip", "br"};
	if (size < 1)
		return 0;
	slice_t enc = slice_cstr(encodings[data[0] % (sizeof encodings / sizeof encodings[0])]);
	/* The high bits shrink the ceiling, so the limit is hit at many sizes. */
	size_t ceiling = data[0] & 0x80 ? 1 + (size_t)(data[0] & 0x78) * 97 : CEILING;
	buf_t out;
	buf_init(&out, ceiling);
	err_t err = {0};
	int rc = body_decode(enc, slice_make(data + 1, size - 1), &out, &err);
	if (out.n > ceiling)
		abort();
	if (rc < 0 && err.status != 400 && err.status != 413 && err.status != 415)
		abort();
	if (rc == 0 && err.status)
		abort();
	buf_free(&out);
	return 0;
}
