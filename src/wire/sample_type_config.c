/* sample_type_config parsing (see sample_type_config.h): jansson with
 * duplicate keys refused and its own nesting bound; every string copied into
 * the bounded table, so nothing of the JSON outlives the call. */
#include "wire/sample_type_config.h"

#include <jansson.h>
#include <string.h>

#include "model/model.h"

static int copy_string(const char *type, const char *field, const json_t *v, char *dst, err_t *err)
{
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return err_set(err, 400, "sample_type_config: \"%.64s\".%s must be a string", type, field);
	size_t n = json_string_length(v);
	if (n > LIMIT_PYRO_STC_STRING_BYTES)
		return err_set(err, 400, "sample_type_config: \"%.64s\".%s is longer than %u bytes", type,
		               field, LIMIT_PYRO_STC_STRING_BYTES);
	memcpy(dst, json_string_value(v), n);
	dst[n] = 0;
	return 0;
}

static int copy_bool(const char *type, const char *field, const json_t *v, uint8_t *dst, err_t *err)
{
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return err_set(err, 400, "sample_type_config: \"%.64s\".%s must be true or false", type,
		               field);
	*dst = (uint8_t)json_is_true(v);
	return 0;
}

static int parse_entry(const char *type, const json_t *v, pyro_stc_entry_t *e, err_t *err)
{
	if (!json_is_object(v))
		return err_set(err, 400, "sample_type_config: \"%.64s\" must be an object", type);
	char agg[LIMIT_PYRO_STC_STRING_BYTES + 1] = "";
	if (copy_string(type, "units", json_object_get(v, "units"), e->units, err) < 0 ||
	    copy_string(type, "display-name", json_object_get(v, "display-name"), e->display_name, err) < 0 ||
	    copy_string(type, "aggregation", json_object_get(v, "aggregation"), agg, err) < 0 ||
	    copy_bool(type, "cumulative", json_object_get(v, "cumulative"), &e->cumulative, err) < 0 ||
	    copy_bool(type, "sampled", json_object_get(v, "sampled"), &e->sampled, err) < 0)
		return -1;
	if (!strcmp(agg, "sum"))
		e->aggregation = PYRO_STC_AGG_SUM;
	else if (!strcmp(agg, "average"))
		e->aggregation = PYRO_STC_AGG_AVERAGE;
	else if (agg[0])
		return err_set(
		    err, 400,
		    "sample_type_config: \"%.64s\".aggregation must be \"sum\" or \"average\", not "
		    "\"%.32s\"",
		    type, agg);
	return 0;
}

int pyro_stc_parse(slice_t json, pyro_stc_t *out, err_t *err)
{
	out->n = 0;
	if (json.n > LIMIT_PYRO_STC_BYTES)
		return err_set(err, 400, "sample_type_config: %zu bytes; the limit is %u KiB", json.n,
		               LIMIT_PYRO_STC_BYTES >> 10);
	json_error_t jerr;
	json_t *root = json_loadb(json.n ? (const char *)json.p : "", json.n, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		if (strstr(jerr.text, "duplicate object key"))
			return err_set(err, 400, "sample_type_config: a duplicate key at byte %d",
			               jerr.position);
		if (strstr(jerr.text, "\\u0000"))
			return err_set(err, 400, "sample_type_config: a string with \\u0000 (NUL) at byte %d",
			               jerr.position);
		return err_set(err, 400, "sample_type_config: not JSON (%s at byte %d)", jerr.text,
		               jerr.position);
	}
	int rc = 0;
	if (!json_is_object(root)) {
		rc = err_set(err, 400, "sample_type_config: not a JSON object {SAMPLE_TYPE: {...}, ...}");
		goto done;
	}
	if (json_object_size(root) > LIMIT_SAMPLE_TYPES) {
		rc = err_set(err, 400, "sample_type_config: %zu sample types; the limit is %u",
		             json_object_size(root), LIMIT_SAMPLE_TYPES);
		goto done;
	}
	const char *key;
	json_t *v;
	json_object_foreach(root, key, v)
	{
		size_t n = strlen(key);
		if (n == 0) {
			rc = err_set(err, 400, "sample_type_config: an empty sample type");
			goto done;
		}
		if (n > LIMIT_PYRO_STC_STRING_BYTES) {
			rc = err_set(err, 400, "sample_type_config: a sample type longer than %u bytes",
			             LIMIT_PYRO_STC_STRING_BYTES);
			goto done;
		}
		pyro_stc_entry_t *e = &out->entries[out->n];
		memset(e, 0, sizeof *e);
		memcpy(e->type, key, n + 1);
		if (parse_entry(e->type, v, e, err) < 0) {
			rc = -1;
			goto done;
		}
		out->n++;
	}
done:
	json_decref(root);
	if (rc < 0)
		out->n = 0;
	return rc;
}

const pyro_stc_entry_t *pyro_stc_find(const pyro_stc_t *c, slice_t t)
{
	for (uint32_t i = 0; i < c->n; i++)
		if (slice_eq_cstr(t, c->entries[i].type))
			return &c->entries[i];
	return NULL;
}

/* s contains part (bytes, not C strings: a pprof string may hold a NUL). */
static int contains(slice_t s, const char *part)
{
	size_t m = strlen(part);
	for (size_t i = 0; s.n >= m && i <= s.n - m; i++)
		if (memcmp((const char *)s.p + i, part, m) == 0)
			return 1;
	return 0;
}

/* Pyroscope's tree.DefaultSampleTypeMapping: the display names it gives
 * when a push carries no sample_type_config. */
static const char *default_display_name(slice_t type)
{
	static const char *const map[][2] = {
	    {"samples", "cpu"},
	    {"goroutine", "goroutines"},
	    {"contentions", "mutex_count"},
	    {"delay", "mutex_duration"},
	};
	for (size_t i = 0; i < sizeof map / sizeof *map; i++)
		if (slice_eq_cstr(type, map[i][0]))
			return map[i][1];
	return NULL;
}

slice_t pyro_stc_profile_name(const pyro_stc_t *c, const slice_t *types, uint32_t n)
{
	slice_t name = {NULL, 0};
	for (uint32_t i = 0; i < n; i++)
		if (slice_eq_cstr(types[i], "wall"))
			return slice_cstr("wall");
	for (uint32_t i = 0; i < n; i++) {
		const pyro_stc_entry_t *e = c ? pyro_stc_find(c, types[i]) : NULL;
		const char *display =
		    c ? (e && e->display_name[0] ? e->display_name : NULL) : default_display_name(types[i]);
		name = display ? slice_cstr(display) : types[i];
		if (contains(name, "cpu"))
			return slice_cstr("process_cpu");
		if (contains(name, "alloc_") || contains(name, "inuse_") || slice_eq_cstr(name, "space") ||
		    slice_eq_cstr(name, "objects"))
			return slice_cstr("memory");
		if (contains(name, "mutex_"))
			return slice_cstr("mutex");
		if (contains(name, "block_"))
			return slice_cstr("block");
		if (contains(name, "goroutines"))
			return slice_cstr("goroutines");
	}
	/* Pyroscope's fallback: the last type's name (the Go SDK's goroutine
	 * leak profile: goroutine_leak), when it is a Kiln profile name. */
	return model_profile_name_valid(name) ? name : (slice_t){NULL, 0};
}
