/* store/local ingestion keys (OPS: Projects and keys) and usage counters (OPS: Usage): two
 * SQLite databases beside the partitions, DATA/keys.db (SHA-256 hashes only)
 * and DATA/usage.db (counts per day, project and key). Their schema is the
 * one Kiln always wrote, so existing data directories keep working. A server
 * keeps one connection to each (store mutexes); `kiln keys` and `kiln usage`
 * open them beside it (WAL: readers and one writer at a time, busy timeout). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "store/local.h"

static const char KEYS_SCHEMA[] = "CREATE TABLE IF NOT EXISTS keys("
                                  " name TEXT PRIMARY KEY,"
                                  " project TEXT NOT NULL,"
                                  " scope TEXT NOT NULL,"
                                  " hash BLOB NOT NULL UNIQUE,"
                                  " created_ns INTEGER NOT NULL,"
                                  " revoked_ns INTEGER)";

static const char USAGE_SCHEMA[] = "CREATE TABLE IF NOT EXISTS usage("
                                   " day INTEGER NOT NULL,"
                                   " project TEXT NOT NULL,"
                                   " key TEXT NOT NULL,"
                                   " accepted INTEGER NOT NULL DEFAULT 0,"
                                   " rejected_rate_limited INTEGER NOT NULL DEFAULT 0,"
                                   " rejected_too_large INTEGER NOT NULL DEFAULT 0,"
                                   " rejected_invalid INTEGER NOT NULL DEFAULT 0,"
                                   " rejected_out_of_window INTEGER NOT NULL DEFAULT 0,"
                                   " PRIMARY KEY(day, project, key))";

enum { DB_KEYS, DB_USAGE };
static const char *const DB_FILE[] = {"keys.db", "usage.db"};
static const char *const DB_SCHEMA[] = {KEYS_SCHEMA, USAGE_SCHEMA};

/* Opens DIR/keys.db or DIR/usage.db (creating the directory and the file when
 * create is set) in WAL mode with synchronous=FULL and a busy timeout, and
 * creates its table. *db = NULL without error when !create and the file is
 * missing. 0, or -1 + err (500). */
static int db_open(store_t *s, int which, int create, sqlite3 **db, err_t *err)
{
	*db = NULL;
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", s->dir, DB_FILE[which]);
	if (!create && access(path, F_OK) != 0)
		return 0;
	if (create && local_mkdir_p(s->dir, err) < 0)
		return -1;
	int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
	if (sqlite3_open_v2(path, db, flags, NULL) != SQLITE_OK) {
		err_set(err, 500, "cannot open %s: %s", path, *db ? sqlite3_errmsg(*db) : "out of memory");
		goto fail;
	}
	sqlite3_busy_timeout(*db, 5000);
	if (sqlite3_exec(*db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", NULL, NULL, NULL) !=
	        SQLITE_OK ||
	    sqlite3_exec(*db, DB_SCHEMA[which], NULL, NULL, NULL) != SQLITE_OK) {
		err_set(err, 500, "cannot set up %s: %s", path, sqlite3_errmsg(*db));
		goto fail;
	}
	return 0;
fail:
	sqlite3_close(*db);
	*db = NULL;
	return -1;
}

/* The store's connection to keys.db / usage.db, opened on first use (its
 * mutex held). *db = NULL without error when !create and the file is missing. */
static int db_cached(store_t *s, int which, int create, sqlite3 **db, err_t *err)
{
	sqlite3 **slot = which == DB_KEYS ? &s->keys_db : &s->usage_db;
	if (!*slot && db_open(s, which, create, slot, err) < 0)
		return -1;
	*db = *slot;
	return 0;
}

int local_shared_open(store_t *s, err_t *err)
{
	pthread_mutex_init(&s->keys_mu, NULL);
	pthread_mutex_init(&s->usage_mu, NULL);
	if (s->keys_usage_only)
		return 0;
	sqlite3 *db;
	return db_cached(s, DB_KEYS, 1, &db, err) < 0 || db_cached(s, DB_USAGE, 1, &db, err) < 0 ? -1 : 0;
}

void local_shared_close(store_t *s)
{
	sqlite3_close(s->keys_db);
	sqlite3_close(s->usage_db);
	s->keys_db = s->usage_db = NULL;
	pthread_mutex_destroy(&s->keys_mu);
	pthread_mutex_destroy(&s->usage_mu);
}

static int db_error(err_t *err, int which, sqlite3 *db)
{
	return err_set(err, 500, "%s: %s", DB_FILE[which], sqlite3_errmsg(db));
}

/* ---- usage.db ---- */

int local_usage_write(store_t *s, const store_usage_row_t *rows, uint32_t n, err_t *err)
{
	if (!n)
		return 0;
	pthread_mutex_lock(&s->usage_mu);
	sqlite3 *db;
	sqlite3_stmt *st = NULL;
	int rc = db_cached(s, DB_USAGE, 1, &db, err);
	if (rc < 0)
		goto out;
	rc = -1;
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(
	        db,
	        "INSERT INTO usage VALUES(?,?,?,?,?,?,?,?) ON CONFLICT(day, project, key) DO UPDATE SET"
	        " accepted = accepted + excluded.accepted,"
	        " rejected_rate_limited = rejected_rate_limited + excluded.rejected_rate_limited,"
	        " rejected_too_large = rejected_too_large + excluded.rejected_too_large,"
	        " rejected_invalid = rejected_invalid + excluded.rejected_invalid,"
	        " rejected_out_of_window = rejected_out_of_window + excluded.rejected_out_of_window",
	        -1, &st, NULL) != SQLITE_OK)
		goto fail;
	for (uint32_t i = 0; i < n; i++) {
		const store_usage_row_t *r = &rows[i];
		sqlite3_bind_int64(st, 1, r->day);
		sqlite3_bind_text(st, 2, (const char *)r->project.p, (int)r->project.n, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, (const char *)r->key.p, (int)r->key.n, SQLITE_STATIC);
		for (int c = 0; c < 5; c++)
			sqlite3_bind_int64(st, 4 + c, (int64_t)r->counts[c]);
		if (sqlite3_step(st) != SQLITE_DONE)
			goto fail;
		sqlite3_reset(st);
	}
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK) {
		rc = 0;
		goto out;
	}
fail:
	db_error(err, DB_USAGE, db);
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&s->usage_mu);
	return rc;
}

int local_usage_read(store_t *s, slice_t project, int64_t from_day, int64_t until_day,
                     void (*cb)(const store_usage_row_t *row, void *ctx), void *ctx, err_t *err)
{
	pthread_mutex_lock(&s->usage_mu);
	sqlite3 *db;
	sqlite3_stmt *st = NULL;
	int rc = db_cached(s, DB_USAGE, 0, &db, err);
	if (rc < 0 || !db)
		goto out;
	rc = -1;
	if (sqlite3_prepare_v2(
	        db,
	        "SELECT day, project, key, accepted, rejected_rate_limited, rejected_too_large,"
	        " rejected_invalid, rejected_out_of_window FROM usage"
	        " WHERE day BETWEEN ?1 AND ?2 AND (?3 = '' OR project = ?3) ORDER BY day, project, key",
	        -1, &st, NULL) != SQLITE_OK) {
		db_error(err, DB_USAGE, db);
		goto out;
	}
	sqlite3_bind_int64(st, 1, from_day);
	sqlite3_bind_int64(st, 2, until_day);
	sqlite3_bind_text(st, 3, project.n ? (const char *)project.p : "", (int)project.n, SQLITE_STATIC);
	int step;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		store_usage_row_t r = {
		    .day = sqlite3_column_int64(st, 0),
		    .project = slice_make(sqlite3_column_text(st, 1), (size_t)sqlite3_column_bytes(st, 1)),
		    .key = slice_make(sqlite3_column_text(st, 2), (size_t)sqlite3_column_bytes(st, 2)),
		};
		for (int c = 0; c < 5; c++)
			r.counts[c] = (uint64_t)sqlite3_column_int64(st, 3 + c);
		cb(&r, ctx);
	}
	if (step == SQLITE_DONE)
		rc = 0;
	else
		db_error(err, DB_USAGE, db);
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&s->usage_mu);
	return rc;
}

/* ---- keys.db ---- */

/* Changes go through a connection of their own (closed after the change):
 * SQLite's data_version of the store's connection, which store_keys_poll
 * watches, counts only other connections' commits. */
int local_keys_create(store_t *s, const store_key_row_t *row, err_t *err)
{
	sqlite3 *db;
	if (db_open(s, DB_KEYS, 1, &db, err) < 0)
		return -1;
	sqlite3_stmt *st = NULL;
	int rc = -1;
	if (sqlite3_prepare_v2(db,
	                       "INSERT INTO keys(name, project, scope, hash, created_ns) VALUES(?,?,?,?,?)",
	                       -1, &st, NULL) != SQLITE_OK) {
		db_error(err, DB_KEYS, db);
		goto out;
	}
	sqlite3_bind_text(st, 1, (const char *)row->name.p, (int)row->name.n, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, (const char *)row->project.p, (int)row->project.n, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, (const char *)row->scope.p, (int)row->scope.n, SQLITE_STATIC);
	sqlite3_bind_blob(st, 4, row->hash.p, (int)row->hash.n, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, row->created_ns);
	int step = sqlite3_step(st);
	if (step == SQLITE_CONSTRAINT)
		err_set(err, 400, "a key named '%.*s' already exists (names are unique across projects)",
		        (int)row->name.n, (const char *)row->name.p);
	else if (step != SQLITE_DONE)
		db_error(err, DB_KEYS, db);
	else
		rc = 0;
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc;
}

int local_keys_revoke(store_t *s, slice_t name, int64_t now_ns, err_t *err)
{
	sqlite3 *db;
	if (db_open(s, DB_KEYS, 0, &db, err) < 0)
		return -1;
	if (!db)
		return err_set(err, 404, "no key named '%.*s' (no keys.db in %s)", (int)name.n,
		               (const char *)name.p, s->dir);
	sqlite3_stmt *st = NULL;
	int rc = -1;
	if (sqlite3_prepare_v2(db,
	                       "UPDATE keys SET revoked_ns = coalesce(revoked_ns, ?) WHERE name = ? "
	                       "RETURNING revoked_ns = ?",
	                       -1, &st, NULL) != SQLITE_OK) {
		db_error(err, DB_KEYS, db);
		goto out;
	}
	sqlite3_bind_int64(st, 1, now_ns);
	sqlite3_bind_text(st, 2, (const char *)name.p, (int)name.n, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, now_ns);
	int step = sqlite3_step(st);
	if (step == SQLITE_ROW) {
		rc = sqlite3_column_int(st, 0) ? 0 : 1;
		step = sqlite3_step(st);
	} else if (step == SQLITE_DONE) {
		err_set(err, 404, "no key named '%.*s'", (int)name.n, (const char *)name.p);
		goto out;
	}
	if (step != SQLITE_DONE) {
		db_error(err, DB_KEYS, db);
		rc = -1;
	}
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc;
}

/* Every row of keys.db in one read transaction (keys_mu held). */
static int keys_rows(sqlite3 *db, void (*cb)(const store_key_row_t *row, void *ctx), void *ctx, err_t *err)
{
	sqlite3_stmt *st = NULL;
	int rc = -1;
	sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
	if (sqlite3_prepare_v2(
	        db,
	        "SELECT name, project, scope, hash, created_ns, revoked_ns FROM keys ORDER BY project, name",
	        -1, &st, NULL) != SQLITE_OK) {
		db_error(err, DB_KEYS, db);
		goto out;
	}
	int step;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		const unsigned char *name = sqlite3_column_text(st, 0), *project = sqlite3_column_text(st, 1);
		if (!name || !project) /* NOT NULL columns: only a damaged file has these */
			continue;
		store_key_row_t r = {
		    .name = slice_make(name, (size_t)sqlite3_column_bytes(st, 0)),
		    .project = slice_make(project, (size_t)sqlite3_column_bytes(st, 1)),
		    .scope = slice_make(sqlite3_column_text(st, 2), (size_t)sqlite3_column_bytes(st, 2)),
		    .hash = slice_make(sqlite3_column_blob(st, 3), (size_t)sqlite3_column_bytes(st, 3)),
		    .created_ns = sqlite3_column_int64(st, 4),
		    .revoked_ns = sqlite3_column_int64(st, 5),
		};
		cb(&r, ctx);
	}
	if (step == SQLITE_DONE)
		rc = 0;
	else
		db_error(err, DB_KEYS, db);
out:
	sqlite3_finalize(st);
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	return rc;
}

int local_keys_read(store_t *s, void (*cb)(const store_key_row_t *row, void *ctx), void *ctx, err_t *err)
{
	pthread_mutex_lock(&s->keys_mu);
	sqlite3 *db;
	int rc = db_cached(s, DB_KEYS, 0, &db, err);
	if (rc == 0 && db)
		rc = keys_rows(db, cb, ctx, err);
	pthread_mutex_unlock(&s->keys_mu);
	return rc;
}

int local_keys_poll(store_t *s, int64_t *stamp, void (*cb)(const store_key_row_t *row, void *ctx), void *ctx,
                    err_t *err)
{
	pthread_mutex_lock(&s->keys_mu);
	sqlite3 *db;
	sqlite3_stmt *st = NULL;
	int64_t version = -1;
	int rc = db_cached(s, DB_KEYS, 1, &db, err);
	if (rc == 0 && sqlite3_prepare_v2(db, "PRAGMA data_version", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		version = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (rc == 0 && version < 0)
		rc = db_error(err, DB_KEYS, db);
	/* The stamp is data_version + 1 (never 0), set only after a good read. */
	if (rc == 0 && *stamp == version + 1)
		rc = 0;
	else if (rc == 0 && (rc = keys_rows(db, cb, ctx, err)) == 0) {
		*stamp = version + 1;
		rc = 1;
	}
	pthread_mutex_unlock(&s->keys_mu);
	return rc;
}
