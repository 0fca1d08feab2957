/* query_merge: sums the samples of (service, type, range, filters) over every
 * partition into one call tree keyed by global node id, then prunes it to the
 * nodes that carry value. Also the pprof export of that tree. Writes no JSON. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "base/u64map.h"
#include "query/query_int.h"
#include "wire/compress.h"
#include "wire/pprof.h"

typedef struct {
	store_view_t *v;
	const query_part_t *parts; /* borrowed */
	uint32_t n_parts;

	u64map_t snap_ix;     /* global series id -> index in snap_count */
	uint32_t *snap_count; /* snapshots (chunks) of a snapshot series */
	size_t cap_snap;
	uint32_t n_snap;

	/* The global tree under construction; index 0 is the root. */
	uint32_t n, cap;
	uint32_t *parent, *frame;
	uint64_t *gid; /* global node id (the order of the result, whatever the engine's local ids) */
	int64_t *self_i;
	double *self_d; /* averaged snapshot values, rounded at the end */
	u64map_t node_ix, frame_ix;
	const model_frame_t **frames; /* borrowed from the view until copied out */
	uint32_t n_frames;
	size_t cap_frames;

	/* The series whose period the result carries: of those that gave a
	 * value, the one with the smallest global id (the same on every engine,
	 * whatever order it hands series out in). */
	const store_series_t *period_of;

	/* Per-partition scratch, indexed by local node id. */
	int64_t *acc_i;
	double *acc_d;
	size_t cap_acc;
	uint32_t max_node;
	int root_acc; /* acc_*[0] was added to: samples with an empty stack, the root's own */
} merge_ctx_t;

static void merge_ctx_free(merge_ctx_t *c)
{
	u64map_free(&c->snap_ix);
	free(c->snap_count);
	free(c->parent);
	free(c->frame);
	free(c->gid);
	free(c->self_i);
	free(c->self_d);
	u64map_free(&c->node_ix);
	u64map_free(&c->frame_ix);
	free(c->frames);
	free(c->acc_i);
	free(c->acc_d);
}

/* Counts the snapshots (chunks: the store keeps one per profile and series)
 * of each snapshot series over all partitions: a series that spans two days
 * has snapshots in both. The same profile uploaded twice is two snapshots. */
static void count_snapshots(merge_ctx_t *c)
{
	for (uint32_t p = 0; p < c->n_parts; p++) {
		const query_part_t *qp = &c->parts[p];
		for (uint32_t i = 0; i < qp->n_heads; i++) {
			const store_chunk_head_t *h = &qp->heads[i];
			const query_sel_t *sel = query_part_sel(qp, h);
			if (!sel->snapshot)
				continue;
			int inserted;
			uint32_t ix = u64map_get_or_put(&c->snap_ix, sel->id, c->n_snap, &inserted);
			if (inserted) {
				c->snap_count = xgrow(c->snap_count, &c->cap_snap, (size_t)c->n_snap + 1,
				                      sizeof *c->snap_count);
				c->snap_count[c->n_snap++] = 0;
			}
			c->snap_count[ix]++;
		}
	}
}

static void acc_reserve(merge_ctx_t *c, uint32_t node, int snapshot)
{
	if (node < c->cap_acc && (!snapshot || c->acc_d))
		return;
	size_t old = c->cap_acc;
	if (node >= c->cap_acc) {
		size_t cap = c->cap_acc;
		c->acc_i = xgrow(c->acc_i, &cap, (size_t)node + 1, sizeof *c->acc_i);
		memset(c->acc_i + old, 0, (cap - old) * sizeof *c->acc_i);
		if (c->acc_d) {
			c->acc_d = xrealloc(c->acc_d, cap * sizeof *c->acc_d);
			memset(c->acc_d + old, 0, (cap - old) * sizeof *c->acc_d);
		}
		c->cap_acc = cap;
	}
	if (snapshot && !c->acc_d)
		c->acc_d = xcalloc(c->cap_acc, sizeof *c->acc_d);
}

/* Adds one (node, attrset) value of selected series sel into acc_*; node 0
 * (samples with an empty stack) is the root's own value. */
static void add_value(merge_ctx_t *c, const query_part_t *qp, const query_sel_t *sel, double weight,
                      uint32_t node, uint32_t a, int64_t value)
{
	/* attr_mask may stop short of the partition's last attrset
	 * (span queries size it by the linked sets): beyond, none match. */
	if (sel->attr_mask && (a > qp->n_attrsets || (qp->attr_mask[a] & sel->attr_mask) != sel->attr_mask))
		return;
	if (value != 0 && (!c->period_of || sel->s->id < c->period_of->id))
		c->period_of = sel->s;
	acc_reserve(c, node, sel->snapshot);
	if (node > c->max_node)
		c->max_node = node;
	if (node == 0)
		c->root_acc = 1;
	if (sel->snapshot)
		c->acc_d[node] += (double)value * weight;
	else
		c->acc_i[node] = num_sat_add(c->acc_i[node], num_sat_mul(value, sel->scale));
}

static double snapshot_weight(merge_ctx_t *c, const query_sel_t *sel)
{
	if (!sel->snapshot)
		return 0;
	uint32_t ix = 0;
	if (!u64map_get(&c->snap_ix, sel->id, &ix) || !c->snap_count[ix])
		return 0; /* no chunk of it in range: no value either */
	return 1.0 / c->snap_count[ix];
}

/* The engine sums the chunks itself: one row per (series, node, attrset). */
static int accumulate_sums(merge_ctx_t *c, const query_part_t *qp, err_t *err)
{
	uint32_t *locals = xmalloc((size_t)qp->n_sel * sizeof *locals);
	for (uint32_t i = 0; i < qp->n_sel; i++)
		locals[i] = qp->sel[i].local;
	const store_sum_t *sum;
	uint32_t n;
	int rc = store_view_sums(c->v, qp->p, locals, qp->n_sel, &sum, &n, err);
	free(locals);
	for (uint32_t i = 0; rc == 0 && i < n; i++) {
		if (sum[i].series == 0 || sum[i].series > qp->n_series || !qp->sel_of[sum[i].series])
			return err_set(err, 500, "partition %u: a sum names series %u", qp->p, sum[i].series);
		const query_sel_t *sel = &qp->sel[qp->sel_of[sum[i].series] - 1];
		add_value(c, qp, sel, snapshot_weight(c, sel), sum[i].node, sum[i].attrset, sum[i].value);
	}
	return rc;
}

/* Adds the matching entries of every chunk of partition qp into acc_*. */
static int accumulate(merge_ctx_t *c, const query_part_t *qp, err_t *err)
{
	c->max_node = 0;
	c->root_acc = 0;
	if (qp->all_heads && store_view_can_sum(c->v))
		return accumulate_sums(c, qp, err);
	for (uint32_t k = 0; k < qp->n_heads; k++) {
		const store_chunk_head_t *h = &qp->heads[k];
		const query_sel_t *sel = query_part_sel(qp, h);
		double weight = snapshot_weight(c, sel);
		const store_entry_t *e;
		uint32_t n;
		if (store_view_entries(c->v, qp->p, h, &e, &n, err) < 0)
			return -1;
		for (uint32_t i = 0; i < n; i++)
			add_value(c, qp, sel, weight, e[i].node, e[i].attrset, e[i].value);
	}
	return 0;
}

static uint32_t global_frame(merge_ctx_t *c, const model_frame_t *f)
{
	int inserted;
	uint32_t ix = u64map_get_or_put(&c->frame_ix, f->id, c->n_frames, &inserted);
	if (inserted) {
		c->frames = xgrow(c->frames, &c->cap_frames, (size_t)c->n_frames + 1, sizeof *c->frames);
		c->frames[c->n_frames++] = f;
	}
	return ix;
}

static uint32_t global_node_add(merge_ctx_t *c, uint32_t parent, uint32_t frame, uint64_t gid)
{
	if (c->n == c->cap) {
		uint32_t cap = c->cap ? c->cap * 2 : 1024;
		c->parent = xrealloc(c->parent, cap * sizeof *c->parent);
		c->frame = xrealloc(c->frame, cap * sizeof *c->frame);
		c->gid = xrealloc(c->gid, cap * sizeof *c->gid);
		c->self_i = xrealloc(c->self_i, cap * sizeof *c->self_i);
		c->self_d = xrealloc(c->self_d, cap * sizeof *c->self_d);
		c->cap = cap;
	}
	c->parent[c->n] = parent;
	c->frame[c->n] = frame;
	c->gid[c->n] = gid;
	c->self_i[c->n] = 0;
	c->self_d[c->n] = 0;
	return c->n++;
}

/* Moves the accumulated values of partition qp into the global tree: the
 * nodes with value and their ancestors, in local-id order so that a parent
 * is always placed before its children; local node 0 into the root. */
static int map_partition(merge_ctx_t *c, const query_part_t *qp, int last, err_t *err)
{
	store_nodes_t nodes;
	const model_frame_t *frames;
	uint32_t n_frames;
	if (store_view_nodes(c->v, qp->p, &nodes, err) < 0 ||
	    store_view_frames(c->v, qp->p, &frames, &n_frames, err) < 0)
		return -1;
	/* 0 = not needed, else the global index; local frame -> global frame. */
	uint32_t *loc2g = NULL, *frame_g = NULL;
	int rc = 0;
	/* Found damaged on the way (the store reported it): none of its values count. */
	if (store_view_skipped(c->v, qp->p))
		goto out;
	if (c->max_node > nodes.n) {
		rc =
		    err_set(err, 500, "partition %u: chunk names node %u of %u", qp->p, c->max_node, nodes.n);
		goto out;
	}
	loc2g = xcalloc((size_t)c->max_node + 1, sizeof *loc2g);
	frame_g = xmalloc(((size_t)n_frames + 1) * sizeof *frame_g);
	memset(frame_g, 0xff, ((size_t)n_frames + 1) * sizeof *frame_g);
	for (uint32_t i = 1; i <= c->max_node; i++)
		if (c->acc_i[i] != 0 || (c->acc_d && c->acc_d[i] != 0))
			loc2g[i] = 1;
	for (uint32_t i = c->max_node; i >= 1; i--) {
		if (!loc2g[i])
			continue;
		if (nodes.parent[i] >= i) {
			rc = err_set(err, 500, "partition %u: node %u has parent %u", qp->p, i,
			             nodes.parent[i]);
			goto out;
		}
		loc2g[nodes.parent[i]] = 1;
	}
	for (uint32_t i = 1; i <= c->max_node; i++) {
		if (!loc2g[i])
			continue;
		if (nodes.id[i] == 0 || nodes.frame[i] == 0 || nodes.frame[i] > n_frames) {
			rc = err_set(err, 500, "partition %u: node %u is damaged", qp->p, i);
			goto out;
		}
		/* Ids are unique inside a partition: the last one only looks up. */
		uint32_t g = c->n;
		int inserted;
		if (last)
			inserted = !u64map_get(&c->node_ix, nodes.id[i], &g);
		else
			g = u64map_get_or_put(&c->node_ix, nodes.id[i], c->n, &inserted);
		if (inserted) {
			if (c->n > LIMIT_QUERY_NODES) {
				rc = err_set(
				    err, 413,
				    "the merged call tree has more than %u nodes; narrow the time range "
				    "or add label filters",
				    LIMIT_QUERY_NODES);
				goto out;
			}
			uint32_t parent = nodes.parent[i] ? loc2g[nodes.parent[i]] : 0;
			uint32_t *fg = &frame_g[nodes.frame[i]];
			if (*fg == UINT32_MAX)
				*fg = global_frame(c, &frames[nodes.frame[i]]);
			global_node_add(c, parent, *fg, nodes.id[i]);
		}
		loc2g[i] = g;
		c->self_i[g] = num_sat_add(c->self_i[g], c->acc_i[i]);
		if (c->acc_d)
			c->self_d[g] += c->acc_d[i];
	}
	/* Local node 0: the empty stacks, the root's own value. */
	c->self_i[0] = num_sat_add(c->self_i[0], c->acc_i[0]);
	if (c->acc_d)
		c->self_d[0] += c->acc_d[0];
out:
	free(loc2g);
	free(frame_g);
	memset(c->acc_i, 0, ((size_t)c->max_node + 1) * sizeof *c->acc_i);
	if (c->acc_d)
		memset(c->acc_d, 0, ((size_t)c->max_node + 1) * sizeof *c->acc_d);
	return rc;
}

static int64_t round_value(double d)
{
	if (!(d > -9.2e18 && d < 9.2e18))
		return d > 0 ? INT64_MAX : d < 0 ? INT64_MIN : 0;
	return (int64_t)llround(d);
}

static slice_t copy_slice(arena_t *a, slice_t s)
{
	return s.n ? arena_slice(a, s) : slice_make("", 0);
}

typedef struct {
	uint64_t gid;
	uint32_t i;
} gid_ix_t;

static int gid_cmp(const void *a, const void *b)
{
	const gid_ix_t *x = a, *y = b;
	if (x->gid != y->gid)
		return x->gid < y->gid ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

/* Numbers the kept nodes (keep[i] != 0) 1.. in preorder with children by
 * global node id, so the result's order depends only on the data, not on
 * the order an engine handed it out (the embedded and the ClickHouse
 * engines give identical answers, pprof included). Returns their count. */
static uint32_t canonical_order(merge_ctx_t *c, uint32_t *keep)
{
	uint32_t n = c->n;
	gid_ix_t *by = xmalloc(((size_t)n + 1) * sizeof *by);
	for (uint32_t i = 1; i < n; i++)
		by[i - 1] = (gid_ix_t){c->gid[i], i};
	qsort(by, n > 0 ? n - 1 : 0, sizeof *by, gid_cmp);
	uint32_t *order = xmalloc(((size_t)n + 1) * sizeof *order);
	for (uint32_t k = 0; k + 1 < n; k++)
		order[k] = by[k].i;
	free(by);
	uint32_t *start, *kids;
	query_children(c->parent, n, order, &start, &kids);
	/* Preorder walk; a stack of the nodes still to visit. */
	uint32_t *stack = xmalloc(((size_t)n + 1) * sizeof *stack);
	uint32_t top = 0, m = 0;
	stack[top++] = 0;
	while (top) {
		uint32_t i = stack[--top];
		keep[i] = ++m;
		for (uint32_t j = start[i + 1]; j-- > start[i];)
			if (keep[kids[j]])
				stack[top++] = kids[j];
	}
	free(stack);
	free(start);
	free(kids);
	free(order);
	return m;
}

/* Totals, pruning of zero nodes, and the copy of the result into arena a. */
static void build_tree(merge_ctx_t *c, arena_t *a, model_tree_t *t)
{
	uint32_t n = c->n;
	int64_t *self = xmalloc((size_t)n * sizeof *self);
	int64_t *total = xmalloc((size_t)n * sizeof *total);
	uint32_t *keep = xcalloc(n, sizeof *keep); /* new index + 1 */
	for (uint32_t i = 0; i < n; i++)
		self[i] = total[i] = num_sat_add(c->self_i[i], round_value(c->self_d[i]));
	for (uint32_t i = n - 1; i >= 1; i--) {
		total[c->parent[i]] = num_sat_add(total[c->parent[i]], total[i]);
		if (total[i] != 0 || keep[i])
			keep[i] = keep[c->parent[i]] = 1;
	}
	uint32_t m = canonical_order(c, keep);

	memset(t, 0, sizeof *t);
	t->n_nodes = m;
	t->parent = arena_alloc(a, (size_t)m * sizeof *t->parent);
	t->frame = arena_alloc(a, (size_t)m * sizeof *t->frame);
	t->self = arena_alloc(a, (size_t)m * sizeof *t->self);
	t->total = arena_alloc(a, (size_t)m * sizeof *t->total);
	uint32_t *frame_new = xmalloc(((size_t)c->n_frames + 1) * sizeof *frame_new);
	memset(frame_new, 0xff, ((size_t)c->n_frames + 1) * sizeof *frame_new);
	t->frames = arena_alloc(a, ((size_t)c->n_frames + 1) * sizeof *t->frames);
	t->parent[0] = 0;
	t->frame[0] = 0;
	t->self[0] = self[0];
	t->total[0] = total[0];
	/* In the new order, so that frames are numbered by it too. */
	uint32_t *at = xmalloc((size_t)m * sizeof *at);
	for (uint32_t i = 1; i < n; i++)
		if (keep[i])
			at[keep[i] - 1] = i;
	for (uint32_t j = 1; j < m; j++) {
		uint32_t i = at[j], f = c->frame[i];
		if (frame_new[f] == UINT32_MAX) {
			const model_frame_t *src = c->frames[f];
			model_frame_t *dst = &t->frames[t->n_frames];
			*dst = *src;
			dst->name = copy_slice(a, src->name);
			dst->file = copy_slice(a, src->file);
			dst->binary = copy_slice(a, src->binary);
			dst->build_id = copy_slice(a, src->build_id);
			dst->kind = copy_slice(a, src->kind);
			frame_new[f] = t->n_frames++;
		}
		t->parent[j] = keep[c->parent[i]] - 1;
		t->frame[j] = frame_new[f];
		t->self[j] = self[i];
		t->total[j] = total[i];
	}
	free(at);
	free(frame_new);
	free(self);
	free(total);
	free(keep);
}

static void set_tree_type(arena_t *a, int64_t from_ns, int64_t until_ns, const query_type_t *qt,
                          const store_series_t *first, model_tree_t *t)
{
	t->sample_type = copy_slice(a, qt->sample_type);
	t->sample_unit = copy_slice(a, qt->sample_unit);
	if (first) {
		t->period_type = copy_slice(a, first->period_type);
		t->period_unit = copy_slice(a, first->period_unit);
		t->period = first->period;
	} else {
		t->period_type = t->period_unit = slice_make("", 0);
	}
	t->time_ns = from_ns;
	t->duration_ns = until_ns - from_ns;
}

int query_merge_parts(store_view_t *v, const query_part_t *parts, uint32_t n_parts, const query_type_t *qt,
                      int64_t from_ns, int64_t until_ns, arena_t *a, model_tree_t *tree, err_t *err)
{
	merge_ctx_t c;
	memset(&c, 0, sizeof c);
	c.v = v;
	c.parts = parts;
	c.n_parts = n_parts;
	u64map_init(&c.snap_ix);
	u64map_init(&c.node_ix);
	u64map_init(&c.frame_ix);
	const store_series_t *first = NULL;
	uint32_t last = 0;
	for (uint32_t p = 0; p < n_parts; p++) {
		if (!parts[p].n_heads)
			continue;
		for (uint32_t i = 0; i < parts[p].n_heads; i++) { /* the period when nothing gives a value */
			const store_series_t *s = query_part_sel(&parts[p], &parts[p].heads[i])->s;
			if (!first || s->id < first->id)
				first = s;
		}
		last = p;
	}
	count_snapshots(&c);
	global_node_add(&c, 0, 0, 0); /* the root */
	int rc = -1;
	for (uint32_t p = 0; p < n_parts; p++) {
		if (!parts[p].n_heads)
			continue;
		if (accumulate(&c, &parts[p], err) < 0)
			goto out;
		if ((c.max_node || c.root_acc) && map_partition(&c, &parts[p], p == last, err) < 0)
			goto out;
	}
	build_tree(&c, a, tree);
	set_tree_type(a, from_ns, until_ns, qt, c.period_of ? c.period_of : first, tree);
	rc = 0;
out:
	merge_ctx_free(&c);
	return rc;
}

int query_merge(store_t *s, const query_params_t *q, arena_t *a, model_tree_t *tree, err_t *err)
{
	query_type_t qt;
	if (query_check(q, 1, &qt, err) < 0)
		return -1;
	store_view_t *v;
	if (store_view_open(s, q->project, q->from_ns, q->until_ns, &v, err) < 0)
		return -1;
	uint32_t np = store_view_partitions(v), n;
	query_part_t *parts = xcalloc((size_t)np + 1, sizeof *parts);
	int rc = 0;
	for (n = 0; n < np && rc == 0; n++)
		rc = query_part_load(v, n, q, &qt, &parts[n], err);
	if (rc == 0)
		rc = query_merge_parts(v, parts, np, &qt, q->from_ns, q->until_ns, a, tree, err);
	for (uint32_t p = 0; p < n; p++)
		query_part_free(&parts[p]);
	free(parts);
	store_view_close(v);
	return rc;
}

int query_merged_open(store_t *s, const query_params_t *q, query_merged_t *m, err_t *err)
{
	memset(m, 0, sizeof *m);
	if (query_check(q, 1, &m->type, err) < 0)
		return -1;
	m->arena = arena_new();
	if (query_merge(s, q, m->arena, &m->tree, err) < 0) {
		arena_free(m->arena);
		m->arena = NULL;
		return -1;
	}
	query_names_build(&m->tree, &m->names);
	return 0;
}

void query_merged_close(query_merged_t *m)
{
	query_names_free(&m->names);
	arena_free(m->arena);
	m->arena = NULL;
}

int query_merged_json_head(buf_t *json, const query_merged_t *m)
{
	int rc = buf_putc(json, '{');
	rc |= query_json_type(json, &m->type);
	rc |= buf_puts(json, "\"total\":");
	rc |= query_json_i64(json, m->tree.total[0]);
	return rc;
}

int query_pprof(store_t *s, const query_params_t *q, buf_t *out, err_t *err)
{
	arena_t *a = arena_new();
	model_tree_t t;
	buf_t raw;
	buf_init(&raw, SIZE_MAX);
	int rc = query_merge(s, q, a, &t, err);
	if (rc == 0)
		rc = pprof_encode(&t, &raw, err);
	if (rc == 0 && gz_deflate(buf_slice(&raw), 6, out) < 0)
		rc = query_err_too_large(err);
	buf_free(&raw);
	arena_free(a);
	return rc;
}
