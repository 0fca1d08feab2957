/* libFuzzer target for the Connect querier's request decoding (api/querier.c,
 * api_querier_decode: the step a call runs on the loop thread, without a
 * listener): byte 0 picks the method (low 4 bits, modulo the methods below)
 * and the codec (bit 4: Connect JSON, else binary protobuf); the rest is
 * the body. Checks for crashes, UB and leaks, and that a refusal is a
 * client error (400 invalid_argument, 413, 501 unimplemented) with a
 * message, never a 5xx. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const methods[] = {
    "ProfileTypes",    "LabelNames",         "LabelValues",  "SelectMergeStacktraces", "Series",
    "GetProfileStats", "SelectMergeProfile", "SelectSeries", "SelectMergeSpanProfile",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > (1u << 20))
		return 0;
	const char *m = methods[(data[0] & 15) % (sizeof methods / sizeof *methods)];
	int json = (data[0] >> 4) & 1;
	err_t err = {0};
	if (api_querier_decode(slice_cstr(m), json, slice_make(data + 1, size - 1), &err) < 0) {
		if ((err.status != 400 && err.status != 413 && err.status != 501) || !err.msg[0])
			abort();
	} else if (err.status) {
		abort();
	}
	return 0;
}
