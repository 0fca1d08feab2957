/* The top table of a merged tree: per shown function name, its self value and
 * its cumulative value with recursion counted once (as `go tool pprof -top`).
 * A node's total counts for its name unless an ancestor has the same name. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "query/query_int.h"

typedef struct {
	slice_t name;
	int64_t self, total;
} top_row_t;

static int row_cmp(const void *a, const void *b)
{
	const top_row_t *x = a, *y = b;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return slice_cmp(x->name, y->name);
}

/* rows[name id] gets self and total over the whole tree, by a depth-first walk
 * that knows how often each name is on the current path. */
static void top_sum(const model_tree_t *t, const query_names_t *names, top_row_t *rows)
{
	uint32_t *start, *kids;
	query_children(t->parent, t->n_nodes, NULL, &start, &kids);
	uint32_t *on_path = xcalloc((size_t)names->n_names + 1, sizeof *on_path);
	uint32_t *stack = xmalloc(((size_t)t->n_nodes + 1) * sizeof *stack);
	uint32_t *next = xmalloc(((size_t)t->n_nodes + 1) * sizeof *next);
	uint32_t depth = 1;
	stack[0] = 0;
	next[0] = start[0];
	while (depth) {
		uint32_t s = stack[depth - 1];
		if (next[depth - 1] == start[s + 1]) {
			if (s)
				on_path[names->name_of[s]]--;
			depth--;
			continue;
		}
		uint32_t k = kids[next[depth - 1]++];
		top_row_t *r = &rows[names->name_of[k]];
		r->self = num_sat_add(r->self, t->self[k]);
		if (on_path[names->name_of[k]]++ == 0)
			r->total = num_sat_add(r->total, t->total[k]);
		stack[depth] = k;
		next[depth] = start[k];
		depth++;
	}
	free(start);
	free(kids);
	free(on_path);
	free(stack);
	free(next);
}

int query_top(store_t *s, const query_params_t *q, uint32_t limit, buf_t *json, err_t *err)
{
	query_merged_t m;
	if (query_merged_open(s, q, &m, err) < 0)
		return -1;
	top_row_t *rows = xcalloc((size_t)m.names.n_names + 1, sizeof *rows);
	for (uint32_t i = 0; i < m.names.n_names; i++)
		rows[i].name = m.names.names[i];
	top_sum(&m.tree, &m.names, rows);
	/* A name whose values cancel out (negative deltas) is left out. */
	uint32_t n = 0;
	for (uint32_t i = 0; i < m.names.n_names; i++)
		if (rows[i].self != 0 || rows[i].total != 0)
			rows[n++] = rows[i];
	if (n > 1)
		qsort(rows, n, sizeof *rows, row_cmp);
	if (limit && n > limit)
		n = limit;

	int rc = query_merged_json_head(json, &m);
	rc |= buf_puts(json, ",\"rows\":[");
	for (uint32_t i = 0; i < n && rc == 0; i++) {
		rc |= buf_puts(json, i ? ",{\"name\":" : "{\"name\":");
		rc |= buf_json_str(json, rows[i].name);
		rc |= buf_puts(json, ",\"self\":");
		rc |= query_json_i64(json, rows[i].self);
		rc |= buf_puts(json, ",\"total\":");
		rc |= query_json_i64(json, rows[i].total);
		rc |= buf_putc(json, '}');
	}
	rc |= buf_puts(json, "]}");

	free(rows);
	query_merged_close(&m);
	return rc < 0 ? query_err_too_large(err) : 0;
}
