/* store/clickhouse retention (SPEC S6.4) and the other per-project state:
 * retention days (which clamp views, as in the embedded engine), the sweep
 * that drops whole (project, day) partitions of every table, the floor that
 * then refuses late writes, the project list, and the usage counters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "store/clickhouse.h"

/* The entry of project, added when add is set (else NULL). Under ret_mu. */
static ch_retention *ret_find(ch_store *s, slice_t project, int add)
{
	for (uint32_t i = 0; i < s->n_ret; i++)
		if (slice_eq_cstr(project, s->ret[i].proj))
			return &s->ret[i];
	if (!add)
		return NULL;
	s->ret = xgrow(s->ret, &s->cap_ret, (size_t)s->n_ret + 1, sizeof *s->ret);
	ch_retention *r = &s->ret[s->n_ret++];
	memset(r, 0, sizeof *r);
	memcpy(r->proj, project.p, project.n);
	r->floor_day = INT64_MIN;
	return r;
}

static int bad_project(slice_t project, kn_err *err)
{
	if (project.n && project.n <= CH_PROJECT_MAX && !memchr(project.p, 0, project.n))
		return 0;
	return err_set(err, 400, "store: project name must be 1 to %u bytes", CH_PROJECT_MAX);
}

int ch_set_retention(store_t *st, slice_t project, int days, kn_err *err)
{
	ch_store *s = (ch_store *)st;
	if (bad_project(project, err))
		return -1;
	if (days < 0 || days > STORE_RETENTION_MAX_DAYS)
		return err_set(err, 400, "store: retention must be 0 to %d days", STORE_RETENTION_MAX_DAYS);
	pthread_mutex_lock(&s->ret_mu);
	ret_find(s, project, 1)->days = days;
	pthread_mutex_unlock(&s->ret_mu);
	return 0;
}

int64_t ch_retention_start(store_t *st, slice_t project, int64_t now_ns)
{
	ch_store *s = (ch_store *)st;
	if (bad_project(project, NULL))
		return INT64_MIN;
	pthread_mutex_lock(&s->ret_mu);
	const ch_retention *r = ret_find(s, project, 0);
	int days = r && r->days ? r->days : s->default_days;
	pthread_mutex_unlock(&s->ret_mu);
	int64_t start;
	if (days <= 0 || __builtin_sub_overflow(now_ns, (int64_t)days * NS_PER_DAY, &start))
		return INT64_MIN;
	return start;
}

int ch_retention_check(ch_store *s, const model_batch *b, kn_err *err)
{
	if (!b->n_profiles)
		return 0;
	int64_t oldest = store_oldest_day(b);
	pthread_mutex_lock(&s->ret_mu);
	const ch_retention *r = ret_find(s, b->project, 0);
	int64_t floor = r ? r->floor_day : INT64_MIN;
	pthread_mutex_unlock(&s->ret_mu);
	return oldest >= floor ? 0 : store_floor_error(err, oldest, floor, b->project);
}

int ch_retention_run(ch_store *s, ch_job *j, kn_err *err)
{
	int64_t floor = time_day(j->now_ns) - j->keep_days;
	if (floor < 0)
		floor = 0;
	pthread_mutex_lock(&s->ret_mu);
	ret_find(s, j->project, 1)->floor_day = floor;
	pthread_mutex_unlock(&s->ret_mu);
	buf_t q;
	buf_init(&q, SIZE_MAX);
	uint32_t deleted = 0;
	int rc = 0;
	for (int t = CH_T_COUNT - 1; t >= 0 && rc == 0; t--) { /* samples first: never a sample without its names */
		buf_reset(&q);
		buf_printf(&q, "SELECT DISTINCT day FROM %s WHERE project = ", ch_table_names[t]);
		ch_sql_str(&q, j->project);
		buf_printf(&q, " AND day < %lld ORDER BY day", (long long)floor);
		ch_rd rd;
		if ((rc = ch_select(s, s->wconn, &q, &rd, err)) < 0)
			break;
		uint32_t n = 0;
		uint32_t *days = NULL;
		size_t cap = 0;
		int64_t last = -1;
		while (ch_rd_more(&rd)) {
			uint32_t day = ch_rd_u32(&rd);
			/* Only what was asked for (DISTINCT, ORDER BY day, day < floor): a
			 * broken answer must never drop a day the sweep keeps. */
			if (rd.bad || day >= floor || day <= last)
				continue;
			last = day;
			days = xgrow(days, &cap, (size_t)n + 1, sizeof *days);
			days[n++] = day;
		}
		for (uint32_t i = 0; i < n && rc == 0; i++) {
			buf_reset(&q);
			/* Qualified: on a cluster each host runs it outside this session's database. */
			buf_printf(&q, "ALTER TABLE %s.%s%s", s->db, ch_table_names[t], s->cluster ? "_local" : "");
			if (s->cluster)
				buf_printf(&q, " ON CLUSTER %s", s->cluster);
			buf_puts(&q, " DROP PARTITION (");
			ch_sql_str(&q, j->project);
			buf_printf(&q, ", %u)", days[i]);
			buf_putc(&q, 0);
			rc = ch_exec(s, s->wconn, (const char *)q.p, (slice_t){0}, NULL, 1, err);
			if (rc == 0 && t == CH_T_SAMPLES)
				deleted++;
		}
		free(days);
	}
	buf_free(&q);
	if (deleted) {
		char first[11];
		time_day_str(floor, first);
		log_info("store: retention deleted partitions", "project=%s keep_days=%d before=%s partitions=%u",
		         j->proj, j->keep_days, first, deleted);
	}
	*j->deleted = deleted;
	return rc;
}

int ch_projects(store_t *st, void (*cb)(slice_t project, void *ctx), void *ctx, kn_err *err)
{
	ch_store *s = (ch_store *)st;
	ch_conn *c = ch_conn_get(s);
	buf_t q;
	buf_init(&q, SIZE_MAX);
	buf_puts(&q, "SELECT DISTINCT project FROM samples ORDER BY project");
	ch_rd rd;
	int rc = ch_select(s, c, &q, &rd, err);
	while (rc == 0 && ch_rd_more(&rd)) {
		slice_t p = ch_rd_str(&rd);
		if (!rd.bad)
			cb(p, ctx);
	}
	buf_free(&q);
	ch_conn_put(s, c);
	return rc;
}

/* ---- usage (SPEC S6.3) ---- */

int ch_usage_write(store_t *st, const store_usage_row *rows, uint32_t n, kn_err *err)
{
	ch_store *s = (ch_store *)st;
	if (!n)
		return 0;
	buf_t b;
	buf_init(&b, SIZE_MAX);
	for (uint32_t i = 0; i < n; i++) {
		ch_put_u32(&b, (uint32_t)rows[i].day);
		ch_put_str(&b, rows[i].project);
		ch_put_str(&b, rows[i].key);
		for (int k = 0; k < 5; k++)
			ch_put_u64(&b, rows[i].counts[k]);
	}
	ch_conn *c = ch_conn_get(s);
	int rc = ch_schema(s, c, err);
	/* Rows are increments: two flushes of the same counts are two blocks of
	 * identical bytes, and a Replicated* table drops the second as a retried
	 * insert ("Block with ID ... already exists; ignoring it"), losing counts.
	 * insert_deduplicate=0 keeps every block (shards get it from the
	 * Distributed insert); a no-op on a plain MergeTree. */
	if (rc == 0)
		rc = ch_exec(s, c, "INSERT INTO usage FORMAT RowBinary", buf_slice(&b),
		             s->cluster ? "insert_distributed_sync=1&insert_deduplicate=0" : "insert_deduplicate=0", 1, err);
	ch_conn_put(s, c);
	buf_free(&b);
	return rc;
}

int ch_usage_read(store_t *st, slice_t project, int64_t from_day, int64_t until_day,
                  void (*cb)(const store_usage_row *row, void *ctx), void *ctx, kn_err *err)
{
	ch_store *s = (ch_store *)st;
	buf_t q;
	buf_init(&q, SIZE_MAX);
	buf_puts(&q, "SELECT day, project, key, sum(accepted), sum(rate_limited), sum(too_large), sum(invalid), "
	             "sum(out_of_window) FROM usage WHERE 1");
	if (project.n) {
		buf_puts(&q, " AND project = ");
		ch_sql_str(&q, project);
	}
	if (from_day > 0)
		buf_printf(&q, " AND day >= %lld", (long long)from_day);
	if (until_day < UINT32_MAX)
		buf_printf(&q, " AND day <= %lld", (long long)(until_day < 0 ? -1 : until_day));
	buf_puts(&q, " GROUP BY day, project, key ORDER BY day, project, key");
	ch_conn *c = ch_conn_get(s);
	ch_rd rd;
	int rc = ch_select(s, c, &q, &rd, err);
	while (rc == 0 && ch_rd_more(&rd)) {
		store_usage_row r;
		r.day = ch_rd_u32(&rd);
		r.project = ch_rd_str(&rd);
		r.key = ch_rd_str(&rd);
		for (int k = 0; k < 5; k++)
			r.counts[k] = ch_rd_u64(&rd);
		if (rd.bad)
			rc = err_set(err, 500, "store: ClickHouse sent a malformed usage row");
		else
			cb(&r, ctx);
	}
	ch_conn_put(s, c);
	buf_free(&q);
	return rc;
}

/* ---- ingestion keys (SPEC S6.1) ---- */

int ch_keys_write(store_t *st, const store_key_row *row, kn_err *err)
{
	ch_store *s = (ch_store *)st;
	buf_t b;
	buf_init(&b, SIZE_MAX);
	ch_put_str(&b, row->name);
	ch_put_str(&b, row->project);
	ch_put_str(&b, row->scope);
	ch_put_str(&b, row->hash);
	ch_put_i64(&b, row->created_ns);
	ch_put_i64(&b, row->revoked_ns);
	ch_put_i64(&b, time_now_ns()); /* version: the newest row of a name wins */
	ch_conn *c = ch_conn_get(s);
	int rc = ch_schema(s, c, err);
	if (rc == 0)
		rc = ch_exec(s, c, "INSERT INTO keys FORMAT RowBinary", buf_slice(&b),
		             s->cluster ? "insert_distributed_sync=1" : NULL, 1, err);
	ch_conn_put(s, c);
	buf_free(&b);
	return rc;
}

int ch_keys_read(store_t *st, void (*cb)(const store_key_row *row, void *ctx), void *ctx, kn_err *err)
{
	ch_store *s = (ch_store *)st;
	buf_t q;
	buf_init(&q, SIZE_MAX);
	buf_puts(&q, "SELECT name, argMax(project, version) AS p, argMax(scope, version), argMax(hash, version), "
	             "argMax(created_ns, version), argMax(revoked_ns, version) FROM keys GROUP BY name "
	             "ORDER BY p, name");
	ch_conn *c = ch_conn_get(s);
	ch_rd rd;
	int rc = ch_select(s, c, &q, &rd, err);
	while (rc == 0 && ch_rd_more(&rd)) {
		store_key_row r;
		r.name = ch_rd_str(&rd);
		r.project = ch_rd_str(&rd);
		r.scope = ch_rd_str(&rd);
		r.hash = ch_rd_str(&rd);
		r.created_ns = ch_rd_i64(&rd);
		r.revoked_ns = ch_rd_i64(&rd);
		if (rd.bad)
			rc = err_set(err, 500, "store: ClickHouse sent a malformed key row");
		else
			cb(&r, ctx);
	}
	ch_conn_put(s, c);
	buf_free(&q);
	return rc;
}
