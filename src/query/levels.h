/* Pyroscope's flame graph formats from a merged call tree (query/levels.c):
 * the `levels` of querier.v1 FlameGraph / FlameGraphDiff and of the legacy
 * flamebearer JSON (/pyroscope/render, /pyroscope/render-diff), with
 * Pyroscope's max_nodes cut. The encoding matches grafana/pyroscope's
 * pkg/model NewFlameGraph and NewFlamegraphDiff value for value (ARCH:
 * Pyroscope flame graph levels):
 *
 * - The tree is Kiln's tree as shown (siblings that show the same name,
 *   query_frame_name, are one node: Pyroscope's tree is by function name).
 * - Each level lists its nodes left to right; a node is 4 ints
 *   [x_offset, total, self, name_index] (single) or 7
 *   [l_offset, l_total, l_self, r_offset, r_total, r_self, name_index]
 *   (diff). An offset is the gap from the end of the previous node of the
 *   same level (0 for the first: then it is the node's x). Within a node,
 *   its self comes first (leftmost), then its children in byte order of
 *   their names, then `other`.
 * - names[0] = "total" (the root); names are indexed in the order Pyroscope
 *   visits the nodes (depth first, `other` first, then children from the
 *   last name to the first).
 * - The root's self is the value of empty stacks (Pyroscope drops those;
 *   Kiln counts them, API: Frames), so totals equal /api/flamegraph's.
 * - max_nodes > 0 and the tree has more nodes: the threshold is the
 *   max_nodes-th largest total (single: of the non-root nodes; diff: of
 *   max(left, right) over all nodes, root included); children below it are
 *   summed into one node `other` (self = total = their sum) as the last
 *   child of their parent, so every total stays exact. Nodes whose totals
 *   tie with the threshold are all kept (Pyroscope's rule), so a graph can
 *   hold more than max_nodes nodes. Single only, as Pyroscope: a child that
 *   shows the name "other" always goes into `other`.
 * Results live in the caller's arena; names borrow the tree's frames (the
 * same lifetime as the tree) or static strings. Scratch is bounded by the
 * trees' sizes and released before returning. */
#ifndef KILN_QUERY_LEVELS_H
#define KILN_QUERY_LEVELS_H

#include <stdint.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "model/model.h"

typedef struct {
	uint32_t width; /* ints per node: 4 (single) or 7 (diff) */
	slice_t *names; /* names[0] = "total" */
	uint32_t n_names;
	int64_t **levels; /* level d is levels[d][0..len[d]); level 0 is the root */
	uint32_t *len;
	uint32_t n_levels;
	uint32_t n_nodes;   /* nodes over all levels, `other` nodes included */
	int64_t total;      /* single: the root's total; diff: left + right (Pyroscope's Total) */
	int64_t max_self;   /* the largest self of a node written (0 when none is larger) */
	int64_t left_ticks; /* diff: the left root's total, right_ticks the right's; single: 0 */
	int64_t right_ticks;
} query_levels_t;

/* The max_nodes a request gets: asked ≤ 0 (absent) → LIMIT_FLAME_NODES, more
 * than LIMIT_FLAME_NODES → LIMIT_FLAME_NODES (the bound, not an error). */
int64_t query_max_nodes(int64_t asked);

/* Pyroscope's FlameGraph of t (n_nodes ≥ 1; a tree of 0 nodes counts as an
 * empty root). max_nodes ≤ 0: no cut. */
void query_levels_single(const model_tree_t *t, int64_t max_nodes, arena_t *a, query_levels_t *out);

/* Pyroscope's FlameGraphDiff of left and right aligned by name path (a node
 * on one side only is 0, 0 on the other). -1 with a 400 in err when a node
 * of either tree (its root included) has a negative self, as Pyroscope
 * refuses; else 0. */
int query_levels_diff(const model_tree_t *left, const model_tree_t *right, int64_t max_nodes, arena_t *a,
                      query_levels_t *out, err_t *err);

/* Pyroscope's tree bytes (pkg/model tree.go, FunctionNameTree's
 * MarshalTruncate), appended to out: the tree as shown, depth first from a
 * virtual root (name "", self = the value of empty stacks: 0 in
 * Pyroscope's, which drops them; its reader ignores it), each node as
 * uvarint(len name) name uvarint(self) uvarint(number of children), the
 * children in byte order of names written last to first (a stack). Cut as
 * the FlameGraph's (threshold of the max_nodes-th largest non-root total;
 * max_nodes ≤ 0: no cut): a parent's children below it are one child
 * `other` (self = total = their sum, no children) placed by its name, or
 * added to the self of a kept child named "other". An empty tree is no
 * bytes. -1 when out is full. */
int query_tree_bytes(const model_tree_t *t, int64_t max_nodes, buf_t *out);

/* The tree t cut as the FlameGraph of max_nodes is (max_nodes ≤ 0, or a
 * shown tree not larger: *out = *t, nothing copied): else *out is the tree
 * as shown (siblings that show one name are one node, with the frame of
 * one of them), its nodes under the threshold summed per parent into one
 * child `other` (self = total = their sum; a frame named "other"), so every
 * total stays exact; in arena a, frames borrowed from t. For
 * SelectMergeProfile's max_nodes. 0. */
int query_tree_cut(const model_tree_t *t, int64_t max_nodes, arena_t *a, model_tree_t *out);

/* The flamebearer JSON (Pyroscope's FlamebearerProfile) in two parts around
 * what the route writes (`,"timeline":…,"groups":…,"heatmap":null`):
 *   head: {"version":1,"flamebearer":{"names":[…],"levels":[[…],…],
 *         "numTicks":T,"maxSelf":M},"metadata":{"format":"single"|"double",
 *         "spyName":"","sampleRate":R,"units":U,"name":SAMPLE_TYPE}
 *   tail: ,"leftTicks":L,"rightTicks":R} for a diff (each left out when 0,
 *         as Go's omitempty does), } for a single graph.
 * units/sampleRate as Pyroscope's ExportToFlamebearer: sample type cpu →
 * "samples" at 1e9; inuse_objects, alloc_objects, goroutine, samples →
 * "objects" at 100; else the sample unit at 100. -1 when json is full. */
int query_flamebearer_head(buf_t *json, const query_levels_t *l, slice_t sample_type, slice_t sample_unit);
int query_flamebearer_tail(buf_t *json, const query_levels_t *l);

#endif
