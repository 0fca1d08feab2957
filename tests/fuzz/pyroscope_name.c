/* libFuzzer target for wire/pyroscope.c: the input is the name= of a
 * Pyroscope /ingest (APP{k=v,...}), parsed as the route does, then as a
 * from= timestamp. It checks for crashes and UB, that an error is a 400
 * naming a byte position inside the input, and that a parse stays within
 * its bounds: a non-empty application, at most LIMIT_LABELS labels with
 * non-empty distinct keys, every slice inside the input or the table. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/limits.h"
#include "base/timeutil.h"
#include "wire/pyroscope.h"

#define NOW_NS 1760000000000000000LL /* a fixed now: no clock in the target */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int inside(slice_t s, const void *base, size_t n)
{
	const uint8_t *b = base;
	return s.n <= n && (!s.n || (s.p >= b && s.p + s.n <= b + n));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static pyro_name_t name;
	if (size > LIMIT_HEADER_BYTES) /* a name longer than a request head never arrives */
		return 0;
	err_t err = {0};
	if (pyro_name_parse(slice_make(data, size), &name, &err) < 0) {
		const char *at = strstr(err.msg, " at byte ");
		if (err.status != 400 || strncmp(err.msg, "name: ", 6) != 0 || !at ||
		    strtoull(at + 9, NULL, 10) >
		        (size < LIMIT_PYRO_NAME_BYTES ? size : LIMIT_PYRO_NAME_BYTES))
			abort();
	} else {
		if (!name.app.n || !inside(name.app, data, size) || name.n_labels > LIMIT_LABELS)
			abort();
		for (uint32_t i = 0; i < name.n_labels; i++) {
			slice_t k = name.labels[i].key, v = name.labels[i].value;
			if (!k.n || !inside(k, data, size) ||
			    !(inside(v, data, size) || inside(v, name._text, sizeof name._text)))
				abort();
			for (uint32_t j = 0; j < i; j++)
				if (slice_eq(k, name.labels[j].key))
					abort();
		}
	}
	char text[32];
	if (size < sizeof text) {
		memcpy(text, data, size);
		text[size] = 0;
		int64_t t;
		/* A string of digits is a time in [1970, 2200]; now-DURATION may reach before 1970 (the
		 * push's retention window refuses it). */
		if (pyro_time_parse(text, NOW_NS, &t) == 0 && size && strspn(text, "0123456789") == size &&
		    (t < 0 || t > TIME_PARSE_MAX_SECONDS * NS_PER_SEC))
			abort();
	}
	return 0;
}
