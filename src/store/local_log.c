/* store/local on its write-ahead log (STORE: Writing): a group's one record
 * (batch_codec encodings appended with one pwrite and one fdatasync by
 * store/local_wal.c), applying a group's batches to the partitions it touches
 * (each partition's transaction also records the group's LSN, so applying is
 * idempotent), replay of the log at open, a group that is durable but could
 * not be applied (kept and retried), and the checkpointer thread that makes
 * partitions durable behind the log and lets the log recycle its segments.
 * The writer thread calls everything here except the checkpointer's loop. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "store/batch_codec.h"
#include "store/local.h"

/* A pass's route: the partitions its groups touch, in first-use order, and
 * for each the batches it takes, in log order (refs[first[i]..first[i+1])).
 * Built once per pass, so writing it is not a walk over every batch for
 * every partition (a pass at 1,000 projects has ~1,000 of each). */
typedef struct {
	uint32_t part; /* index in route_t.p */
	uint32_t group, batch;
} batch_ref_t;

typedef struct {
	local_part_t **p;
	size_t n, cap;
	batch_ref_t *refs; /* grouped by partition after route_sort */
	size_t n_refs, cap_refs;
	uint32_t *first; /* n + 1 */
} route_t;

/* Batch (group, batch) goes to p (once, however many of its profiles do). */
static void route_add(route_t *r, uint64_t gen, local_part_t *p, uint32_t group, uint32_t batch)
{
	uint64_t ref = ((uint64_t)group << 32 | batch) + 1;
	if (p->route_gen != gen) {
		p->route_gen = gen;
		p->route_ix = (uint32_t)r->n;
		p->route_last = 0;
		r->p = xgrow(r->p, &r->cap, r->n + 1, sizeof *r->p);
		r->p[r->n++] = p;
	}
	if (p->route_last == ref)
		return;
	p->route_last = ref;
	r->refs = xgrow(r->refs, &r->cap_refs, r->n_refs + 1, sizeof *r->refs);
	r->refs[r->n_refs++] = (batch_ref_t){p->route_ix, group, batch};
}

/* Groups the refs by partition, each partition's in the order they came
 * (a counting sort: stable). */
static void route_sort(route_t *r)
{
	r->first = xcalloc(r->n + 1, sizeof *r->first);
	for (size_t i = 0; i < r->n_refs; i++)
		r->first[r->refs[i].part + 1]++;
	for (size_t i = 0; i < r->n; i++)
		r->first[i + 1] += r->first[i];
	uint32_t *at = xmalloc((r->n + 1) * sizeof *at);
	memcpy(at, r->first, (r->n + 1) * sizeof *at);
	batch_ref_t *sorted = xmalloc((r->n_refs + 1) * sizeof *sorted);
	for (size_t i = 0; i < r->n_refs; i++)
		sorted[at[r->refs[i].part]++] = r->refs[i];
	free(at);
	free(r->refs);
	r->refs = sorted;
}

static void route_free(route_t *r)
{
	free(r->p);
	free(r->refs);
	free(r->first);
}

static int sync_none(int fd, void *arg)
{
	(void)fd;
	(void)arg;
	return 0;
}

/* ---- the checkpointer ---- */

/* Adds path to the partitions written since the last checkpoint (ckpt_mu
 * held); copy: its -wal is to be copied into it, not only synced. */
static void dirty_add(store_t *s, const char *path, int copy)
{
	for (uint32_t i = 0; i < s->n_dirty; i++)
		if (strcmp(s->dirty[i].path, path) == 0) {
			s->dirty[i].copy |= copy;
			return;
		}
	s->dirty = xgrow(s->dirty, &s->cap_dirty, (size_t)s->n_dirty + 1, sizeof *s->dirty);
	s->dirty[s->n_dirty++] = (local_dirty_t){xstrdup(path), copy};
}

/* Syncs path (a file or a directory) with sync (fdatasync or fsync) when it
 * exists. 0, or -1 with errno. */
static int sync_path(const char *path, int (*sync)(int))
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	int rc = sync(fd);
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}

void local_log_fresh(store_t *s, const char *path)
{
	pthread_mutex_lock(&s->ckpt_mu);
	s->fresh = xgrow(s->fresh, &s->cap_fresh, (size_t)s->n_fresh + 1, sizeof *s->fresh);
	s->fresh[s->n_fresh++] = xstrdup(path);
	pthread_mutex_unlock(&s->ckpt_mu);
}

/* fdatasyncs partition path's -wal when it has one (files_lock held shared:
 * the sweep does not delete it meanwhile). 0, or -1 with err. */
static int wal_sync(const char *path, err_t *err)
{
	char *wal = local_wal_path(path);
	int rc = sync_path(wal, fdatasync);
	if (rc < 0)
		err_set(err, 503, "store: cannot sync %s: %s", wal, strerror(errno));
	free(wal);
	return rc;
}

/* Makes partition path durable up to its last commit without copying its
 * -wal: wal_sync (the directory entry of a -wal the writer's open made is
 * synced as a fresh path, part_open). No -wal: nothing since its last copy. */
static int sync_wal(store_t *s, const char *path, err_t *err)
{
	pthread_rwlock_rdlock(&s->files_lock);
	int rc = wal_sync(path, err);
	pthread_rwlock_unlock(&s->files_lock);
	return rc;
}

/* Makes partition path durable up to its last commit: a PASSIVE checkpoint
 * on a connection of its own (SQLite syncs its -wal before copying and the
 * .db after), then, when a reader kept it from copying every frame, an
 * fdatasync of the -wal for those frames. A partition that no longer exists (the sweep deleted it) is
 * done. Under files_lock shared, as a view opens files. 0, or -1 with err. */
static int ckpt_part(store_t *s, const char *path, int last, err_t *err)
{
	pthread_rwlock_rdlock(&s->files_lock);
	int rc = 0;
	sqlite3 *db = NULL;
	if (access(path, F_OK) != 0)
		goto out;
	int src = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (src == SQLITE_OK) {
		sqlite3_busy_timeout(db, 5000);
		/* The round at close: this connection, the file's last, deletes
		 * the -wal and -shm as it closes (all frames copied by then). */
		sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, !last, NULL);
		src = sqlite3_exec(db, "PRAGMA synchronous=FULL", NULL, NULL, NULL);
	}
	int n_log = -1, n_ckpt = -1;
	if (src == SQLITE_OK)
		src = sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, &n_log, &n_ckpt);
	if (src != SQLITE_OK && src != SQLITE_BUSY) {
		rc = local_sqlite_err(err, db, src, path, "checkpoint");
		goto out;
	}
	/* Every frame copied: SQLite synced the -wal before copying and the .db
	 * after, so the commits are durable in the .db and one sync is saved.
	 * (An empty -wal at close: the writer's connection copied it in with
	 * synchronous=FULL as it closed, local_parts_close_all.) */
	if (src == SQLITE_OK && n_log >= 0 && n_log == n_ckpt)
		goto out;
	rc = wal_sync(path, err);
out:
	sqlite3_close_v2(db);
	pthread_rwlock_unlock(&s->files_lock);
	return rc;
}

static int path_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The next segment's file is made off the ack path: at open, and by the
 * checkpointer as soon as the current segment is half used (the log thread
 * wakes it), so an append seldom waits for a file to be zero-filled. 1 made,
 * 0 not wanted or no room, -1 failed (logged). */
static int make_spare(store_t *s)
{
	if (!local_wal_wants_spare(s->wal))
		return 0;
	err_t e = {0};
	int rc = local_wal_make_spare(s->wal, &e);
	if (rc < 0)
		log_error("store: cannot make the next log segment", "err=\"%s\"", e.msg);
	return rc;
}

/* Makes partition path durable in a round: copies its -wal into it when
 * copy, else syncs the -wal. A failure puts it back on the list (tried again
 * at the next round; the log keeps its records meanwhile). */
static int ckpt_one(store_t *s, const char *path, int copy, int last, err_t *err)
{
	err_t e = {0};
	if ((copy ? ckpt_part(s, path, last, &e) : sync_wal(s, path, &e)) == 0)
		return 0;
	if (!err->status)
		*err = e;
	pthread_mutex_lock(&s->ckpt_mu);
	dirty_add(s, path, copy);
	pthread_mutex_unlock(&s->ckpt_mu);
	return -1;
}

/* One checkpoint: every partition written before the group that ended at
 * applied_end is made durable, then the log records it and recycles. A
 * partition's -wal is copied into its file (ckpt_part) when the round has
 * LOCAL_CKPT_SYNC_ABOVE partitions or fewer, when it grew past
 * LOCAL_CKPT_COPY_FRAMES, when the last round only synced it and it was not
 * written since, and at close (last); else it is synced (sync_wal). */
static int ckpt_run(store_t *s, int last, err_t *err)
{
	pthread_mutex_lock(&s->ckpt_mu);
	local_dirty_t *dirty = s->dirty;
	uint32_t n = s->n_dirty;
	char **fresh = s->fresh;
	uint32_t n_fresh = s->n_fresh;
	uint64_t lsn = s->applied_end;
	s->dirty = NULL;
	s->n_dirty = 0;
	s->cap_dirty = 0;
	s->fresh = NULL;
	s->n_fresh = 0;
	s->cap_fresh = 0;
	s->dirty_gen++;
	s->log_since_ckpt = 0;
	pthread_mutex_unlock(&s->ckpt_mu);

	/* Few partitions: each is copied, as a -wal with frames makes every
	 * read of the file slower (24 h flame graph 15 → 19–21 ms). */
	int sync_only = n > LOCAL_CKPT_SYNC_ABOVE || s->ckpt_sync_any;
	uint32_t failed = 0;
	char **unfilled = xmalloc(((size_t)n + 1) * sizeof *unfilled);
	uint32_t n_unfilled = 0;
	for (uint32_t i = 0; i < n; i++) {
		/* A round over many partitions takes seconds while the log fills
		 * segments: the next one is made here, not on the ack path. */
		if (!last)
			make_spare(s);
		int copy = last || dirty[i].copy || !sync_only;
		failed += ckpt_one(s, dirty[i].path, copy, last, err) < 0;
		if (copy)
			free(dirty[i].path);
		else
			unfilled[n_unfilled++] = dirty[i].path;
	}
	free(dirty);
	/* Synced last round and not written since: idle, its -wal is copied. */
	qsort(unfilled, n_unfilled, sizeof *unfilled, path_cmp);
	for (uint32_t i = 0; i < s->n_unfilled; i++) {
		char *path = s->unfilled[i];
		if (!bsearch(&path, unfilled, n_unfilled, sizeof *unfilled, path_cmp)) {
			if (!last)
				make_spare(s);
			failed += ckpt_one(s, path, 1, last, err) < 0;
		}
		free(path);
	}
	free(s->unfilled);
	s->unfilled = unfilled;
	s->n_unfilled = n_unfilled;
	/* New files and the directories that name them, so the log lets go only
	 * of records whose files survive a crash. */
	for (uint32_t i = 0; i < n_fresh; i++) {
		if (sync_path(fresh[i], fsync) < 0) {
			if (!failed++)
				err_set(err, 503, "store: cannot sync %s: %s", fresh[i], strerror(errno));
			local_log_fresh(s, fresh[i]);
		}
		free(fresh[i]);
	}
	free(fresh);
	int rc = failed ? -1 : 0;
	if (rc == 0 && lsn > s->ckpt_lsn) {
		rc = local_wal_checkpoint(s->wal, lsn, err);
		if (rc == 0)
			s->ckpt_lsn = lsn;
	}
	if (rc < 0)
		log_error("store: checkpoint failed, the log keeps its records",
		          "partitions=%u failed=%u err=\"%s\"", n, failed, err->msg);
	if (!last) /* at close: made again at the next open when missing */
		make_spare(s);
	return rc;
}

/* The log written since the last checkpoint that starts one (ckpt_mu held):
 * 64 MiB, and 64 MiB more per 128 partitions written since, up to 256 MiB.
 * A round's cost is mostly per partition (two fsyncs each) when many are
 * dirty, and per byte copied when few are: rarer rounds amortize the first,
 * smaller ones keep the second's bursts of I/O (which the log's fdatasync
 * waits behind) short. */
static int ckpt_due_bytes(const store_t *s)
{
	uint64_t want = (uint64_t)LIMIT_STORE_WAL_CHECKPOINT_BYTES * (1 + s->n_dirty / 128);
	if (want > LIMIT_STORE_WAL_CHECKPOINT_BYTES_MAX)
		want = LIMIT_STORE_WAL_CHECKPOINT_BYTES_MAX;
	return s->log_since_ckpt >= want;
}

static void *ckpt_main(void *arg)
{
	store_t *s = arg;
	pthread_mutex_lock(&s->ckpt_mu);
	int64_t last = time_mono_ns() / 1000000;
	for (;;) {
		/* Also with nothing written since, while the last round left
		 * -wal files synced but not copied: the next round copies them
		 * (idle), so a store that stopped being written leaves none. */
		int64_t every = s->ckpt_ms ? s->ckpt_ms : LIMIT_STORE_WAL_CHECKPOINT_MS;
		int due = s->ckpt_req != s->ckpt_gen || s->ckpt_stop || (s->n_dirty && ckpt_due_bytes(s)) ||
		          ((s->n_dirty || s->n_unfilled) && time_mono_ns() / 1000000 - last >= every);
		if (!due) {
			/* Between rounds the next log segment is made as soon as it is
			 * wanted; again after a second when it could not be. (Not
			 * stopping: a stop makes the round due.) */
			pthread_mutex_unlock(&s->ckpt_mu);
			int made = make_spare(s);
			pthread_mutex_lock(&s->ckpt_mu);
			if (made > 0)
				continue;
			struct timespec t;
			time_deadline(&t, NS_PER_SEC);
			pthread_cond_timedwait(&s->ckpt_cv, &s->ckpt_mu, &t);
			continue;
		}
		uint64_t req = s->ckpt_req;
		int stop = s->ckpt_stop;
		pthread_mutex_unlock(&s->ckpt_mu);
		err_t err = {0};
		int rc = ckpt_run(s, stop, &err);
		last = time_mono_ns() / 1000000;
		pthread_mutex_lock(&s->ckpt_mu);
		s->ckpt_gen = req;
		s->ckpt_rc = rc;
		s->ckpt_err = err;
		pthread_cond_broadcast(&s->ckpt_done);
		if (stop)
			break;
	}
	pthread_mutex_unlock(&s->ckpt_mu);
	return NULL;
}

int local_log_checkpoint(store_t *s, err_t *err)
{
	pthread_mutex_lock(&s->ckpt_mu);
	uint64_t want = ++s->ckpt_req;
	pthread_cond_signal(&s->ckpt_cv);
	while (s->ckpt_gen < want && s->ckpt_running)
		pthread_cond_wait(&s->ckpt_done, &s->ckpt_mu);
	int rc = s->ckpt_running ? s->ckpt_rc : -1;
	if (rc < 0)
		*err =
		    s->ckpt_running ? s->ckpt_err : (err_t){.status = 503, .msg = "store: no checkpointer"};
	pthread_mutex_unlock(&s->ckpt_mu);
	return rc;
}

/* ---- applying a group ---- */

/* Partition p now holds a commit that the next checkpoint must make durable.
 * O(1) per commit: p remembers the round of the list it is on (a partition
 * closed and opened again in one round may be listed twice: checkpointed twice). */
static void mark_dirty(store_t *s, local_part_t *p)
{
	pthread_mutex_lock(&s->ckpt_mu);
	if (p->dirty_mark != s->dirty_gen + 1) {
		s->dirty = xgrow(s->dirty, &s->cap_dirty, (size_t)s->n_dirty + 1, sizeof *s->dirty);
		p->dirty_ix = s->n_dirty;
		s->dirty[s->n_dirty++] = (local_dirty_t){xstrdup(p->path), 0};
		p->dirty_mark = s->dirty_gen + 1;
	}
	if (p->wal_frames >= LOCAL_CKPT_COPY_FRAMES)
		s->dirty[p->dirty_ix].copy = 1;
	pthread_mutex_unlock(&s->ckpt_mu);
}

/* applied_end moves to end (never back): readers waiting for it wake
 * (local_read_barrier), and the next checkpoint may let the log go up to it. */
static void set_applied_end(store_t *s, uint64_t end)
{
	pthread_mutex_lock(&s->ckpt_mu);
	if (end > s->applied_end)
		s->applied_end = end;
	pthread_cond_broadcast(&s->applied_cv);
	pthread_mutex_unlock(&s->ckpt_mu);
}

/* bytes more of log written to partitions since the last checkpoint. */
static void log_bytes_applied(store_t *s, uint64_t bytes)
{
	pthread_mutex_lock(&s->ckpt_mu);
	s->log_since_ckpt += bytes;
	if (ckpt_due_bytes(s))
		pthread_cond_signal(&s->ckpt_cv);
	pthread_mutex_unlock(&s->ckpt_mu);
}

/* The bytes a group's record takes in the log. */
static uint64_t rec_bytes(size_t payload)
{
	return (LOCAL_WAL_REC_HEADER + payload + 7) & ~(uint64_t)7;
}

/* The open transactions local_apply_wait waits for. */
static void open_count(store_t *s, int delta)
{
	pthread_mutex_lock(&s->ap_mu);
	s->ap_open = (uint32_t)((int64_t)s->ap_open + delta);
	if (!s->ap_open)
		pthread_cond_broadcast(&s->ap_idle);
	pthread_mutex_unlock(&s->ap_mu);
}

/* The groups of the log from `from` up to where the applied groups end are
 * written again (local_log_retry); partitions that hold one skip it. */
static void redo_add(store_t *s, uint64_t from, uint64_t to)
{
	if (!s->redo_from || from < s->redo_from)
		s->redo_from = from;
	if (to > s->redo_to)
		s->redo_to = to;
}

/* p's write or commit failed: its transaction is rolled back, and the
 * groups it held (from txn_lsn) and those from first on are to be written
 * again. A file SQLite calls corrupt is marked for local_parts_drop_damaged. */
static void part_failed(store_t *s, local_part_t *p, uint64_t first)
{
	if (local_is_damage(sqlite3_extended_errcode(p->db)))
		p->damaged = 1;
	uint64_t from = p->txn_lsn && p->txn_lsn < first ? p->txn_lsn : first;
	if (p->in_txn) {
		local_part_rollback(s, p);
		open_count(s, -1);
	}
	if (from < s->apply_end)
		redo_add(s, from, s->apply_end);
}

/* Writes the batches refs[0..n) of the groups g (in log order, each with a
 * profile in partition p) that p does not hold yet into p's open
 * transaction (begun here if none), which also sets its applied_lsn to the
 * last of their groups. On failure the transaction is gone and the groups
 * are left to redo (part_failed). */
static int apply_part(store_t *s, local_part_t *p, const local_group_t *g, const batch_ref_t *refs,
                      uint32_t n, err_t *err)
{
	if (!p->in_txn) {
		if (local_part_begin(s, p, err) < 0)
			goto fail;
		open_count(s, 1);
	}
	uint64_t lsn = p->applied_lsn;
	for (uint32_t r = 0; r < n; r++) {
		const local_group_t *gi = &g[refs[r].group];
		if (gi->lsn <= p->applied_lsn)
			continue;
		if (local_part_write(s, p, gi->b[refs[r].batch], p->day, err) < 0)
			goto fail;
		p->txn_batches++;
		lsn = gi->lsn;
		if (!p->txn_lsn)
			p->txn_lsn = lsn;
	}
	if (lsn != p->applied_lsn) {
		if (local_part_set_applied(p, lsn, local_wal_id(s->wal), err) < 0)
			goto fail;
		p->applied_lsn = lsn;
	}
	return 0;
fail:
	part_failed(s, p, g[0].lsn);
	return -1;
}

/* Commits p's open transaction; on failure it is rolled back and its groups
 * are left to redo. */
static int commit_part(store_t *s, local_part_t *p, err_t *err)
{
	if (local_part_commit(s, p, err) < 0) {
		part_failed(s, p, p->txn_lsn ? p->txn_lsn : s->apply_end);
		return -1;
	}
	open_count(s, -1);
	mark_dirty(s, p);
	return 0;
}

/* Opens the next day's partition of p's project when t_ns and the clock
 * are both in the last LOCAL_DAY_AHEAD_S of p's day, once per partition. A
 * failure is only logged: the first write of that day meets it again. */
static void make_ahead(store_t *s, local_part_t *p, int64_t t_ns)
{
	int64_t end = (p->day + 1) * NS_PER_DAY, from = end - (int64_t)LOCAL_DAY_AHEAD_S * NS_PER_SEC;
	if (p->ahead || t_ns < from)
		return;
	int64_t now = s->ahead_now_ns ? s->ahead_now_ns : time_now_ns();
	if (now < from || now >= end)
		return;
	/* Both days of every project must fit the LRU: past half of it, the
	 * files opened ahead would close today's (and the reopened ones open
	 * tomorrow's again). Midnight then makes them as it did before. */
	if (s->n_parts >= s->open_max / 2)
		return;
	p->ahead = 1;
	err_t err = {0};
	if (!local_part_get(s, p->proj, p->day + 1, &err))
		log_warn("store: cannot make the next day's file ahead", "project=%s err=\"%s\"", p->proj,
		         err.msg);
}

/* Writes the groups g[0..ng) (in LSN order) to every partition they touch
 * that does not hold them yet, into open transactions. A partition found
 * damaged is moved aside and the groups go to a fresh file of that day:
 * here when its transaction held nothing older than g, else from the log
 * (*damaged set: local_log_apply redoes at once). 0, or -1 with err (the
 * first failure, groups left to redo). */
static int apply_group(store_t *s, const local_group_t *g, uint32_t ng, int *damaged, err_t *err)
{
	route_t l = {0};
	uint64_t gen = ++s->route_gen;
	int rc = 0;
	for (uint32_t i = 0; i < ng && rc == 0; i++)
		for (uint32_t k = 0; k < g[i].n && rc == 0; k++) {
			const model_batch_t *b = g[i].b[k];
			local_part_t *p = NULL;
			for (uint32_t j = 0; j < b->n_profiles; j++) {
				int64_t day = time_day(b->profiles[j].time_ns);
				if (j && day == time_day(b->profiles[j - 1].time_ns)) {
					/* A later profile of the run may be in the eve. */
					make_ahead(s, p, b->profiles[j].time_ns);
					continue;
				}
				p = local_part_get(s, g[i].proj[k], day, err);
				if (!p) {
					redo_add(s, g[0].lsn, s->apply_end);
					rc = -1;
					break;
				}
				if (p->applied_lsn < g[i].lsn)
					route_add(&l, gen, p, i, k);
				make_ahead(s, p, b->profiles[j].time_ns);
			}
		}
	route_sort(&l);
	for (size_t i = 0; i < l.n && rc == 0; i++) {
		local_part_t *p = l.p[i];
		const batch_ref_t *refs = l.refs + l.first[i];
		uint32_t nr = l.first[i + 1] - l.first[i];
		uint64_t held = p->txn_lsn, from = s->redo_from, to = s->redo_to;
		if (apply_part(s, p, g, refs, nr, err) == 0) {
			if (p->txn_batches >= LOCAL_APPLY_TXN_BATCHES && commit_part(s, p, err) < 0) {
				if (p->damaged && damaged)
					*damaged = 1;
				rc = -1;
			}
			continue;
		}
		if (!p->damaged || (held && held < g[0].lsn)) {
			if (p->damaged && damaged)
				*damaged = 1;
			rc = -1;
			break;
		}
		/* Moved aside; the groups go into a fresh file of that day. */
		char *proj_dir = xstrdup(p->proj);
		int64_t day = p->day;
		local_parts_drop_damaged(s);
		err_t e = {0};
		p = local_part_get(s, proj_dir, day, &e);
		free(proj_dir);
		if (!p || apply_part(s, p, g, refs, nr, &e) < 0) {
			*err = e;
			rc = -1;
			break;
		}
		/* written: what part_failed left to redo for the damaged file is done */
		s->redo_from = from;
		s->redo_to = to;
		l.p[i] = p;
	}
	local_parts_drop_damaged(s);
	route_free(&l);
	return rc;
}

/* A record's batches decoded into arena a: *b and *proj (n of them). */
static int record_decode(slice_t payload, uint32_t n, arena_t *a, model_batch_t ***b, char ***proj,
                         err_t *err)
{
	*b = arena_calloc(a, (size_t)n * sizeof **b + 1);
	*proj = arena_calloc(a, (size_t)n * sizeof **proj + 1);
	size_t off = 0;
	for (uint32_t k = 0; k < n; k++) {
		if (payload.n - off < 4)
			return err_set(err, 500, "store log: batch %u of %u: length past the record", k, n);
		uint32_t len = (uint32_t)payload.p[off] | (uint32_t)payload.p[off + 1] << 8 |
		               (uint32_t)payload.p[off + 2] << 16 | (uint32_t)payload.p[off + 3] << 24;
		off += 4;
		if (len > payload.n - off)
			return err_set(err, 500, "store log: batch %u of %u: %u bytes past the record", k, n,
			               len);
		(*b)[k] = arena_calloc(a, sizeof *(*b)[k]);
		if (batch_codec_decode(slice_make(payload.p + off, len), a, (*b)[k], err) < 0)
			return -1;
		off += len;
		(*proj)[k] = arena_alloc(a, 3 * LIMIT_NAME_BYTES + 2);
		if ((*b)[k]->n_profiles && local_project_dir((*b)[k]->project, (*proj)[k]) < 0)
			return err_set(err, 500, "store log: batch %u of %u: bad project name", k, n);
	}
	if (off != payload.n)
		return err_set(err, 500, "store log: %zu bytes after the last batch", payload.n - off);
	return 0;
}

/* Decodes a group record and writes it to its partitions' open transactions
 * (replay, redo). */
static int apply_record(store_t *s, uint64_t lsn, uint32_t n, slice_t payload, int *damaged, err_t *err)
{
	arena_t *a = arena_new();
	model_batch_t **b;
	char **proj;
	int rc = record_decode(payload, n, a, &b, &proj, err);
	if (rc == 0) {
		local_group_t g = {.lsn = lsn, .b = b, .proj = proj, .n = n};
		rc = apply_group(s, &g, 1, damaged, err);
	}
	arena_free(a);
	return rc;
}

/* Commits the due open transactions (all of them when all is set, or when
 * the LRU holds more partitions than it may keep open) and moves
 * applied_end to the first group not committed everywhere. 0, or -1 with
 * err (the first failure; its groups are left to redo; *damaged set when
 * the file was damaged, may be NULL). */
static int settle(store_t *s, int all, int *damaged, err_t *err)
{
	int64_t now = time_mono_ns(), oldest = 0;
	uint64_t lowest = 0;
	int rc = 0;
	if (s->n_parts > s->open_max)
		all = 1;
	for (uint32_t i = 0; i < s->n_parts; i++) {
		local_part_t *p = s->parts[i];
		if (!p->in_txn)
			continue;
		if (all || now - p->txn_t0 >= (int64_t)LOCAL_APPLY_TXN_MS * 1000000) {
			err_t e = {0};
			if (commit_part(s, p, &e) < 0) {
				if (p->damaged && damaged)
					*damaged = 1;
				if (rc == 0)
					*err = e;
				rc = -1;
			}
			continue;
		}
		if (!oldest || p->txn_t0 < oldest)
			oldest = p->txn_t0;
		if (p->txn_lsn && (!lowest || p->txn_lsn < lowest))
			lowest = p->txn_lsn;
	}
	s->txn_oldest = oldest;
	uint64_t done = s->apply_end;
	if (lowest && lowest < done)
		done = lowest;
	if (s->redo_from && s->redo_from < done)
		done = s->redo_from;
	set_applied_end(s, done);
	local_parts_drop_damaged(s);
	return rc;
}

/* One attempt at the groups to redo: read back from the log in order,
 * written and committed. 0 when none is left; -1 with err, all of them
 * left to redo (partitions that hold one skip it next time). */
static int redo(store_t *s, int *damaged, err_t *err)
{
	uint64_t from = s->redo_from, to = s->redo_to;
	s->redo_from = s->redo_to = 0;
	int rc = 0;
	for (uint64_t lsn = from; rc == 0 && lsn < to;) {
		local_wal_rec_t rec;
		uint64_t next = 0;
		int r = local_wal_read(s->wal, lsn, &rec, &next, &s->redo_buf, &s->redo_cap, err);
		if (r == 0)
			break;
		if (r < 0 || (rec.kind == LOCAL_WAL_GROUP &&
		              apply_record(s, rec.lsn, rec.n, rec.payload, damaged, err) < 0))
			rc = -1;
		lsn = next;
	}
	if (rc == 0)
		rc = settle(s, 1, damaged, err);
	if (rc < 0)
		redo_add(s, from, to);
	return rc;
}

/* Redoes until nothing is left; tries again at once while the failure was
 * a damaged file (moved aside: the next try writes a fresh one), a few times. */
static int redo_all(store_t *s, err_t *err)
{
	for (int tries = 0; s->redo_from; tries++) {
		int damaged = 0;
		if (redo(s, &damaged, err) < 0 && (!damaged || tries >= 3))
			return -1;
	}
	return 0;
}

/* What a push is refused with while groups wait to be redone: the reason,
 * as a 503 (a full disk: Retry-After 5). */
static void as_unavailable(err_t *e)
{
	if (e->status != 503) {
		e->status = 503;
		e->retry_after = 5;
	}
}

/* The groups to redo could not be written: pushes are refused until they
 * are (503 with the reason; a full disk: Retry-After 5), and readers waiting
 * for them read without them (STORE: Writing). */
static void fall_behind(store_t *s, err_t *e)
{
	as_unavailable(e);
	pthread_mutex_lock(&s->ap_mu);
	int was = atomic_load(&s->behind);
	if (!was)
		s->behind_err = *e;
	atomic_store(&s->behind, 1);
	pthread_mutex_unlock(&s->ap_mu);
	if (!was)
		log_error("store: a durable group could not be written to its partitions; kept and retried, "
		          "writes refused until then",
		          "lsn=0x%" PRIx64 " err=\"%s\"", s->redo_from, e->msg);
	pthread_mutex_lock(&s->ckpt_mu);
	pthread_cond_broadcast(&s->applied_cv);
	pthread_mutex_unlock(&s->ckpt_mu);
}

int local_log_retry(store_t *s, err_t *err)
{
	uint64_t from = s->redo_from;
	if (redo_all(s, err) < 0) {
		as_unavailable(err);
		return -1;
	}
	if (from)
		log_info("store: a group kept after a failed write is now in its partitions",
		         "lsn=0x%" PRIx64, from);
	atomic_store(&s->behind, 0);
	return 0;
}

void local_log_settle(store_t *s, int all)
{
	err_t e = {0};
	int damaged = 0;
	if (settle(s, all, &damaged, &e) < 0 && !(damaged && redo_all(s, &e) == 0))
		fall_behind(s, &e);
}

/* ---- sealing (local_seal.c), on the apply thread ---- */

/* local_part_seal's begin: a transaction as apply_part begins one. */
static int seal_begin(store_t *s, local_part_t *p, err_t *err)
{
	if (local_part_begin(s, p, err) < 0)
		return -1;
	open_count(s, 1);
	return 0;
}

/* Does the day file at path hold a chunk from before cutoff not sealed yet
 * (format 2)? A read-only look: opening every project's files for writing
 * (statements, the node map) cost seconds on this thread at a thousand
 * projects. 1 also when it cannot tell (the writer's open reports why). */
static int seal_wanted(const char *path, int64_t cutoff)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int want = 1;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) == SQLITE_OK &&
	    sqlite3_busy_timeout(db, 5000) == SQLITE_OK &&
	    sqlite3_prepare_v2(db,
	                       "SELECT EXISTS (SELECT 1 FROM meta WHERE key = 'format' AND value >= 2)"
	                       " AND EXISTS (SELECT 1 FROM chunks WHERE payload > 0 AND t_ns < ?1)",
	                       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, cutoff);
		if (sqlite3_step(st) == SQLITE_ROW)
			want = sqlite3_column_int(st, 0);
	}
	sqlite3_finalize(st);
	sqlite3_close_v2(db);
	return want;
}

/* Once, at the first step: today's and yesterday's day files of every
 * project (UTC) that hold an hour to seal are opened, so that hours a
 * stopped Kiln left unsealed are sealed without waiting for a write to
 * their day. */
static void seal_discover(store_t *s)
{
	s->seal_found = 1;
	DIR *d = opendir(s->dir);
	if (!d)
		return;
	int64_t today = time_day(time_now_ns());
	int64_t cutoff = time_now_ns() - (int64_t)LOCAL_SEAL_DELAY_S * NS_PER_SEC;
	struct dirent *e;
	while ((e = readdir(d)) && s->n_parts < s->open_max) {
		char name[LIMIT_NAME_BYTES];
		size_t n;
		if (local_project_name(e->d_name, name, &n) < 0)
			continue;
		for (int64_t day = today - 1; day <= today; day++) { /* day numbers (time_day) */
			char day_s[11], path[PATH_MAX];
			time_day_str(day, day_s);
			snprintf(path, sizeof path, "%s/%s/%s.db", s->dir, e->d_name, day_s);
			if (access(path, F_OK) != 0 || !seal_wanted(path, cutoff))
				continue;
			err_t err = {0};
			if (!local_part_get_existing(s, e->d_name, day, &err) && err.status)
				log_error("store: cannot seal", "project=%s err=\"%s\"", e->d_name, err.msg);
		}
	}
	closedir(d);
}

int local_log_seal_step(store_t *s, int all, int now_all)
{
	if (!s->seal_found)
		seal_discover(s);
	int64_t now = time_mono_ns();
	int64_t cutoff = time_now_ns() - (int64_t)LOCAL_SEAL_DELAY_S * NS_PER_SEC;
	/* A step looks at a bounded number of partitions, so that one never
	 * holds the groups waiting behind it for long. */
	for (uint32_t looked = 0; looked < s->n_parts && (all || looked < 64); looked++) {
		if (s->seal_cursor >= s->n_parts)
			s->seal_cursor = 0;
		local_part_t *p = s->parts[s->seal_cursor];
		if (p->format < 2 || p->seal_broken || (!all && p->seal_check > now)) {
			s->seal_cursor++;
			continue;
		}
		err_t e = {0};
		int r = local_part_seal(s, p, cutoff, now_all, seal_begin, &e);
		if (r > 0)
			return 1; /* the same partition first next time: its next hour */
		if (r < 0)
			log_error("store: cannot seal", "file=%s err=\"%s\"", p->path, e.msg);
		if (r < 0 && p->in_txn) {
			/* Rolled back: the groups its transaction held are written again from the log. */
			part_failed(s, p, p->txn_lsn ? p->txn_lsn : s->apply_end);
			local_parts_drop_damaged(s);
			if (s->redo_from)
				fall_behind(s, &e);
			return 0;
		}
		p->seal_check = now + (int64_t)LOCAL_SEAL_POLL_MS * 1000000;
		s->seal_cursor++;
	}
	return 0;
}

/* ---- the writer's group: the log thread appends, the apply thread applies ---- */

/* Encodes batches b[0..n) as a group's record into rec: each batch_codec
 * encoding after its length (4 bytes, little-endian). -1 when too large. */
static int rec_encode(model_batch_t *const *b, uint32_t n, buf_t *rec)
{
	buf_reset(rec);
	for (uint32_t k = 0; k < n; k++) {
		size_t at = rec->n;
		uint8_t len[4] = {0};
		if (buf_append(rec, len, 4) < 0 || batch_codec_encode(b[k], rec) < 0)
			return -1;
		uint32_t l = (uint32_t)(rec->n - at - 4);
		for (int i = 0; i < 4; i++)
			rec->p[at + i] = (uint8_t)(l >> (8 * i));
	}
	return 0;
}

int local_log_append(store_t *s, model_batch_t *const *b, uint32_t n, uint64_t *lsn, uint64_t *rec_n,
                     err_t *err)
{
	buf_t *rec = &s->log_rec;
	if (rec_encode(b, n, rec) < 0)
		return err_set(err, 413, "store: a group's record is too large");
	int rc = local_wal_append(s->wal, LOCAL_WAL_GROUP, n, slice_make(rec->p, rec->n), lsn, err);
	if (rc == LOCAL_WAL_FULL) {
		pthread_mutex_lock(&s->ckpt_mu);
		pthread_cond_signal(&s->ckpt_cv);
		pthread_mutex_unlock(&s->ckpt_mu);
	}
	/* A record that grew the buffer past a segment's worth is not kept around. */
	size_t n_rec = rec->n;
	if (rec->cap > LIMIT_STORE_GROUP_BYTES * 2u) {
		buf_free(rec);
		buf_init(rec, SIZE_MAX);
	}
	if (rc < 0)
		return -1;
	/* Past half of a segment, once per segment: the checkpointer makes the
	 * next one now, not the append that fills this one. */
	uint32_t seg = (uint32_t)(*lsn >> 32);
	if (seg != s->spare_asked_seg && local_wal_wants_spare(s->wal)) {
		s->spare_asked_seg = seg;
		pthread_mutex_lock(&s->ckpt_mu);
		pthread_cond_signal(&s->ckpt_cv);
		pthread_mutex_unlock(&s->ckpt_mu);
	}
	*rec_n = n_rec;
	/* Durable: readers from now on wait for the group (local_read_barrier). */
	atomic_store(&s->durable_end, *lsn + rec_bytes(n_rec));
	return 0;
}

void local_log_apply(store_t *s, const local_group_t *g, uint32_t n)
{
	uint64_t bytes = 0;
	for (uint32_t i = 0; i < n; i++)
		bytes += rec_bytes(g[i].rec_n);
	s->apply_end = g[n - 1].lsn + rec_bytes(g[n - 1].rec_n);
	log_bytes_applied(s, bytes);
	err_t e = {0};
	if (s->redo_from) {
		/* Groups after one to redo wait behind it (written first, they would
		 * mark partitions past it, and its redo would skip them): they are
		 * read back from the log with it. */
		redo_add(s, g[0].lsn, s->apply_end);
		if (local_log_retry(s, &e) < 0)
			fall_behind(s, &e);
		return;
	}
	int damaged = 0;
	if (apply_group(s, g, n, &damaged, &e) < 0 && !(damaged && redo_all(s, &e) == 0))
		fall_behind(s, &e);
}

void local_read_barrier(store_t *s)
{
	uint64_t want = atomic_load(&s->durable_end);
	if (!s->log_inited || !want)
		return;
	struct timespec until;
	time_deadline(&until, (int64_t)LIMIT_STORE_READ_BARRIER_MS * 1000000);
	pthread_mutex_lock(&s->ckpt_mu);
	int done = s->applied_end >= want;
	pthread_mutex_unlock(&s->ckpt_mu);
	if (done)
		return;
	local_apply_hurry(s, 1);
	pthread_mutex_lock(&s->ckpt_mu);
	while (s->applied_end < want && !atomic_load(&s->behind) &&
	       pthread_cond_timedwait(&s->applied_cv, &s->ckpt_mu, &until) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&s->ckpt_mu);
	local_apply_hurry(s, -1);
}

/* ---- open and close ---- */

int local_log_open(store_t *s, err_t *err)
{
	pthread_mutex_init(&s->ckpt_mu, NULL);
	pthread_cond_init(&s->ckpt_cv, NULL);
	pthread_cond_init(&s->ckpt_done, NULL);
	pthread_cond_init(&s->applied_cv, NULL);
	local_wal_opts_t o = {.sync = s->sync ? NULL : sync_none};
	if (local_wal_open(s->dir, &o, &s->wal, err) < 0)
		return -1;
	/* Replay: every group after the checkpoint into the partitions that do not hold it yet. */
	uint64_t groups = 0, batches = 0;
	local_wal_rec_t rec;
	int rc;
	while ((rc = local_wal_replay_next(s->wal, &rec, err)) == 1) {
		if (rec.kind != LOCAL_WAL_GROUP)
			continue;
		/* Each group committed before the next: a damaged file found on the
		 * way takes the group in a fresh file (apply_group), nothing older. */
		s->apply_end = rec.lsn + rec_bytes(rec.payload.n);
		if (apply_record(s, rec.lsn, rec.n, rec.payload, NULL, err) < 0 ||
		    settle(s, 1, NULL, err) < 0) {
			err_prefix(err, "store: replaying the log at lsn 0x%" PRIx64 ": ", rec.lsn);
			return -1;
		}
		groups++;
		batches += rec.n;
		local_parts_trim(s, LIMIT_STORE_OPEN_PARTS);
	}
	if (rc < 0)
		return -1;
	const local_wal_report_t *rep = local_wal_report(s->wal);
	s->ckpt_lsn = rep->from_lsn;
	s->applied_end = s->apply_end = rep->end_lsn;
	atomic_store(&s->durable_end, rep->end_lsn);
	if (rep->damaged) {
		log_error("store log damaged", "lsn=0x%" PRIx64 " bytes=%" PRIu64 " stretches=%" PRIu64,
		          rep->first_damaged_lsn, rep->damaged_bytes, rep->damaged);
		atomic_fetch_add(&s->damaged_count, rep->damaged);
	}
	if (rep->records || rep->torn_bytes || rep->damaged || strcmp(rep->why, "clean") != 0)
		log_info("store log replayed",
		         "groups=%" PRIu64 " batches=%" PRIu64 " dropped_bytes=%" PRIu64 " why=\"%s\"",
		         groups, batches, rep->torn_bytes + rep->damaged_bytes, rep->why);
	/* What replay wrote is made durable, and the log recycled, before new writes. */
	if (pthread_create(&s->ckpt_thread, NULL, ckpt_main, s) != 0)
		return err_set(err, 500, "store: cannot start the checkpointer thread");
	pthread_setname_np(s->ckpt_thread, "kiln-ckpt");
	s->ckpt_running = 1;
	if (groups && local_log_checkpoint(s, err) < 0)
		return -1;
	make_spare(s); /* so the first push does not zero-fill a segment */
	return 0;
}

void local_log_close(store_t *s)
{
	if (s->ckpt_running) {
		pthread_mutex_lock(&s->ckpt_mu);
		s->ckpt_stop = 1;
		s->ckpt_req++;
		pthread_cond_signal(&s->ckpt_cv);
		pthread_mutex_unlock(&s->ckpt_mu);
		pthread_join(s->ckpt_thread, NULL);
		s->ckpt_running = 0;
	}
	for (uint32_t i = 0; i < s->n_dirty; i++)
		free(s->dirty[i].path);
	free(s->dirty);
	s->dirty = NULL;
	s->n_dirty = 0;
	for (uint32_t i = 0; i < s->n_unfilled; i++)
		free(s->unfilled[i]);
	free(s->unfilled);
	s->unfilled = NULL;
	s->n_unfilled = 0;
	for (uint32_t i = 0; i < s->n_fresh; i++)
		free(s->fresh[i]);
	free(s->fresh);
	s->fresh = NULL;
	s->n_fresh = 0;
	free(s->redo_buf);
	s->redo_buf = NULL;
	s->redo_from = s->redo_to = 0;
	local_wal_close(s->wal);
	s->wal = NULL;
	pthread_cond_destroy(&s->ckpt_done);
	pthread_cond_destroy(&s->applied_cv);
	pthread_cond_destroy(&s->ckpt_cv);
	pthread_mutex_destroy(&s->ckpt_mu);
}
