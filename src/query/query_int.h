/* Private to src/query: parameter checks, series selection and the per-partition
 * scan that merge, timeline and services share. Not part of the module's
 * interface; nothing outside src/query includes it. */
#ifndef KILN_QUERY_QUERY_INT_H
#define KILN_QUERY_QUERY_INT_H

#include <stdint.h>

#include "base/num.h"
#include "base/u64map.h"
#include "query/query.h"

/* The query's type id (API: Type ids): SAMPLE:UNIT (split at the first ':'),
 * or NAME:SAMPLE:UNIT when it has two ':' or more and the part before the
 * first is a profile name (model_profile_name_valid). */
typedef struct query_type {
	slice_t name; /* the id as asked */
	slice_t type; /* "sample_type:unit": the series' type */
	slice_t sample_type, sample_unit;
	slice_t profile; /* NAME of NAME:SAMPLE:UNIT; empty for SAMPLE:UNIT */
	int named;       /* NAME:SAMPLE:UNIT: only series whose __name__ is NAME match; SAMPLE:UNIT
	                    matches series of every name (none included) */
	int cpu_ns;      /* type is "cpu:nanoseconds": cpu_alias series match too */
} query_type_t;

/* Parses a type id into *t (slices into id). 0, or -1 with a 400 in err. */
int query_type_parse(slice_t id, query_type_t *t, err_t *err);

/* Checks q: from < until, service present when need_service, type well formed
 * when t != NULL (then fills *t), label filters non-empty and at most 64.
 * 0, or -1 with a 400 in err naming the parameter. */
int query_check(const query_params_t *q, int need_service, query_type_t *t, err_t *err);

/* The profile name of series s: its __name__ label, empty when it has none. */
slice_t query_series_profile(const store_series_t *s);

/* One kind of profile in a listing: a series type with the profile name of
 * its series (empty when none). */
typedef struct {
	slice_t type; /* "sample_type:unit" */
	slice_t profile;
} query_kind_t;

/* The type ids of kinds k[0..n) of one listing (one service; API: Type ids):
 * a type whose kinds carry at most one profile name is SAMPLE:UNIT (series
 * without a name join it); one whose kinds carry two names or more is
 * NAME:SAMPLE:UNIT per name, plus SAMPLE:UNIT when series without a name
 * have it too. id[i] is k[i]'s id, written in arena a; kinds with the same
 * id get equal strings. */
void query_kind_ids(const query_kind_t *k, uint32_t n, arena_t *a, slice_t *id);
/* Writes the JSON array of the distinct ids of kinds k[0..n), sorted by
 * SAMPLE:UNIT then name (k is reordered). */
int query_json_kinds(buf_t *json, query_kind_t *k, uint32_t n);
/* Adds kind (type, profile) to (*k)[0..*n) unless it is there already; the
 * slices are borrowed. */
void query_kind_add(query_kind_t **k, size_t *cap, uint32_t *n, slice_t type, slice_t profile);

/* One selected series of a partition. */
typedef struct {
	uint32_t local;
	uint64_t id;        /* global series id */
	int64_t scale;      /* values are multiplied by this: period for cpu_alias, else 1 */
	uint8_t snapshot;   /* MODEL_SNAPSHOT: averaged over its snapshots */
	uint64_t attr_mask; /* filters (bit i = q->labels[i]) that apply to sample attributes */
	const store_series_t *s;
} query_sel_t;

/* What one partition contributes: its selected series and their chunk heads
 * (copied, so they outlive later calls on the view). */
typedef struct {
	uint32_t p;
	const store_series_t *series; /* all series of the partition (view lifetime) */
	uint32_t n_series;
	query_sel_t *sel;
	uint32_t n_sel;
	uint32_t *sel_of;          /* local series id -> index in sel + 1 (0 = not selected) */
	store_chunk_head_t *heads; /* heads of the selected series, sorted by (series, t_ns) */
	uint32_t n_heads;
	int all_heads;       /* heads are every chunk of the selected series in the view's range
	                        (query_part_load): the engine may sum them itself (store_view_sums) */
	uint64_t *attr_mask; /* attrset local id -> filters it satisfies; NULL when unused */
	uint32_t n_attrsets;
} query_part_t;

/* Loads partition p of v for query q of type t (t NULL: every series, no label
 * filters: for services/types). Series whose service differs from q->service
 * (when set), whose type does not match, or whose series labels contradict a
 * filter are left out. 0 or -1 with err (store errors passed through). */
int query_part_load(store_view_t *v, uint32_t p, const query_params_t *q, const query_type_t *t,
                    query_part_t *qp, err_t *err);
void query_part_free(query_part_t *qp);
/* Partition p for the span hits[0..n) of that partition: the series of
 * q->service (when set) and type t, the distinct chunks of the hits as
 * heads, and an attribute filter that keeps only the hits' attrsets (one
 * filter bit; attr_mask sized by the largest linked attrset). */
int query_part_from_hits(store_view_t *v, uint32_t p, const query_params_t *q, const query_type_t *t,
                         const store_span_hit_t *hits, uint32_t n, query_part_t *qp, err_t *err);

/* Selected series of head h. */
static inline const query_sel_t *query_part_sel(const query_part_t *qp, const store_chunk_head_t *h)
{
	return &qp->sel[qp->sel_of[h->series] - 1];
}

/* Value of chunk h counting only entries whose attributes satisfy the series'
 * attribute filters (decodes the chunk only when it has such filters), not
 * yet scaled. 0 or -1 with err. */
int query_chunk_value(store_view_t *v, const query_part_t *qp, const store_chunk_head_t *h, int64_t *out,
                      err_t *err);

/* Writes "type":…,"unit":…, (with the trailing comma) for t. */
int query_json_type(buf_t *json, const query_type_t *t);
/* Appends v in decimal. */
int query_json_i64(buf_t *json, int64_t v);
/* A buffer ceiling was hit while writing a result: 413 asking to narrow the query. */
int query_err_too_large(err_t *err);

/* Shown name of a frame: its function name, or for an unsymbolized frame the
 * basename of its binary ("unknown" when there is none). */
slice_t query_frame_name(const model_frame_t *f);

/* Exact string interning: the id of name in (*names)[0..*n), appending it
 * (the slice is borrowed, not copied) when new; *inserted (may be NULL) tells. */
uint32_t query_intern(u64map_t *ix, slice_t **names, size_t *cap, uint32_t *n, slice_t name, int *inserted);

/* Name ids for the nodes of a merged tree: names[0..n_names) are the distinct
 * shown names, name_of[i] the name id of node i (node 0: UINT32_MAX). Arrays
 * are malloc'd; free with query_names_free. */
typedef struct {
	slice_t *names;
	uint32_t n_names;
	uint32_t *name_of;
	uint32_t *frame_of_name; /* a frame with that name (kind/unsymbolized come from it) */
} query_names_t;

void query_names_build(const model_tree_t *t, query_names_t *out);
void query_names_free(query_names_t *n);
/* rank[id] = the place of names->names[id] in byte order (slice_cmp), for
 * sorting nodes by name with integer compares; malloc'd, the caller frees it. */
uint32_t *query_names_rank(const query_names_t *names);

/* The tree as shown (query/flame.c): one node per (shown parent, name), so
 * siblings that show the same name are one node, their values summed and
 * their children merged the same way. Node 0 is the root (name UINT32_MAX);
 * parent[s] < s for s > 0. Arrays are malloc'd; free with query_shown_free. */
typedef struct {
	uint32_t n;
	uint32_t *parent, *name; /* name: id in the query_names_t it was built with */
	int64_t *self, *total;
} query_shown_t;

void query_shown_build(const model_tree_t *t, const query_names_t *names, query_shown_t *d);
void query_shown_free(query_shown_t *d);

/* A merged tree of a query with the names of its nodes: what the flame graph
 * and top writers start from. */
typedef struct {
	query_type_t type;
	arena_t *arena;
	model_tree_t tree;
	query_names_t names;
} query_merged_t;

/* Checks q (service and type required), merges it and names the nodes.
 * 0, or -1 with err (and nothing to release). */
int query_merged_open(store_t *s, const query_params_t *q, query_merged_t *m, err_t *err);
void query_merged_close(query_merged_t *m);
/* Writes {"type":…,"unit":…,"total":N (the object is left open). */
int query_merged_json_head(buf_t *json, const query_merged_t *m);
/* Writes m's tree as the flame graph's root object {"name":"total","self",
 * "total","children":[…]} (query/flame.c). -1 when json is full. */
int query_flame_root(buf_t *json, const query_merged_t *m);

/* Merges the chunks of prepared partitions parts[0..n) of v (their selected
 * series, heads and attribute filters; see query_part_load) into *tree in
 * arena a. Snapshot series are averaged over their chunks among the heads.
 * The tree gets type t, the period of the first selected series and the
 * time [from_ns, until_ns). 0 or -1 with err. */
int query_merge_parts(store_view_t *v, const query_part_t *parts, uint32_t n, const query_type_t *t,
                      int64_t from_ns, int64_t until_ns, arena_t *a, model_tree_t *tree, err_t *err);

/* Child lists of a tree with n nodes (node 0 the root, parent[i] < i) by one
 * stable counting sort: the children of p are kids[start[p]..start[p+1]), in
 * the order they appear in order[0..n-1) (NULL: 1, 2, …, n-1). start has n+1
 * entries, kids n; both malloc'd, the caller frees them. */
void query_children(const uint32_t *parent, uint32_t n, const uint32_t *order, uint32_t **start,
                    uint32_t **kids);

#endif
