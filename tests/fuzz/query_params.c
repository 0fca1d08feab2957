/* libFuzzer target for api/params.c: the input is a URL query string, parsed
 * as the query routes do (params_parse, params_range with a fixed now,
 * params_labels). It checks for crashes, leaks and UB, that every decoded
 * string is NUL-terminated within bounds, and that a range is ordered. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/params.h"
#include "base/arena.h"
#include "base/limits.h"

#define NOW_NS 1760000000000000000LL /* a fixed now: no clock in the target */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > LIMIT_HEADER_BYTES) /* a target longer than a request head never arrives */
		return 0;
	arena_t *a = arena_new();
	params_t p;
	err_t err = {0};
	if (params_parse(slice_make(data, size), a, &p, &err) < 0) {
		if (err.status != 400)
			abort();
		goto out;
	}
	if (p.n > LIMIT_QUERY_PARAMS)
		abort();
	for (uint32_t i = 0; i < p.n; i++)
		if (strlen(p.items[i].key) > size || strlen(p.items[i].value) > size ||
		    params_get(&p, p.items[i].key) == NULL)
			abort();
	int64_t from, until;
	if (params_range(&p, NOW_NS, &from, &until, &err) == 0 && from >= until)
		abort();
	model_label_t *labels;
	uint32_t n;
	if (params_labels(&p, a, &labels, &n, &err) == 0) {
		if (n > LIMIT_LABELS)
			abort();
		for (uint32_t i = 0; i < n; i++)
			if (!labels[i].key.n || labels[i].key.n > LIMIT_STRING_BYTES ||
			    labels[i].value.n > LIMIT_STRING_BYTES)
				abort();
	}
out:
	arena_free(a);
	return 0;
}
