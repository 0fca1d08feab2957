/* URL query strings: split, percent-decode, look up. The decoded strings are
 * NUL-terminated copies in the caller's arena. */
#ifndef KILN_API_PARAMS_H
#define KILN_API_PARAMS_H

#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "base/limits.h"
#include "base/slice.h"
#include "model/model.h"

typedef struct {
	const char *key;
	const char *value;
} params_item_t;

typedef struct {
	params_item_t items[LIMIT_QUERY_PARAMS];
	uint32_t n;
} params_t;

/* Parses "a=1&b=x%20y". 400 on bad percent-encoding or more than LIMIT_QUERY_PARAMS pairs. */
int params_parse(slice_t query, arena_t *a, params_t *out, err_t *err);
/* Value of the first key, or NULL. */
const char *params_get(const params_t *p, const char *key);
/* Collects every "label.K=V" into labels (arena-allocated); 400 past LIMIT_LABELS. */
int params_labels(const params_t *p, arena_t *a, model_label_t **labels, uint32_t *n, err_t *err);
/* Time range from from/until (unix seconds or now-1h style); defaults: the last hour. */
int params_range(const params_t *p, int64_t now_ns, int64_t *from_ns, int64_t *until_ns, err_t *err);

#endif
