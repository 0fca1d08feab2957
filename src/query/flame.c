/* The flame graph JSON of a merged tree (for /api/flamegraph and the span
 * view): siblings that show the same name are merged into one node, children
 * ordered by total then name, written in one pass with an explicit stack
 * (stacks may be 4,096 frames deep). The shown tree (query_shown_build) is
 * also what query/levels.c encodes in Pyroscope's formats. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/u64map.h"
#include "query/query_int.h"

void query_shown_build(const model_tree_t *t, const query_names_t *names, query_shown_t *d)
{
	size_t n = t->n_nodes;
	d->parent = xmalloc(n * sizeof *d->parent);
	d->name = xmalloc(n * sizeof *d->name);
	d->self = xmalloc(n * sizeof *d->self);
	d->total = xmalloc(n * sizeof *d->total);
	uint32_t *shown_of = xmalloc(n * sizeof *shown_of);
	u64map_t ix;
	u64map_init(&ix);
	u64map_reserve(&ix, n);
	d->parent[0] = 0;
	d->name[0] = UINT32_MAX;
	d->self[0] = t->self[0];
	d->total[0] = t->total[0];
	d->n = 1;
	shown_of[0] = 0;
	for (uint32_t i = 1; i < t->n_nodes; i++) {
		uint32_t parent = shown_of[t->parent[i]], name = names->name_of[i];
		int inserted;
		uint64_t key = ((uint64_t)(parent + 1) << 32) | name;
		uint32_t s = u64map_get_or_put(&ix, key, d->n, &inserted);
		if (inserted) {
			d->parent[s] = parent;
			d->name[s] = name;
			d->self[s] = d->total[s] = 0;
			d->n++;
		}
		d->self[s] = num_sat_add(d->self[s], t->self[i]);
		d->total[s] = num_sat_add(d->total[s], t->total[i]);
		shown_of[i] = s;
	}
	u64map_free(&ix);
	free(shown_of);
}

void query_shown_free(query_shown_t *d)
{
	free(d->parent);
	free(d->name);
	free(d->self);
	free(d->total);
}

typedef struct {
	int64_t total;
	uint32_t rank; /* of the name in byte order */
	uint32_t node;
} order_key_t;

static int order_cmp(const void *a, const void *b)
{
	const order_key_t *x = a, *y = b;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

static int name_cmp_r(const void *a, const void *b, void *names)
{
	const slice_t *n = names;
	return slice_cmp(n[*(const uint32_t *)a], n[*(const uint32_t *)b]);
}

uint32_t *query_names_rank(const query_names_t *names)
{
	uint32_t *by_name = xmalloc(((size_t)names->n_names + 1) * sizeof *by_name);
	uint32_t *rank = xmalloc(((size_t)names->n_names + 1) * sizeof *rank);
	for (uint32_t i = 0; i < names->n_names; i++)
		by_name[i] = i;
	if (names->n_names > 1)
		qsort_r(by_name, names->n_names, sizeof *by_name, name_cmp_r, names->names);
	for (uint32_t i = 0; i < names->n_names; i++)
		rank[by_name[i]] = i;
	free(by_name);
	return rank;
}

/* Non-root nodes by total desc, then name: the order of every child list.
 * Names are ranked once so the big sort compares integers only. */
static uint32_t *shown_order(const query_shown_t *d, const query_names_t *names)
{
	uint32_t *rank = query_names_rank(names);
	order_key_t *keys = xmalloc(((size_t)d->n + 1) * sizeof *keys);
	for (uint32_t i = 1; i < d->n; i++)
		keys[i - 1] = (order_key_t){d->total[i], rank[d->name[i]], i};
	if (d->n > 2)
		qsort(keys, d->n - 1, sizeof *keys, order_cmp);
	uint32_t *order = xmalloc(((size_t)d->n + 1) * sizeof *order);
	for (uint32_t i = 0; i + 1 < d->n; i++)
		order[i] = keys[i].node;
	free(keys);
	free(rank);
	return order;
}

static int write_open(buf_t *json, const model_tree_t *t, const query_names_t *names, const query_shown_t *d,
                      uint32_t s)
{
	int rc = buf_puts(json, "{\"name\":");
	if (s == 0) {
		rc |= buf_puts(json, "\"total\"");
	} else {
		const model_frame_t *f = &t->frames[names->frame_of_name[d->name[s]]];
		rc |= buf_json_str(json, names->names[d->name[s]]);
		if (f->kind.n) {
			rc |= buf_puts(json, ",\"kind\":");
			rc |= buf_json_str(json, f->kind);
		}
		if (f->unsymbolized)
			rc |= buf_puts(json, ",\"unsymbolized\":true");
	}
	rc |= buf_puts(json, ",\"self\":");
	rc |= query_json_i64(json, d->self[s]);
	rc |= buf_puts(json, ",\"total\":");
	rc |= query_json_i64(json, d->total[s]);
	rc |= buf_puts(json, ",\"children\":[");
	return rc;
}

/* Depth-first, children in order, with an explicit stack of (node, next child). */
static int write_nodes(buf_t *json, const model_tree_t *t, const query_names_t *names, const query_shown_t *d,
                       const uint32_t *start, const uint32_t *kids)
{
	uint32_t *stack = xmalloc(((size_t)d->n + 1) * sizeof *stack);
	uint32_t *next = xmalloc(((size_t)d->n + 1) * sizeof *next);
	uint32_t depth = 0;
	int rc = write_open(json, t, names, d, 0);
	stack[0] = 0;
	next[0] = start[0];
	depth = 1;
	while (depth && rc == 0) {
		uint32_t s = stack[depth - 1];
		if (next[depth - 1] == start[s + 1]) {
			rc |= buf_puts(json, "]}");
			depth--;
			continue;
		}
		uint32_t k = kids[next[depth - 1]];
		if (next[depth - 1]++ != start[s])
			rc |= buf_putc(json, ',');
		rc |= write_open(json, t, names, d, k);
		stack[depth] = k;
		next[depth] = start[k];
		depth++;
	}
	free(stack);
	free(next);
	return rc;
}

int query_flame_root(buf_t *json, const query_merged_t *m)
{
	query_shown_t d;
	query_shown_build(&m->tree, &m->names, &d);
	uint32_t *order = shown_order(&d, &m->names);
	uint32_t *start, *kids;
	query_children(d.parent, d.n, order, &start, &kids);
	/* About 70 bytes a node: one allocation instead of a dozen copies. */
	buf_reserve(json, (size_t)d.n * 72 < json->max - json->n ? (size_t)d.n * 72 : 0);
	int rc = write_nodes(json, &m->tree, &m->names, &d, start, kids);
	free(start);
	free(kids);
	free(order);
	query_shown_free(&d);
	return rc;
}

int query_flamegraph(store_t *s, const query_params_t *q, buf_t *json, err_t *err)
{
	query_merged_t m;
	if (query_merged_open(s, q, &m, err) < 0)
		return -1;
	int rc = query_merged_json_head(json, &m);
	rc |= buf_puts(json, ",\"root\":");
	rc |= query_flame_root(json, &m);
	rc |= buf_putc(json, '}');
	query_merged_close(&m);
	return rc < 0 ? query_err_too_large(err) : 0;
}
