/* Private to store/clickhouse's views (clickhouse_view.c: partitions,
 * dictionaries, entries, span links; clickhouse_sums.c: the plan of summed
 * rows and entries, chunk heads and sums): the view's structures and the
 * helpers both files use. docs/STORE.md, store/clickhouse "Reading" and
 * "Summed hours". */
#ifndef KILN_STORE_CLICKHOUSE_VIEW_H
#define KILN_STORE_CLICKHOUSE_VIEW_H

#include "base/arena.h"
#include "store/clickhouse.h"

/* A summed row a view adds (clickhouse_hours.c writes them). */
typedef struct {
	uint64_t series;
	uint32_t hours, hour;
	int64_t made;
	int found;
} ch_use_t;

/* A sum of a summed row as read: the local series, global node and attribute set ids. */
typedef struct {
	uint32_t series;
	uint64_t node, attrset;
	int64_t value;
} ch_raw_sum_t;

typedef struct {
	uint32_t day;
	int skipped; /* answers were malformed or named unknown ids: reported, then empty */
	int have_series, have_nodes, have_frames, have_attrsets;
	store_series_t *series; /* [0..n_series) with local = index + 1 */
	uint32_t n_series;
	u64map_t series_ix; /* id -> local */
	uint32_t *node_parent, *node_frame;
	uint64_t *node_id;
	uint32_t n_nodes;
	u64map_t node_ix;
	model_frame_t *frames; /* [1..n_frames] */
	uint32_t n_frames;
	u64map_t frame_ix;
	model_attrset_t *attrsets; /* [0..n_attrsets], 0 the empty set */
	model_label_t *attr_labels;
	uint32_t n_attrsets;
	u64map_t attr_ix;
	/* Chunks listed by heads / span hits, in order, for fetching entries in batches. */
	uint64_t *chunks;
	uint64_t *chunk_series; /* global series id of chunks[i] */
	int64_t *chunk_t;
	uint32_t n_chunks;
	size_t cap_chunks;
	u64map_t chunk_ix; /* chunk -> index in chunks */
	/* The plan for the series of the last heads or sums call (plan_build):
	 * the summed rows to add, the times to read from entries, the head rows
	 * of the hours the summed rows cover. */
	int plan_valid;
	uint32_t *plan_sel, plan_n_sel;
	size_t cap_plan_sel;
	ch_use_t *use;
	uint32_t n_use;
	size_t cap_use;
	int64_t *scan; /* [from, until) pairs */
	uint32_t n_scan;
	size_t cap_scan;
	store_chunk_head_t *plan_heads;
	uint32_t n_plan_heads;
	size_t cap_plan_heads;
	/* The sums of the plan's day rows, read with their stamps (pre_ready:
	 * every use is in pre, so the sums need no statement of their own). */
	ch_raw_sum_t *pre;
	size_t n_pre, cap_pre;
	int pre_ready;
} ch_part_t;

typedef struct {
	store_head_t head_; /* first: store.c dispatches through it */
	ch_store_t *s;
	ch_conn_t *c;
	char proj[LIMIT_NAME_BYTES + 1];
	slice_t project;
	int64_t from_ns, until_ns;
	ch_part_t *parts;
	uint32_t n_parts;
	arena_t *a; /* strings of the dictionaries */
	buf_t q;
	store_chunk_head_t *heads;
	size_t cap_heads;
	store_span_hit_t *hits;
	size_t cap_hits;
	store_sum_t *sums;
	size_t cap_sums;
	/* The entries of the last batch of chunks fetched (one partition). */
	uint32_t ent_part;
	u64map_t ent_ix; /* chunk -> index in ent_range */
	struct {
		uint32_t first, n;
	} * ent_range;
	size_t cap_range;
	store_entry_t *ents;
	size_t cap_ents;
	uint64_t *ent_chunk; /* scratch: the chunk of each fetched row */
	size_t cap_ent_chunk;
} ch_view_t;

#define V(v) ((ch_view_t *)(v))

/* Starts a query on partition p: "... WHERE project = P AND day = D". */
void chv_where_part(ch_view_t *v, uint32_t p);
int chv_run(ch_view_t *v, ch_rd_t *rd, err_t *err);
/* Reports partition p as damaged (once) and answers empty from now on (0). */
int chv_skip(ch_view_t *v, uint32_t p, const char *why);
/* p damaged by the answer rd: the reader's error, or problem (clickhouse_view.c). */
int chv_skip_answer(ch_view_t *v, uint32_t p, ch_rd_t *rd, const char *row, const char *problem);
/* -1 with a 500 when p is not a partition of v. */
int chv_bad_part(ch_view_t *v, uint32_t p, err_t *err);
/* " AND COL IN (global ids of series[0..n))", or " AND COL != 0" for all of p's. */
int chv_series_list(ch_view_t *v, ch_part_t *cp, const uint32_t *series, uint32_t n, const char *col);
/* Notes a chunk listed by heads or span hits, for fetching entries in batches. */
void chv_remember_chunk(ch_part_t *cp, uint64_t chunk, uint64_t series, int64_t t);
/* The dictionaries of p (and of the view's other partitions lacking them). */
int chv_load_series(ch_view_t *v, uint32_t p, err_t *err);
int chv_load_nodes(ch_view_t *v, uint32_t p, err_t *err);
int chv_load_attrsets(ch_view_t *v, uint32_t p, err_t *err);

#endif
