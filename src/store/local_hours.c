/* store/local merged hours (docs/STORE.md "Merged hours"): a compactor
 * thread that, for each day partition, sums the chunks of every (series, UTC
 * hour) that ended a margin ago into one row of a derived file DAY.db.hours
 * beside it, stamped with what it covered; and what store_view_sums
 * (local_view.c) needs to use those rows: the stamp, the read-only open, the
 * lookup, and the exact int64 accumulator both sides sum with.
 *
 * The derived file is never written by the writer or the apply thread, so
 * neither ever waits on it; it can be deleted at any time (reads then sum
 * the chunks, the next pass rebuilds it). The compactor reads partitions
 * through an ordinary view (a read snapshot) and trusts nothing it reads
 * back from the derived file: a row counts only when its stamp equals the
 * chunks a view lists for that (series, hour) in its own snapshot. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "base/alloc.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/num.h"
#include "base/timeutil.h"
#include "store/local.h"

#define HOURS_FORMAT 1
#define HOUR_NS (3600 * NS_PER_SEC)

static const char hours_schema[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER);"
    "CREATE TABLE IF NOT EXISTS hours(series INTEGER NOT NULL, hour INTEGER NOT NULL, n INTEGER NOT NULL,"
    " max_local INTEGER NOT NULL, hash INTEGER NOT NULL, sums BLOB, PRIMARY KEY(series, hour))"
    " WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS days(series INTEGER NOT NULL, day INTEGER NOT NULL, n INTEGER NOT NULL,"
    " max_local INTEGER NOT NULL, hash INTEGER NOT NULL, sums BLOB, PRIMARY KEY(series, day))"
    " WITHOUT ROWID;";

/* What a day file looked like when a pass last merged it: unchanged since,
 * with the same cutoff, there is nothing new to merge. Changed, with the
 * same cutoff, the same file (inode) and no late write committed anywhere
 * since (hours_late_gen): its new profiles are all past the cutoff, and
 * there is nothing to merge either. */
struct local_hours_seen {
	char *path;
	int64_t db_size, db_mtime, wal_size, wal_mtime;
	uint64_t db_ino;
	int64_t until;     /* the range's end that pass merged up to */
	uint64_t late_gen; /* store's hours_late_gen when that pass began */
};

/* ---- the stamp, the accumulator ---- */

void local_hstamp_add(local_hstamp_t *st, const store_chunk_head_t *h)
{
	int64_t f[7] = {h->chunk_id, h->t_ns,   h->duration_ns, (int64_t)h->n_entries,
	                h->total,    h->_scale, h->_payload};
	if (st->n == 0 || h->chunk_id > st->max_local)
		st->max_local = h->chunk_id;
	st->n++;
	st->hash += hash_bytes(f, sizeof f, 0);
}

void local_hacc_init(local_hacc_t *a)
{
	memset(a, 0, sizeof *a);
	u64map_init(&a->ix);
}

void local_hacc_free(local_hacc_t *a)
{
	u64map_free(&a->ix);
	free(a->keys);
	free(a->val);
	free(a->dense);
}

void local_hacc_clear(local_hacc_t *a)
{
	for (uint32_t i = 0; i < a->n; i++)
		if ((uint32_t)a->keys[i] == 0 && (a->keys[i] >> 32) < a->cap_dense)
			a->dense[a->keys[i] >> 32] = 0;
	u64map_clear(&a->ix);
	a->n = 0;
}

/* Nodes below this without attributes (most samples) are found through a
 * plain array, the rest through the map. */
#define HACC_DENSE (1u << 20)

void local_hacc_add(local_hacc_t *a, uint32_t node, uint32_t attrset, int64_t value)
{
	/* node and attrset are at most LIMIT_DICT_ROWS: key + 1 is never 0, and
	 * the bijective mix spreads the map's probes. */
	uint64_t key = ((uint64_t)node << 32 | attrset);
	int inserted;
	uint32_t i;
	if (attrset == 0 && node < HACC_DENSE) {
		if (node >= a->cap_dense) {
			size_t old = a->cap_dense;
			a->dense = xgrow(a->dense, &a->cap_dense, (size_t)node + 1, sizeof *a->dense);
			memset(a->dense + old, 0, (a->cap_dense - old) * sizeof *a->dense);
		}
		inserted = a->dense[node] == 0;
		if (inserted)
			a->dense[node] = a->n + 1;
		i = a->dense[node] - 1;
	} else {
		i = u64map_get_or_put(&a->ix, num_mix64(key + 1), a->n, &inserted);
	}
	if (inserted) {
		if (a->n == a->cap) {
			size_t cap = a->cap;
			a->keys = xgrow(a->keys, &cap, (size_t)a->n + 1, sizeof *a->keys);
			a->val = xrealloc(a->val, cap * sizeof *a->val);
			a->cap = cap;
		}
		a->keys[i] = key;
		a->val[i] = 0;
		a->n++;
	}
	a->val[i] += value;
}

static int hsum_cmp(const void *x, const void *y)
{
	const local_hsum_t *a = x, *b = y;
	if (a->node != b->node)
		return a->node < b->node ? -1 : 1;
	return (a->attrset > b->attrset) - (a->attrset < b->attrset);
}

int local_hacc_rows(const local_hacc_t *a, local_hsum_t **out, size_t *cap, uint32_t *n)
{
	int clamped = 0;
	*out = xgrow(*out, cap, (size_t)a->n + 1, sizeof **out);
	for (uint32_t i = 0; i < a->n; i++) {
		local_i128_t v = a->val[i];
		int64_t c = v > INT64_MAX ? INT64_MAX : v < INT64_MIN ? INT64_MIN : (int64_t)v;
		clamped |= (local_i128_t)c != v;
		(*out)[i] = (local_hsum_t){(uint32_t)(a->keys[i] >> 32), (uint32_t)a->keys[i], c};
	}
	if (a->n > 1)
		qsort(*out, a->n, sizeof **out, hsum_cmp);
	*n = a->n;
	return clamped;
}

/* ---- reading (views) ---- */

uint64_t local_file_ident(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return 0;
	return hash_pair((uint64_t)st.st_dev, (uint64_t)st.st_ino);
}

static char *hours_path(const char *day_path)
{
	size_t n = strlen(day_path) + sizeof ".hours";
	char *p = xmalloc(n);
	snprintf(p, n, "%s.hours", day_path);
	return p;
}

/* meta[key] of db, or def when absent or unreadable. */
static int64_t meta_get(sqlite3 *db, const char *key, int64_t def)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?1", -1, &st, NULL) != SQLITE_OK)
		return def;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : def;
	sqlite3_finalize(st);
	return v;
}

/* 1 when db holds merged hours of format HOURS_FORMAT made from the file of identity ident. */
static int hours_match(sqlite3 *db, uint64_t ident)
{
	return meta_get(db, "format", -1) == HOURS_FORMAT && (uint64_t)meta_get(db, "ident", 0) == ident;
}

sqlite3 *local_hours_open_ro(const char *day_path, uint64_t ident)
{
	if (!ident)
		return NULL;
	char *path = hours_path(day_path);
	sqlite3 *db = NULL;
	struct stat st;
	if (stat(path, &st) == 0 &&
	    sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) == SQLITE_OK) {
		sqlite3_busy_timeout(db, 1000);
		if (!hours_match(db, ident)) {
			sqlite3_close_v2(db);
			db = NULL;
		}
	} else if (db) {
		sqlite3_close_v2(db);
		db = NULL;
	}
	free(path);
	return db;
}

int local_hours_lookup(sqlite3 *db, sqlite3_stmt **st, int day, uint32_t series, int64_t key,
                       const local_hstamp_t *want, uint32_t max_node, uint32_t max_attrset, void *zd,
                       uint8_t **tmp, size_t *cap_tmp, local_hsum_t **out, size_t *cap, uint32_t *n)
{
	if (!*st && sqlite3_prepare_v3(
	                db,
	                day ? "SELECT n, max_local, hash, sums FROM days WHERE series = ?1 AND day = ?2"
	                    : "SELECT n, max_local, hash, sums FROM hours WHERE series = ?1 AND hour = ?2",
	                -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_int64(*st, 1, series);
	sqlite3_bind_int64(*st, 2, key);
	int ok = 0;
	if (sqlite3_step(*st) == SQLITE_ROW && sqlite3_column_int64(*st, 0) == (int64_t)want->n &&
	    sqlite3_column_int64(*st, 1) == want->max_local &&
	    (uint64_t)sqlite3_column_int64(*st, 2) == want->hash &&
	    sqlite3_column_type(*st, 3) == SQLITE_BLOB) {
		slice_t blob = slice_make(sqlite3_column_blob(*st, 3), (size_t)sqlite3_column_bytes(*st, 3));
		ok = local_sums_decode(blob, max_node, max_attrset, zd, tmp, cap_tmp, out, cap, n) == 0;
	}
	sqlite3_reset(*st);
	return ok;
}

/* ---- the compactor ---- */

/* One merged row about to be written. */
typedef struct {
	uint32_t series;
	int64_t hour;
	local_hstamp_t stamp;
	size_t off, len; /* in the blob buffer; len SIZE_MAX: a sum overflowed, stored as NULL */
} pending_row_t;

typedef struct {
	store_t *s;
	local_hacc_t acc;
	local_hsum_t *rows;
	size_t cap_rows;
	buf_t one, blobs;
	pending_row_t *pend;
	size_t cap_pend;
	uint32_t n_pend;
	store_chunk_head_t *heads;
	size_t cap_heads;
	uint32_t *locals;
	size_t cap_locals;
	ZSTD_CCtx *zc;
	ZSTD_DCtx *zd;
	uint8_t *tmp;
	size_t cap_tmp;
	buf_t raw;
} compactor_t;

/* c->rows[0..nr) in their stored form into c->one. */
static void sums_pack(compactor_t *c, uint32_t nr)
{
	local_sums_encode(c->rows, nr, &c->raw);
	local_payload_pack(&c->raw, &c->one, c->zc);
}

static int stopping(store_t *s)
{
	return store_ticker_stopping(&s->hours_ticker);
}

static int head_series_cmp(const void *x, const void *y)
{
	const store_chunk_head_t *a = x, *b = y;
	if (a->series != b->series)
		return a->series < b->series ? -1 : 1;
	if (a->t_ns != b->t_ns)
		return a->t_ns < b->t_ns ? -1 : 1;
	return (a->chunk_id > b->chunk_id) - (a->chunk_id < b->chunk_id);
}

/* The stamp sel (prepared on the derived file) finds for (series, hour or
 * day) into *st: 1, or 0 when there is no row. */
static int stored_stamp(sqlite3_stmt *sel, uint32_t series, int64_t hour, local_hstamp_t *st)
{
	sqlite3_bind_int64(sel, 1, series);
	sqlite3_bind_int64(sel, 2, hour);
	int have = sqlite3_step(sel) == SQLITE_ROW;
	if (have) {
		int64_t n = sqlite3_column_int64(sel, 0);
		have = n > 0 && n <= UINT32_MAX;
		*st = (local_hstamp_t){(uint32_t)n, sqlite3_column_int64(sel, 1),
		                       (uint64_t)sqlite3_column_int64(sel, 2)};
	}
	sqlite3_reset(sel);
	return have;
}

static int stamp_eq(const local_hstamp_t *a, const local_hstamp_t *b)
{
	return a->n == b->n && a->max_local == b->max_local && a->hash == b->hash;
}

/* Removes a damaged derived file (and SQLite's files beside it): the next pass rebuilds it. */
static void hours_discard(store_t *s, const char *path, const char *why)
{
	local_report_damaged(s, path, why, "deleted and rebuilt");
	size_t n = strlen(path) + 16;
	char *p = xmalloc(n);
	static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
	for (size_t i = 0; i < sizeof suffix / sizeof *suffix; i++) {
		snprintf(p, n, "%s%s", path, suffix[i]);
		unlink(p);
	}
	free(p);
}

/* The sums of a day's rows so far (series ser), written as its day row
 * unless the stored one has this stamp already. */
static int day_flush(compactor_t *c, sqlite3 *db, sqlite3_stmt *ins, int64_t day, uint32_t ser,
                     const local_hstamp_t *st, int null_sums)
{
	sqlite3_stmt *sel;
	int rc = sqlite3_prepare_v2(db, "SELECT n, max_local, hash FROM days WHERE series = ?1 AND day = ?2",
	                            -1, &sel, NULL);
	if (rc != SQLITE_OK)
		return rc;
	local_hstamp_t old;
	int same = stored_stamp(sel, ser, day, &old) && stamp_eq(&old, st);
	sqlite3_finalize(sel);
	if (same)
		return SQLITE_OK;
	uint32_t nr;
	null_sums |= local_hacc_rows(&c->acc, &c->rows, &c->cap_rows, &nr);
	sqlite3_bind_int64(ins, 1, ser);
	sqlite3_bind_int64(ins, 2, day);
	sqlite3_bind_int64(ins, 3, st->n);
	sqlite3_bind_int64(ins, 4, st->max_local);
	sqlite3_bind_int64(ins, 5, (int64_t)st->hash);
	if (null_sums) {
		sqlite3_bind_null(ins, 6);
	} else {
		sums_pack(c, nr);
		sqlite3_bind_blob(ins, 6, c->one.p, (int)c->one.n, SQLITE_STATIC);
	}
	rc = sqlite3_step(ins);
	sqlite3_reset(ins);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* For a day whose every hour has passed: each series' day row, the sum of
 * its hour rows (in the open transaction, after this pass wrote its own),
 * stamped with their stamps combined, which is the stamp of every chunk of
 * the series in the day file. */
static int days_write(compactor_t *c, sqlite3 *db, int64_t day)
{
	sqlite3_stmt *sel = NULL, *ins = NULL;
	int rc = sqlite3_prepare_v2(
	    db,
	    "SELECT series, n, max_local, hash, sums FROM hours WHERE hour >= ?1 AND hour < ?2"
	    " ORDER BY series",
	    -1, &sel, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO days VALUES (?1, ?2, ?3, ?4, ?5, ?6)", -1,
		                        &ins, NULL);
	if (rc != SQLITE_OK)
		goto out;
	sqlite3_bind_int64(sel, 1, day * 24);
	sqlite3_bind_int64(sel, 2, day * 24 + 24);
	uint32_t ser = 0, nr;
	local_hstamp_t st = {0};
	int null_sums = 0;
	while ((rc = sqlite3_step(sel)) == SQLITE_ROW) {
		uint32_t s = (uint32_t)sqlite3_column_int64(sel, 0);
		if (s != ser && ser && (rc = day_flush(c, db, ins, day, ser, &st, null_sums)) != SQLITE_OK)
			goto out;
		if (s != ser) {
			ser = s;
			memset(&st, 0, sizeof st);
			null_sums = 0;
			local_hacc_clear(&c->acc);
		}
		int64_t max_local = sqlite3_column_int64(sel, 2);
		if (st.n == 0 || max_local > st.max_local)
			st.max_local = max_local;
		st.n += (uint32_t)sqlite3_column_int64(sel, 1);
		st.hash += (uint64_t)sqlite3_column_int64(sel, 3);
		slice_t blob = slice_make(sqlite3_column_blob(sel, 4), (size_t)sqlite3_column_bytes(sel, 4));
		if (sqlite3_column_type(sel, 4) != SQLITE_BLOB ||
		    local_sums_decode(blob, UINT32_MAX, UINT32_MAX, c->zd, &c->tmp, &c->cap_tmp, &c->rows,
		                      &c->cap_rows, &nr) < 0) {
			null_sums = 1; /* beyond int64 (or unreadable): the day is read by its hours */
			continue;
		}
		for (uint32_t i = 0; i < nr; i++)
			local_hacc_add(&c->acc, c->rows[i].node, c->rows[i].attrset, c->rows[i].value);
	}
	if (rc == SQLITE_DONE)
		rc = ser ? day_flush(c, db, ins, day, ser, &st, null_sums) : SQLITE_OK;
out:
	sqlite3_finalize(sel);
	sqlite3_finalize(ins);
	return rc;
}

/* Writes c->pend into the derived file of day_path, made from the file of
 * identity ident: created when missing, emptied when made from another file;
 * then, with day set (not INT64_MIN), that day's rows (days_write).
 * Holds files_lock shared throughout, so the retention sweep cannot delete
 * the day in between and leave a derived file without its day. */
static int hours_write_once(compactor_t *c, const char *day_path, uint64_t ident, int64_t day, err_t *err)
{
	store_t *s = c->s;
	char *path = hours_path(day_path);
	sqlite3 *db = NULL;
	sqlite3_stmt *sel = NULL, *ins = NULL;
	int rc = SQLITE_OK, ret = 0;
	pthread_rwlock_rdlock(&s->files_lock);
	if (local_file_ident(day_path) != ident)
		goto out; /* deleted or replaced since the view opened it: nothing to merge */
	rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
	                     NULL);
	if (rc == SQLITE_OK) {
		sqlite3_busy_timeout(db, 5000);
		rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; BEGIN IMMEDIATE",
		                  NULL, NULL, NULL);
	}
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, hours_schema, NULL, NULL, NULL);
	if (rc == SQLITE_OK && !hours_match(db, ident)) {
		char sql[200];
		snprintf(sql, sizeof sql,
		         "DELETE FROM hours; DELETE FROM days; INSERT OR REPLACE INTO meta VALUES ('format', "
		         "%d), ('ident', %lld)",
		         HOURS_FORMAT, (long long)ident);
		rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	}
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(
		    db, "SELECT n, max_local, hash FROM hours WHERE series = ?1 AND hour = ?2", -1, &sel,
		    NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO hours VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
		                        -1, &ins, NULL);
	for (uint32_t i = 0; rc == SQLITE_OK && i < c->n_pend; i++) {
		const pending_row_t *r = &c->pend[i];
		sqlite3_bind_int64(ins, 1, r->series);
		sqlite3_bind_int64(ins, 2, r->hour);
		sqlite3_bind_int64(ins, 3, r->stamp.n);
		sqlite3_bind_int64(ins, 4, r->stamp.max_local);
		sqlite3_bind_int64(ins, 5, (int64_t)r->stamp.hash);
		if (r->len == SIZE_MAX)
			sqlite3_bind_null(ins, 6);
		else
			sqlite3_bind_blob(ins, 6, c->blobs.p + r->off, (int)r->len, SQLITE_STATIC);
		rc = sqlite3_step(ins);
		sqlite3_reset(ins);
		if (rc == SQLITE_DONE)
			rc = SQLITE_OK;
	}
	if (rc == SQLITE_OK && day != INT64_MIN)
		rc = days_write(c, db, day);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	/* Copy the WAL into the file while readers go on (PASSIVE never waits
	 * for them nor makes them wait), and do not checkpoint again at close,
	 * which would take the file exclusively: a view opening it then would
	 * wait in its busy handler. */
	if (rc == SQLITE_OK)
		sqlite3_exec(db, "PRAGMA wal_checkpoint(PASSIVE)", NULL, NULL, NULL);
	if (db)
		sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
	if (rc == SQLITE_OK)
		atomic_fetch_add(&s->hours_written, c->n_pend);
out:
	sqlite3_finalize(sel);
	sqlite3_finalize(ins);
	if (rc != SQLITE_OK) {
		ret = local_sqlite_err(err, db, rc, path, "writing merged hours");
		if (local_is_damage(rc)) {
			sqlite3_close_v2(db);
			db = NULL;
			hours_discard(s, path, err->msg);
			ret = 1;
		}
	}
	if (db)
		sqlite3_close_v2(db); /* an open transaction rolls back */
	pthread_rwlock_unlock(&s->files_lock);
	free(path);
	return ret;
}

/* hours_write_once, once more when it found the file damaged (and deleted it). */
static int hours_write(compactor_t *c, const char *day_path, uint64_t ident, int64_t day, err_t *err)
{
	int rc = hours_write_once(c, day_path, ident, day, err);
	if (rc == 1)
		rc = hours_write_once(c, day_path, ident, day, err);
	return rc < 0 || rc == 1 ? -1 : 0;
}

/* Sums the chunks h[0..n) (one series and hour) into a pending row: 0, 1
 * when the day file turned out damaged (skipped), -1 with err. With base,
 * c->acc already holds the sums of the chunks that stamp covers (the
 * stored row), and only the chunks after its max_local are added. */
static int merge_run(compactor_t *c, store_view_t *v, const store_chunk_head_t *h, uint32_t n,
                     const local_hstamp_t *base, err_t *err)
{
	pending_row_t r = {.series = h[0].series, .hour = local_hour(h[0].t_ns)};
	if (base)
		r.stamp = *base;
	else
		local_hacc_clear(&c->acc);
	for (uint32_t i = 0; i < n; i++) {
		if (base && h[i].chunk_id <= base->max_local)
			continue;
		atomic_fetch_add(&c->s->hours_merged, 1);
		const store_entry_t *e;
		uint32_t ne;
		if (local_view_entries(v, 0, &h[i], &e, &ne, err) < 0)
			return -1;
		if (local_view_skipped(v, 0))
			return 1; /* damaged: the view reported it; this day is not merged */
		for (uint32_t k = 0; k < ne; k++)
			local_hacc_add(&c->acc, e[k].node, e[k].attrset, e[k].value);
		local_hstamp_add(&r.stamp, &h[i]);
	}
	uint32_t nr;
	if (local_hacc_rows(&c->acc, &c->rows, &c->cap_rows, &nr)) {
		r.len = SIZE_MAX; /* beyond int64: this hour is always read from its chunks */
	} else {
		sums_pack(c, nr);
		r.off = c->blobs.n;
		r.len = c->one.n;
		buf_append(&c->blobs, c->one.p, c->one.n);
	}
	c->pend = xgrow(c->pend, &c->cap_pend, (size_t)c->n_pend + 1, sizeof *c->pend);
	c->pend[c->n_pend++] = r;
	return 0;
}

/* Late chunks in a merged hour: when the stored row old covers exactly the
 * chunks of h[0..n) up to its max_local (chunk ids only grow), its sums
 * plus the later chunks' make the new row, and only those are decoded: a
 * backfill into a past hour costs each chunk once, not the whole hour at
 * every pass. 2 when it cannot (no row, other chunks, a row that does not
 * decode): the caller merges every chunk. Else merge_run's answer. */
static int extend_run(compactor_t *c, store_view_t *v, const store_chunk_head_t *h, uint32_t n,
                      const local_hstamp_t *old, err_t *err)
{
	if (!old)
		return 2;
	local_hstamp_t covered = {0};
	for (uint32_t i = 0; i < n; i++)
		if (h[i].chunk_id <= old->max_local)
			local_hstamp_add(&covered, &h[i]);
	if (!stamp_eq(&covered, old))
		return 2;
	local_hacc_clear(&c->acc);
	int rc = local_view_merged_hour(v, 0, h[0].series, local_hour(h[0].t_ns), old, &c->acc, err);
	if (rc <= 0)
		return rc < 0 ? -1 : 2;
	return merge_run(c, v, h, n, old, err);
}

/* Merges the hours of day file path (project, its day [from, until)) that
 * have no row with their stamp yet. */
static int compact_day(compactor_t *c, slice_t project, const char *path, int64_t from, int64_t until,
                       err_t *err)
{
	store_view_t *v;
	if (local_view_open(c->s, project, from, until, &v, err) < 0)
		return -1;
	int rc = 0;
	const store_series_t *se;
	uint32_t ns, nh;
	const store_chunk_head_t *h;
	c->n_pend = 0;
	buf_reset(&c->blobs);
	if (local_view_partitions(v) != 1 || local_view_series(v, 0, &se, &ns, err) < 0)
		goto out; /* the day went (retention) or the view failed: the next pass sees */
	uint64_t ident = local_view_ident(v, 0);
	if (!ns || !ident || local_view_skipped(v, 0))
		goto out;
	c->locals = xgrow(c->locals, &c->cap_locals, ns, sizeof *c->locals);
	for (uint32_t i = 0; i < ns; i++)
		c->locals[i] = i + 1;
	if ((rc = local_view_heads(v, 0, c->locals, ns, &h, &nh, err)) < 0 || !nh)
		goto out;
	c->heads = xgrow(c->heads, &c->cap_heads, nh, sizeof *c->heads);
	memcpy(c->heads, h, nh * sizeof *h);
	qsort(c->heads, nh, sizeof *c->heads, head_series_cmp);
	/* Which runs need merging: read the stored stamps first (a read-only look). */
	sqlite3 *ro = local_hours_open_ro(path, ident);
	sqlite3_stmt *sel = NULL;
	if (ro &&
	    sqlite3_prepare_v2(ro, "SELECT n, max_local, hash FROM hours WHERE series = ?1 AND hour = ?2", -1,
	                       &sel, NULL) != SQLITE_OK)
		sel = NULL;
	for (uint32_t i = 0, j; rc == 0 && i < nh; i = j) {
		int64_t hour = local_hour(c->heads[i].t_ns);
		local_hstamp_t st = {0};
		for (j = i; j < nh && c->heads[j].series == c->heads[i].series &&
		            local_hour(c->heads[j].t_ns) == hour;
		     j++)
			local_hstamp_add(&st, &c->heads[j]);
		local_hstamp_t old;
		int have = sel && stored_stamp(sel, c->heads[i].series, hour, &old);
		if (have && stamp_eq(&old, &st))
			continue;
		rc = extend_run(c, v, c->heads + i, j - i, have ? &old : NULL, err);
		if (rc == 2)
			rc = merge_run(c, v, c->heads + i, j - i, NULL, err);
	}
	if (rc == 1) { /* a damaged day file: nothing to merge, no error to repeat every pass */
		rc = 0;
		c->n_pend = 0;
		until = from; /* and no day rows */
	}
	sqlite3_finalize(sel);
	if (ro)
		sqlite3_close_v2(ro);
	/* A day whose every hour has passed also gets its day rows (once: the
	 * pass that first sees it whole, and whenever its chunks change). */
	int64_t day = until - from == NS_PER_DAY ? from / NS_PER_DAY : INT64_MIN;
	if (rc == 0 && (c->n_pend || day != INT64_MIN))
		rc = hours_write(c, path, ident, day, err);
out:
	local_view_close(v);
	return rc;
}

/* UTC midnight of "YYYY-MM-DD" in ns since 1970 (libc's timegm). */
static int64_t day_start_ns(const char *d)
{
	struct tm tm = {0};
	tm.tm_year = atoi(d) - 1900;
	tm.tm_mon = atoi(d + 5) - 1;
	tm.tm_mday = atoi(d + 8);
	return (int64_t)timegm(&tm) * NS_PER_SEC;
}

static local_hours_seen_t *seen_find(store_t *s, const char *path)
{
	for (uint32_t i = 0; i < s->n_hours_seen; i++)
		if (strcmp(s->hours_seen[i].path, path) == 0)
			return &s->hours_seen[i];
	s->hours_seen =
	    xgrow(s->hours_seen, &s->cap_hours_seen, (size_t)s->n_hours_seen + 1, sizeof *s->hours_seen);
	local_hours_seen_t *e = &s->hours_seen[s->n_hours_seen++];
	memset(e, 0, sizeof *e);
	e->path = xstrdup(path);
	e->until = INT64_MIN;
	return e;
}

/* Sizes and modification times of path and its -wal now; 1 when they equal e's (then nothing changed). */
static int seen_same(const char *path, local_hours_seen_t *now)
{
	struct stat a, b;
	char *wal = local_wal_path(path);
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	stat(path, &a);
	stat(wal, &b);
	free(wal);
	int64_t v[4] = {(int64_t)a.st_size, a.st_mtim.tv_sec * NS_PER_SEC + a.st_mtim.tv_nsec,
	                (int64_t)b.st_size, b.st_mtim.tv_sec * NS_PER_SEC + b.st_mtim.tv_nsec};
	int same =
	    now->db_size == v[0] && now->db_mtime == v[1] && now->wal_size == v[2] && now->wal_mtime == v[3];
	if (now->db_ino != (uint64_t)a.st_ino)
		now->until = INT64_MIN; /* another file (moved aside and made again): merged anew */
	now->db_ino = (uint64_t)a.st_ino;
	now->db_size = v[0];
	now->db_mtime = v[1];
	now->wal_size = v[2];
	now->wal_mtime = v[3];
	return same;
}

/* The days of one project directory; late_gen: hours_late_gen as the pass began. */
static int pass_project(compactor_t *c, const char *dirname, int64_t cutoff, uint64_t late_gen, err_t *err)
{
	store_t *s = c->s;
	char name[LIMIT_NAME_BYTES];
	size_t len;
	if (local_project_name(dirname, name, &len) < 0)
		return 0;
	size_t dn = strlen(s->dir) + strlen(dirname) + 2;
	char *dir = xmalloc(dn);
	snprintf(dir, dn, "%s/%s", s->dir, dirname);
	DIR *d = opendir(dir);
	if (!d) {
		free(dir);
		return 0;
	}
	int ret = 0;
	struct dirent *de;
	while ((de = readdir(d)) && !stopping(s)) {
		if (!local_name_is_day(de->d_name))
			continue;
		int64_t from = day_start_ns(de->d_name);
		int64_t until = from + NS_PER_DAY < cutoff ? from + NS_PER_DAY : cutoff;
		if (until <= from)
			continue;
		size_t pn = dn + strlen(de->d_name) + 1;
		char *path = xmalloc(pn);
		snprintf(path, pn, "%s/%s", dir, de->d_name);
		local_hours_seen_t *seen = seen_find(s, path);
		int same = seen_same(path, seen);
		/* Written since, but only past the cutoff (live profiles): the
		 * apply thread counts every commit of a profile before it. */
		if (!same && seen->until == until && seen->late_gen == late_gen)
			same = 1;
		if (!(same && seen->until == until)) {
			seen->late_gen = late_gen;
			atomic_fetch_add(&s->hours_looked, 1);
			err_t e = {0};
			if (compact_day(c, slice_make(name, len), path, from, until, &e) < 0) {
				seen->until = INT64_MIN; /* try again next pass */
				if (!ret)
					ret = err_set(err, e.status ? e.status : 500, "%s", e.msg);
			} else {
				seen->until = until;
			}
		}
		free(path);
	}
	closedir(d);
	free(dir);
	return ret;
}

int local_hours_pass(store_t *s, err_t *err)
{
	pthread_mutex_lock(&s->hours_pass_mu);
	/* Read before the cutoff: a late write committed after this is seen by the next pass. */
	uint64_t late_gen = atomic_load(&s->hours_late_gen);
	int64_t cutoff = local_hour(time_now_ns() - s->hours_margin_ns) * HOUR_NS;
	compactor_t c = {.s = s, .zc = xcheck(ZSTD_createCCtx()), .zd = xcheck(ZSTD_createDCtx())};
	local_hacc_init(&c.acc);
	buf_init(&c.raw, SIZE_MAX);
	buf_init(&c.one, SIZE_MAX);
	buf_init(&c.blobs, SIZE_MAX);
	int ret = 0;
	DIR *d = opendir(s->dir);
	struct dirent *de;
	while (d && (de = readdir(d)) && !stopping(s))
		if (de->d_name[0] != '.' && de->d_name[0] != '_' &&
		    pass_project(&c, de->d_name, cutoff, late_gen, err) < 0)
			ret = -1;
	if (d)
		closedir(d);
	local_hacc_free(&c.acc);
	free(c.rows);
	buf_free(&c.raw);
	buf_free(&c.one);
	buf_free(&c.blobs);
	free(c.tmp);
	ZSTD_freeCCtx(c.zc);
	ZSTD_freeDCtx(c.zd);
	free(c.pend);
	free(c.heads);
	free(c.locals);
	pthread_mutex_unlock(&s->hours_pass_mu);
	return ret;
}

static void hours_tick(void *arg)
{
	store_t *s = arg;
	err_t err = {0};
	if (local_hours_pass(s, &err) < 0)
		log_warn("store: merging hours failed, retried next pass", "err=\"%s\"", err.msg);
}

int local_hours_start(store_t *s, err_t *err)
{
	pthread_mutex_init(&s->hours_pass_mu, NULL);
	s->hours_margin_ns =
	    store_env_int("KILN_TEST_HOURS_MARGIN_S", LIMIT_STORE_HOURS_MARGIN_S, 0, 86400) * NS_PER_SEC;
	s->hours_pass_ms = (int)store_env_int("KILN_TEST_HOURS_MS", LIMIT_STORE_HOURS_PASS_MS, 1, 86400000);
	s->hours_inited = 1;
	/* The first pass waits too: the store has just opened (replay, the first writes). */
	return store_ticker_start(&s->hours_ticker, "kiln-hours", s->hours_pass_ms, hours_tick, s, err);
}

/* At close (no view left, the compactor stopped): the merged hours file of
 * day_path, when it has a -wal, is opened and closed once more, so that this
 * last connection copies the -wal in and deletes it and the -shm (the
 * compactor's own connections close without, for the views' sake). */
static void hours_tidy(const char *day_path)
{
	char *path = hours_path(day_path);
	char *wal = local_wal_path(path);
	sqlite3 *db = NULL;
	if (access(wal, F_OK) == 0 &&
	    sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) == SQLITE_OK)
		sqlite3_exec(db, "PRAGMA user_version", NULL, NULL, NULL); /* reads: joins the WAL */
	sqlite3_close_v2(db);
	free(wal);
	free(path);
}

void local_hours_stop(store_t *s)
{
	if (!s->hours_inited)
		return;
	store_ticker_stop(&s->hours_ticker);
	for (uint32_t i = 0; i < s->n_hours_seen; i++) {
		hours_tidy(s->hours_seen[i].path);
		free(s->hours_seen[i].path);
	}
	free(s->hours_seen);
	s->hours_seen = NULL;
	s->n_hours_seen = 0;
	pthread_mutex_destroy(&s->hours_pass_mu);
	s->hours_inited = 0;
}
