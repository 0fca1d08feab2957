/* libFuzzer target for scrape/annotations.c: the input is one Pod object as
 * JSON (≤ 64 KiB, jansson's nesting bound), read with and without a
 * defaultPort; it checks for crashes and that every target is well formed. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "scrape/annotations.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_target(const scrape_target_t *t)
{
	if (strnlen(t->url, sizeof t->url) == sizeof t->url ||
	    strnlen(t->key, sizeof t->key) == sizeof t->key ||
	    strnlen(t->service, sizeof t->service) == sizeof t->service || !t->service[0] ||
	    strnlen(t->workload, sizeof t->workload) == sizeof t->workload || !t->workload[0])
		abort();
	if (strncmp(t->url, t->https ? "https://" : "http://", t->https ? 8 : 7) != 0 ||
	    !scrape_type_name(t->type))
		abort();
	if (t->timeout_ns != scrape_type_get(t->type)->timeout_ns || t->window_ns < 0 ||
	    t->window_ns > t->timeout_ns - 5000000000LL)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const extra[] = {"profiles.example.com", "pyroscope.io"};
	if (size > 64 * 1024)
		return 0;
	json_t *pod = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (!pod)
		return 0;
	for (int port = 0; port <= 6060; port += 6060) {
		annot_settings_t s = {.extra_prefixes = extra, .n_extra = 2, .default_port = port};
		scrape_target_t t[SCRAPE_TYPES];
		annot_skip_t sk[SCRAPE_TYPES];
		size_t n = 0, nsk = 0;
		err_t err = {0};
		if (annot_pod_targets(pod, &s, t, &n, sk, &nsk, &err) < 0 && (n || nsk || err.status != 400))
			abort();
		if (n + nsk > SCRAPE_TYPES)
			abort();
		for (size_t i = 0; i < n; i++)
			check_target(&t[i]);
		for (size_t i = 0; i < nsk; i++)
			if (!annot_skip_reason_name(sk[i].reason) || !scrape_type_name(sk[i].type))
				abort();
	}
	json_decref(pod);
	return 0;
}
