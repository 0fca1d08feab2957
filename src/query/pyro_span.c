/* Pyroscope's SelectMergeSpanProfile over Kiln's span index (query/pyro.h,
 * query_pyro_span_merge): the samples linked to any of the listed span ids
 * (store_view_span_chunks, as /api/span finds them), among the series the
 * query selects, merged by the one merge (query_part_from_hits +
 * query_merge_parts). */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "query/pyro.h"
#include "query/query_int.h"

/* Hits of one chunk adjacent (query_part_from_hits relies on it). */
static int hit_cmp(const void *a, const void *b)
{
	const store_span_hit_t *x = a, *y = b;
	if (x->head.chunk_id != y->head.chunk_id)
		return x->head.chunk_id < y->head.chunk_id ? -1 : 1;
	return x->attrset < y->attrset ? -1 : x->attrset > y->attrset;
}

int query_pyro_span_merge(store_t *s, const query_params_t *q, const slice_t *spans, uint32_t n_spans,
                          arena_t *a, model_tree_t *tree, err_t *err)
{
	query_type_t qt;
	if (query_check(q, 1, &qt, err) < 0)
		return -1;
	store_view_t *v = NULL;
	if (store_view_open(s, q->project, q->from_ns, q->until_ns, &v, err) < 0)
		return -1;
	uint32_t np = store_view_partitions(v), n = 0;
	query_part_t *parts = xcalloc((size_t)np + 1, sizeof *parts);
	store_span_hit_t *hits = NULL;
	size_t cap = 0;
	int rc = 0;
	for (uint32_t p = 0; p < np && rc == 0; p++) {
		size_t nh = 0;
		for (uint32_t i = 0; i < n_spans && rc == 0; i++) {
			const store_span_hit_t *h;
			uint32_t k;
			rc = store_view_span_chunks(v, p, spans[i], slice_make("", 0), &h, &k, err);
			if (rc < 0 || !k)
				continue;
			hits = xgrow(hits, &cap, nh + k, sizeof *hits);
			memcpy(hits + nh, h, (size_t)k * sizeof *hits);
			nh += k;
		}
		if (rc < 0 || !nh)
			continue;
		qsort(hits, nh, sizeof *hits, hit_cmp);
		/* A span listed twice: each (chunk, attrset) once. */
		size_t u = 0;
		for (size_t i = 0; i < nh; i++)
			if (!u || hits[u - 1].head.chunk_id != hits[i].head.chunk_id ||
			    hits[u - 1].attrset != hits[i].attrset)
				hits[u++] = hits[i];
		rc = query_part_from_hits(v, p, q, &qt, hits, (uint32_t)u, &parts[n], err);
		n++;
	}
	if (rc == 0)
		rc = query_merge_parts(v, parts, n, &qt, q->from_ns, q->until_ns, a, tree, err);
	for (uint32_t i = 0; i < n; i++)
		query_part_free(&parts[i]);
	free(parts);
	free(hits);
	store_view_close(v);
	return rc;
}
