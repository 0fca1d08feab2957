/* store/clickhouse views: the read side of store/store.h over SQL. A view
 * lists the (project, day) partitions in its range; each partition's
 * dictionaries are read on first use and given dense local ids (series,
 * frames and attribute sets in id order, nodes by depth so a parent always
 * comes first), the same shapes the embedded engine hands out, so every
 * query in src/query runs unchanged on either engine. The aggregation of a
 * flame graph is pushed into ClickHouse (store_view_sums: GROUP BY series,
 * node, attrset); chunk entries, when a query needs them one chunk at a
 * time, are fetched CH_ENTRY_BATCH chunks per query. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/arena.h"
#include "base/log.h"
#include "base/sort.h"
#include "base/timeutil.h"
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
static void where_part(ch_view_t *v, uint32_t p)
{
	buf_printf(&v->q, " WHERE project = ");
	ch_sql_str(&v->q, v->project);
	buf_printf(&v->q, " AND day = %u", v->parts[p].day);
}

static void where_range(ch_view_t *v)
{
	buf_printf(&v->q, " AND t_ns >= %lld AND t_ns < %lld", (long long)v->from_ns, (long long)v->until_ns);
}

static int run(ch_view_t *v, ch_rd_t *rd, err_t *err)
{
	return ch_select(v->s, v->c, &v->q, rd, err);
}

/* Reports partition p as damaged (once) and answers empty from now on. */
static int skip(ch_view_t *v, uint32_t p, const char *why)
{
	ch_part_t *cp = &v->parts[p];
	if (!cp->skipped) {
		char day[11];
		time_day_str(cp->day, day);
		log_warn("store partition is damaged",
		         "engine=clickhouse project=%s day=%s why=\"%s\" action=skipped", v->proj, day, why);
	}
	cp->skipped = 1;
	return 0;
}

/* An answer about partition p that does not parse, or whose row just read
 * fails the caller's checks (problem, recorded at the reader's offset when
 * the answer parsed so far): p is reported damaged with the reader's error
 * ("store: ClickHouse sent a malformed <row>: … at byte N of M") and
 * skipped (0). */
static int skip_answer(ch_view_t *v, uint32_t p, ch_rd_t *rd, const char *row, const char *problem)
{
	if (problem)
		ch_rd_fail(rd, problem);
	err_t e = {0};
	ch_rd_end(rd, &e, 503, row);
	return skip(v, p, e.msg);
}

int ch_view_open(store_t *st, slice_t project, int64_t from_ns, int64_t until_ns, store_view_t **out,
                 err_t *err)
{
	ch_store_t *s = (ch_store_t *)st;
	if (project.n == 0 || project.n > LIMIT_NAME_BYTES)
		return err_set(err, 400, "store: project name must be 1 to %u bytes", LIMIT_NAME_BYTES);
	int64_t start = ch_retention_start(st, project, time_now_ns());
	if (from_ns < start)
		from_ns = start;
	ch_view_t *v = xcalloc(1, sizeof *v);
	v->head_.engine = &store_clickhouse_engine;
	v->s = s;
	memcpy(v->proj, project.p, project.n);
	v->project = slice_make(v->proj, project.n);
	v->from_ns = from_ns;
	v->until_ns = until_ns;
	v->a = arena_new();
	buf_init(&v->q, SIZE_MAX);
	u64map_init(&v->ent_ix);
	v->ent_part = UINT32_MAX;
	v->c = ch_conn_get(s);
	*out = (store_view_t *)v;
	if (from_ns >= until_ns)
		return 0;
	int64_t d0 = time_day(from_ns), d1 = time_day(until_ns - 1);
	if (d1 < 0)
		return 0;
	if (d0 < 0)
		d0 = 0;
	/* The days from series, a row per series and day, not from samples,
	 * which would read every sample's day (7 ms of a 30 ms 1 h flame graph).
	 * A series row whose samples never landed (a refused write) only lists
	 * a day that then reads as empty. */
	buf_puts(&v->q, "SELECT DISTINCT day FROM series WHERE project = ");
	ch_sql_str(&v->q, project);
	buf_printf(&v->q, " AND day >= %lld AND day <= %lld ORDER BY day", (long long)d0,
	           (long long)(d1 > UINT32_MAX ? UINT32_MAX : d1));
	ch_rd_t rd;
	if (run(v, &rd, err) < 0) {
		ch_view_close(*out);
		*out = NULL;
		return -1;
	}
	size_t cap = 0;
	int64_t last = -1;
	while (ch_rd_more(&rd)) {
		uint32_t day = ch_rd_u32(&rd);
		/* DISTINCT ... ORDER BY day inside [d0, d1]: any other day is a broken
		 * answer (read as days, 64 MiB of garbage would cost a partition, and
		 * its queries, per 4 bytes): the query fails. */
		if (ch_rd_bad(&rd))
			break;
		if (day < d0 || day > d1 || day <= last) {
			ch_rd_fail(&rd, "a day outside the view or out of order");
			break;
		}
		last = day;
		v->parts = xgrow(v->parts, &cap, (size_t)v->n_parts + 1, sizeof *v->parts);
		ch_part_t *cp = &v->parts[v->n_parts++];
		memset(cp, 0, sizeof *cp);
		cp->day = day;
		u64map_init(&cp->series_ix);
		u64map_init(&cp->node_ix);
		u64map_init(&cp->frame_ix);
		u64map_init(&cp->attr_ix);
		u64map_init(&cp->chunk_ix);
	}
	if (ch_rd_end(&rd, err, 503, "day list") < 0) {
		ch_view_close(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}

void ch_view_close(store_view_t *sv)
{
	ch_view_t *v = V(sv);
	if (!v)
		return;
	for (uint32_t p = 0; p < v->n_parts; p++) {
		ch_part_t *cp = &v->parts[p];
		free(cp->series);
		u64map_free(&cp->series_ix);
		free(cp->node_parent);
		free(cp->node_frame);
		free(cp->node_id);
		u64map_free(&cp->node_ix);
		free(cp->frames);
		u64map_free(&cp->frame_ix);
		free(cp->attrsets);
		free(cp->attr_labels);
		u64map_free(&cp->attr_ix);
		free(cp->chunks);
		free(cp->chunk_series);
		free(cp->chunk_t);
		u64map_free(&cp->chunk_ix);
		free(cp->plan_sel);
		free(cp->use);
		free(cp->scan);
		free(cp->plan_heads);
		free(cp->pre);
	}
	free(v->parts);
	ch_conn_put(v->s, v->c);
	arena_free(v->a);
	buf_free(&v->q);
	free(v->heads);
	free(v->hits);
	free(v->sums);
	u64map_free(&v->ent_ix);
	free(v->ent_range);
	free(v->ents);
	free(v->ent_chunk);
	free(v);
}

uint32_t ch_view_partitions(const store_view_t *v)
{
	return V(v)->n_parts;
}

int ch_view_skipped(const store_view_t *v, uint32_t p)
{
	return p < V(v)->n_parts && V(v)->parts[p].skipped;
}

static int bad_part(ch_view_t *v, uint32_t p, err_t *err)
{
	if (p < v->n_parts)
		return 0;
	return err_set(err, 500, "store: partition %u of %u", p, v->n_parts);
}

/* ---- dictionaries ---- */

static slice_t keep(ch_view_t *v, slice_t s)
{
	return s.n ? arena_slice(v->a, s) : slice_make("", 0);
}

/* Reads a pair of Array(String) (keys, values) into labels[*n..]; -1 if malformed. */
static int read_labels(ch_view_t *v, ch_rd_t *rd, model_label_t **labels, size_t *cap, uint32_t *n)
{
	uint64_t nk = ch_rd_varint(rd);
	if (nk > (uint64_t)(rd->end - rd->p)) {
		ch_rd_fail(rd, "an Array(String) longer than the answer");
		return -1;
	}
	*labels = xgrow(*labels, cap, (size_t)*n + nk + 1, sizeof **labels);
	for (uint64_t i = 0; i < nk; i++)
		(*labels)[*n + i].key = keep(v, ch_rd_str(rd));
	if (ch_rd_varint(rd) != nk) {
		ch_rd_fail(rd, "label keys and values of different lengths");
		return -1;
	}
	for (uint64_t i = 0; i < nk; i++)
		(*labels)[*n + i].value = keep(v, ch_rd_str(rd));
	*n += (uint32_t)nk;
	return ch_rd_bad(rd) ? -1 : 0;
}

/* The dictionaries of every partition are read with one statement per
 * table for all the view's partitions that lack it (day as the first column,
 * rows in day order): 4 statements for a 14-day view rather than 56, each of
 * which cost ClickHouse about 2 ms however small (docs/STORE.md, Summed
 * hours). A statement that fails (an answer past store.maxAnswerMiB, say)
 * is tried again for partition p alone; a row that does not parse reports
 * its partition damaged, and the partitions after it are read on their own
 * when used. */

/* The day of the next row, or UINT32_MAX when the answer has no more. */
static uint32_t peek_day(const ch_rd_t *rd)
{
	uint32_t d;
	if (!ch_rd_more(rd) || rd->end - rd->p < 4)
		return UINT32_MAX;
	memcpy(&d, rd->p, 4); /* RowBinary is little-endian, as this machine */
	return d;
}

/* Reads the rows of partition p (the rows while their day is p's; each
 * starts with its day) and completes p's dictionary. 0, or what skip_answer
 * returns (p reported damaged). */
typedef int (*dict_rows_fn)(ch_view_t *v, uint32_t p, ch_rd_t *rd);

/* Whether partition p has the dictionary `which` (offset of its have_ flag). */
#define HAVE(cp, which) (*(int *)((char *)(cp) + (which)))

static int load_dict(ch_view_t *v, uint32_t p, size_t which, const char *select, const char *tail,
                     dict_rows_fn rows, err_t *err)
{
	ch_part_t *cp = &v->parts[p];
	if (HAVE(cp, which) || cp->skipped)
		return 0;
	for (int alone = 0; alone < 2; alone++) {
		buf_reset(&v->q);
		buf_puts(&v->q, select);
		buf_puts(&v->q, " WHERE project = ");
		ch_sql_str(&v->q, v->project);
		buf_puts(&v->q, " AND day IN (");
		uint32_t listed = 0;
		for (uint32_t i = p; i < v->n_parts && !(alone && i > p); i++) {
			ch_part_t *ci = &v->parts[i];
			/* Nodes need the partition's frames (loaded for all before them). */
			if (HAVE(ci, which) || ci->skipped ||
			    (which == offsetof(ch_part_t, have_nodes) && !ci->have_frames))
				continue;
			buf_printf(&v->q, "%s%u", listed++ ? "," : "", ci->day);
		}
		buf_putc(&v->q, ')');
		buf_puts(&v->q, tail);
		ch_rd_t rd;
		if (run(v, &rd, err) < 0) {
			if (alone || listed == 1)
				return -1;
			continue;
		}
		uint32_t i = p;
		while (ch_rd_more(&rd)) {
			uint32_t day = peek_day(&rd);
			while (i < v->n_parts && v->parts[i].day < day)
				i++;
			if (i == v->n_parts || v->parts[i].day != day || HAVE(&v->parts[i], which) ||
			    v->parts[i].skipped) {
				ch_rd_fail(&rd, "a day not asked for or out of order");
				return skip(v, p, rd.err.msg);
			}
			if (rows(v, i, &rd) < 0 || v->parts[i].skipped)
				break;
			i++;
		}
		if (ch_rd_bad(&rd))
			return 0; /* the partition that failed is skipped; the rest load alone when used */
		/* Listed partitions without rows have empty dictionaries. */
		for (uint32_t k = p; k < v->n_parts && !(alone && k > p); k++) {
			ch_part_t *ck = &v->parts[k];
			if (!HAVE(ck, which) && !ck->skipped &&
			    (which != offsetof(ch_part_t, have_nodes) || ck->have_frames))
				rows(v, k, &rd);
		}
		return 0;
	}
	return -1;
}

static int series_rows(ch_view_t *v, uint32_t p, ch_rd_t *rd)
{
	ch_part_t *cp = &v->parts[p];
	size_t cap = 0;
	/* Labels first into one array, pointed to once it stops moving. */
	model_label_t *labels = NULL;
	size_t cap_labels = 0;
	uint32_t n_labels = 0, *first = NULL;
	size_t cap_first = 0;
	while (peek_day(rd) == cp->day) {
		ch_rd_u32(rd);
		cp->series = xgrow(cp->series, &cap, (size_t)cp->n_series + 1, sizeof *cp->series);
		first = xgrow(first, &cap_first, (size_t)cp->n_series + 1, sizeof *first);
		store_series_t *se = &cp->series[cp->n_series];
		memset(se, 0, sizeof *se);
		se->local = cp->n_series + 1;
		se->id = ch_rd_u64(rd);
		se->service = keep(v, ch_rd_str(rd));
		se->type = keep(v, ch_rd_str(rd));
		se->period_type = keep(v, ch_rd_str(rd));
		se->period_unit = keep(v, ch_rd_str(rd));
		se->period = ch_rd_i64(rd);
		se->aggregation = ch_rd_u8(rd);
		se->cpu_alias = ch_rd_u8(rd);
		first[cp->n_series] = n_labels;
		/* Ids are hashes, never 0 (the id maps reserve it): 0 is a broken answer. */
		if (read_labels(v, rd, &labels, &cap_labels, &n_labels) < 0 || !se->id) {
			free(labels);
			free(first);
			return skip_answer(v, p, rd, "series row", "a series id of 0");
		}
		se->n_labels = n_labels - first[cp->n_series];
		u64map_put(&cp->series_ix, se->id, se->local);
		cp->n_series++;
	}
	if (ch_rd_bad(rd)) {
		free(labels);
		free(first);
		return skip_answer(v, p, rd, "series row", NULL);
	}
	model_label_t *stable = arena_alloc(v->a, ((size_t)n_labels + 1) * sizeof *stable);
	if (n_labels)
		memcpy(stable, labels, n_labels * sizeof *labels);
	for (uint32_t i = 0; i < cp->n_series; i++)
		cp->series[i].labels = stable + first[i];
	free(labels);
	free(first);
	cp->have_series = 1;
	return 0;
}

static int load_series(ch_view_t *v, uint32_t p, err_t *err)
{
	/* Every series row of the day, with or without samples: a row whose
	 * samples never landed (a refused write) has no chunk, and every query
	 * reaches series through their chunks (heads, sums, span hits), so it
	 * never shows. Filtering on samples here read the whole day's samples
	 * (8 of a 30 ms 1 h flame graph). */
	return load_dict(v, p, offsetof(ch_part_t, have_series),
	                 "SELECT day, id, any(service), any(type), any(period_type), any(period_unit), "
	                 "any(period), any(aggregation), any(cpu_alias), any(keys), any(vals) FROM series",
	                 " GROUP BY day, id ORDER BY day, id", series_rows, err);
}

static int frame_rows(ch_view_t *v, uint32_t p, ch_rd_t *rd)
{
	ch_part_t *cp = &v->parts[p];
	size_t cap = 0;
	cp->frames = xgrow(cp->frames, &cap, 1, sizeof *cp->frames);
	memset(cp->frames, 0, sizeof *cp->frames);
	while (peek_day(rd) == cp->day) {
		ch_rd_u32(rd);
		cp->frames = xgrow(cp->frames, &cap, (size_t)cp->n_frames + 2, sizeof *cp->frames);
		model_frame_t *f = &cp->frames[++cp->n_frames];
		f->id = ch_rd_u64(rd);
		f->name = keep(v, ch_rd_str(rd));
		f->file = keep(v, ch_rd_str(rd));
		f->binary = keep(v, ch_rd_str(rd));
		f->build_id = keep(v, ch_rd_str(rd));
		f->kind = keep(v, ch_rd_str(rd));
		f->unsymbolized = ch_rd_u8(rd);
		if (!f->id || ch_rd_bad(rd))
			return skip_answer(v, p, rd, "frame row", f->id ? NULL : "a frame id of 0");
		u64map_put(&cp->frame_ix, f->id, cp->n_frames);
	}
	cp->have_frames = 1;
	return 0;
}

static int load_frames(ch_view_t *v, uint32_t p, err_t *err)
{
	return load_dict(v, p, offsetof(ch_part_t, have_frames),
	                 "SELECT day, id, any(name), any(file), any(bin), any(build_id), any(kind), "
	                 "any(unsymbolized) FROM frames",
	                 " GROUP BY day, id ORDER BY day, id", frame_rows, err);
}

typedef struct {
	uint64_t id, parent, frame;
	uint32_t depth;
} node_row_t;

/* Parents first: by depth, then id (the order local ids are given in). */
static int node_row_cmp(const void *a, const void *b)
{
	const node_row_t *x = a, *y = b;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

static int node_rows(ch_view_t *v, uint32_t p, ch_rd_t *rd)
{
	ch_part_t *cp = &v->parts[p];
	node_row_t *rows = NULL;
	size_t cap_rows = 0, n_rows = 0;
	while (peek_day(rd) == cp->day) {
		ch_rd_u32(rd);
		if (n_rows >= LIMIT_CH_ROWS) {
			free(rows);
			return skip_answer(v, p, rd, "node row", "more nodes than a read accepts");
		}
		rows = xgrow(rows, &cap_rows, n_rows + 1, sizeof *rows);
		node_row_t *r = &rows[n_rows++];
		r->id = ch_rd_u64(rd);
		r->parent = ch_rd_u64(rd);
		r->frame = ch_rd_u64(rd);
		r->depth = ch_rd_u32(rd);
	}
	if (ch_rd_bad(rd)) {
		free(rows);
		return skip_answer(v, p, rd, "node row", NULL);
	}
	if (n_rows > 1)
		qsort(rows, n_rows, sizeof *rows, node_row_cmp);
	size_t cap = 0, cap2 = 0, cap3 = 0;
	uint32_t n = 0;
	for (size_t i = 0; i < n_rows; i++) {
		uint64_t id = rows[i].id, parent = rows[i].parent, frame = rows[i].frame;
		uint32_t seen;
		if (id && u64map_get(&cp->node_ix, id, &seen))
			continue; /* a row written twice (ReplacingMergeTree not merged yet) */
		cp->node_id = xgrow(cp->node_id, &cap, (size_t)n + 2, sizeof *cp->node_id);
		cp->node_parent = xgrow(cp->node_parent, &cap2, (size_t)n + 2, sizeof *cp->node_parent);
		cp->node_frame = xgrow(cp->node_frame, &cap3, (size_t)n + 2, sizeof *cp->node_frame);
		uint32_t lp = 0, lf = 0;
		if (!id || (parent && !u64map_get(&cp->node_ix, parent, &lp)) ||
		    !u64map_get(&cp->frame_ix, frame, &lf)) {
			free(rows);
			return skip_answer(v, p, rd, "node row", "a node naming an unknown parent or frame");
		}
		n++;
		cp->node_id[n] = id;
		cp->node_parent[n] = lp;
		cp->node_frame[n] = lf;
		u64map_put(&cp->node_ix, id, n);
	}
	free(rows);
	if (!n) { /* index 0 unused, but the arrays must exist */
		cp->node_id = xgrow(cp->node_id, &cap, 1, sizeof *cp->node_id);
		cp->node_parent = xgrow(cp->node_parent, &cap2, 1, sizeof *cp->node_parent);
		cp->node_frame = xgrow(cp->node_frame, &cap3, 1, sizeof *cp->node_frame);
	}
	cp->node_id[0] = 0;
	cp->node_parent[0] = cp->node_frame[0] = 0;
	cp->n_nodes = n;
	cp->have_nodes = 1;
	return 0;
}

static int load_nodes(ch_view_t *v, uint32_t p, err_t *err)
{
	ch_part_t *cp = &v->parts[p];
	if (cp->have_nodes || cp->skipped)
		return 0;
	if (load_frames(v, p, err) < 0 || cp->skipped)
		return cp->skipped ? 0 : -1;
	/* Rows as stored, ordered and read once here: a GROUP BY and ORDER BY
	 * in ClickHouse cost it twice the time of reading them (4.7 of 7 ms a
	 * day of 6,943 nodes). */
	return load_dict(v, p, offsetof(ch_part_t, have_nodes),
	                 "SELECT day, id, parent, frame, depth FROM nodes", " ORDER BY day", node_rows, err);
}

static int attrset_rows(ch_view_t *v, uint32_t p, ch_rd_t *rd)
{
	ch_part_t *cp = &v->parts[p];
	size_t cap = 0, cap_labels = 0;
	uint32_t n_labels = 0;
	cp->attrsets = xgrow(cp->attrsets, &cap, 1, sizeof *cp->attrsets);
	memset(cp->attrsets, 0, sizeof *cp->attrsets);
	while (peek_day(rd) == cp->day) {
		ch_rd_u32(rd);
		cp->attrsets = xgrow(cp->attrsets, &cap, (size_t)cp->n_attrsets + 2, sizeof *cp->attrsets);
		model_attrset_t *a = &cp->attrsets[++cp->n_attrsets];
		a->id = ch_rd_u64(rd);
		a->first = n_labels;
		if (read_labels(v, rd, &cp->attr_labels, &cap_labels, &n_labels) < 0 || !a->id)
			return skip_answer(v, p, rd, "attribute set row", "an attribute set id of 0");
		a->count = n_labels - a->first;
		u64map_put(&cp->attr_ix, a->id, cp->n_attrsets);
	}
	if (ch_rd_bad(rd))
		return skip_answer(v, p, rd, "attribute set row", NULL);
	cp->have_attrsets = 1;
	return 0;
}

static int load_attrsets(ch_view_t *v, uint32_t p, err_t *err)
{
	return load_dict(v, p, offsetof(ch_part_t, have_attrsets),
	                 "SELECT day, id, any(keys), any(vals) FROM attrsets",
	                 " GROUP BY day, id ORDER BY day, id", attrset_rows, err);
}

int ch_view_series(store_view_t *sv, uint32_t p, const store_series_t **out, uint32_t *n, err_t *err)
{
	ch_view_t *v = V(sv);
	*out = NULL;
	*n = 0;
	if (bad_part(v, p, err) || load_series(v, p, err) < 0)
		return -1;
	if (!v->parts[p].skipped) {
		*out = v->parts[p].series;
		*n = v->parts[p].n_series;
	}
	return 0;
}

int ch_view_nodes(store_view_t *sv, uint32_t p, store_nodes_t *out, err_t *err)
{
	ch_view_t *v = V(sv);
	memset(out, 0, sizeof *out);
	if (bad_part(v, p, err) || load_nodes(v, p, err) < 0)
		return -1;
	ch_part_t *cp = &v->parts[p];
	if (!cp->skipped) {
		out->n = cp->n_nodes;
		out->parent = cp->node_parent;
		out->frame = cp->node_frame;
		out->id = cp->node_id;
	}
	return 0;
}

int ch_view_frames(store_view_t *sv, uint32_t p, const model_frame_t **out, uint32_t *n, err_t *err)
{
	ch_view_t *v = V(sv);
	*out = NULL;
	*n = 0;
	if (bad_part(v, p, err) || load_frames(v, p, err) < 0)
		return -1;
	if (!v->parts[p].skipped) {
		*out = v->parts[p].frames;
		*n = v->parts[p].n_frames;
	}
	return 0;
}

int ch_view_attrsets(store_view_t *sv, uint32_t p, const model_attrset_t **sets, const model_label_t **labels,
                     uint32_t *n, err_t *err)
{
	static const model_attrset_t empty_set;
	ch_view_t *v = V(sv);
	*sets = &empty_set;
	*labels = NULL;
	*n = 0;
	if (bad_part(v, p, err) || load_attrsets(v, p, err) < 0)
		return -1;
	if (!v->parts[p].skipped) {
		*sets = v->parts[p].attrsets;
		*labels = v->parts[p].attr_labels;
		*n = v->parts[p].n_attrsets;
	}
	return 0;
}

/* ---- chunks ---- */

/* Appends " AND COL IN (id, id, …)" for the global ids of local
 * series[0..n), or, when they are all of the partition's series (a
 * services query: no list of thousands of ids for ClickHouse to parse),
 * " AND COL != 0" (series 0: the head rows of samples). -1 when one is
 * unknown. */
static int series_list(ch_view_t *v, ch_part_t *cp, const uint32_t *series, uint32_t n, const char *col)
{
	if (n == cp->n_series) {
		int all = 1;
		for (uint32_t i = 0; i < n && all; i++)
			all = series[i] == i + 1;
		if (all) {
			buf_printf(&v->q, " AND %s != 0", col);
			return 0;
		}
	}
	buf_printf(&v->q, " AND %s IN (", col);
	for (uint32_t i = 0; i < n; i++) {
		if (series[i] == 0 || series[i] > cp->n_series)
			return -1;
		buf_printf(&v->q, "%s%llu", i ? "," : "", (unsigned long long)cp->series[series[i] - 1].id);
	}
	buf_putc(&v->q, ')');
	return 0;
}

static void remember_chunk(ch_part_t *cp, uint64_t chunk, uint64_t series, int64_t t)
{
	int inserted;
	u64map_get_or_put(&cp->chunk_ix, chunk, cp->n_chunks, &inserted);
	if (!inserted)
		return;
	size_t cap = cp->cap_chunks;
	cp->chunks = xgrow(cp->chunks, &cap, (size_t)cp->n_chunks + 1, sizeof *cp->chunks);
	cap = cp->cap_chunks;
	cp->chunk_series = xgrow(cp->chunk_series, &cap, (size_t)cp->n_chunks + 1, sizeof *cp->chunk_series);
	cap = cp->cap_chunks;
	cp->chunk_t = xgrow(cp->chunk_t, &cap, (size_t)cp->n_chunks + 1, sizeof *cp->chunk_t);
	cp->cap_chunks = cap;
	cp->chunks[cp->n_chunks] = chunk;
	cp->chunk_series[cp->n_chunks] = series;
	cp->chunk_t[cp->n_chunks] = t;
	cp->n_chunks++;
}

/* ---- the plan: summed rows where they hold, entries elsewhere ----
 * clickhouse_hours.c sums whole hours and days into `summed`, stamped with
 * the chunks they cover. For the selected series, a whole hour (the whole
 * day) of the range is covered when every series has an exact row whose
 * stamp is the stamp of its head rows in that hour (day) now; the heads of
 * covered hours are their head rows, their sums the rows'. Every other
 * time of the range (its ragged edges, hours not summed yet or written
 * since, rows written before head rows existed) is read from the entries,
 * as before summed rows existed. */

static int same_sel(const ch_part_t *cp, const uint32_t *series, uint32_t n)
{
	return cp->plan_valid && cp->plan_n_sel == n &&
	       (n == 0 || !memcmp(cp->plan_sel, series, n * sizeof *series));
}

/* Appends " AND (t_ns >= a AND t_ns < b OR …)" for the plan's scan intervals. */
static void where_scan(ch_view_t *v, const ch_part_t *cp)
{
	buf_puts(&v->q, " AND (");
	for (uint32_t i = 0; i < cp->n_scan; i++)
		buf_printf(&v->q, "%st_ns >= %lld AND t_ns < %lld", i ? " OR " : "",
		           (long long)cp->scan[2 * i], (long long)cp->scan[2 * i + 1]);
	buf_putc(&v->q, ')');
}

static void scan_add(ch_part_t *cp, int64_t a, int64_t b)
{
	if (cp->n_scan && cp->scan[2 * cp->n_scan - 1] == a) {
		cp->scan[2 * cp->n_scan - 1] = b;
		return;
	}
	cp->scan = xgrow(cp->scan, &cp->cap_scan, 2 * ((size_t)cp->n_scan + 1), sizeof *cp->scan);
	cp->scan[2 * cp->n_scan] = a;
	cp->scan[2 * cp->n_scan + 1] = b;
	cp->n_scan++;
}

/* The day rows of partition p for the selected series, with their sums:
 * a row whose stamp is that of the series' head rows of the day (st)
 * becomes best[k * 25 + 24] and its sums cp->pre. One statement where the
 * stamps and then the sums took two (each ~2 ms of ClickHouse). */
static int read_day_rows(ch_view_t *v, uint32_t p, const uint32_t *series, uint32_t n, const uint32_t *sel_of,
                         const ch_stamp_t *st, int64_t *best, err_t *err)
{
	ch_part_t *cp = &v->parts[p];
	buf_reset(&v->q);
	buf_puts(&v->q, "SELECT series, n, max_chunk, hash, made, nodes, attrsets, vals FROM summed");
	where_part(v, p);
	buf_printf(&v->q, " AND hours = 24 AND hour = %u AND exact = 1", cp->day * 24);
	series_list(v, cp, series, n, "series");
	ch_rd_t rd;
	if (run(v, &rd, err) < 0)
		return -1;
	/* Where each series' chosen row starts in pre, and how many sums it has. */
	size_t *first = xcalloc((size_t)n + 1, sizeof *first), *count = xcalloc((size_t)n + 1, sizeof *count);
	while (ch_rd_more(&rd)) {
		uint64_t sid = ch_rd_u64(&rd);
		ch_stamp_t rs;
		rs.n = ch_rd_u64(&rd);
		rs.max_chunk = ch_rd_u64(&rd);
		rs.hash = ch_rd_u64(&rd);
		int64_t made = ch_rd_i64(&rd);
		uint64_t k = ch_rd_varint(&rd);
		uint32_t local = 0;
		if (ch_rd_bad(&rd) || k > (uint64_t)(rd.end - rd.p) / 8 || cp->n_pre + k > LIMIT_CH_ROWS) {
			ch_rd_fail(&rd, "arrays past the answer");
			break;
		}
		int sel = u64map_get(&cp->series_ix, sid, &local) && sel_of[local];
		size_t i = sel ? sel_of[local] - 1 : 0;
		ch_stamp_t want = {0};
		for (int hr = 0; sel && hr < 24; hr++)
			ch_stamp_merge(&want, &st[i * 24 + hr]);
		int take = sel && ch_stamp_eq(&rs, &want) && made > best[i * 25 + 24];
		cp->pre = xgrow(cp->pre, &cp->cap_pre, cp->n_pre + k + 1, sizeof *cp->pre);
		ch_raw_sum_t *r = cp->pre + cp->n_pre;
		for (uint64_t j = 0; j < k; j++)
			r[j] = (ch_raw_sum_t){local, ch_rd_u64(&rd), 0, 0};
		if (ch_rd_varint(&rd) != k)
			ch_rd_fail(&rd, "arrays of different lengths");
		for (uint64_t j = 0; j < k; j++)
			r[j].attrset = ch_rd_u64(&rd);
		if (ch_rd_varint(&rd) != k)
			ch_rd_fail(&rd, "arrays of different lengths");
		for (uint64_t j = 0; j < k; j++)
			r[j].value = ch_rd_i64(&rd);
		if (!take || ch_rd_bad(&rd))
			continue; /* not used: overwritten by the next row */
		best[i * 25 + 24] = made;
		first[i] = cp->n_pre;
		count[i] = k;
		cp->n_pre += k;
	}
	int rc = ch_rd_end(&rd, err, 503, "summed row");
	/* Only the chosen rows, together. */
	size_t m = 0;
	ch_raw_sum_t *kept = xmalloc((cp->n_pre + 1) * sizeof *kept);
	for (uint32_t i = 0; rc == 0 && i < n; i++) {
		if (best[(size_t)i * 25 + 24] <= 0)
			continue;
		memcpy(kept + m, cp->pre + first[i], count[i] * sizeof *kept);
		m += count[i];
	}
	free(cp->pre);
	cp->pre = kept;
	cp->cap_pre = cp->n_pre + 1;
	cp->n_pre = rc == 0 ? m : 0;
	free(first);
	free(count);
	return rc;
}

/* Reads the head rows of [h0, h1) and the stamps of the summed rows of
 * partition p, and decides the plan for local series[0..n). */
static int plan_build(ch_view_t *v, uint32_t p, const uint32_t *series, uint32_t n, err_t *err)
{
	ch_part_t *cp = &v->parts[p];
	cp->plan_valid = 0;
	cp->n_use = cp->n_scan = cp->n_plan_heads = 0;
	cp->n_pre = 0;
	cp->pre_ready = 0;
	int64_t d0 = (int64_t)cp->day * NS_PER_DAY, d1 = d0 + NS_PER_DAY;
	int64_t a = v->from_ns > d0 ? v->from_ns : d0, b = v->until_ns < d1 ? v->until_ns : d1;
	int64_t h0 = a <= d0 ? d0 : d0 + ((a - d0 + NS_PER_HOUR - 1) / NS_PER_HOUR) * NS_PER_HOUR;
	int64_t h1 = d0 + ((b - d0) / NS_PER_HOUR) * NS_PER_HOUR;
	uint8_t covered[24] = {0};
	uint32_t *sel_of = NULL;
	ch_stamp_t *st = NULL;
	int64_t *best = NULL; /* [sel * 25 + hour], 24: the day; 0 none */
	int rc = 0;
	if (a < b && h0 < h1 && n) {
		sel_of = xcalloc((size_t)cp->n_series + 1, sizeof *sel_of);
		for (uint32_t i = 0; i < n; i++)
			if (series[i] && series[i] <= cp->n_series)
				sel_of[series[i]] = i + 1;
		st = xcalloc((size_t)n * 24, sizeof *st);
		best = xcalloc((size_t)n * 25, sizeof *best);
		buf_reset(&v->q);
		buf_puts(&v->q, "SELECT node, chunk, t_ns, duration_ns, attrset, value FROM samples");
		where_part(v, p);
		buf_printf(&v->q, " AND series = 0 AND t_ns >= %lld AND t_ns < %lld", (long long)h0,
		           (long long)h1);
		if (series_list(v, cp, series, n, "node") < 0) {
			rc = err_set(err, 500, "store: unknown local series id");
			goto out;
		}
		/* Global series ids sort as local ones: the heads' order, so that
		 * ch_view_heads and query/scan.c find them sorted. */
		buf_puts(&v->q, " ORDER BY node, t_ns, chunk");
		ch_rd_t rd;
		if ((rc = run(v, &rd, err)) < 0)
			goto out;
		while (ch_rd_more(&rd)) {
			uint64_t sid = ch_rd_u64(&rd), chunk = ch_rd_u64(&rd);
			store_chunk_head_t hd = {0};
			hd.t_ns = ch_rd_i64(&rd);
			hd.duration_ns = ch_rd_i64(&rd);
			uint64_t count = ch_rd_u64(&rd);
			hd.total = ch_rd_i64(&rd);
			uint32_t local = 0;
			if (ch_rd_bad(&rd) || !chunk || !u64map_get(&cp->series_ix, sid, &local) ||
			    !sel_of[local] || count > UINT32_MAX || hd.t_ns < h0 || hd.t_ns >= h1 ||
			    cp->n_plan_heads >= LIMIT_CH_ROWS) {
				rc = skip_answer(v, p, &rd, "head row",
				                 "a chunk 0, an unknown series, a count past 2^32 or a time "
				                 "outside the view");
				goto out;
			}
			hd.series = local;
			hd.n_entries = (uint32_t)count;
			hd.chunk_id = (int64_t)chunk;
			ch_stamp_add(
			    &st[(size_t)(sel_of[local] - 1) * 24 + (size_t)((hd.t_ns - d0) / NS_PER_HOUR)],
			    chunk);
			cp->plan_heads = xgrow(cp->plan_heads, &cp->cap_plan_heads,
			                       (size_t)cp->n_plan_heads + 1, sizeof *cp->plan_heads);
			cp->plan_heads[cp->n_plan_heads++] = hd;
		}
		if ((rc = ch_rd_end(&rd, err, 503, "head row")) < 0)
			goto out;
		uint32_t hour0 = cp->day * 24;
		int day = h0 == d0 && h1 == d1;
		if (day && (rc = read_day_rows(v, p, series, n, sel_of, st, best, err)) < 0)
			goto out;
		for (uint32_t i = 0; i < n && day; i++)
			day = best[(size_t)i * 25 + 24] > 0;
		cp->pre_ready = day;
		/* Not every series has its day: the stamps of the hour rows. */
		buf_reset(&v->q);
		buf_puts(&v->q, "SELECT series, hours, hour, n, max_chunk, hash, made FROM summed");
		where_part(v, p);
		buf_puts(&v->q, day ? " AND 0" : " AND exact = 1");
		series_list(v, cp, series, n, "series");
		if (!day && (rc = run(v, &rd, err)) < 0)
			goto out;
		while (!day && ch_rd_more(&rd)) {
			uint64_t sid = ch_rd_u64(&rd);
			uint32_t hours = ch_rd_u8(&rd), hour = ch_rd_u32(&rd);
			ch_stamp_t rs;
			rs.n = ch_rd_u64(&rd);
			rs.max_chunk = ch_rd_u64(&rd);
			rs.hash = ch_rd_u64(&rd);
			int64_t made = ch_rd_i64(&rd);
			uint32_t local = 0;
			if (ch_rd_bad(&rd) || !u64map_get(&cp->series_ix, sid, &local) || !sel_of[local] ||
			    hour < hour0)
				continue; /* a row of no selected series: not used */
			size_t k = sel_of[local] - 1;
			ch_stamp_t want = {0};
			uint32_t slot;
			if (hours == 24 && hour == hour0) {
				for (int hr = 0; hr < 24; hr++)
					ch_stamp_merge(&want, &st[k * 24 + hr]);
				slot = 24;
			} else if (hours == 1 && hour - hour0 < 24) {
				want = st[k * 24 + (hour - hour0)];
				slot = hour - hour0;
			} else
				continue;
			if (ch_stamp_eq(&rs, &want) && made > best[k * 25 + slot])
				best[k * 25 + slot] = made;
		}
		if (!day && (rc = ch_rd_end(&rd, err, 503, "summed row")) < 0)
			goto out;
		day = h0 == d0 && h1 == d1;
		for (uint32_t i = 0; i < n && day; i++)
			day = best[(size_t)i * 25 + 24] > 0;
		for (int hr = 0; hr < 24; hr++) {
			int64_t t = d0 + hr * NS_PER_HOUR;
			int ok = day || (t >= h0 && t < h1);
			for (uint32_t i = 0; i < n && ok && !day; i++)
				ok = best[(size_t)i * 25 + hr] > 0;
			covered[hr] = (uint8_t)ok;
			for (uint32_t i = 0; i < n && ok && !day; i++) {
				cp->use =
				    xgrow(cp->use, &cp->cap_use, (size_t)cp->n_use + 1, sizeof *cp->use);
				cp->use[cp->n_use++] =
				    (ch_use_t){cp->series[series[i] - 1].id, 1, hour0 + (uint32_t)hr,
				               best[(size_t)i * 25 + hr], 0};
			}
		}
		for (uint32_t i = 0; i < n && day; i++) {
			cp->use = xgrow(cp->use, &cp->cap_use, (size_t)cp->n_use + 1, sizeof *cp->use);
			cp->use[cp->n_use++] =
			    (ch_use_t){cp->series[series[i] - 1].id, 24, hour0, best[(size_t)i * 25 + 24], 0};
		}
		/* Only the head rows of covered hours are heads of the plan. */
		uint32_t kept = 0;
		for (uint32_t i = 0; i < cp->n_plan_heads; i++)
			if (covered[(cp->plan_heads[i].t_ns - d0) / NS_PER_HOUR])
				cp->plan_heads[kept++] = cp->plan_heads[i];
		cp->n_plan_heads = kept;
	}
	for (int64_t t = a; t < b;) {
		int64_t end = d0 + ((t - d0) / NS_PER_HOUR + 1) * NS_PER_HOUR;
		if (end > b)
			end = b;
		if (!covered[(t - d0) / NS_PER_HOUR])
			scan_add(cp, t, end);
		t = end;
	}
	cp->plan_sel = xgrow(cp->plan_sel, &cp->cap_plan_sel, (size_t)n + 1, sizeof *cp->plan_sel);
	if (n)
		memcpy(cp->plan_sel, series, n * sizeof *series);
	cp->plan_n_sel = n;
	cp->plan_valid = !cp->skipped;
out:
	free(sel_of);
	free(st);
	free(best);
	return rc;
}

static int head_cmp(const void *a, const void *b)
{
	const store_chunk_head_t *x = a, *y = b;
	if (x->series != y->series)
		return x->series < y->series ? -1 : 1;
	if (x->t_ns != y->t_ns)
		return x->t_ns < y->t_ns ? -1 : 1;
	return ((uint64_t)x->chunk_id > (uint64_t)y->chunk_id) -
	       ((uint64_t)x->chunk_id < (uint64_t)y->chunk_id);
}

int ch_view_heads(store_view_t *sv, uint32_t p, const uint32_t *series, uint32_t n_series,
                  const store_chunk_head_t **out, uint32_t *n, err_t *err)
{
	ch_view_t *v = V(sv);
	*out = v->heads;
	*n = 0;
	if (bad_part(v, p, err) || load_series(v, p, err) < 0)
		return -1;
	ch_part_t *cp = &v->parts[p];
	if (cp->skipped || !n_series)
		return 0;
	if (plan_build(v, p, series, n_series, err) < 0)
		return -1;
	if (cp->skipped)
		return 0;
	uint32_t k = cp->n_plan_heads;
	v->heads = xgrow(v->heads, &v->cap_heads, (size_t)k + 1, sizeof *v->heads);
	u64map_reserve(&cp->chunk_ix, cp->n_chunks + k);
	if (k)
		memcpy(v->heads, cp->plan_heads, k * sizeof *v->heads);
	for (uint32_t i = 0; i < k; i++)
		remember_chunk(cp, (uint64_t)v->heads[i].chunk_id, cp->series[v->heads[i].series - 1].id,
		               v->heads[i].t_ns);
	if (cp->n_scan) {
		buf_reset(&v->q);
		buf_puts(&v->q, "SELECT series, chunk, min(t_ns) AS t, any(duration_ns), count(), " CH_SUM_SQL
		                " FROM samples");
		where_part(v, p);
		where_scan(v, cp);
		if (series_list(v, cp, series, n_series, "series") < 0)
			return err_set(err, 500, "store: unknown local series id");
		buf_puts(&v->q, " GROUP BY series, chunk");
		ch_rd_t rd;
		if (run(v, &rd, err) < 0)
			return -1;
		while (ch_rd_more(&rd)) {
			uint64_t sid = ch_rd_u64(&rd), chunk = ch_rd_u64(&rd);
			uint32_t local = 0;
			v->heads = xgrow(v->heads, &v->cap_heads, (size_t)k + 1, sizeof *v->heads);
			store_chunk_head_t *h = &v->heads[k];
			memset(h, 0, sizeof *h);
			h->t_ns = ch_rd_i64(&rd);
			h->duration_ns = ch_rd_i64(&rd);
			uint64_t count = ch_rd_u64(&rd);
			h->total = ch_rd_sum(&rd);
			/* The query asked for t in [from_ns, until_ns): the queries above rely on it. */
			if (ch_rd_bad(&rd) || !chunk || !u64map_get(&cp->series_ix, sid, &local) ||
			    count > UINT32_MAX || h->t_ns < v->from_ns || h->t_ns >= v->until_ns ||
			    k >= LIMIT_CH_ROWS) {
				*out = v->heads;
				return skip_answer(v, p, &rd, "chunk head",
				                   "a chunk 0, an unknown series, a count past 2^32 or a "
				                   "time outside the view");
			}
			h->series = local;
			h->n_entries = (uint32_t)count;
			h->chunk_id = (int64_t)chunk;
			remember_chunk(cp, chunk, sid, h->t_ns);
			k++;
		}
		if (ch_rd_bad(&rd))
			return skip_answer(v, p, &rd, "chunk head", NULL);
	}
	/* In (series, time, chunk) order, as one ORDER BY gave them before summed rows. */
	sort_unless_sorted(v->heads, k, sizeof *v->heads, head_cmp);
	*out = v->heads;
	*n = k;
	return 0;
}

typedef struct {
	uint64_t chunk;
	store_entry_t e;
} ent_row_t;

static int ent_cmp(const void *a, const void *b)
{
	const ent_row_t *x = a, *y = b;
	if (x->chunk != y->chunk)
		return x->chunk < y->chunk ? -1 : 1;
	if (x->e.node != y->e.node)
		return x->e.node < y->e.node ? -1 : 1;
	if (x->e.attrset != y->e.attrset)
		return x->e.attrset < y->e.attrset ? -1 : 1;
	return (x->e.t_ns > y->e.t_ns) - (x->e.t_ns < y->e.t_ns);
}

/* Fetches the entries of the chunks k.. (up to CH_ENTRY_BATCH) of partition p. */
static int fetch_entries(ch_view_t *v, uint32_t p, uint32_t k, err_t *err)
{
	ch_part_t *cp = &v->parts[p];
	uint32_t end = k + CH_ENTRY_BATCH < cp->n_chunks ? k + CH_ENTRY_BATCH : cp->n_chunks;
	int64_t tmin = INT64_MAX, tmax = INT64_MIN;
	buf_reset(&v->q);
	buf_puts(&v->q, "SELECT chunk, node, attrset, value, sample_t FROM samples");
	where_part(v, p);
	buf_puts(&v->q, " AND chunk IN (");
	for (uint32_t i = k; i < end; i++) {
		buf_printf(&v->q, "%s%llu", i > k ? "," : "", (unsigned long long)cp->chunks[i]);
		if (cp->chunk_t[i] < tmin)
			tmin = cp->chunk_t[i];
		if (cp->chunk_t[i] > tmax)
			tmax = cp->chunk_t[i];
	}
	/* The primary key is (project, day, series, t_ns, chunk): let it narrow the scan. */
	buf_puts(&v->q, ") AND series IN (");
	for (uint32_t i = k; i < end; i++)
		buf_printf(&v->q, "%s%llu", i > k ? "," : "", (unsigned long long)cp->chunk_series[i]);
	buf_printf(&v->q, ") AND t_ns >= %lld AND t_ns <= %lld", (long long)tmin, (long long)tmax);
	ch_rd_t rd;
	if (run(v, &rd, err) < 0)
		return -1;
	ent_row_t *rows = NULL;
	size_t cap = 0, n = 0;
	int rc = 0;
	while (ch_rd_more(&rd)) {
		uint64_t chunk = ch_rd_u64(&rd), node = ch_rd_u64(&rd), attrset = ch_rd_u64(&rd);
		int64_t value = ch_rd_i64(&rd), t = ch_rd_i64(&rd);
		uint32_t ln = 0, la = 0;
		if (ch_rd_bad(&rd) || !chunk || n >= LIMIT_CH_ROWS ||
		    (node && !u64map_get(&cp->node_ix, node, &ln)) ||
		    (attrset && !u64map_get(&cp->attr_ix, attrset, &la))) {
			rc = skip_answer(v, p, &rd, "entry",
			                 "an entry naming an unknown node or attribute set");
			cp->skipped = 1;
			break;
		}
		rows = xgrow(rows, &cap, n + 1, sizeof *rows);
		rows[n++] = (ent_row_t){chunk, {ln, la, value, t}};
	}
	if (!cp->skipped) {
		if (n > 1) /* rows is NULL when ClickHouse sent none */
			qsort(rows, n, sizeof *rows, ent_cmp);
		u64map_clear(&v->ent_ix);
		v->ent_part = p;
		v->ents = xgrow(v->ents, &v->cap_ents, n + 1, sizeof *v->ents);
		uint32_t nr = 0;
		for (size_t i = 0; i < n; i++) {
			if (i == 0 || rows[i].chunk != rows[i - 1].chunk) {
				v->ent_range =
				    xgrow(v->ent_range, &v->cap_range, (size_t)nr + 1, sizeof *v->ent_range);
				v->ent_range[nr].first = (uint32_t)i;
				v->ent_range[nr].n = 0;
				u64map_put(&v->ent_ix, rows[i].chunk, nr);
				nr++;
			}
			v->ent_range[nr - 1].n++;
			v->ents[i] = rows[i].e;
		}
		/* Chunks of the batch without rows (none are written so) answer empty. */
		for (uint32_t i = k; i < end; i++) {
			int inserted;
			u64map_get_or_put(&v->ent_ix, cp->chunks[i], nr, &inserted);
			if (inserted) {
				v->ent_range =
				    xgrow(v->ent_range, &v->cap_range, (size_t)nr + 1, sizeof *v->ent_range);
				v->ent_range[nr].first = 0;
				v->ent_range[nr].n = 0;
				nr++;
			}
		}
	}
	free(rows);
	return rc;
}

int ch_view_entries(store_view_t *sv, uint32_t p, const store_chunk_head_t *h, const store_entry_t **out,
                    uint32_t *n, err_t *err)
{
	ch_view_t *v = V(sv);
	*out = v->ents;
	*n = 0;
	if (bad_part(v, p, err) || load_nodes(v, p, err) < 0 || load_attrsets(v, p, err) < 0)
		return -1;
	ch_part_t *cp = &v->parts[p];
	if (cp->skipped)
		return 0;
	uint64_t chunk = (uint64_t)h->chunk_id;
	uint32_t r;
	if (v->ent_part != p || !u64map_get(&v->ent_ix, chunk, &r)) {
		uint32_t k;
		if (!u64map_get(&cp->chunk_ix, chunk, &k))
			return err_set(err, 500, "store: chunk %llu was not listed by this view",
			               (unsigned long long)chunk);
		if (fetch_entries(v, p, k, err) < 0)
			return -1;
		if (cp->skipped || !u64map_get(&v->ent_ix, chunk, &r))
			return 0;
	}
	*out = v->ents + v->ent_range[r].first;
	*n = v->ent_range[r].n;
	return 0;
}

/* ---- aggregation pushed down ---- */

/* A sum being added up: local ids and the exact value. */
typedef struct {
	uint32_t series, node, attrset;
	__int128 value;
} acc_row_t;

static int acc_cmp(const void *a, const void *b)
{
	const acc_row_t *x = a, *y = b;
	if (x->series != y->series)
		return x->series < y->series ? -1 : 1;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return (x->attrset > y->attrset) - (x->attrset < y->attrset);
}

/* Orders a[0..n) by (series, node, attrset): three stable counting passes
 * (local ids are dense and bounded by the partition's dictionaries), not
 * a comparison sort of thousands of rows per partition. */
static void acc_sort(acc_row_t *a, size_t n, const ch_part_t *cp)
{
	acc_row_t *tmp = xmalloc((n + 1) * sizeof *tmp);
	size_t range = (size_t)cp->n_nodes + 2;
	if ((size_t)cp->n_attrsets + 2 > range)
		range = (size_t)cp->n_attrsets + 2;
	if ((size_t)cp->n_series + 2 > range)
		range = (size_t)cp->n_series + 2;
	size_t *count = xmalloc(range * sizeof *count);
	for (int pass = 0; pass < 3; pass++) {
		memset(count, 0, range * sizeof *count);
		for (size_t i = 0; i < n; i++) {
			uint32_t key = pass == 0 ? a[i].attrset : pass == 1 ? a[i].node : a[i].series;
			count[key + 1]++;
		}
		for (size_t r = 1; r < range; r++)
			count[r] += count[r - 1];
		for (size_t i = 0; i < n; i++) {
			uint32_t key = pass == 0 ? a[i].attrset : pass == 1 ? a[i].node : a[i].series;
			tmp[count[key]++] = a[i];
		}
		memcpy(a, tmp, n * sizeof *a);
	}
	free(count);
	free(tmp);
}

/* Adds the summed rows of the plan into *acc; a row not found (merged
 * away by a newer version since its stamp was read) has its hours read from
 * the entries instead (added to the plan's scan). */
static int add_summed(ch_view_t *v, uint32_t p, acc_row_t **acc, size_t *cap, size_t *n, err_t *err)
{
	ch_part_t *cp = &v->parts[p];
	buf_reset(&v->q);
	buf_puts(&v->q, "SELECT series, hours, hour, made, nodes, attrsets, vals FROM summed");
	where_part(v, p);
	/* The key's columns first, so that the index picks the rows' granules. */
	int day = 1;
	for (uint32_t i = 0; i < cp->n_use && day; i++)
		day = cp->use[i].hours == 24;
	if (day)
		buf_printf(&v->q, " AND hours = 24 AND hour = %u", cp->day * 24);
	else
		buf_printf(&v->q, " AND hours = 1 AND hour >= %u AND hour < %u", cp->day * 24,
		           cp->day * 24 + 24);
	buf_puts(&v->q, " AND exact = 1 AND (series, hours, hour, made) IN (");
	for (uint32_t i = 0; i < cp->n_use; i++)
		buf_printf(&v->q, "%s(%llu, %u, %u, %lld)", i ? ", " : "",
		           (unsigned long long)cp->use[i].series, cp->use[i].hours, cp->use[i].hour,
		           (long long)cp->use[i].made);
	buf_putc(&v->q, ')');
	ch_rd_t rd;
	if (run(v, &rd, err) < 0)
		return -1;
	while (ch_rd_more(&rd)) {
		uint64_t sid = ch_rd_u64(&rd);
		uint32_t hours = ch_rd_u8(&rd), hour = ch_rd_u32(&rd);
		int64_t made = ch_rd_i64(&rd);
		uint32_t i = 0, ls = 0;
		while (i < cp->n_use && !(cp->use[i].series == sid && cp->use[i].hours == hours &&
		                          cp->use[i].hour == hour && cp->use[i].made == made))
			i++;
		uint64_t k = ch_rd_varint(&rd);
		if (ch_rd_bad(&rd) || i == cp->n_use || !u64map_get(&cp->series_ix, sid, &ls) ||
		    k > (uint64_t)(rd.end - rd.p) / 8 || *n + k > LIMIT_CH_ROWS)
			return skip_answer(v, p, &rd, "summed row",
			                   "a row not asked for, or arrays past the answer");
		/* The same row twice (an INSERT repeated): added once. */
		int dup = cp->use[i].found;
		cp->use[i].found = 1;
		*acc = xgrow(*acc, cap, *n + k + 1, sizeof **acc);
		acc_row_t *r = *acc + *n;
		for (uint64_t j = 0; j < k; j++) {
			uint64_t node = ch_rd_u64(&rd);
			uint32_t ln = 0;
			if (node && !u64map_get(&cp->node_ix, node, &ln))
				return skip_answer(v, p, &rd, "summed row", "a sum naming an unknown node");
			r[j] = (acc_row_t){ls, ln, 0, 0};
		}
		if (ch_rd_varint(&rd) != k)
			return skip_answer(v, p, &rd, "summed row", "arrays of different lengths");
		for (uint64_t j = 0; j < k; j++) {
			uint64_t attrset = ch_rd_u64(&rd);
			if (attrset && !u64map_get(&cp->attr_ix, attrset, &r[j].attrset))
				return skip_answer(v, p, &rd, "summed row",
				                   "a sum naming an unknown attribute set");
		}
		if (ch_rd_varint(&rd) != k)
			return skip_answer(v, p, &rd, "summed row", "arrays of different lengths");
		for (uint64_t j = 0; j < k; j++)
			r[j].value = ch_rd_i64(&rd);
		if (!dup && !ch_rd_bad(&rd))
			*n += k;
	}
	if (ch_rd_bad(&rd))
		return skip_answer(v, p, &rd, "summed row", NULL);
	for (uint32_t i = 0; i < cp->n_use; i++) {
		if (cp->use[i].found)
			continue;
		int64_t t = (int64_t)cp->use[i].hour * NS_PER_HOUR;
		int64_t a = t > v->from_ns ? t : v->from_ns;
		int64_t e = t + cp->use[i].hours * NS_PER_HOUR;
		int64_t b = e < v->until_ns ? e : v->until_ns;
		/* Another series may share the hour: its row is dropped below, the
		 * hour read whole from the entries instead. */
		for (int64_t h = a; h < b; h += NS_PER_HOUR)
			for (uint32_t j = 0; j < cp->n_use; j++)
				if (cp->use[j].found && (int64_t)cp->use[j].hour * NS_PER_HOUR <= h &&
				    h < (int64_t)(cp->use[j].hour + cp->use[j].hours) * NS_PER_HOUR)
					return -2;
		scan_add(cp, a, b);
	}
	return 0;
}

int ch_view_sums(store_view_t *sv, uint32_t p, const uint32_t *series, uint32_t n_series,
                 const store_sum_t **out, uint32_t *n, err_t *err)
{
	ch_view_t *v = V(sv);
	*out = v->sums;
	*n = 0;
	if (bad_part(v, p, err) || load_series(v, p, err) < 0 || load_nodes(v, p, err) < 0 ||
	    load_attrsets(v, p, err) < 0)
		return -1;
	ch_part_t *cp = &v->parts[p];
	if (cp->skipped || !n_series)
		return 0;
	if (!same_sel(cp, series, n_series) && plan_build(v, p, series, n_series, err) < 0)
		return -1;
	if (cp->skipped)
		return 0;
	acc_row_t *acc = NULL;
	size_t cap = 0, k = 0;
	if (cp->n_use && cp->pre_ready) {
		/* The day rows came with their stamps (read_day_rows). */
		acc = xmalloc((cp->n_pre + 1) * sizeof *acc);
		cap = cp->n_pre + 1;
		for (size_t i = 0; i < cp->n_pre; i++) {
			const ch_raw_sum_t *r = &cp->pre[i];
			uint32_t ln = 0, la = 0;
			if ((r->node && !u64map_get(&cp->node_ix, r->node, &ln)) ||
			    (r->attrset && !u64map_get(&cp->attr_ix, r->attrset, &la))) {
				free(acc);
				return skip(v, p, "a summed row naming an unknown node or attribute set");
			}
			acc[k++] = (acc_row_t){r->series, ln, la, r->value};
		}
		atomic_fetch_add(&v->s->hours_used, cp->n_use);
	} else if (cp->n_use) {
		for (uint32_t i = 0; i < cp->n_use; i++)
			cp->use[i].found = 0;
		int rc = add_summed(v, p, &acc, &cap, &k, err);
		if (rc == -2) {
			/* A row vanished beside rows that stay: read the whole range from the entries. */
			k = 0;
			cp->n_use = 0;
			cp->n_scan = 0;
			int64_t d0 = (int64_t)cp->day * NS_PER_DAY;
			scan_add(cp, v->from_ns > d0 ? v->from_ns : d0,
			         v->until_ns < d0 + NS_PER_DAY ? v->until_ns : d0 + NS_PER_DAY);
		} else if (rc < 0 || cp->skipped) {
			free(acc);
			return rc < 0 ? -1 : 0;
		}
		atomic_fetch_add(&v->s->hours_used, cp->n_use);
	}
	if (cp->n_scan) {
		buf_reset(&v->q);
		buf_puts(&v->q, "SELECT series, node, attrset, " CH_SUM_SQL " FROM samples");
		where_part(v, p);
		where_scan(v, cp);
		if (series_list(v, cp, series, n_series, "series") < 0) {
			free(acc);
			return err_set(err, 500, "store: unknown local series id");
		}
		buf_puts(&v->q, " GROUP BY series, node, attrset");
		ch_rd_t rd;
		if (run(v, &rd, err) < 0) {
			free(acc);
			return -1;
		}
		while (ch_rd_more(&rd)) {
			uint64_t sid = ch_rd_u64(&rd), node = ch_rd_u64(&rd), attrset = ch_rd_u64(&rd);
			__int128 value = ch_rd_sum128(&rd);
			uint32_t ls = 0, ln = 0, la = 0;
			if (ch_rd_bad(&rd) || k >= LIMIT_CH_ROWS || !u64map_get(&cp->series_ix, sid, &ls) ||
			    (node && !u64map_get(&cp->node_ix, node, &ln)) ||
			    (attrset && !u64map_get(&cp->attr_ix, attrset, &la))) {
				free(acc);
				return skip_answer(v, p, &rd, "sum",
				                   "a sum naming an unknown series, node or attribute set");
			}
			acc = xgrow(acc, &cap, k + 1, sizeof *acc);
			acc[k++] = (acc_row_t){ls, ln, la, value};
		}
	}
	/* One value per (series, node, attrset): the exact sum, clamped to
	 * Int64 once (what one GROUP BY over every entry answers). */
	if (k > 1)
		acc_sort(acc, k, cp);
	v->sums = xgrow(v->sums, &v->cap_sums, k + 1, sizeof *v->sums);
	uint32_t m = 0;
	for (size_t i = 0; i < k;) {
		__int128 sum = 0;
		size_t j = i;
		for (; j < k && !acc_cmp(&acc[i], &acc[j]); j++)
			sum += acc[j].value;
		/* A sum of 0 (values that cancel) stays, as GROUP BY answers it. */
		v->sums[m++] = (store_sum_t){acc[i].series, acc[i].node, acc[i].attrset,
		                             sum > INT64_MAX   ? INT64_MAX
		                             : sum < INT64_MIN ? INT64_MIN
		                                               : (int64_t)sum};
		i = j;
	}
	free(acc);
	*out = v->sums;
	*n = m;
	return 0;
}

/* ---- span links ---- */

int ch_view_span_chunks(store_view_t *sv, uint32_t p, slice_t span_id, slice_t trace_id,
                        const store_span_hit_t **out, uint32_t *n, err_t *err)
{
	ch_view_t *v = V(sv);
	*out = v->hits;
	*n = 0;
	if (bad_part(v, p, err) || load_series(v, p, err) < 0 || load_attrsets(v, p, err) < 0)
		return -1;
	ch_part_t *cp = &v->parts[p];
	if (cp->skipped)
		return 0;
	char sb[LIMIT_SPAN_ID_BYTES], tb[LIMIT_SPAN_ID_BYTES];
	slice_t span = ch_span_key(span_id, sb), trace = ch_span_key(trace_id, tb);
	if (span_id.n ? !span.n : !trace.n)
		return 0;
	/* The hits, then the whole chunks' counts and totals in a second query. */
	buf_reset(&v->q);
	buf_puts(&v->q, "SELECT chunk, any(series), min(t_ns), any(duration_ns), attrset FROM samples");
	where_part(v, p);
	where_range(v);
	if (span_id.n) {
		buf_puts(&v->q, " AND span_id = ");
		ch_sql_str(&v->q, span);
		if (trace_id.n) {
			buf_puts(&v->q, " AND (trace_id = '' OR trace_id = ");
			ch_sql_str(&v->q, trace);
			buf_putc(&v->q, ')');
		}
	} else {
		buf_puts(&v->q, " AND span_id != '' AND trace_id = ");
		ch_sql_str(&v->q, trace);
	}
	buf_puts(&v->q, " GROUP BY chunk, attrset");
	ch_rd_t rd;
	if (run(v, &rd, err) < 0)
		return -1;
	uint32_t k = 0;
	while (ch_rd_more(&rd)) {
		uint64_t chunk = ch_rd_u64(&rd), sid = ch_rd_u64(&rd);
		int64_t t = ch_rd_i64(&rd), dur = ch_rd_i64(&rd);
		uint64_t attrset = ch_rd_u64(&rd);
		uint32_t ls = 0, la = 0;
		if (ch_rd_bad(&rd) || !chunk || k >= LIMIT_CH_ROWS || !u64map_get(&cp->series_ix, sid, &ls) ||
		    !u64map_get(&cp->attr_ix, attrset, &la) || t < v->from_ns || t >= v->until_ns)
			return skip_answer(v, p, &rd, "span link",
			                   "a span link naming an unknown series, attribute set or time");
		v->hits = xgrow(v->hits, &v->cap_hits, (size_t)k + 1, sizeof *v->hits);
		store_span_hit_t *h = &v->hits[k++];
		memset(h, 0, sizeof *h);
		h->head.series = ls;
		h->head.t_ns = t;
		h->head.duration_ns = dur;
		h->head.chunk_id = (int64_t)chunk;
		h->attrset = la;
		remember_chunk(cp, chunk, sid, t);
	}
	if (k) {
		/* chunk -> its first hit; the hits of one chunk (one per attrset) are then updated together
		 */
		u64map_t ix;
		u64map_init(&ix);
		uint32_t *next = xmalloc((size_t)k * sizeof *next);
		uint64_t *chunks = xmalloc((size_t)k * sizeof *chunks);
		uint32_t n_chunks = 0;
		for (uint32_t i = k; i-- > 0;) {
			uint32_t first;
			int seen = u64map_get(&ix, (uint64_t)v->hits[i].head.chunk_id, &first);
			next[i] = seen ? first : UINT32_MAX;
			if (!seen)
				chunks[n_chunks++] = (uint64_t)v->hits[i].head.chunk_id;
			u64map_put(&ix, (uint64_t)v->hits[i].head.chunk_id, i);
		}
		int rc = 0;
		/* The whole chunks' counts and totals, CH_ENTRY_BATCH chunks per query. */
		for (uint32_t c0 = 0; c0 < n_chunks && rc == 0 && !cp->skipped; c0 += CH_ENTRY_BATCH) {
			uint32_t c1 = c0 + CH_ENTRY_BATCH < n_chunks ? c0 + CH_ENTRY_BATCH : n_chunks;
			buf_reset(&v->q);
			buf_puts(&v->q, "SELECT chunk, count(), " CH_SUM_SQL " FROM samples");
			where_part(v, p);
			buf_puts(&v->q, " AND chunk IN (");
			for (uint32_t i = c0; i < c1; i++)
				buf_printf(&v->q, "%s%llu", i > c0 ? "," : "", (unsigned long long)chunks[i]);
			buf_puts(&v->q, ") AND series != 0 GROUP BY chunk"); /* not its head row */
			if ((rc = run(v, &rd, err)) < 0)
				break;
			while (ch_rd_more(&rd)) {
				uint64_t chunk = ch_rd_u64(&rd), count = ch_rd_u64(&rd);
				int64_t total = ch_rd_sum(&rd);
				uint32_t i;
				if (ch_rd_bad(&rd) || !u64map_get(&ix, chunk, &i))
					continue;
				for (; i != UINT32_MAX; i = next[i]) {
					v->hits[i].head.n_entries =
					    count > UINT32_MAX ? UINT32_MAX : (uint32_t)count;
					v->hits[i].head.total = total;
				}
			}
			if (ch_rd_bad(&rd))
				skip_answer(v, p, &rd, "chunk head", NULL);
		}
		free(chunks);
		free(next);
		u64map_free(&ix);
		if (rc < 0)
			return -1;
		if (cp->skipped) {
			*out = v->hits;
			return 0;
		}
	}
	if (k > 1) /* v->hits is NULL until a first hit */
		qsort(v->hits, k, sizeof *v->hits, store_span_hit_cmp);
	*out = v->hits;
	*n = k;
	return 0;
}

const store_engine_t store_clickhouse_engine = {
    .name = "clickhouse",
    .drain = ch_drain,
    .close = ch_close,
    .submit = ch_submit,
    .queue_depth = ch_queue_depth,
    .set_retention = ch_set_retention,
    .retention_start = ch_retention_start,
    .projects = ch_projects,
    .retention_sweep = ch_retention_sweep,
    .get_stats = ch_get_stats,
    .usage_write = ch_usage_write,
    .usage_read = ch_usage_read,
    .keys_create = ch_keys_create,
    .keys_revoke = ch_keys_revoke,
    .keys_read = ch_keys_read,
    .keys_poll = ch_keys_poll,
    .view_open = ch_view_open,
    .view_close = ch_view_close,
    .view_partitions = ch_view_partitions,
    .view_skipped = ch_view_skipped,
    .view_series = ch_view_series,
    .view_heads = ch_view_heads,
    .view_entries = ch_view_entries,
    .view_nodes = ch_view_nodes,
    .view_frames = ch_view_frames,
    .view_attrsets = ch_view_attrsets,
    .view_span_chunks = ch_view_span_chunks,
    .view_sums = ch_view_sums,
};
