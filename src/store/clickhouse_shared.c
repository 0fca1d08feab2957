/* store/clickhouse usage counters (SPEC S6.3) and ingestion keys (S6.1):
 * the rows every Kiln process shares, so that any query process reports
 * what every ingestor counted and every process accepts the same keys. */
#include <stdlib.h>

#include "base/alloc.h"
#include "base/timeutil.h"
#include "store/clickhouse.h"

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
		             s->cluster ? "insert_distributed_sync=1&insert_deduplicate=0"
		                        : "insert_deduplicate=0",
		             1, err);
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
	buf_puts(&q,
	         "SELECT day, project, key, sum(accepted), sum(rate_limited), sum(too_large), sum(invalid), "
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
		if (!ch_rd_bad(&rd))
			cb(&r, ctx);
	}
	if (rc == 0)
		rc = ch_rd_end(&rd, err, 500, "usage row");
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
	buf_puts(&q,
	         "SELECT name, argMax(project, version) AS p, argMax(scope, version), argMax(hash, version), "
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
		if (!ch_rd_bad(&rd))
			cb(&r, ctx);
	}
	if (rc == 0)
		rc = ch_rd_end(&rd, err, 500, "key row");
	ch_conn_put(s, c);
	buf_free(&q);
	return rc;
}
