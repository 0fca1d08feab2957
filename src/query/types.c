/* Type ids (API: Type ids): parsing the `type=` of every route, SAMPLE:UNIT
 * or NAME:SAMPLE:UNIT, and the ids a listing shows (/api/types,
 * /api/services, the span view), where kinds of one SAMPLE:UNIT with
 * different profile names (Go's block and mutex) show apart. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/arena.h"
#include "query/query_int.h"

int query_type_parse(slice_t id, query_type_t *t, err_t *err)
{
	memset(t, 0, sizeof *t);
	const uint8_t *colon = id.n ? memchr(id.p, ':', id.n) : NULL;
	if (!colon || colon == id.p || colon == id.p + id.n - 1)
		return err_set(
		    err, 400,
		    "type must be SAMPLE_TYPE:UNIT or NAME:SAMPLE_TYPE:UNIT (e.g. cpu:nanoseconds, "
		    "block:delay:nanoseconds), got \"%.*s\"",
		    (int)(id.n > 100 ? 100 : id.n), (const char *)id.p);
	t->name = id;
	t->type = id;
	slice_t head = slice_make(id.p, (size_t)(colon - id.p));
	slice_t rest = slice_make(colon + 1, id.n - head.n - 1);
	const uint8_t *second = memchr(rest.p, ':', rest.n);
	/* NAME:SAMPLE:UNIT needs a profile name before the first ':' and both
	 * parts after it; anything else is SAMPLE:UNIT as before names existed. */
	if (second && second != rest.p && second != rest.p + rest.n - 1 && model_profile_name_valid(head)) {
		t->named = 1;
		t->profile = head;
		t->type = rest;
		colon = second;
	}
	t->sample_type = slice_make(t->type.p, (size_t)(colon - t->type.p));
	t->sample_unit = slice_make(colon + 1, t->type.n - t->sample_type.n - 1);
	t->cpu_ns = slice_eq_cstr(t->type, "cpu:nanoseconds");
	return 0;
}

slice_t query_series_profile(const store_series_t *s)
{
	for (uint32_t i = 0; i < s->n_labels; i++)
		if (slice_eq_cstr(s->labels[i].key, MODEL_PROFILE_NAME_KEY))
			return s->labels[i].value;
	return slice_make("", 0);
}

void query_kind_add(query_kind_t **k, size_t *cap, uint32_t *n, slice_t type, slice_t profile)
{
	for (uint32_t i = 0; i < *n; i++)
		if (slice_eq((*k)[i].type, type) && slice_eq((*k)[i].profile, profile))
			return;
	*k = xgrow(*k, cap, (size_t)*n + 1, sizeof **k);
	(*k)[(*n)++] = (query_kind_t){type, profile};
}

void query_kind_ids(const query_kind_t *k, uint32_t n, arena_t *a, slice_t *id)
{
	for (uint32_t i = 0; i < n; i++) {
		/* A named kind shows apart when another name has its type. */
		int apart = 0;
		for (uint32_t j = 0; j < n && k[i].profile.n && !apart; j++)
			apart = k[j].profile.n && slice_eq(k[j].type, k[i].type) &&
			        !slice_eq(k[j].profile, k[i].profile);
		if (!apart) {
			id[i] = k[i].type;
			continue;
		}
		size_t len = k[i].profile.n + 1 + k[i].type.n;
		char *s = arena_alloc(a, len);
		memcpy(s, k[i].profile.p, k[i].profile.n);
		s[k[i].profile.n] = ':';
		memcpy(s + k[i].profile.n + 1, k[i].type.p, k[i].type.n);
		id[i] = slice_make(s, len);
	}
}

static int kind_cmp(const void *a, const void *b)
{
	const query_kind_t *x = a, *y = b;
	int c = slice_cmp(x->type, y->type);
	return c ? c : slice_cmp(x->profile, y->profile);
}

int query_json_kinds(buf_t *json, query_kind_t *k, uint32_t n)
{
	if (n > 1)
		qsort(k, n, sizeof *k, kind_cmp);
	arena_t *a = arena_new();
	slice_t *id = xmalloc(((size_t)n + 1) * sizeof *id);
	query_kind_ids(k, n, a, id);
	int rc = buf_putc(json, '[');
	uint32_t written = 0;
	for (uint32_t i = 0; i < n; i++) {
		/* Equal ids are adjacent: the kinds of one type are. */
		if (i && slice_eq(id[i], id[i - 1]))
			continue;
		if (written++)
			rc |= buf_putc(json, ',');
		rc |= buf_json_str(json, id[i]);
	}
	rc |= buf_putc(json, ']');
	free(id);
	arena_free(a);
	return rc;
}
