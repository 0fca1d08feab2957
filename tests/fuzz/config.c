/* libFuzzer target for cli/config.c: the input is a config file's YAML,
 * read from memory over the defaults (config_load_yaml, the same reading as
 * --config), then validated, as kiln serve does. It checks for crashes, leaks
 * and UB, that failures carry a 400, and that counted arrays stay in bounds. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "cli/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 64 * 1024) /* configs are small; libfyaml's cost grows with nesting */
		return 0;
	config_t c;
	err_t err = {0};
	config_defaults(&c);
	if (config_load_yaml(&c, (const char *)data, size, &err) == 0) {
		if (c.retention.n_projects > LIMIT_RETENTION_PROJECTS ||
		    c.scrape.n_prefixes > LIMIT_ANNOTATION_PREFIXES ||
		    c.scrape.n_statics > LIMIT_STATIC_TARGETS)
			abort();
		if (config_validate(&c, &err) == 0)
			(void)store_retention_days(&c.retention, "default");
		else if (err.status != 400)
			abort();
	} else if (err.status != 400) {
		abort();
	}
	config_free(&c);
	return 0;
}
