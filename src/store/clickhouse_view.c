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
#include "store/clickhouse_view.h"

/* Starts a query on partition p: "... WHERE project = P AND day = D". */
void chv_where_part(ch_view_t *v, uint32_t p)
{
	buf_printf(&v->q, " WHERE project = ");
	ch_sql_str(&v->q, v->project);
	buf_printf(&v->q, " AND day = %u", v->parts[p].day);
}

static void where_range(ch_view_t *v)
{
	buf_printf(&v->q, " AND t_ns >= %lld AND t_ns < %lld", (long long)v->from_ns, (long long)v->until_ns);
}

int chv_run(ch_view_t *v, ch_rd_t *rd, err_t *err)
{
	return ch_select(v->s, v->c, &v->q, rd, err);
}

/* Reports partition p as damaged (once) and answers empty from now on. */
int chv_skip(ch_view_t *v, uint32_t p, const char *why)
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
int chv_skip_answer(ch_view_t *v, uint32_t p, ch_rd_t *rd, const char *row, const char *problem)
{
	if (problem)
		ch_rd_fail(rd, problem);
	err_t e = {0};
	ch_rd_end(rd, &e, 503, row);
	return chv_skip(v, p, e.msg);
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
	if (chv_run(v, &rd, err) < 0) {
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

int chv_bad_part(ch_view_t *v, uint32_t p, err_t *err)
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
		if (chv_run(v, &rd, err) < 0) {
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
				return chv_skip(v, p, rd.err.msg);
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
			return chv_skip_answer(v, p, rd, "series row", "a series id of 0");
		}
		se->n_labels = n_labels - first[cp->n_series];
		u64map_put(&cp->series_ix, se->id, se->local);
		cp->n_series++;
	}
	if (ch_rd_bad(rd)) {
		free(labels);
		free(first);
		return chv_skip_answer(v, p, rd, "series row", NULL);
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

int chv_load_series(ch_view_t *v, uint32_t p, err_t *err)
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
			return chv_skip_answer(v, p, rd, "frame row", f->id ? NULL : "a frame id of 0");
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
			return chv_skip_answer(v, p, rd, "node row", "more nodes than a read accepts");
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
		return chv_skip_answer(v, p, rd, "node row", NULL);
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
			return chv_skip_answer(v, p, rd, "node row",
			                       "a node naming an unknown parent or frame");
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

int chv_load_nodes(ch_view_t *v, uint32_t p, err_t *err)
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
			return chv_skip_answer(v, p, rd, "attribute set row", "an attribute set id of 0");
		a->count = n_labels - a->first;
		u64map_put(&cp->attr_ix, a->id, cp->n_attrsets);
	}
	if (ch_rd_bad(rd))
		return chv_skip_answer(v, p, rd, "attribute set row", NULL);
	cp->have_attrsets = 1;
	return 0;
}

int chv_load_attrsets(ch_view_t *v, uint32_t p, err_t *err)
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
	if (chv_bad_part(v, p, err) || chv_load_series(v, p, err) < 0)
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
	if (chv_bad_part(v, p, err) || chv_load_nodes(v, p, err) < 0)
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
	if (chv_bad_part(v, p, err) || load_frames(v, p, err) < 0)
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
	if (chv_bad_part(v, p, err) || chv_load_attrsets(v, p, err) < 0)
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
int chv_series_list(ch_view_t *v, ch_part_t *cp, const uint32_t *series, uint32_t n, const char *col)
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

void chv_remember_chunk(ch_part_t *cp, uint64_t chunk, uint64_t series, int64_t t)
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
	chv_where_part(v, p);
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
	if (chv_run(v, &rd, err) < 0)
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
			rc = chv_skip_answer(v, p, &rd, "entry",
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
	if (chv_bad_part(v, p, err) || chv_load_nodes(v, p, err) < 0 || chv_load_attrsets(v, p, err) < 0)
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

/* ---- span links ---- */

int ch_view_span_chunks(store_view_t *sv, uint32_t p, slice_t span_id, slice_t trace_id,
                        const store_span_hit_t **out, uint32_t *n, err_t *err)
{
	ch_view_t *v = V(sv);
	*out = v->hits;
	*n = 0;
	if (chv_bad_part(v, p, err) || chv_load_series(v, p, err) < 0 || chv_load_attrsets(v, p, err) < 0)
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
	chv_where_part(v, p);
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
	if (chv_run(v, &rd, err) < 0)
		return -1;
	uint32_t k = 0;
	while (ch_rd_more(&rd)) {
		uint64_t chunk = ch_rd_u64(&rd), sid = ch_rd_u64(&rd);
		int64_t t = ch_rd_i64(&rd), dur = ch_rd_i64(&rd);
		uint64_t attrset = ch_rd_u64(&rd);
		uint32_t ls = 0, la = 0;
		if (ch_rd_bad(&rd) || !chunk || k >= LIMIT_CH_ROWS || !u64map_get(&cp->series_ix, sid, &ls) ||
		    !u64map_get(&cp->attr_ix, attrset, &la) || t < v->from_ns || t >= v->until_ns)
			return chv_skip_answer(v, p, &rd, "span link",
			                       "a span link naming an unknown series, attribute set or time");
		v->hits = xgrow(v->hits, &v->cap_hits, (size_t)k + 1, sizeof *v->hits);
		store_span_hit_t *h = &v->hits[k++];
		memset(h, 0, sizeof *h);
		h->head.series = ls;
		h->head.t_ns = t;
		h->head.duration_ns = dur;
		h->head.chunk_id = (int64_t)chunk;
		h->attrset = la;
		chv_remember_chunk(cp, chunk, sid, t);
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
			chv_where_part(v, p);
			buf_puts(&v->q, " AND chunk IN (");
			for (uint32_t i = c0; i < c1; i++)
				buf_printf(&v->q, "%s%llu", i > c0 ? "," : "", (unsigned long long)chunks[i]);
			buf_puts(&v->q, ") AND series != 0 GROUP BY chunk"); /* not its head row */
			if ((rc = chv_run(v, &rd, err)) < 0)
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
				chv_skip_answer(v, p, &rd, "chunk head", NULL);
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
