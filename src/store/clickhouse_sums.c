/* store/clickhouse views: chunk heads and the sums of a flame graph
 * (store_view_heads, store_view_sums). Whole hours and days come from the
 * `summed` rows clickhouse_hours.c writes, where their stamps hold; the rest
 * of the range from the entries, with GROUP BY (docs/STORE.md, store/
 * clickhouse "Summed hours"). */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "base/sort.h"
#include "base/timeutil.h"
#include "store/clickhouse_view.h"

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
	chv_where_part(v, p);
	buf_printf(&v->q, " AND hours = 24 AND hour = %u AND exact = 1", cp->day * 24);
	chv_series_list(v, cp, series, n, "series");
	ch_rd_t rd;
	if (chv_run(v, &rd, err) < 0)
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
		chv_where_part(v, p);
		buf_printf(&v->q, " AND series = 0 AND t_ns >= %lld AND t_ns < %lld", (long long)h0,
		           (long long)h1);
		if (chv_series_list(v, cp, series, n, "node") < 0) {
			rc = err_set(err, 500, "store: unknown local series id");
			goto out;
		}
		/* Global series ids sort as local ones: the heads' order, so that
		 * ch_view_heads and query/scan.c find them sorted. */
		buf_puts(&v->q, " ORDER BY node, t_ns, chunk");
		ch_rd_t rd;
		if ((rc = chv_run(v, &rd, err)) < 0)
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
				rc = chv_skip_answer(
				    v, p, &rd, "head row",
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
		chv_where_part(v, p);
		buf_puts(&v->q, day ? " AND 0" : " AND exact = 1");
		chv_series_list(v, cp, series, n, "series");
		if (!day && (rc = chv_run(v, &rd, err)) < 0)
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
	if (chv_bad_part(v, p, err) || chv_load_series(v, p, err) < 0)
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
		chv_remember_chunk(cp, (uint64_t)v->heads[i].chunk_id, cp->series[v->heads[i].series - 1].id,
		                   v->heads[i].t_ns);
	if (cp->n_scan) {
		buf_reset(&v->q);
		buf_puts(&v->q, "SELECT series, chunk, min(t_ns) AS t, any(duration_ns), count(), " CH_SUM_SQL
		                " FROM samples");
		chv_where_part(v, p);
		where_scan(v, cp);
		if (chv_series_list(v, cp, series, n_series, "series") < 0)
			return err_set(err, 500, "store: unknown local series id");
		buf_puts(&v->q, " GROUP BY series, chunk");
		ch_rd_t rd;
		if (chv_run(v, &rd, err) < 0)
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
				return chv_skip_answer(v, p, &rd, "chunk head",
				                       "a chunk 0, an unknown series, a count past 2^32 or a "
				                       "time outside the view");
			}
			h->series = local;
			h->n_entries = (uint32_t)count;
			h->chunk_id = (int64_t)chunk;
			chv_remember_chunk(cp, chunk, sid, h->t_ns);
			k++;
		}
		if (ch_rd_bad(&rd))
			return chv_skip_answer(v, p, &rd, "chunk head", NULL);
	}
	/* In (series, time, chunk) order, as one ORDER BY gave them before summed rows. */
	sort_unless_sorted(v->heads, k, sizeof *v->heads, head_cmp);
	*out = v->heads;
	*n = k;
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
	chv_where_part(v, p);
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
	if (chv_run(v, &rd, err) < 0)
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
			return chv_skip_answer(v, p, &rd, "summed row",
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
				return chv_skip_answer(v, p, &rd, "summed row",
				                       "a sum naming an unknown node");
			r[j] = (acc_row_t){ls, ln, 0, 0};
		}
		if (ch_rd_varint(&rd) != k)
			return chv_skip_answer(v, p, &rd, "summed row", "arrays of different lengths");
		for (uint64_t j = 0; j < k; j++) {
			uint64_t attrset = ch_rd_u64(&rd);
			if (attrset && !u64map_get(&cp->attr_ix, attrset, &r[j].attrset))
				return chv_skip_answer(v, p, &rd, "summed row",
				                       "a sum naming an unknown attribute set");
		}
		if (ch_rd_varint(&rd) != k)
			return chv_skip_answer(v, p, &rd, "summed row", "arrays of different lengths");
		for (uint64_t j = 0; j < k; j++)
			r[j].value = ch_rd_i64(&rd);
		if (!dup && !ch_rd_bad(&rd))
			*n += k;
	}
	if (ch_rd_bad(&rd))
		return chv_skip_answer(v, p, &rd, "summed row", NULL);
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
	if (chv_bad_part(v, p, err) || chv_load_series(v, p, err) < 0 || chv_load_nodes(v, p, err) < 0 ||
	    chv_load_attrsets(v, p, err) < 0)
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
				return chv_skip(v, p, "a summed row naming an unknown node or attribute set");
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
		chv_where_part(v, p);
		where_scan(v, cp);
		if (chv_series_list(v, cp, series, n_series, "series") < 0) {
			free(acc);
			return err_set(err, 500, "store: unknown local series id");
		}
		buf_puts(&v->q, " GROUP BY series, node, attrset");
		ch_rd_t rd;
		if (chv_run(v, &rd, err) < 0) {
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
				return chv_skip_answer(
				    v, p, &rd, "sum",
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
