/* URL query parsing for the push and query routes (api/params.h). */
#include "api/params.h"

#include <string.h>

#include "base/limits.h"
#include "base/num.h"
#include "base/timeutil.h"

/* Percent-decodes s into a NUL-terminated arena string; NULL on bad escapes or NUL bytes. */
static const char *decode(arena_t *a, const uint8_t *s, size_t n)
{
	char *out = arena_alloc(a, n + 1);
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t c = s[i];
		if (c == '+') {
			c = ' ';
		} else if (c == '%') {
			if (i + 2 >= n)
				return NULL;
			int h = num_hex_digit(s[i + 1]), l = num_hex_digit(s[i + 2]);
			if (h < 0 || l < 0)
				return NULL;
			c = (uint8_t)(h * 16 + l);
			i += 2;
		}
		if (c == 0)
			return NULL;
		out[o++] = (char)c;
	}
	out[o] = 0;
	return out;
}

int params_parse(slice_t query, arena_t *a, params_t *out, err_t *err)
{
	out->n = 0;
	size_t i = 0;
	while (i < query.n) {
		size_t start = i;
		while (i < query.n && query.p[i] != '&')
			i++;
		size_t end = i++;
		if (end == start)
			continue;
		size_t eq = start;
		while (eq < end && query.p[eq] != '=')
			eq++;
		if (out->n == LIMIT_QUERY_PARAMS)
			return err_set(err, 400, "too many query parameters; the limit is %d",
			               LIMIT_QUERY_PARAMS);
		const char *k = decode(a, query.p + start, eq - start);
		const char *v = eq < end ? decode(a, query.p + eq + 1, end - eq - 1) : "";
		if (!k || !v)
			return err_set(err, 400, "query parameter %.*s is not valid percent-encoding",
			               (int)(end - start > 64 ? 64 : end - start), (const char *)query.p + start);
		out->items[out->n++] = (params_item_t){k, v};
	}
	return 0;
}

const char *params_get(const params_t *p, const char *key)
{
	for (uint32_t i = 0; i < p->n; i++)
		if (strcmp(p->items[i].key, key) == 0)
			return p->items[i].value;
	return NULL;
}

int params_labels(const params_t *p, arena_t *a, model_label_t **labels, uint32_t *n, err_t *err)
{
	uint32_t count = 0;
	for (uint32_t i = 0; i < p->n; i++)
		if (strncmp(p->items[i].key, "label.", 6) == 0)
			count++;
	if (count > LIMIT_LABELS)
		return err_set(err, 400, "%u label.* parameters; the limit is %u", count, LIMIT_LABELS);
	model_label_t *l = arena_alloc(a, (count ? count : 1) * sizeof *l);
	uint32_t k = 0;
	for (uint32_t i = 0; i < p->n; i++) {
		const char *key = p->items[i].key;
		if (strncmp(key, "label.", 6) != 0)
			continue;
		if (!key[6])
			return err_set(err, 400, "parameter label. needs a label name: label.NAME=VALUE");
		if (strlen(key + 6) > LIMIT_STRING_BYTES || strlen(p->items[i].value) > LIMIT_STRING_BYTES)
			return err_set(err, 400, "label %.64s is longer than %u bytes", key + 6, LIMIT_STRING_BYTES);
		l[k].key = slice_cstr(key + 6);
		l[k].value = slice_cstr(p->items[i].value);
		k++;
	}
	*labels = l;
	*n = k;
	return 0;
}

int params_range(const params_t *p, int64_t now_ns, int64_t *from_ns, int64_t *until_ns, err_t *err)
{
	const char *f = params_get(p, "from"), *u = params_get(p, "until");
	*until_ns = now_ns;
	*from_ns = now_ns - 3600 * NS_PER_SEC;
	if (u && *u && time_parse(u, now_ns, until_ns) < 0)
		return err_set(err, 400, "until=%.64s is not unix seconds or now-DURATION (e.g. now-1h)", u);
	if (f && *f && time_parse(f, now_ns, from_ns) < 0)
		return err_set(err, 400, "from=%.64s is not unix seconds or now-DURATION (e.g. now-1h)", f);
	if (f && *f && !(u && *u) && *from_ns >= *until_ns)
		*until_ns = *from_ns + 3600 * NS_PER_SEC;
	if (*from_ns >= *until_ns)
		return err_set(err, 400, "from must be before until");
	return 0;
}
