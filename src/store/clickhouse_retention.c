/* store/clickhouse retention (OPS: Retention) and the other per-project state:
 * retention days (which clamp views, as in the embedded engine), the sweep
 * that drops whole (project, day) partitions of every table, the floor that
 * then refuses late writes, and the project list. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "store/clickhouse.h"

/* The entry of project, added when add is set (else NULL). Under ret_mu. */
static ch_retention_t *ret_find(ch_store_t *s, slice_t project, int add)
{
	for (uint32_t i = 0; i < s->n_ret; i++)
		if (slice_eq_cstr(project, s->ret[i].proj))
			return &s->ret[i];
	if (!add)
		return NULL;
	s->ret = xgrow(s->ret, &s->cap_ret, (size_t)s->n_ret + 1, sizeof *s->ret);
	ch_retention_t *r = &s->ret[s->n_ret++];
	memset(r, 0, sizeof *r);
	memcpy(r->proj, project.p, project.n);
	r->floor_day = INT64_MIN;
	return r;
}

static int bad_project(slice_t project, err_t *err)
{
	if (project.n && project.n <= LIMIT_NAME_BYTES && !memchr(project.p, 0, project.n))
		return 0;
	return err_set(err, 400, "store: project name must be 1 to %u bytes", LIMIT_NAME_BYTES);
}

int ch_set_retention(store_t *st, slice_t project, int days, err_t *err)
{
	ch_store_t *s = (ch_store_t *)st;
	if (bad_project(project, err))
		return -1;
	if (days < 0 || days > LIMIT_RETENTION_DAYS)
		return err_set(err, 400, "store: retention must be 0 to %d days", LIMIT_RETENTION_DAYS);
	pthread_mutex_lock(&s->ret_mu);
	ret_find(s, project, 1)->days = days;
	pthread_mutex_unlock(&s->ret_mu);
	return 0;
}

int64_t ch_retention_start(store_t *st, slice_t project, int64_t now_ns)
{
	ch_store_t *s = (ch_store_t *)st;
	if (bad_project(project, NULL))
		return INT64_MIN;
	pthread_mutex_lock(&s->ret_mu);
	const ch_retention_t *r = ret_find(s, project, 0);
	int days = r && r->days ? r->days : s->default_days;
	pthread_mutex_unlock(&s->ret_mu);
	int64_t start;
	if (days <= 0 || __builtin_sub_overflow(now_ns, (int64_t)days * NS_PER_DAY, &start))
		return INT64_MIN;
	return start;
}

int ch_retention_check(ch_store_t *s, const model_batch_t *b, err_t *err)
{
	if (!b->n_profiles)
		return 0;
	int64_t oldest = store_oldest_day(b);
	pthread_mutex_lock(&s->ret_mu);
	const ch_retention_t *r = ret_find(s, b->project, 0);
	int64_t floor = r ? r->floor_day : INT64_MIN;
	pthread_mutex_unlock(&s->ret_mu);
	return oldest >= floor ? 0 : store_floor_error(err, oldest, floor, b->project);
}

int ch_retention_run(ch_store_t *s, ch_job_t *j, err_t *err)
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
	for (int t = CH_T_COUNT - 1; t >= 0 && rc == 0;
	     t--) { /* samples first: never a sample without its names */
		buf_reset(&q);
		buf_printf(&q, "SELECT DISTINCT day FROM %s WHERE project = ", ch_table_names[t]);
		ch_sql_str(&q, j->project);
		buf_printf(&q, " AND day < %lld ORDER BY day", (long long)floor);
		ch_rd_t rd;
		if ((rc = ch_select(s, s->wconn, &q, &rd, err)) < 0)
			break;
		uint32_t n = 0;
		uint32_t *days = NULL;
		size_t cap = 0;
		int64_t last = -1;
		while (ch_rd_more(&rd)) {
			uint32_t day = ch_rd_u32(&rd);
			/* Only what was asked for (DISTINCT, ORDER BY day, day < floor): a
			 * broken answer must never drop a day the sweep keeps, so it drops none. */
			if (ch_rd_bad(&rd))
				break;
			if (day >= floor || day <= last) {
				ch_rd_fail(&rd, "a day not before the first kept day, or out of order");
				break;
			}
			last = day;
			days = xgrow(days, &cap, (size_t)n + 1, sizeof *days);
			days[n++] = day;
		}
		rc = ch_rd_end(&rd, err, 503, "day list"); /* then no day of the list is dropped */
		for (uint32_t i = 0; i < n && rc == 0; i++) {
			buf_reset(&q);
			/* Qualified: on a cluster each host runs it outside this session's database. */
			buf_printf(&q, "ALTER TABLE %s.%s%s", s->db, ch_table_names[t],
			           s->cluster ? "_local" : "");
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
		log_info("store: retention deleted partitions",
		         "project=%s keep_days=%d before=%s partitions=%u", j->proj, j->keep_days, first,
		         deleted);
	}
	*j->deleted = deleted;
	return rc;
}

int ch_projects(store_t *st, void (*cb)(slice_t project, void *ctx), void *ctx, err_t *err)
{
	ch_store_t *s = (ch_store_t *)st;
	ch_conn_t *c = ch_conn_get(s);
	buf_t q;
	buf_init(&q, SIZE_MAX);
	buf_puts(&q, "SELECT DISTINCT project FROM samples ORDER BY project");
	ch_rd_t rd;
	int rc = ch_select(s, c, &q, &rd, err);
	while (rc == 0 && ch_rd_more(&rd)) {
		slice_t p = ch_rd_str(&rd);
		if (!ch_rd_bad(&rd))
			cb(p, ctx);
	}
	if (rc == 0)
		rc = ch_rd_end(&rd, err, 503, "project list");
	buf_free(&q);
	ch_conn_put(s, c);
	return rc;
}
