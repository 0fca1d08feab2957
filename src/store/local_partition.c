/* store/local partitions on the writer side: opening DIR/<project>/<day>.db
 * (schema, pragmas, prepared statements), the LRU of open files, the
 * id -> local id caches, and writing one batch's profiles into one partition
 * inside a transaction. Does not decide grouping or commit order (local_writer.c)
 * and never reads chunks back (local_view.c). Writer thread only. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "store/local.h"

static const char *const table_name[LT_COUNT] = {"frames", "nodes", "attrsets", "series"};

/* The tables of both formats; then format 1's nodes table or format 2's
 * node runs (docs/STORE.md, Files). */
static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER);"
    "CREATE TABLE IF NOT EXISTS frames(local INTEGER PRIMARY KEY, id INTEGER NOT NULL UNIQUE, name TEXT,"
    " file TEXT, binary TEXT, build_id TEXT, kind TEXT, unsym INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS attrsets(local INTEGER PRIMARY KEY, id INTEGER NOT NULL UNIQUE,"
    " labels BLOB NOT NULL);"
    "CREATE TABLE IF NOT EXISTS series(local INTEGER PRIMARY KEY, id INTEGER NOT NULL UNIQUE, service TEXT,"
    " type TEXT, period_type TEXT, period_unit TEXT, period INTEGER, aggregation INTEGER,"
    " cpu_alias INTEGER, labels BLOB NOT NULL);"
    "CREATE TABLE IF NOT EXISTS payloads(local INTEGER PRIMARY KEY, hash BLOB NOT NULL UNIQUE,"
    " data BLOB NOT NULL);"
    "CREATE TABLE IF NOT EXISTS chunks(local INTEGER PRIMARY KEY, series INTEGER NOT NULL,"
    " t_ns INTEGER NOT NULL, duration_ns INTEGER NOT NULL, n_entries INTEGER NOT NULL,"
    " total INTEGER NOT NULL, scale INTEGER NOT NULL, payload INTEGER NOT NULL);"
    "CREATE INDEX IF NOT EXISTS chunks_series_t ON chunks(series, t_ns);";
static const char schema1_sql[] =
    "INSERT OR IGNORE INTO meta VALUES('format', 1);"
    "CREATE TABLE IF NOT EXISTS nodes(local INTEGER PRIMARY KEY, id INTEGER NOT NULL UNIQUE,"
    " parent INTEGER NOT NULL, frame INTEGER NOT NULL);";
static const char schema2_sql[] =
    "INSERT OR IGNORE INTO meta VALUES('format', 2);"
    "CREATE TABLE IF NOT EXISTS node_runs(first INTEGER PRIMARY KEY, n INTEGER NOT NULL,"
    " data BLOB NOT NULL);"
    "CREATE TABLE IF NOT EXISTS blocks(local INTEGER PRIMARY KEY, series INTEGER NOT NULL,"
    " hour INTEGER NOT NULL, head BLOB NOT NULL, data BLOB NOT NULL);"
    "CREATE INDEX IF NOT EXISTS chunks_open ON chunks(payload) WHERE payload > 0;";

/* The span index (API: Span links), also created in format-1 files written before it
 * existed (no backfill). span/trace: hex as bytes, other strings as text
 * (local_span_key); trace NULL when the attribute set has none. */
static const char spans_sql[] =
    "CREATE TABLE IF NOT EXISTS spans(span BLOB NOT NULL, trace BLOB, chunk INTEGER NOT NULL,"
    " attrset INTEGER NOT NULL, PRIMARY KEY(span, chunk, attrset)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS spans_trace ON spans(trace) WHERE trace IS NOT NULL;";

int local_sqlite_err(err_t *err, sqlite3 *db, int rc, const char *path, const char *what)
{
	int st = 500;
	switch (rc & 0xff) {
	case SQLITE_FULL:
	case SQLITE_IOERR:
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
	case SQLITE_CANTOPEN:
	case SQLITE_NOMEM:
	case SQLITE_CORRUPT: /* the writer moves the file aside: a retry goes to a fresh one */
	case SQLITE_NOTADB:
		st = 503;
		break;
	default:
		break;
	}
	err_set(err, st, "store: %s failed on %s: %s", what, path,
	        db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
	if (err && st == 503)
		err->retry_after = 5;
	return -1;
}

int local_schema_init(sqlite3 *db, int format)
{
	/* Format 2: the pages sealing frees (payloads moved into blocks) go back
	 * to the file system (local_part_seal runs PRAGMA incremental_vacuum);
	 * it takes effect only before the first table. */
	int rc =
	    format == 1 ? SQLITE_OK : sqlite3_exec(db, "PRAGMA auto_vacuum = INCREMENTAL", NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, schema_sql, NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, format == 1 ? schema1_sql : schema2_sql, NULL, NULL, NULL);
	return rc == SQLITE_OK ? sqlite3_exec(db, spans_sql, NULL, NULL, NULL) : rc;
}

int local_node_runs_load(sqlite3 *db, uint32_t max_node, uint32_t max_frame, uint32_t *parent,
                         uint32_t *frame, const char **what)
{
	sqlite3_stmt *st;
	*what = NULL;
	int rc = sqlite3_prepare_v2(db, "SELECT first, n, data FROM node_runs ORDER BY first", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return rc;
	uint32_t next = 1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t first = sqlite3_column_int64(st, 0), n = sqlite3_column_int64(st, 1);
		if (first != next || n < 1 || n > (int64_t)max_node - first + 1) {
			*what = "node runs are not dense";
			break;
		}
		slice_t data = slice_make(sqlite3_column_blob(st, 2), (size_t)sqlite3_column_bytes(st, 2));
		if (local_node_run_decode(data, next, (uint32_t)n, max_frame, parent, frame, what) < 0)
			break;
		next += (uint32_t)n;
	}
	sqlite3_finalize(st);
	if (!*what && rc == SQLITE_DONE && next != max_node + 1)
		*what = "node runs are not dense";
	return *what ? SQLITE_DONE : rc;
}

char *local_wal_path(const char *path)
{
	size_t n = strlen(path) + sizeof "-wal";
	char *wal = xmalloc(n);
	snprintf(wal, n, "%s-wal", path);
	return wal;
}

void local_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/* ---- caches ---- */

static size_t part_cache_len(const local_part_t *p)
{
	size_t n = 0;
	for (int t = 0; t < LT_COUNT; t++)
		n += p->cache[t].len;
	return n;
}

/* Format 2 has no index on node ids: the writer needs every (id, local)
 * of the partition's nodes in memory to find them. */
static int cache_required(const local_part_t *p, int t)
{
	return p->format >= 2 && t == LT_NODE;
}

static void drop_cache(store_t *s, local_part_t *p, int t)
{
	s->cache_entries -= p->cache[t].len;
	u64map_free(&p->cache[t]);
	p->complete[t] = 0;
}

/* A dropped required map is loaded again before the next write (local_part_write). */
static void part_drop_caches(store_t *s, local_part_t *p)
{
	for (int t = 0; t < LT_COUNT; t++)
		drop_cache(s, p, t);
}

/* Drops the caches of the least recently used partitions other than keep
 * until at most target entries are cached; keep's own go last, when the
 * others are not enough. Those partitions go on with SELECT lookups
 * (complete = 0). */
static void caches_evict(store_t *s, const local_part_t *keep, size_t target)
{
	while (s->cache_entries > target) {
		local_part_t *victim = NULL;
		for (uint32_t i = 0; i < s->n_parts; i++) {
			local_part_t *q = s->parts[i];
			if (q != keep && (!victim || q->last_use < victim->last_use) && part_cache_len(q))
				victim = q;
		}
		if (!victim)
			return;
		part_drop_caches(s, victim);
	}
}

/* The SQLite page cache of one writer connection: LIMIT_STORE_PAGE_CACHE
 * shared by the LRU's partitions, at least 64 KiB (the b-trees' upper
 * pages), at most SQLite's default 2,000 KiB. */
static int part_cache_size(store_t *s, local_part_t *p, err_t *err)
{
	uint32_t kib = LIMIT_STORE_PAGE_CACHE / 1024 / (s->open_max ? s->open_max : 1);
	kib = kib < 64 ? 64 : kib > 2000 ? 2000 : kib;
	char sql[48];
	snprintf(sql, sizeof sql, "PRAGMA cache_size = -%u", kib);
	int rc = sqlite3_exec(p->db, sql, NULL, NULL, NULL);
	return rc == SQLITE_OK ? 0 : local_sqlite_err(err, p->db, rc, p->path, "setting the cache size");
}

/* Format 2: every node's (id, local) into the cache, from node_runs and
 * the frames' ids (read before: the frames table is part_load's first). */
static int node_map_load(store_t *s, local_part_t *p, err_t *err)
{
	drop_cache(s, p, LT_NODE);
	uint32_t max_frame = p->next[LT_FRAME] - 1, max_node = p->next[LT_NODE] - 1;
	uint64_t *fid = xcalloc((size_t)max_frame + 1, sizeof *fid);
	uint32_t *parent = xcalloc((size_t)max_node + 1, sizeof *parent);
	uint32_t *frame = xcalloc((size_t)max_node + 1, sizeof *frame);
	uint64_t *id = xcalloc((size_t)max_node + 1, sizeof *id);
	const char *what = NULL;
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(p->db, "SELECT local, id FROM frames", -1, &st, NULL);
	if (rc == SQLITE_OK)
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			int64_t local = sqlite3_column_int64(st, 0);
			if (local < 1 || local > (int64_t)max_frame) {
				what = "frame ids out of range";
				break;
			}
			fid[local] = (uint64_t)sqlite3_column_int64(st, 1);
		}
	sqlite3_finalize(st);
	st = NULL;
	if (!what && rc == SQLITE_DONE)
		rc = local_node_runs_load(p->db, max_node, max_frame, parent, frame, &what);
	int ret = 0;
	if (what) { /* moved aside as SQLite's corruption is (part_open, local_parts_drop_damaged) */
		p->damaged = 1;
		ret = err_set(err, 500, "store: %s is damaged: %s", p->path, what);
	} else if (rc != SQLITE_DONE) {
		ret = local_sqlite_err(err, p->db, rc, p->path, "reading node runs");
	} else {
		local_node_ids(parent, frame, fid, 1, max_node, id);
		for (uint32_t k = 1; k <= max_node; k++)
			u64map_put(&p->cache[LT_NODE], id[k], k);
		s->cache_entries += p->cache[LT_NODE].len;
		p->complete[LT_NODE] = 1;
	}
	free(fid);
	free(parent);
	free(frame);
	free(id);
	return ret;
}

/* Reads next local ids, and every (id, local) when they fit in the cache
 * budget: the partition being loaded is the most recently used, so the
 * least recently used others give their caches up for it. */
static int part_load(store_t *s, local_part_t *p, err_t *err)
{
	part_drop_caches(s, p);
	if (part_cache_size(s, p, err) < 0)
		return -1;
	for (int t = 0; t < LT_COUNT; t++) {
		char sql[128];
		sqlite3_stmt *st;
		if (cache_required(p, t))
			snprintf(
			    sql, sizeof sql,
			    "SELECT coalesce(max(first + n - 1), 0), coalesce(sum(n), 0) FROM node_runs");
		else
			snprintf(sql, sizeof sql, "SELECT coalesce(max(local), 0), count(*) FROM %s",
			         table_name[t]);
		int rc = sqlite3_prepare_v2(p->db, sql, -1, &st, NULL);
		if (rc != SQLITE_OK)
			return local_sqlite_err(err, p->db, rc, p->path, "reading ids");
		rc = sqlite3_step(st);
		int64_t max = sqlite3_column_int64(st, 0), count = sqlite3_column_int64(st, 1);
		sqlite3_finalize(st);
		if (rc != SQLITE_ROW)
			return local_sqlite_err(err, p->db, rc, p->path, "reading ids");
		if (max < 0 || max >= (int64_t)UINT32_MAX - 1)
			return err_set(err, 500, "store: %s: %s ids out of range", p->path, table_name[t]);
		p->next[t] = (uint32_t)max + 1;
		if (cache_required(p, t)) {
			caches_evict(s, p,
			             s->cache_budget > (size_t)count ? s->cache_budget - (size_t)count : 0);
			if (node_map_load(s, p, err) < 0)
				return -1;
			continue;
		}
		if ((size_t)count > s->cache_budget)
			continue;
		caches_evict(s, p, s->cache_budget - (size_t)count);
		if (s->cache_entries + (size_t)count > s->cache_budget)
			continue; /* p's own tables already loaded fill the budget */
		snprintf(sql, sizeof sql, "SELECT id, local FROM %s", table_name[t]);
		if ((rc = sqlite3_prepare_v2(p->db, sql, -1, &st, NULL)) != SQLITE_OK)
			return local_sqlite_err(err, p->db, rc, p->path, "reading ids");
		while ((rc = sqlite3_step(st)) == SQLITE_ROW)
			u64map_put(&p->cache[t], (uint64_t)sqlite3_column_int64(st, 0),
			           (uint32_t)sqlite3_column_int64(st, 1));
		sqlite3_finalize(st);
		if (rc != SQLITE_DONE)
			return local_sqlite_err(err, p->db, rc, p->path, "reading ids");
		s->cache_entries += p->cache[t].len;
		p->complete[t] = 1;
	}
	return 0;
}

/* Over budget, the least recently used partitions' caches go until 1/8 of
 * the budget is free, so that eviction (a scan of the open partitions) runs
 * once per many inserts, not on each. */
static void cache_add(store_t *s, local_part_t *p, int t, uint64_t id, uint32_t local)
{
	if (s->cache_entries >= s->cache_budget)
		caches_evict(s, p, s->cache_budget - s->cache_budget / 8);
	if (s->cache_entries >= s->cache_budget) /* p alone fills it: all but what p's writes need */
		for (int k = 0; k < LT_COUNT; k++)
			if (!cache_required(p, k))
				drop_cache(s, p, k);
	int inserted = 0;
	u64map_get_or_put(&p->cache[t], id, local, &inserted);
	s->cache_entries += (size_t)inserted;
}

/* 1 with *local set when id is in the partition, 0 when not, -1 on error. */
static int lookup(local_part_t *p, int t, uint64_t id, uint32_t *local, err_t *err)
{
	if (u64map_get(&p->cache[t], id, local))
		return 1;
	if (p->complete[t])
		return 0;
	if (!p->sel[t]) /* a required map dropped during a write: never (cache_add keeps it) */
		return err_set(err, 500, "store: %s: %s map not loaded", p->path, table_name[t]);
	sqlite3_stmt *st = p->sel[t];
	sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
	int rc = sqlite3_step(st);
	int found = rc == SQLITE_ROW;
	if (found)
		*local = (uint32_t)sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return local_sqlite_err(err, p->db, rc, p->path, "lookup");
	return found;
}

/* Runs an insert statement whose parameters are bound, resets it. */
static int run_insert(local_part_t *p, sqlite3_stmt *st, err_t *err)
{
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE)
		return local_sqlite_err(err, p->db, rc, p->path, "insert");
	return 0;
}

static void bind_slice(sqlite3_stmt *st, int i, slice_t v)
{
	sqlite3_bind_text(st, i, v.n ? (const char *)v.p : "", (int)v.n, SQLITE_STATIC);
}

/* Assigns the next local id of table t to id, after the caller bound the row's other columns. */
static int insert_row(store_t *s, local_part_t *p, int t, uint64_t id, uint32_t *local, err_t *err)
{
	sqlite3_stmt *st = p->ins[t];
	sqlite3_bind_int64(st, 1, p->next[t]);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)id);
	if (run_insert(p, st, err) < 0)
		return -1;
	*local = p->next[t]++;
	cache_add(s, p, t, id, *local);
	return 0;
}

/* ---- open / close / LRU ---- */

/* The writer's connections: WAL with no sync at all (synchronous=OFF: the
 * store's log is the durable copy and the checkpointer syncs partitions
 * behind it with a connection of its own, local_log.c; NORMAL would also
 * fsync the -wal's header each time the writer starts it over after a
 * checkpoint, on the apply thread), no automatic checkpoint on COMMIT or
 * close. After a crash a partition holds what its last synced state and
 * whole SQLite frames give, with the applied_lsn of that state, and replay
 * writes the rest. */
/* Bytes of a partition's -wal kept after it is started over (SQLite's journal_size_limit). */
#define LOCAL_WAL_KEEP "4194304"

/* SQLite's WAL hook: after each commit, the frames the -wal now holds
 * (the checkpointer copies it into the file past LOCAL_CKPT_COPY_FRAMES). */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	(void)db;
	(void)name;
	((local_part_t *)arg)->wal_frames = frames > 0 ? (uint32_t)frames : 0;
	return SQLITE_OK;
}

static int set_pragmas(sqlite3 *db)
{
	sqlite3_busy_timeout(db, 5000);
	sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
	/* journal_size_limit: a -wal that a burst grew is cut back when the writer
	 * starts it over after a checkpoint, so an idle day does not keep
	 * (and a restart does not index) a burst's worth of frames. */
	return sqlite3_exec(db,
	                    "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; PRAGMA "
	                    "wal_autocheckpoint=0; PRAGMA journal_size_limit=" LOCAL_WAL_KEEP ";",
	                    NULL, NULL, NULL);
}

/* The bytes of an empty partition: the schema, made once by SQLite in memory
 * and serialized, marked as a WAL database (file format bytes 18 and 19 are
 * 2, SQLite's file format) so the writer's first open changes nothing. */
static int part_template(store_t *s, err_t *err)
{
	sqlite3 *db = NULL;
	int rc = sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc == SQLITE_OK)
		rc = local_schema_init(db, s->part_format);
	sqlite3_int64 n = 0;
	unsigned char *bytes = rc == SQLITE_OK ? sqlite3_serialize(db, "main", &n, 0) : NULL;
	if (!bytes || n < 100) {
		local_sqlite_err(err, db, rc == SQLITE_OK ? SQLITE_NOMEM : rc,
		                 ":memory:", "making the partition template");
		sqlite3_free(bytes);
		sqlite3_close_v2(db);
		return -1;
	}
	sqlite3_close_v2(db);
	bytes[18] = bytes[19] = 2;
	s->part_tmpl = xmalloc((size_t)n);
	memcpy(s->part_tmpl, bytes, (size_t)n);
	s->part_tmpl_len = (size_t)n;
	s->part_tmpl_format = s->part_format;
	sqlite3_free(bytes);
	return 0;
}

/* Creates a partition file: the template's bytes under a temporary name,
 * renamed into place, so a reader never lists a file without tables. No
 * fsync here: every row the file will get is in the store's log until the
 * checkpointer has synced the file and then its directory (local_log_fresh);
 * a file a crash left empty is made again (part_open) and replay refills it. */
static int part_create(store_t *s, const char *path, const char *pdir, err_t *err)
{
	if (s->part_tmpl && s->part_tmpl_format != s->part_format) {
		free(s->part_tmpl);
		s->part_tmpl = NULL;
	}
	if (!s->part_tmpl && part_template(s, err) < 0)
		return -1;
	size_t n = strlen(path) + 8;
	char *tmp = xmalloc(n);
	snprintf(tmp, n, "%s.new", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int rc = fd >= 0 ? fd_write_all(fd, s->part_tmpl, s->part_tmpl_len, 0) : -1;
	int e = errno;
	if (fd >= 0 && close(fd) != 0 && rc == 0)
		rc = -1, e = errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -1, e = errno;
	if (rc != 0) {
		err_set(err, e == ENOSPC || e == EDQUOT ? 503 : 500, "store: cannot create %s: %s", path,
		        strerror(e));
		if (err && err->status == 503)
			err->retry_after = 5;
		unlink(tmp);
		free(tmp);
		return -1;
	}
	free(tmp);
	if (s->sync) {
		local_log_fresh(s, path);
		local_log_fresh(s, pdir);
	}
	return 0;
}

static void part_close(store_t *s, local_part_t *p)
{
	local_part_t **set = s->part_slot[p->key % LOCAL_PART_SETS];
	for (uint32_t w = 0; w < LOCAL_PART_WAYS; w++)
		if (set[w] == p)
			set[w] = NULL;
	part_drop_caches(s, p);
	for (int t = 0; t < LT_COUNT; t++) {
		sqlite3_finalize(p->ins[t]);
		sqlite3_finalize(p->sel[t]);
	}
	sqlite3_finalize(p->ins_chunk);
	sqlite3_finalize(p->sel_payload);
	sqlite3_finalize(p->ins_payload);
	sqlite3_finalize(p->ins_span);
	sqlite3_finalize(p->set_applied);
	sqlite3_finalize(p->begin);
	sqlite3_finalize(p->commit);
	sqlite3_finalize(p->ins_run);
	buf_free(&p->run);
	sqlite3_close_v2(p->db);
	free(p->path);
	free(p->proj);
	free(p);
}

static int part_prepare(local_part_t *p, err_t *err)
{
	static const char *const ins_sql[LT_COUNT] = {
	    "INSERT INTO frames VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	    "INSERT INTO nodes VALUES(?1, ?2, ?3, ?4)",
	    "INSERT INTO attrsets VALUES(?1, ?2, ?3)",
	    "INSERT INTO series VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
	};
	int rc = SQLITE_OK;
	for (int t = 0; t < LT_COUNT && rc == SQLITE_OK; t++) {
		if (cache_required(p, t))
			continue; /* format 2's nodes: node_runs, the map in memory */
		char sql[96];
		snprintf(sql, sizeof sql, "SELECT local FROM %s WHERE id = ?1", table_name[t]);
		rc = sqlite3_prepare_v3(p->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &p->sel[t], NULL);
		if (rc == SQLITE_OK)
			rc = sqlite3_prepare_v3(p->db, ins_sql[t], -1, SQLITE_PREPARE_PERSISTENT, &p->ins[t],
			                        NULL);
	}
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v3(
		    p->db,
		    "INSERT INTO chunks(series, t_ns, duration_ns, n_entries, total, scale, payload)"
		    " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
		    -1, SQLITE_PREPARE_PERSISTENT, &p->ins_chunk, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v3(p->db, "SELECT local FROM payloads WHERE hash = ?1", -1,
		                        SQLITE_PREPARE_PERSISTENT, &p->sel_payload, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v3(p->db, "INSERT INTO payloads(hash, data) VALUES(?1, ?2)", -1,
		                        SQLITE_PREPARE_PERSISTENT, &p->ins_payload, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v3(
		    p->db, "INSERT INTO spans(span, trace, chunk, attrset) VALUES(?1, ?2, ?3, ?4)", -1,
		    SQLITE_PREPARE_PERSISTENT, &p->ins_span, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v3(
		    p->db, "INSERT OR REPLACE INTO meta VALUES('applied_lsn', ?1), ('applied_log', ?2)", -1,
		    SQLITE_PREPARE_PERSISTENT, &p->set_applied, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v3(p->db, "BEGIN IMMEDIATE", -1, SQLITE_PREPARE_PERSISTENT, &p->begin,
		                        NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v3(p->db, "COMMIT", -1, SQLITE_PREPARE_PERSISTENT, &p->commit, NULL);
	if (rc == SQLITE_OK && p->format >= 2)
		rc = sqlite3_prepare_v3(p->db, "INSERT INTO node_runs VALUES(?1, ?2, ?3)", -1,
		                        SQLITE_PREPARE_PERSISTENT, &p->ins_run, NULL);
	if (rc != SQLITE_OK)
		return local_sqlite_err(err, p->db, rc, p->path, "preparing statements");
	return 0;
}

/* Checks meta.format and reads meta.applied_lsn (absent in files written
 * before the store's log: 0), which counts only when meta.applied_log is
 * the id of the store's log (absent: 0, a log from before ids): positions
 * in a log that was deleted say nothing about the new one. */
static int part_read_meta(const store_t *s, local_part_t *p, err_t *err)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(
	    p->db, "SELECT key, value FROM meta WHERE key IN ('format', 'applied_lsn', 'applied_log')", -1,
	    &st, NULL);
	if (rc != SQLITE_OK)
		return local_sqlite_err(err, p->db, rc, p->path, "reading the format");
	int64_t format = -1;
	uint64_t log = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *k = (const char *)sqlite3_column_text(st, 0);
		if (k && !strcmp(k, "format"))
			format = sqlite3_column_int64(st, 1);
		else if (k && !strcmp(k, "applied_log"))
			log = (uint64_t)sqlite3_column_int64(st, 1);
		else
			p->applied_lsn = (uint64_t)sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return local_sqlite_err(err, p->db, rc, p->path, "reading the format");
	if (log != (s->wal ? local_wal_id(s->wal) : 0))
		p->applied_lsn = 0;
	p->committed_lsn = p->applied_lsn;
	if (format < LOCAL_FORMAT_MIN || format > LOCAL_FORMAT)
		return err_set(err, 500, "store: %s has partition format %lld, this Kiln writes %d to %d",
		               p->path, (long long)format, LOCAL_FORMAT_MIN, LOCAL_FORMAT);
	p->format = (int)format;
	return 0;
}

/* DIR/PROJ/YYYY-MM-DD.db, malloc'd. */
static char *part_path(const store_t *s, const char *proj_dir, int64_t day)
{
	char day_s[11];
	time_day_str(day, day_s);
	size_t n = strlen(s->dir) + strlen(proj_dir) + 24;
	char *path = xmalloc(n);
	snprintf(path, n, "%s/%s/%s.db", s->dir, proj_dir, day_s);
	return path;
}

/* Does path have a -wal? */
static int part_has_wal(const char *path)
{
	char *wal = local_wal_path(path);
	int there = access(wal, F_OK) == 0;
	free(wal);
	return there;
}

/* Opens (creating when missing) the partition of (proj_dir, day). NULL with
 * err on failure; *damage is then 1 when SQLite found the file corrupt. */
static local_part_t *part_open(store_t *s, const char *proj_dir, int64_t day, int *damage, err_t *err)
{
	*damage = 0;
	local_part_t *p = xcalloc(1, sizeof *p);
	buf_init(&p->run, SIZE_MAX);
	p->proj = xstrdup(proj_dir);
	p->day = day;
	size_t n = strlen(s->dir) + strlen(proj_dir) + 2;
	char *pdir = xmalloc(n);
	snprintf(pdir, n, "%s/%s", s->dir, proj_dir);
	p->path = part_path(s, proj_dir, day);

	if (mkdir(pdir, 0755) == 0) {
		if (s->sync)
			local_log_fresh(s, s->dir); /* synced by the next checkpoint, as the file */
	} else if (errno != EEXIST) {
		err_set(err, errno == ENOSPC ? 503 : 500, "store: cannot create %s: %s", pdir,
		        strerror(errno));
		if (err && errno == ENOSPC)
			err->retry_after = 5;
		goto fail;
	}
	struct stat stbuf;
	/* Empty: made by part_create just before a crash, before the checkpointer synced it. */
	int made = stat(p->path, &stbuf) != 0 || stbuf.st_size == 0;
	if (made && part_create(s, p->path, pdir, err) < 0)
		goto fail;
	/* A -wal SQLite makes now is named in pdir: the checkpointer syncs pdir
	 * (a round may sync only the -wal's data, sync_wal). part_create listed
	 * it already. */
	if (s->sync && !made && !part_has_wal(p->path))
		local_log_fresh(s, pdir);
	int rc = sqlite3_open_v2(p->path, &p->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK || (rc = set_pragmas(p->db)) != SQLITE_OK) {
		local_sqlite_err(err, p->db, rc, p->path, "opening");
		goto fail;
	}
	sqlite3_wal_hook(p->db, wal_hook, p);
	if (part_read_meta(s, p, err) < 0)
		goto fail;
	if ((rc = sqlite3_exec(p->db, spans_sql, NULL, NULL, NULL)) != SQLITE_OK) {
		local_sqlite_err(err, p->db, rc, p->path, "creating the span index");
		goto fail;
	}
	if (part_prepare(p, err) < 0 || part_load(s, p, err) < 0)
		goto fail;
	free(pdir);
	return p;
fail:
	free(pdir);
	*damage = p->damaged || (p->db && local_is_damage(sqlite3_extended_errcode(p->db)));
	part_close(s, p);
	return NULL;
}

static local_part_t *part_get(store_t *s, const char *proj_dir, int64_t day, int existing, err_t *err)
{
	uint64_t key = hash_bytes(proj_dir, strlen(proj_dir), (uint64_t)day);
	local_part_t **set = s->part_slot[key % LOCAL_PART_SETS];
	for (uint32_t w = 0; w < LOCAL_PART_WAYS; w++)
		if (set[w] && set[w]->key == key && set[w]->day == day &&
		    strcmp(set[w]->proj, proj_dir) == 0) {
			set[w]->last_use = ++s->tick;
			return set[w];
		}
	/* Not in its set: the way it will take (an empty one, else the least recently used). */
	local_part_t **slot = &set[0];
	for (uint32_t w = 0; w < LOCAL_PART_WAYS && *slot; w++)
		if (!set[w] || set[w]->last_use < (*slot)->last_use)
			slot = &set[w];
	for (uint32_t i = 0; i < s->n_parts; i++)
		if (s->parts[i]->key == key && s->parts[i]->day == day &&
		    strcmp(s->parts[i]->proj, proj_dir) == 0) {
			s->parts[i]->last_use = ++s->tick;
			*slot = s->parts[i];
			return s->parts[i];
		}
	if (existing) {
		char *path = part_path(s, proj_dir, day);
		int there = access(path, F_OK) == 0;
		free(path);
		if (!there)
			return NULL;
	}
	int damage;
	local_part_t *p = part_open(s, proj_dir, day, &damage, err);
	if (!p && damage && !existing) {
		/* Ingestion goes on in a fresh file; the damaged one is kept aside. */
		char *path = part_path(s, proj_dir, day);
		if (local_quarantine(s, path, err->msg) == 0)
			p = part_open(s, proj_dir, day, &damage, err);
		free(path);
	}
	if (!p)
		return NULL;
	p->key = key;
	p->last_use = ++s->tick;
	*slot = p;
	s->part_opens++;
	s->parts = xgrow(s->parts, &s->cap_parts, (size_t)s->n_parts + 1, sizeof *s->parts);
	s->parts[s->n_parts++] = p;
	return p;
}

local_part_t *local_part_get(store_t *s, const char *proj_dir, int64_t day, err_t *err)
{
	return part_get(s, proj_dir, day, 0, err);
}

local_part_t *local_part_get_existing(store_t *s, const char *proj_dir, int64_t day, err_t *err)
{
	return part_get(s, proj_dir, day, 1, err);
}

void local_parts_init(store_t *s)
{
	s->cache_budget = LIMIT_STORE_CACHE;
	s->part_format = LOCAL_FORMAT;
	s->open_max = LIMIT_STORE_OPEN_PARTS;
	if (s->keys_usage_only)
		return;
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	rlim_t hard = rl.rlim_max == RLIM_INFINITY ? (rlim_t)1 << 20 : rl.rlim_max; /* Linux's nr_open */
	if (rl.rlim_cur == RLIM_INFINITY)
		rl.rlim_cur = hard;
	else if (rl.rlim_cur < hard && setrlimit(RLIMIT_NOFILE, &(struct rlimit){hard, rl.rlim_max}) == 0)
		rl.rlim_cur = hard;
	uint64_t nofile = (uint64_t)rl.rlim_cur;
	uint64_t reserve = nofile / 4 > LIMIT_STORE_FD_RESERVE ? nofile / 4 : LIMIT_STORE_FD_RESERVE;
	/* 3 fds per open partition (.db, -wal, -shm), and one SQLite may keep
	 * after a checkpointer connection closed while the writer held a lock. */
	uint64_t n = nofile > reserve ? (nofile - reserve) / 4 : 0;
	if (n >= LIMIT_STORE_OPEN_PARTS)
		return;
	s->open_max = n > LIMIT_STORE_OPEN_PARTS_MIN ? (uint32_t)n : LIMIT_STORE_OPEN_PARTS_MIN;
	log_warn("store keeps fewer partitions open", "open_partitions=%u limit=%u nofile=%llu", s->open_max,
	         LIMIT_STORE_OPEN_PARTS, (unsigned long long)nofile);
}

static int by_last_use(const void *a, const void *b)
{
	uint64_t x = (*(local_part_t *const *)a)->last_use, y = (*(local_part_t *const *)b)->last_use;
	return (x > y) - (x < y);
}

void local_parts_trim(store_t *s, uint32_t keep)
{
	if (keep > s->open_max)
		keep = s->open_max;
	if (s->n_parts <= keep)
		return;
	/* Oldest first; one sort per trim, however many partitions go. */
	qsort(s->parts, s->n_parts, sizeof *s->parts, by_last_use);
	uint32_t excess = s->n_parts - keep, kept = 0;
	for (uint32_t i = 0; i < s->n_parts; i++) {
		if (excess && !s->parts[i]->in_txn) {
			part_close(s, s->parts[i]);
			excess--;
		} else {
			s->parts[kept++] = s->parts[i];
		}
	}
	s->n_parts = kept;
}

void local_parts_close_before(store_t *s, const char *proj, int64_t day)
{
	for (uint32_t i = 0; i < s->n_parts;) {
		local_part_t *p = s->parts[i];
		if (p->day < day && strcmp(p->proj, proj) == 0) {
			part_close(s, p);
			s->parts[i] = s->parts[--s->n_parts];
		} else {
			i++;
		}
	}
}

void local_parts_drop_damaged(store_t *s)
{
	for (uint32_t i = 0; i < s->n_parts;) {
		local_part_t *p = s->parts[i];
		if (!p->damaged || p->in_txn) {
			i++;
			continue;
		}
		char why[300];
		snprintf(why, sizeof why, "a write found it damaged: %s", sqlite3_errmsg(p->db));
		char *path = xstrdup(p->path);
		part_close(s, p);
		s->parts[i] = s->parts[--s->n_parts];
		local_quarantine(s, path, why);
		free(path);
	}
}

/* At the store's close (nothing written any more): each connection, the
 * last one on its file, copies its -wal into the file and deletes the -wal
 * and -shm as it closes, so a stopped store leaves only .db files. With
 * synchronous=FULL for that checkpoint (the -wal synced before the copy,
 * the .db after it and before the -wal goes), as the checkpointer's would
 * have been. At runtime (LRU) a partition closes without this: the
 * exclusive lock it takes would make a view that opens the file wait. */
void local_parts_close_all(store_t *s)
{
	for (uint32_t i = 0; i < s->n_parts; i++) {
		sqlite3 *db = s->parts[i]->db;
		if (sqlite3_exec(db, "PRAGMA synchronous=FULL", NULL, NULL, NULL) == SQLITE_OK)
			sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, NULL);
		part_close(s, s->parts[i]);
	}
	free(s->parts);
	s->parts = NULL;
	s->n_parts = 0;
	s->cap_parts = 0;
}

/* ---- transactions ---- */

int local_part_begin(store_t *s, local_part_t *p, err_t *err)
{
	int rc = sqlite3_step(p->begin);
	sqlite3_reset(p->begin);
	if (rc != SQLITE_DONE)
		return local_sqlite_err(err, p->db, rc, p->path, "BEGIN");
	p->in_txn = 1;
	p->txn_lsn = 0;
	p->txn_t0 = time_mono_ns();
	p->txn_batches = 0;
	return 0;
}

int local_part_commit(store_t *s, local_part_t *p, err_t *err)
{
	int rc = sqlite3_step(p->commit);
	sqlite3_reset(p->commit);
	if (rc != SQLITE_DONE)
		return local_sqlite_err(err, p->db, rc, p->path, "COMMIT");
	p->in_txn = 0;
	p->txn_lsn = 0;
	p->committed_lsn = p->applied_lsn;
	if (p->hours_late) {
		atomic_fetch_add(&s->hours_late_gen, 1);
		p->hours_late = 0;
	}
	return 0;
}

void local_part_rollback(store_t *s, local_part_t *p)
{
	if (!sqlite3_get_autocommit(p->db))
		sqlite3_exec(p->db, "ROLLBACK", NULL, NULL, NULL);
	p->in_txn = 0;
	p->txn_lsn = 0;
	p->applied_lsn = p->committed_lsn;
	/* Ids cached or assigned inside the transaction are gone with it. */
	if (part_load(s, p, NULL) < 0) {
		part_drop_caches(s, p);
		for (int t = 0; t < LT_COUNT; t++)
			p->next[t] = 0; /* unusable until reloaded: local_part_write refuses */
	}
}

int local_part_set_applied(local_part_t *p, uint64_t lsn, uint64_t log, err_t *err)
{
	sqlite3_bind_int64(p->set_applied, 1, (sqlite3_int64)lsn);
	sqlite3_bind_int64(p->set_applied, 2, (sqlite3_int64)log);
	return run_insert(p, p->set_applied, err);
}

/* ---- writing a batch ---- */

typedef struct {
	store_t *s;
	local_part_t *p;
	const model_batch_t *b;
	local_scratch_t *sc;
	err_t *err;
} wctx_t;

static int bad_batch(wctx_t *w, const char *what)
{
	return err_set(w->err, 500, "store: malformed batch (%s)", what);
}

static int resolve_frame(wctx_t *w, uint32_t i, uint32_t *out)
{
	if (i >= w->b->n_frames)
		return bad_batch(w, "frame index");
	if (w->sc->frame_map[i])
		return *out = w->sc->frame_map[i], 0;
	const model_frame_t *f = &w->b->frames[i];
	int r = lookup(w->p, LT_FRAME, f->id, out, w->err);
	if (r < 0)
		return -1;
	if (!r) {
		sqlite3_stmt *st = w->p->ins[LT_FRAME];
		bind_slice(st, 3, f->name);
		bind_slice(st, 4, f->file);
		bind_slice(st, 5, f->binary);
		bind_slice(st, 6, f->build_id);
		bind_slice(st, 7, f->kind);
		sqlite3_bind_int(st, 8, f->unsymbolized);
		if (insert_row(w->s, w->p, LT_FRAME, f->id, out, w->err) < 0)
			return -1;
	}
	w->sc->frame_map[i] = *out;
	return 0;
}

/* Interns node i and its ancestors, root first, so a parent's local id is
 * always smaller than its child's. MODEL_NONE (the empty stack) is the root:
 * local id 0, no row. */
static int resolve_node(wctx_t *w, uint32_t i, uint32_t *out)
{
	const model_batch_t *b = w->b;
	local_scratch_t *sc = w->sc;
	if (i == MODEL_NONE)
		return *out = 0, 0;
	if (i >= b->n_nodes)
		return bad_batch(w, "node index");
	uint32_t depth = 0;
	for (uint32_t k = i; k != MODEL_NONE && !sc->node_map[k]; k = b->nodes[k].parent) {
		if (k >= b->n_nodes || depth >= b->n_nodes || (depth && k >= sc->chain[depth - 1]))
			return bad_batch(w, "node parent");
		sc->chain[depth++] = k;
	}
	while (depth) {
		uint32_t k = sc->chain[--depth], local;
		const model_node_t *n = &b->nodes[k];
		int r = lookup(w->p, LT_NODE, n->id, &local, w->err);
		if (r < 0)
			return -1;
		if (!r) {
			uint32_t frame;
			if (resolve_frame(w, n->frame, &frame) < 0)
				return -1;
			uint32_t parent = n->parent == MODEL_NONE ? 0 : sc->node_map[n->parent];
			if (w->p->format >= 2) {
				/* Written as one node_runs row at the end of the batch (run_flush). */
				local_part_t *p = w->p;
				local = p->next[LT_NODE]++;
				if (!p->run_n++)
					p->run_first = local;
				local_node_run_add(&p->run, local, parent, frame);
				cache_add(w->s, p, LT_NODE, n->id, local);
			} else {
				sqlite3_stmt *st = w->p->ins[LT_NODE];
				sqlite3_bind_int64(st, 3, parent);
				sqlite3_bind_int64(st, 4, frame);
				if (insert_row(w->s, w->p, LT_NODE, n->id, &local, w->err) < 0)
					return -1;
			}
		}
		sc->node_map[k] = local;
	}
	*out = sc->node_map[i];
	return 0;
}

int local_bind_span_key(sqlite3_stmt *st, int i, slice_t v)
{
	uint8_t raw[LIMIT_SPAN_ID_BYTES / 2];
	size_t n;
	switch (local_span_key(v, raw, &n)) {
	case LOCAL_SPAN_HEX:
		sqlite3_bind_blob(st, i, raw, (int)n, SQLITE_TRANSIENT);
		return 1;
	case LOCAL_SPAN_TEXT:
		bind_slice(st, i, v);
		return 1;
	default:
		sqlite3_bind_null(st, i);
		return 0;
	}
}

/* One spans row per attribute set of the chunk just inserted that has a span link. */
static int write_spans(wctx_t *w, int64_t chunk)
{
	local_scratch_t *sc = w->sc;
	const model_label_t *l = w->b->attr_labels;
	for (uint32_t k = 0; k < sc->n_span_sets; k++) {
		uint32_t i = sc->span_sets[k];
		const local_span_ref_t *r = &sc->span_ref[i];
		sqlite3_stmt *st = w->p->ins_span;
		if (!local_bind_span_key(st, 1, l[r->span - 1].value)) {
			sqlite3_clear_bindings(st);
			continue;
		}
		if (r->trace)
			local_bind_span_key(st, 2, l[r->trace - 1].value);
		sqlite3_bind_int64(st, 3, chunk);
		sqlite3_bind_int64(st, 4, sc->attr_map[i]);
		if (run_insert(w->p, st, w->err) < 0)
			return -1;
	}
	return 0;
}

static int resolve_attrset(wctx_t *w, uint32_t i, uint32_t *out)
{
	const model_batch_t *b = w->b;
	if (i == 0)
		return *out = 0, 0;
	if (i >= b->n_attrsets)
		return bad_batch(w, "attribute set index");
	if (w->sc->attr_map[i])
		return *out = w->sc->attr_map[i], 0;
	const model_attrset_t *a = &b->attrsets[i];
	int r = lookup(w->p, LT_ATTRSET, a->id, out, w->err);
	if (r < 0)
		return -1;
	if (!r) {
		if ((uint64_t)a->first + a->count > b->n_attr_labels)
			return bad_batch(w, "attribute labels");
		local_labels_encode(b->attr_labels + a->first, a->count, &w->sc->labels);
		sqlite3_bind_blob(w->p->ins[LT_ATTRSET], 3, w->sc->labels.p, (int)w->sc->labels.n,
		                  SQLITE_STATIC);
		if (insert_row(w->s, w->p, LT_ATTRSET, a->id, out, w->err) < 0)
			return -1;
	}
	w->sc->attr_map[i] = *out;
	store_span_labels(b, a, &w->sc->span_ref[i].span, &w->sc->span_ref[i].trace);
	return 0;
}

static int resolve_series(wctx_t *w, const model_profile_t *pr, uint32_t *out)
{
	const model_batch_t *b = w->b;
	int r = lookup(w->p, LT_SERIES, pr->series_id, out, w->err);
	if (r)
		return r < 0 ? -1 : 0;
	if ((uint64_t)pr->labels_first + pr->labels_count > b->n_series_labels)
		return bad_batch(w, "series labels");
	char type[2 * 4096 + 2];
	model_type_name(pr, type, sizeof type);
	local_labels_encode(b->series_labels + pr->labels_first, pr->labels_count, &w->sc->labels);
	sqlite3_stmt *st = w->p->ins[LT_SERIES];
	bind_slice(st, 3, pr->service);
	sqlite3_bind_text(st, 4, type, -1, SQLITE_TRANSIENT);
	bind_slice(st, 5, pr->period_type);
	bind_slice(st, 6, pr->period_unit);
	sqlite3_bind_int64(st, 7, pr->period);
	sqlite3_bind_int(st, 8, pr->aggregation);
	sqlite3_bind_int(st, 9, pr->cpu_alias);
	sqlite3_bind_blob(st, 10, w->sc->labels.p, (int)w->sc->labels.n, SQLITE_STATIC);
	return insert_row(w->s, w->p, LT_SERIES, pr->series_id, out, w->err);
}

/* Returns the payload's local id, storing it unless an equal payload exists. */
static int store_payload(wctx_t *w, int64_t *payload)
{
	local_part_t *p = w->p;
	XXH128_canonical_t h;
	XXH128_canonicalFromHash(&h, XXH3_128bits(w->sc->raw.p, w->sc->raw.n));
	sqlite3_bind_blob(p->sel_payload, 1, &h, sizeof h, SQLITE_STATIC);
	int rc = sqlite3_step(p->sel_payload);
	if (rc == SQLITE_ROW)
		*payload = sqlite3_column_int64(p->sel_payload, 0);
	sqlite3_reset(p->sel_payload);
	if (rc == SQLITE_ROW)
		return 0;
	if (rc != SQLITE_DONE)
		return local_sqlite_err(w->err, p->db, rc, p->path, "payload lookup");
	local_payload_pack(&w->sc->raw, &w->sc->packed, w->sc->zc);
	sqlite3_bind_blob(p->ins_payload, 1, &h, sizeof h, SQLITE_STATIC);
	sqlite3_bind_blob(p->ins_payload, 2, w->sc->packed.p, (int)w->sc->packed.n, SQLITE_STATIC);
	if (run_insert(p, p->ins_payload, w->err) < 0)
		return -1;
	*payload = sqlite3_last_insert_rowid(p->db);
	return 0;
}

static int write_profile(wctx_t *w, const model_profile_t *pr)
{
	const model_batch_t *b = w->b;
	local_scratch_t *sc = w->sc;
	uint32_t series;
	if ((uint64_t)pr->samples_first + pr->samples_count > b->n_samples)
		return bad_batch(w, "sample range");
	if (resolve_series(w, pr, &series) < 0)
		return -1;
	sc->entries =
	    xgrow(sc->entries, &sc->cap_entries, (size_t)pr->samples_count + 1, sizeof *sc->entries);
	uint32_t n = pr->samples_count;
	sc->n_span_sets = 0;
	sc->stamp++;
	for (uint32_t i = 0; i < n; i++) {
		const model_sample_t *smp = &b->samples[pr->samples_first + i];
		store_wentry_t *e = &sc->entries[i];
		if (resolve_node(w, smp->node, &e->node) < 0 ||
		    resolve_attrset(w, smp->attrset, &e->attrset) < 0)
			return -1;
		local_span_ref_t *r = &sc->span_ref[smp->attrset];
		if (smp->attrset && r->span && r->seen != sc->stamp && smp->value != 0) {
			r->seen = sc->stamp;
			sc->span_sets = xgrow(sc->span_sets, &sc->cap_span_sets, (size_t)sc->n_span_sets + 1,
			                      sizeof *sc->span_sets);
			sc->span_sets[sc->n_span_sets++] = smp->attrset;
		}
		e->value = smp->value;
		e->t_off = store_second_offset(smp->time_ns, pr->time_ns);
	}
	n = store_entries_merge(sc->entries, n);
	int64_t scale, total, payload = 0;
	local_payload_raw(sc->entries, n, &sc->raw, &scale, &total);
	if (store_payload(w, &payload) < 0)
		return -1;
	sqlite3_stmt *st = w->p->ins_chunk;
	sqlite3_bind_int64(st, 1, series);
	sqlite3_bind_int64(st, 2, pr->time_ns);
	sqlite3_bind_int64(st, 3, pr->duration_ns);
	sqlite3_bind_int64(st, 4, n);
	sqlite3_bind_int64(st, 5, total);
	sqlite3_bind_int64(st, 6, scale);
	sqlite3_bind_int64(st, 7, payload);
	if (run_insert(w->p, st, w->err) < 0)
		return -1;
	return write_spans(w, sqlite3_last_insert_rowid(w->p->db));
}

static void *grow_zeroed(void *p, size_t *cap, size_t need, size_t elem)
{
	p = xgrow(p, cap, need ? need : 1, elem);
	memset(p, 0, need * elem);
	return p;
}

/* Format 2: the nodes the batch added, as one node_runs row. */
static int run_flush(local_part_t *p, err_t *err)
{
	if (!p->run_n)
		return 0;
	sqlite3_bind_int64(p->ins_run, 1, p->run_first);
	sqlite3_bind_int64(p->ins_run, 2, p->run_n);
	sqlite3_bind_blob(p->ins_run, 3, p->run.p, (int)p->run.n, SQLITE_STATIC);
	int rc = run_insert(p, p->ins_run, err);
	p->run_n = 0;
	buf_reset(&p->run);
	return rc;
}

int local_part_write(store_t *s, local_part_t *p, const model_batch_t *b, int64_t day, err_t *err)
{
	local_scratch_t *sc = &s->sc;
	/* A profile for an hour already due for sealing (late, replayed or
	 * backfilled): that hour waits until such writes stop (local_part_seal). */
	int64_t now = time_now_ns(), due = now - (int64_t)LOCAL_SEAL_DELAY_S * NS_PER_SEC;
	/* ... and one before the merged hours' cutoff makes them look again
	 * (hours_late_gen, at the commit). */
	int64_t merged = local_hour(now - s->hours_margin_ns) * 3600 * NS_PER_SEC;
	for (uint32_t i = 0; i < b->n_profiles; i++) {
		if (time_day(b->profiles[i].time_ns) != day)
			continue;
		if (b->profiles[i].time_ns < due) {
			p->late_hour = local_hour_floor(b->profiles[i].time_ns);
			p->late_at = time_mono_ns();
		}
		if (b->profiles[i].time_ns < merged)
			p->hours_late = 1;
	}
	if (!p->next[LT_FRAME])
		return err_set(err, 503, "store: %s is unusable after a failed rollback", p->path);
	/* A write that failed left a run: its transaction is rolled back (and
	 * the caches reloaded) before this one. */
	p->run_n = 0;
	buf_reset(&p->run);
	if (cache_required(p, LT_NODE) && !p->complete[LT_NODE] && node_map_load(s, p, err) < 0)
		return -1;
	sc->frame_map = grow_zeroed(sc->frame_map, &sc->cap_frames, b->n_frames, sizeof *sc->frame_map);
	sc->node_map = grow_zeroed(sc->node_map, &sc->cap_nodes, b->n_nodes, sizeof *sc->node_map);
	sc->chain = xgrow(sc->chain, &sc->cap_chain, (size_t)b->n_nodes + 1, sizeof *sc->chain);
	sc->attr_map = grow_zeroed(sc->attr_map, &sc->cap_attrs, b->n_attrsets, sizeof *sc->attr_map);
	sc->span_ref = grow_zeroed(sc->span_ref, &sc->cap_span_ref, b->n_attrsets, sizeof *sc->span_ref);
	sc->stamp = 0;
	wctx_t w = {s, p, b, sc, err};
	for (uint32_t i = 0; i < b->n_profiles; i++)
		if (time_day(b->profiles[i].time_ns) == day && write_profile(&w, &b->profiles[i]) < 0)
			return -1;
	return run_flush(p, err);
}
