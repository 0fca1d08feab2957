/* store/clickhouse summed hours: the ClickHouse engine's compactor
 * (docs/STORE.md, store/clickhouse "Summed hours"). A thread sums the
 * entries of every (series, UTC hour) that ended LIMIT_STORE_HOURS_MARGIN_S
 * ago, and of every whole day, into rows of the `summed` table, each
 * stamped with the chunks it covers as their head rows say (count, largest
 * id, wrapping sum of a hash of each id). A view uses a row only when the
 * head rows it reads have that same stamp, so a row that a later write, or
 * the removal of a write in doubt, has made stale is never used: the view
 * then reads that hour's entries. The row and the stamp come from one
 * SELECT, one snapshot of the parts.
 *
 * Which (project, day) partitions to look at: those this process wrote into
 * (ch_hours_touch, after each group), and at start every day of the series
 * table within the longest retention. A partition is looked at again when
 * one of its hours becomes due, or a write went into a due hour. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/hash.h"
#include "base/limits.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "store/clickhouse.h"

struct ch_hpart {
	char proj[LIMIT_NAME_BYTES + 1];
	uint32_t proj_n, day;
	int64_t dirty;   /* the first hour written since it was last looked at (INT64_MAX: none) */
	int64_t written; /* the last hour written */
	int64_t checked; /* hours up to this one have their rows (INT64_MIN: none) */
};

static uint64_t hpart_key(slice_t project, uint32_t day)
{
	return hash_pair(hash_slice(project, 0x68727321), day);
}

static ch_hpart_t *hpart_get(ch_store_t *s, slice_t project, uint32_t day)
{
	int inserted;
	uint32_t ix = u64map_get_or_put(&s->hpart_ix, hpart_key(project, day), s->n_hparts, &inserted);
	if (inserted) {
		s->hparts = xgrow(s->hparts, &s->cap_hparts, (size_t)s->n_hparts + 1, sizeof *s->hparts);
		ch_hpart_t *h = &s->hparts[s->n_hparts++];
		memset(h, 0, sizeof *h);
		memcpy(h->proj, project.p, project.n);
		h->proj_n = (uint32_t)project.n;
		h->day = day;
		h->dirty = INT64_MAX;
		h->written = INT64_MIN;
		h->checked = INT64_MIN;
	}
	return &s->hparts[ix];
}

void ch_hours_touch(ch_store_t *s, slice_t project, int64_t t_ns)
{
	if (!s->hours_inited || t_ns < 0 || project.n == 0 || project.n > LIMIT_NAME_BYTES)
		return;
	int64_t hour = t_ns / NS_PER_HOUR;
	pthread_mutex_lock(&s->hours_mu);
	ch_hpart_t *h = hpart_get(s, project, (uint32_t)(hour / 24));
	if (hour < h->dirty)
		h->dirty = hour;
	if (hour > h->written)
		h->written = hour;
	pthread_mutex_unlock(&s->hours_mu);
}

/* ---- one partition ---- */

typedef struct {
	uint64_t id;
	ch_stamp_t hour[24], day; /* the stamps of its head rows */
} hseries_t;

typedef struct {
	uint32_t hour; /* 0..23 in the day */
	uint64_t node, attrset;
	int64_t value;
} hent_t;

static int hent_cmp(const void *a, const void *b)
{
	const hent_t *x = a, *y = b;
	if (x->hour != y->hour)
		return x->hour < y->hour ? -1 : 1;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return (x->attrset > y->attrset) - (x->attrset < y->attrset);
}

/* A row's key and stamp as one hash: the set of rows a partition has. A
 * collision only makes a row look present, so its hour is read from its
 * entries by views (never a wrong answer). */
static uint64_t row_key(uint64_t series, uint32_t hours, uint32_t hour, const ch_stamp_t *st)
{
	uint64_t k = hash_pair(series, (uint64_t)hours << 32 | hour);
	k = hash_pair(k, st->n);
	k = hash_pair(k, st->max_chunk);
	return hash_pair(k, st->hash);
}

static int has_row(const u64map_t *have, uint64_t series, uint32_t hours, uint32_t hour, const ch_stamp_t *st)
{
	uint32_t v;
	return u64map_get(have, row_key(series, hours, hour, st), &v);
}

typedef struct {
	ch_store_t *s;
	ch_conn_t *c;
	slice_t project;
	uint32_t day;
	int64_t hour0; /* the day's first hour since 1970 */
	int hi;        /* due hours of the day: 0..hi */
	buf_t q, out;
	int64_t made;
	uint32_t rows_out;
} hctx_t;

static void where_part(hctx_t *h)
{
	buf_puts(&h->q, " WHERE project = ");
	ch_sql_str(&h->q, h->project);
	buf_printf(&h->q, " AND day = %u", h->day);
}

/* Appends a summed row: entries e[0..n) sorted by (node, attrset) with equal
 * keys next to each other, added in 128 bits. */
static void put_row(hctx_t *h, uint64_t series, uint32_t hours, uint32_t hour, const ch_stamp_t *st,
                    int exact, const hent_t *e, size_t n)
{
	/* First the sums, to know their count and whether each fits. */
	size_t k = 0;
	hent_t *red = n ? xmalloc(n * sizeof *red) : NULL;
	for (size_t i = 0; i < n;) {
		__int128 v = 0;
		size_t j = i;
		for (; j < n && e[j].node == e[i].node && e[j].attrset == e[i].attrset; j++)
			v += e[j].value;
		if (v > INT64_MAX || v < INT64_MIN)
			exact = 0;
		else /* a sum of 0 too: the views answer what GROUP BY would */
			red[k++] = (hent_t){0, e[i].node, e[i].attrset, (int64_t)v};
		i = j;
	}
	if (!exact)
		k = 0;
	buf_t *b = &h->out;
	ch_put_str(b, h->project);
	ch_put_u32(b, h->day);
	ch_put_u64(b, series);
	ch_put_u8(b, (uint8_t)hours);
	ch_put_u32(b, hour);
	ch_put_u64(b, st->n);
	ch_put_u64(b, st->max_chunk);
	ch_put_u64(b, st->hash);
	ch_put_i64(b, h->made);
	ch_put_u8(b, (uint8_t)exact);
	buf_put_uvarint(b, k);
	for (size_t i = 0; i < k; i++)
		ch_put_u64(b, red[i].node);
	buf_put_uvarint(b, k);
	for (size_t i = 0; i < k; i++)
		ch_put_u64(b, red[i].attrset);
	buf_put_uvarint(b, k);
	for (size_t i = 0; i < k; i++)
		ch_put_i64(b, red[i].value);
	free(red);
	h->rows_out++;
}

typedef struct {
	uint64_t chunk;
	uint32_t hour, count, seen;
} hhead_t;

/* Sums the hours [lo, hi] (of the day) of one series from one SELECT of
 * their head rows and entries, and appends a row for each of those hours
 * that has no row with its stamp yet. */
static int sum_hours(hctx_t *h, uint64_t series, int lo, int hi, const u64map_t *have, err_t *err)
{
	buf_reset(&h->q);
	buf_puts(&h->q, "SELECT series, chunk, t_ns, node, attrset, value FROM samples");
	where_part(h);
	buf_printf(
	    &h->q, " AND (series = %llu OR (series = 0 AND node = %llu)) AND t_ns >= %lld AND t_ns < %lld",
	    (unsigned long long)series, (unsigned long long)series,
	    (long long)((h->hour0 + lo) * NS_PER_HOUR), (long long)((h->hour0 + hi + 1) * NS_PER_HOUR));
	ch_rd_t rd;
	if (ch_select(h->s, h->c, &h->q, &rd, err) < 0)
		return -1;
	u64map_t head_ix;
	u64map_init(&head_ix);
	hhead_t *heads = NULL;
	hent_t *ents = NULL;
	size_t cap_heads = 0, n_heads = 0, cap_ents = 0, n_ents = 0;
	int bad[24] = {0};
	ch_stamp_t st[24];
	memset(st, 0, sizeof st);
	/* Entries may come before their head row: their chunks are checked after. */
	uint64_t *ent_chunk = NULL;
	size_t cap_ec = 0;
	while (ch_rd_more(&rd)) {
		uint64_t ser = ch_rd_u64(&rd), chunk = ch_rd_u64(&rd);
		int64_t t = ch_rd_i64(&rd);
		uint64_t node = ch_rd_u64(&rd), attrset = ch_rd_u64(&rd);
		int64_t value = ch_rd_i64(&rd);
		int64_t hr = t / NS_PER_HOUR - h->hour0;
		if (ch_rd_bad(&rd) || t < 0 || hr < lo || hr > hi || n_ents >= LIMIT_CH_ROWS) {
			ch_rd_fail(&rd, "an entry outside the hours asked for");
			break;
		}
		if (ser == 0) { /* a head row: node is the series, attrset the count */
			int inserted;
			u64map_get_or_put(&head_ix, chunk, (uint32_t)n_heads, &inserted);
			if (!inserted || attrset > UINT32_MAX) {
				bad[hr] = 1;
				continue;
			}
			heads = xgrow(heads, &cap_heads, n_heads + 1, sizeof *heads);
			heads[n_heads++] = (hhead_t){chunk, (uint32_t)hr, (uint32_t)attrset, 0};
			ch_stamp_add(&st[hr], chunk);
			continue;
		}
		ents = xgrow(ents, &cap_ents, n_ents + 1, sizeof *ents);
		ent_chunk = xgrow(ent_chunk, &cap_ec, n_ents + 1, sizeof *ent_chunk);
		ent_chunk[n_ents] = chunk;
		ents[n_ents++] = (hent_t){(uint32_t)hr, node, attrset, value};
	}
	int rc = ch_rd_end(&rd, err, 503, "entry to sum");
	/* Every entry's chunk has a head row in its hour, and every head row
	 * counts its chunk's entries: else (rows written before head rows
	 * existed) that hour is stamped but never used. */
	for (size_t i = 0; rc == 0 && i < n_ents; i++) {
		uint32_t ix;
		if (!u64map_get(&head_ix, ent_chunk[i], &ix) || heads[ix].hour != ents[i].hour)
			bad[ents[i].hour] = 1;
		else
			heads[ix].seen++;
	}
	for (size_t i = 0; rc == 0 && i < n_heads; i++)
		if (heads[i].seen != heads[i].count)
			bad[heads[i].hour] = 1;
	if (rc == 0) {
		if (n_ents > 1)
			qsort(ents, n_ents, sizeof *ents, hent_cmp);
		size_t i = 0;
		for (int hr = lo; hr <= hi; hr++) {
			size_t j = i;
			while (j < n_ents && ents[j].hour == (uint32_t)hr)
				j++;
			uint32_t hour = (uint32_t)(h->hour0 + hr);
			if (!has_row(have, series, 1, hour, &st[hr]))
				put_row(h, series, 1, hour, &st[hr], !bad[hr], ents + i, j - i);
			i = j;
		}
	}
	free(ent_chunk);
	free(heads);
	free(ents);
	u64map_free(&head_ix);
	return rc;
}

/* The day row of one series: the sum of its 24 hour rows whose stamps are
 * those of its head rows (want[24], read at the start of the pass); none
 * when an hour has no such row (written since: the next pass makes it).
 * Each hour row's sums and stamp come from one snapshot, so their sum and
 * the combined stamp agree too. */
static int sum_day(hctx_t *h, uint64_t series, const ch_stamp_t *want, err_t *err)
{
	buf_reset(&h->q);
	buf_puts(&h->q, "SELECT hour, n, max_chunk, hash, made, exact, nodes, attrsets, vals FROM summed");
	where_part(h);
	buf_printf(&h->q, " AND series = %llu AND hours = 1", (unsigned long long)series);
	ch_rd_t rd;
	if (ch_select(h->s, h->c, &h->q, &rd, err) < 0)
		return -1;
	/* The chosen row of each hour: where its arrays start in ents. */
	int64_t made[24] = {0};
	int exact[24] = {0};
	size_t first[24] = {0}, count[24] = {0};
	hent_t *ents = NULL;
	size_t cap = 0, n = 0;
	while (ch_rd_more(&rd)) {
		uint32_t hour = ch_rd_u32(&rd);
		ch_stamp_t st;
		st.n = ch_rd_u64(&rd);
		st.max_chunk = ch_rd_u64(&rd);
		st.hash = ch_rd_u64(&rd);
		int64_t m = ch_rd_i64(&rd);
		int ex = ch_rd_u8(&rd);
		uint64_t k = ch_rd_varint(&rd);
		int64_t hr = (int64_t)hour - h->hour0;
		if (ch_rd_bad(&rd) || hr < 0 || hr > 23 || k > (uint64_t)(rd.end - rd.p) / 8 ||
		    n + k > LIMIT_CH_ROWS) {
			ch_rd_fail(&rd, "a summed row outside the day, or arrays past the answer");
			break;
		}
		int take = ch_stamp_eq(&st, &want[hr]) && m > made[hr];
		ents = xgrow(ents, &cap, n + k + 1, sizeof *ents);
		for (uint64_t j = 0; j < k; j++)
			ents[n + j] = (hent_t){0, ch_rd_u64(&rd), 0, 0};
		if (ch_rd_varint(&rd) != k)
			ch_rd_fail(&rd, "arrays of different lengths");
		for (uint64_t j = 0; j < k; j++)
			ents[n + j].attrset = ch_rd_u64(&rd);
		if (ch_rd_varint(&rd) != k)
			ch_rd_fail(&rd, "arrays of different lengths");
		for (uint64_t j = 0; j < k; j++)
			ents[n + j].value = ch_rd_i64(&rd);
		if (!take || ch_rd_bad(&rd))
			continue; /* overwritten by the next row */
		made[hr] = m;
		exact[hr] = ex;
		first[hr] = n;
		count[hr] = k;
		n += k;
	}
	int rc = ch_rd_end(&rd, err, 503, "summed row");
	int all = rc == 0, day_exact = 1;
	ch_stamp_t day = {0};
	for (int hr = 0; hr < 24 && all; hr++) {
		all = made[hr] > 0;
		day_exact &= exact[hr];
		ch_stamp_merge(&day, &want[hr]);
	}
	if (all) {
		/* The chosen rows' entries, gathered and ordered by (node, attrset). */
		size_t m = 0;
		hent_t *sel = xmalloc((n + 1) * sizeof *sel);
		for (int hr = 0; hr < 24; hr++) {
			memcpy(sel + m, ents + first[hr], count[hr] * sizeof *sel);
			m += count[hr];
		}
		if (m > 1)
			qsort(sel, m, sizeof *sel, hent_cmp);
		put_row(h, series, 24, (uint32_t)h->hour0, &day, day_exact, sel, m);
		free(sel);
	}
	free(ents);
	return rc;
}

static int series_cmp(const void *a, const void *b)
{
	const hseries_t *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

/* INSERTs the rows put so far (one block). */
static int flush_rows(hctx_t *h, err_t *err)
{
	if (!h->out.n)
		return 0;
	int rc = ch_exec(h->s, h->c, "INSERT INTO summed FORMAT RowBinary", buf_slice(&h->out),
	                 h->s->cluster ? "insert_distributed_sync=1" : NULL, 1, err);
	if (rc == 0)
		atomic_fetch_add(&h->s->hours_written, h->rows_out);
	buf_reset(&h->out);
	h->rows_out = 0;
	return rc;
}

/* Writes the rows partition (project, day) lacks for its hours up to due
 * (hours since 1970). 0, or -1 with err. */
static int sum_partition(ch_store_t *s, ch_conn_t *c, slice_t project, uint32_t day, int64_t due, err_t *err)
{
	hctx_t h = {.s = s, .c = c, .project = project, .day = day, .hour0 = (int64_t)day * 24};
	h.hi = due - h.hour0 > 23 ? 23 : (int)(due - h.hour0);
	if (h.hi < 0)
		return 0;
	buf_init(&h.q, SIZE_MAX);
	buf_init(&h.out, SIZE_MAX);
	h.made = time_now_ns();
	hseries_t *ser = NULL;
	size_t cap_ser = 0, n_ser = 0;
	u64map_t ser_ix, have;
	u64map_init(&ser_ix);
	u64map_init(&have);
	int rc = 0;
	/* The stamps the head rows give now, per series and hour. */
	buf_puts(&h.q, "SELECT node, chunk, t_ns FROM samples");
	where_part(&h);
	buf_printf(&h.q, " AND series = 0 AND t_ns < %lld", (long long)((h.hour0 + h.hi + 1) * NS_PER_HOUR));
	ch_rd_t rd;
	if ((rc = ch_select(s, c, &h.q, &rd, err)) < 0)
		goto out;
	while (ch_rd_more(&rd)) {
		uint64_t series = ch_rd_u64(&rd), chunk = ch_rd_u64(&rd);
		int64_t t = ch_rd_i64(&rd);
		int64_t hr = t / NS_PER_HOUR - h.hour0;
		if (ch_rd_bad(&rd) || t < 0 || hr < 0 || hr > h.hi || !series) {
			ch_rd_fail(&rd, "a head row outside the hours asked for");
			break;
		}
		int inserted;
		uint32_t ix = u64map_get_or_put(&ser_ix, series, (uint32_t)n_ser, &inserted);
		if (inserted) {
			ser = xgrow(ser, &cap_ser, n_ser + 1, sizeof *ser);
			memset(&ser[n_ser], 0, sizeof *ser);
			ser[n_ser++].id = series;
		}
		ch_stamp_add(&ser[ix].hour[hr], chunk);
	}
	if ((rc = ch_rd_end(&rd, err, 503, "head row")) < 0)
		goto out;
	/* The rows there are (every version: any with the right stamp will do). */
	buf_reset(&h.q);
	buf_puts(&h.q, "SELECT series, hours, hour, n, max_chunk, hash FROM summed");
	where_part(&h);
	if ((rc = ch_select(s, c, &h.q, &rd, err)) < 0)
		goto out;
	for (uint32_t n_have = 0; ch_rd_more(&rd); n_have++) {
		uint64_t series = ch_rd_u64(&rd);
		uint32_t hours = ch_rd_u8(&rd), hour = ch_rd_u32(&rd);
		ch_stamp_t st;
		st.n = ch_rd_u64(&rd);
		st.max_chunk = ch_rd_u64(&rd);
		st.hash = ch_rd_u64(&rd);
		if (n_have >= LIMIT_CH_ROWS)
			ch_rd_fail(&rd, "more summed rows than a read accepts");
		u64map_put(&have, row_key(series, hours, hour, &st), 1);
	}
	if ((rc = ch_rd_end(&rd, err, 503, "summed row")) < 0)
		goto out;
	if (n_ser > 1)
		qsort(ser, n_ser, sizeof *ser, series_cmp);
	/* First the hours that have no row with their stamp (one SELECT over
	 * the span of them per series), then the days, from hour rows. */
	for (size_t i = 0; i < n_ser && rc == 0; i++) {
		hseries_t *se = &ser[i];
		int lo = -1, hi = -1;
		for (int hr = 0; hr <= h.hi; hr++)
			if (!has_row(&have, se->id, 1, (uint32_t)(h.hour0 + hr), &se->hour[hr])) {
				if (lo < 0)
					lo = hr;
				hi = hr;
			}
		if (lo >= 0)
			rc = sum_hours(&h, se->id, lo, hi, &have, err);
	}
	if (rc == 0)
		rc = flush_rows(&h, err);
	for (size_t i = 0; i < n_ser && rc == 0 && h.hi == 23; i++) {
		hseries_t *se = &ser[i];
		for (int hr = 0; hr < 24; hr++)
			ch_stamp_merge(&se->day, &se->hour[hr]);
		if (!has_row(&have, se->id, 24, (uint32_t)h.hour0, &se->day))
			rc = sum_day(&h, se->id, se->hour, err);
	}
	if (rc == 0)
		rc = flush_rows(&h, err);
out:
	free(ser);
	u64map_free(&ser_ix);
	u64map_free(&have);
	buf_free(&h.q);
	buf_free(&h.out);
	return rc;
}

/* ---- the passes ---- */

/* At start: every (project, day) of the series table within the longest retention. */
static int discover(ch_store_t *s, ch_conn_t *c, int64_t now, err_t *err)
{
	int64_t first = time_day(now) - LIMIT_RETENTION_DAYS - 1;
	buf_t q;
	buf_init(&q, SIZE_MAX);
	buf_printf(&q, "SELECT DISTINCT project, day FROM series WHERE day >= %lld",
	           (long long)(first < 0 ? 0 : first));
	ch_rd_t rd;
	int rc = ch_select(s, c, &q, &rd, err);
	while (rc == 0 && ch_rd_more(&rd)) {
		slice_t proj = ch_rd_str(&rd);
		uint32_t day = ch_rd_u32(&rd);
		if (ch_rd_bad(&rd) || proj.n == 0 || proj.n > LIMIT_NAME_BYTES)
			continue;
		pthread_mutex_lock(&s->hours_mu);
		ch_hpart_t *h = hpart_get(s, proj, day);
		h->dirty = (int64_t)day * 24;
		h->written = (int64_t)day * 24 + 23;
		pthread_mutex_unlock(&s->hours_mu);
	}
	if (rc == 0)
		rc = ch_rd_end(&rd, err, 503, "partition list");
	buf_free(&q);
	return rc;
}

typedef struct {
	char proj[LIMIT_NAME_BYTES + 1];
	uint32_t proj_n, day;
	int64_t dirty;
} hwork_t;

int ch_hours_pass(ch_store_t *s, err_t *err)
{
	int64_t now = time_now_ns();
	/* The last hour that ended margin ago. */
	int64_t due = (now - s->hours_margin_ns) / NS_PER_HOUR - 1;
	ch_conn_t *c = ch_conn_get(s);
	int rc = 0;
	if (!s->hours_discovered && (rc = discover(s, c, now, err)) == 0)
		s->hours_discovered = 1;
	hwork_t *work = NULL;
	size_t n_work = 0, cap_work = 0;
	int64_t oldest = time_day(now) - LIMIT_RETENTION_DAYS - 1;
	pthread_mutex_lock(&s->hours_mu);
	uint32_t kept = 0;
	for (uint32_t i = 0; i < s->n_hparts; i++) {
		ch_hpart_t *h = &s->hparts[i];
		int64_t last = (int64_t)h->day * 24 + 23, upto = due < last ? due : last;
		if (h->dirty <= due || (h->checked < upto && h->written > h->checked)) {
			work = xgrow(work, &cap_work, n_work + 1, sizeof *work);
			hwork_t *w = &work[n_work++];
			memcpy(w->proj, h->proj, sizeof w->proj);
			w->proj_n = h->proj_n;
			w->day = h->day;
			w->dirty = h->dirty;
			h->dirty = h->dirty <= due ? INT64_MAX : h->dirty;
			h->checked = upto; /* set back below when this pass fails */
		}
		/* Done with: every hour checked and nothing written since, or expired. */
		if ((h->checked >= last && h->dirty == INT64_MAX) || (int64_t)h->day < oldest)
			continue;
		s->hparts[kept++] = *h;
	}
	if (kept != s->n_hparts) {
		s->n_hparts = kept;
		u64map_clear(&s->hpart_ix);
		for (uint32_t i = 0; i < kept; i++)
			u64map_put(
			    &s->hpart_ix,
			    hpart_key(slice_make(s->hparts[i].proj, s->hparts[i].proj_n), s->hparts[i].day),
			    i);
	}
	pthread_mutex_unlock(&s->hours_mu);
	for (size_t i = 0; i < n_work; i++) {
		slice_t proj = slice_make(work[i].proj, work[i].proj_n);
		err_t e = {0};
		if (rc == 0 && sum_partition(s, c, proj, work[i].day, due, &e) == 0)
			continue;
		if (rc == 0) {
			*err = e;
			rc = -1;
		}
		/* Not done: look at it again next pass. */
		pthread_mutex_lock(&s->hours_mu);
		ch_hpart_t *h = hpart_get(s, proj, work[i].day);
		if (work[i].dirty < h->dirty)
			h->dirty = work[i].dirty;
		if (h->dirty > (int64_t)work[i].day * 24)
			h->dirty = (int64_t)work[i].day * 24;
		h->checked = INT64_MIN;
		pthread_mutex_unlock(&s->hours_mu);
	}
	free(work);
	ch_conn_put(s, c);
	return rc;
}

static void hours_tick(void *arg)
{
	ch_store_t *s = arg;
	err_t err = {0};
	if (ch_hours_pass(s, &err) < 0)
		log_warn("store: summing hours failed, retried next pass", "engine=clickhouse err=\"%s\"",
		         err.msg);
}

int ch_hours_start(ch_store_t *s, err_t *err)
{
	pthread_mutex_init(&s->hours_mu, NULL);
	u64map_init(&s->hpart_ix);
	s->hours_margin_ns =
	    store_env_int("KILN_TEST_HOURS_MARGIN_S", LIMIT_STORE_HOURS_MARGIN_S, 0, 86400) * NS_PER_SEC;
	s->hours_pass_ms = (int)store_env_int("KILN_TEST_HOURS_MS", LIMIT_STORE_HOURS_PASS_MS, 1, 86400000);
	s->hours_inited = 1;
	return store_ticker_start(&s->hours_ticker, "kiln-ch-hours", s->hours_pass_ms, hours_tick, s, err);
}

void ch_hours_stop(ch_store_t *s)
{
	if (!s->hours_inited)
		return;
	store_ticker_stop(&s->hours_ticker);
	free(s->hparts);
	u64map_free(&s->hpart_ix);
	pthread_mutex_destroy(&s->hours_mu);
	s->hours_inited = 0;
}
