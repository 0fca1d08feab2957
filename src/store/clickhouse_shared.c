/* store/clickhouse usage counters (OPS: Usage) and ingestion keys (OPS: Projects and keys):
 * the rows every Kiln process shares, so that any query process reports
 * what every ingestor counted and every process accepts the same keys. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/timeutil.h"
#include "store/clickhouse.h"

/* ---- usage (OPS: Usage) ---- */

int ch_usage_write(store_t *st, const store_usage_row_t *rows, uint32_t n, err_t *err)
{
	ch_store_t *s = (ch_store_t *)st;
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
	ch_conn_t *c = ch_conn_get(s);
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
                  void (*cb)(const store_usage_row_t *row, void *ctx), void *ctx, err_t *err)
{
	ch_store_t *s = (ch_store_t *)st;
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
	ch_conn_t *c = ch_conn_get(s);
	ch_rd_t rd;
	int rc = ch_select(s, c, &q, &rd, err);
	while (rc == 0 && ch_rd_more(&rd)) {
		store_usage_row_t r;
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

/* ---- ingestion keys (OPS: Projects and keys) ---- */

#define CH_KEYS_REFRESH_NS (1000 * 1000000LL) /* store_keys_poll re-reads the table at most once a second */

/* Writes the whole state of one key name: the newest row of a name wins. */
static int keys_write(ch_store_t *s, const store_key_row_t *row, err_t *err)
{
	buf_t b;
	buf_init(&b, SIZE_MAX);
	ch_put_str(&b, row->name);
	ch_put_str(&b, row->project);
	ch_put_str(&b, row->scope);
	ch_put_str(&b, row->hash);
	ch_put_i64(&b, row->created_ns);
	ch_put_i64(&b, row->revoked_ns);
	ch_put_i64(&b, time_now_ns()); /* version */
	ch_conn_t *c = ch_conn_get(s);
	int rc = ch_schema(s, c, err);
	if (rc == 0)
		rc = ch_exec(s, c, "INSERT INTO keys FORMAT RowBinary", buf_slice(&b),
		             s->cluster ? "insert_distributed_sync=1" : NULL, 1, err);
	ch_conn_put(s, c);
	buf_free(&b);
	return rc;
}

/* The current row of every key name, or of *name only. */
static int keys_select(ch_store_t *s, const slice_t *name, void (*cb)(const store_key_row_t *row, void *ctx),
                       void *ctx, err_t *err)
{
	buf_t q;
	buf_init(&q, SIZE_MAX);
	buf_puts(&q,
	         "SELECT name, argMax(project, version) AS p, argMax(scope, version), argMax(hash, version), "
	         "argMax(created_ns, version), argMax(revoked_ns, version) FROM keys");
	if (name) {
		buf_puts(&q, " WHERE name = ");
		ch_sql_str(&q, *name);
	}
	buf_puts(&q, " GROUP BY name ORDER BY p, name");
	ch_conn_t *c = ch_conn_get(s);
	ch_rd_t rd;
	int rc = ch_select(s, c, &q, &rd, err);
	while (rc == 0 && ch_rd_more(&rd)) {
		store_key_row_t r;
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

int ch_keys_read(store_t *st, void (*cb)(const store_key_row_t *row, void *ctx), void *ctx, err_t *err)
{
	return keys_select((ch_store_t *)st, NULL, cb, ctx, err);
}

int ch_keys_poll(store_t *st, int64_t *stamp, void (*cb)(const store_key_row_t *row, void *ctx), void *ctx,
                 err_t *err)
{
	int64_t now = time_mono_ns();
	if (*stamp && now - *stamp < CH_KEYS_REFRESH_NS)
		return 0;
	*stamp = now; /* a failed read too waits a second: an unreachable ClickHouse is not hammered */
	return ch_keys_read(st, cb, ctx, err) < 0 ? -1 : 1;
}

/* One key name's row, copied (its strings in buf). */
typedef struct {
	int found;
	store_key_row_t row;
	buf_t buf;
} key_found_t;

static void keep_key(const store_key_row_t *r, void *ctx)
{
	key_found_t *f = ctx;
	if (f->found)
		return;
	f->found = 1;
	f->row = *r;
	buf_append(&f->buf, r->project.p, r->project.n);
	buf_append(&f->buf, r->scope.p, r->scope.n);
	buf_append(&f->buf, r->hash.p, r->hash.n);
}

/* Reads the row of name into f (f->found 0 when there is none). */
static int key_find(ch_store_t *s, slice_t name, key_found_t *f, err_t *err)
{
	memset(f, 0, sizeof *f);
	buf_init(&f->buf, SIZE_MAX);
	if (keys_select(s, &name, keep_key, f, err) < 0)
		return -1;
	if (f->found) {
		const uint8_t *p = f->buf.p;
		f->row.name = name;
		f->row.project = slice_make(p, f->row.project.n);
		f->row.scope = slice_make(p + f->row.project.n, f->row.scope.n);
		f->row.hash = slice_make(p + f->row.project.n + f->row.scope.n, f->row.hash.n);
	}
	return 0;
}

int ch_keys_create(store_t *st, const store_key_row_t *row, err_t *err)
{
	ch_store_t *s = (ch_store_t *)st;
	key_found_t f;
	int rc = key_find(s, row->name, &f, err);
	if (rc == 0 && f.found)
		rc = err_set(err, 400, "a key named '%.*s' already exists (names are unique across projects)",
		             (int)row->name.n, (const char *)row->name.p);
	if (rc == 0)
		rc = keys_write(s, row, err);
	buf_free(&f.buf);
	return rc;
}

int ch_keys_revoke(store_t *st, slice_t name, int64_t now_ns, err_t *err)
{
	ch_store_t *s = (ch_store_t *)st;
	key_found_t f;
	int rc = key_find(s, name, &f, err);
	if (rc == 0 && !f.found)
		rc = err_set(err, 404, "no key named '%.*s'", (int)name.n, (const char *)name.p);
	else if (rc == 0 && f.row.revoked_ns)
		rc = 1;
	else if (rc == 0) {
		f.row.revoked_ns = now_ns;
		rc = keys_write(s, &f.row, err);
	}
	buf_free(&f.buf);
	return rc;
}
