/* Private to store/local (the embedded engine): the structures its files share
 * and the functions they call on each other. Nothing outside src/store/local_*.c
 * includes this; the public contract is store/store.h. */
#ifndef KILN_STORE_LOCAL_H
#define KILN_STORE_LOCAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <sqlite3.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/timeutil.h"
#include "base/u64map.h"
#include "store/engine.h"
#include "store/local_wal.h"
#include "store/store.h"

/* meta.format of the partition files this code makes; it reads and writes
 * 1 too (an existing format-1 file stays format 1). Format 2: stack nodes
 * as node_runs (no nodes table, no index on node ids). */
#define LOCAL_FORMAT 2
#define LOCAL_FORMAT_MIN 1

/* The dictionaries of a partition that the writer caches (hash id -> local id). */
enum { LT_FRAME, LT_NODE, LT_ATTRSET, LT_SERIES, LT_COUNT };

/* A partition open for writing: one file, one connection, its caches. */
typedef struct local_part {
	char *path;
	char *proj; /* encoded project (local_project_dir) */
	int64_t day;
	sqlite3 *db;
	sqlite3_stmt *ins[LT_COUNT], *sel[LT_COUNT];
	sqlite3_stmt *ins_chunk, *sel_payload, *ins_payload, *ins_span, *set_applied;
	sqlite3_stmt *begin, *commit; /* BEGIN IMMEDIATE, COMMIT: parsed once, not per transaction */
	sqlite3_stmt *ins_run;        /* format 2: INSERT INTO node_runs */
	int format;                   /* meta.format: 1 or 2 */
	buf_t run; /* format 2: nodes added by the batch being written (local_node_run_add) */
	uint32_t run_first, run_n;
	u64map_t cache[LT_COUNT];
	uint32_t next[LT_COUNT]; /* next local id to assign */
	int complete[LT_COUNT];  /* 1: cache holds every row, a miss means "new" */
	int in_txn;
	int damaged;            /* a write found the file corrupt: local_parts_drop_damaged moves it aside */
	uint64_t applied_lsn;   /* meta.applied_lsn: the last log group this file holds (0: none),
	                           counting the open transaction */
	uint64_t committed_lsn; /* the same, committed: what a rollback goes back to */
	uint64_t txn_lsn;       /* the first group the open transaction holds (0: none yet) */
	int64_t txn_t0;         /* when the open transaction began (time_mono_ns) */
	uint32_t txn_batches;   /* batches it holds */
	uint64_t dirty_mark;    /* store's dirty_gen + 1 once on the checkpointer's list of that round */
	uint32_t dirty_ix;      /* its entry on that list */
	uint32_t wal_frames;    /* frames in its -wal after the last commit (SQLite's WAL hook) */
	int64_t seal_check;     /* time_mono_ns before which sealing does not look at it again */
	int seal_broken;        /* an hour failed to seal (logged): not tried again while open */
	/* Sealing's last step sealed every chunk of (seal_series, seal_hour) up
	 * to (seal_t, seal_id) in (t_ns, id) order: the next step goes on after. */
	int seal_after;
	int64_t seal_series, seal_hour, seal_t, seal_id;
	int64_t late_hour; /* the hour of the last profile written after its hour was due for sealing */
	int64_t late_at;   /* when (time_mono_ns; 0: never) */
	int hours_late;    /* the open transaction holds a profile before the compactor's cutoff */
	int ahead;         /* the next day's partition was opened ahead (LOCAL_DAY_AHEAD_S) */
	uint64_t last_use;
	uint64_t key; /* hash of (proj, day): local_part_get compares it before the names */
	/* Its place in the route of the apply pass route_gen (local_log.c). */
	uint64_t route_gen, route_last;
	uint32_t route_ix;
} local_part_t;

typedef struct local_job {
	store_job_t base;  /* first: base.b is NULL for a retention sweep */
	int keep_days;     /* sweep: days kept before today */
	int64_t now_ns;    /* sweep: its clock */
	uint32_t *deleted; /* sweep: partitions deleted (the caller waits) */
	err_t err;
	int failed;
	char proj[3 * LIMIT_NAME_BYTES + 2];
} local_job_t;

/* The span link of one attribute set of a batch, found once per batch and
 * partition when the set is first resolved. */
typedef struct {
	uint32_t span, trace; /* index + 1 of the span_id / trace_id label in attr_labels; 0 = none */
	uint32_t seen;        /* local_scratch_t.stamp of the last chunk that listed the set */
} local_span_ref_t;

/* A checkpoint round makes every partition written since the last one
 * durable. When it has more than LOCAL_CKPT_SYNC_ABOVE of them, it syncs a
 * partition's -wal (one fdatasync, whatever it holds) and copies the -wal
 * into the file (a checkpoint: SQLite opened, two fsyncs) only when the
 * -wal holds LOCAL_CKPT_COPY_FRAMES frames (4 KiB pages), when the
 * partition was not written since the round before (idle: its -wal is not
 * left behind), and at close. With many projects each file gets a few
 * pages a second: copying every file every round was most of a round's
 * cost. With few, every one is copied: reads of a file whose -wal holds
 * frames are slower. */
#define LOCAL_CKPT_SYNC_ABOVE 64
#define LOCAL_CKPT_COPY_FRAMES 256

/* Sets and ways of store_t.part_slot: room for the open partitions of
 * thousands of projects' today and yesterday. */
#define LOCAL_PART_SETS 2048u
#define LOCAL_PART_WAYS 4u

/* A partition file on the checkpointer's list. */
typedef struct {
	char *path;
	int copy; /* its -wal reached LOCAL_CKPT_COPY_FRAMES: copied, not only synced */
} local_dirty_t;

/* Groups between the log thread and the apply thread, answered already
 * (durable in the log) and not yet in their partitions: at most this many,
 * and at most LIMIT_STORE_APPLY_BYTES of their batches (one more when none
 * waits); past either the log thread waits, and the write queue's caps
 * refuse pushes. */
#define LOCAL_APPLY_DEPTH 64
/* The apply thread lets groups gather before a pass (one transaction per
 * partition it touches, so a pass over more groups costs fewer per upload
 * when many projects write): it starts one once the oldest waiting group is
 * this old, or half the depth or bytes above wait, or LOCAL_APPLY_PASS_BATCHES
 * batches, or at once when a reader, a sweep or a test waits for it. */
#define LOCAL_APPLY_DELAY_MS 250
#define LOCAL_APPLY_PASS_BATCHES 4096 /* batches in one pass at most */
/* A partition's transaction stays open across passes (SQLite keeps what it
 * wrote in the connection's page cache, and a page written by many uploads
 * goes to the file once) and is committed once it is this old, or at once
 * when a reader, a sweep, a test or the close waits, or the LRU must close
 * partitions. The log keeps every group an open transaction holds. */
#define LOCAL_APPLY_TXN_MS 1000
/* ... and once it holds this many batches, at the end of the pass that
 * wrote them: a partition that takes thousands of uploads a second commits
 * each pass, as one transaction of a second would stall the apply thread
 * (and the log thread behind it) for the time of its COMMIT. */
#define LOCAL_APPLY_TXN_BATCHES 512

/* A project's next day file is made ahead: when the apply thread writes a
 * profile dated in the last LOCAL_DAY_AHEAD_S of its UTC day while the
 * clock, too, is in those seconds, it opens (so creates) that project's
 * partition of the next day. So the files of a day come over its
 * eve, not all at 00:00 UTC, where each project's first push of the day
 * would wait behind a thousand others' file creations. */
#define LOCAL_DAY_AHEAD_S 600

/* One group as the apply thread writes it: its batches b[0..n) with their
 * project dirs, appended at lsn as a record of rec_n bytes. */
typedef struct {
	uint64_t lsn;
	model_batch_t *const *b;
	char *const *proj;
	uint32_t n;
	uint64_t rec_n;
} local_group_t;

/* Writer-thread scratch, reused across batches. */
typedef struct {
	uint32_t *frame_map, *node_map, *attr_map, *chain;
	size_t cap_frames, cap_nodes, cap_attrs, cap_chain;
	local_span_ref_t *span_ref; /* per batch attrset, valid where attr_map is set */
	size_t cap_span_ref;
	uint32_t *span_sets; /* batch attrsets with a span link in the chunk being written */
	uint32_t n_span_sets;
	size_t cap_span_sets;
	uint32_t stamp; /* chunks written by the current local_part_write, + 1 */
	store_wentry_t *entries;
	size_t cap_entries;
	buf_t raw, packed, labels;
	void *zc; /* ZSTD_CCtx */
} local_scratch_t;

/* Merged hours (local_hours.c, docs/STORE.md "Merged hours"): one summed
 * (node, attrset) of a (series, UTC hour), and the stamp of the chunks a
 * merged row covered (local_hstamp_add over their heads). */
typedef struct {
	uint32_t node, attrset;
	int64_t value;
} local_hsum_t;
typedef struct {
	uint32_t n;        /* chunks */
	int64_t max_local; /* their largest local id */
	uint64_t hash;     /* sum of a hash of each head (local, t_ns, sizes, total, scale, payload) */
} local_hstamp_t;
typedef struct local_hours_seen local_hours_seen_t;
/* Exact sums per (node, attrset) (local_hacc_*): int64 values added in 128
 * bits, so the order of the additions never matters, then clamped to int64
 * once, as ClickHouse's sum answers (ch_rd_sum). */
__extension__ typedef __int128 local_i128_t;
typedef struct {
	u64map_t ix;    /* mixed (node << 32 | attrset) + 1 -> index */
	uint64_t *keys; /* node << 32 | attrset */
	local_i128_t *val;
	size_t cap;
	uint32_t n;
	uint32_t *dense; /* attrset 0: node -> index + 1 (0: none yet) */
	size_t cap_dense;
} local_hacc_t;

/* Retention of one project (store_set_retention, store_retention_sweep). */
typedef struct {
	char proj[3 * LIMIT_NAME_BYTES + 2]; /* encoded (local_project_dir) */
	int days;                            /* store_set_retention; 0 = the store's default */
	int64_t floor_day; /* first day the last sweep kept: earlier days refuse writes; INT64_MIN = none */
} local_retention_t;

struct store {
	store_head_t head_; /* first: store.c dispatches through it */
	char *dir;
	int lock_fd; /* DIR/LOCK, flock()ed: one kiln process per data directory */
	int sync;

	/* Retention per project, guarded by ret_mu (views and the writer read it). */
	pthread_mutex_t ret_mu;
	local_retention_t *ret;
	uint32_t n_ret;
	size_t cap_ret;
	int default_days;
	/* Held shared by a view while it opens a partition (open, BEGIN, first
	 * read: every file is open after that), exclusively by the sweep while it
	 * unlinks: a view sees a partition whole or not at all. */
	pthread_rwlock_t files_lock;

	store_writeq_t q;                  /* the writes waiting for the writer thread */
	store_commit_stats_t commit_stats; /* store_get_stats */

	/* Damaged partitions reported so far (local_damage.c), any thread. */
	pthread_mutex_t damage_mu;
	char **damaged;
	uint32_t n_damaged;
	size_t cap_damaged;
	_Atomic uint64_t damaged_count;

	/* Keys and usage (local_shared.c): one connection to keys.db and one to
	 * usage.db, each opened on first use and guarded by its mutex. */
	int keys_usage_only; /* store_config_t.keys_usage_only: no lock, no writer */
	pthread_mutex_t keys_mu, usage_mu;
	sqlite3 *keys_db, *usage_db;

	/* The write-ahead log (local_log.c). Writer thread: rec, pending*. */
	int log_inited; /* local_log_open was called: local_log_close is due */
	local_wal_t *wal;
	buf_t log_rec; /* the log thread's record being appended */
	/* Durable groups that could not be written to (or committed in) their
	 * partitions: the log records in [redo_from, redo_to), read back and
	 * written again in order (apply thread); and whether there are any (read
	 * by the log thread: it refuses groups then). */
	uint64_t redo_from, redo_to;
	uint8_t *redo_buf;
	size_t redo_cap;
	_Atomic int behind;
	/* Apply thread: where the groups handed to it so far end, and when its
	 * oldest open partition transaction began (0: none open). */
	uint64_t apply_end;
	int64_t txn_oldest;
	/* The apply thread and the groups handed to it (at most
	 * LOCAL_APPLY_DEPTH), under ap_mu. */
	pthread_t ap_thread;
	int ap_running;
	pthread_mutex_t ap_mu;
	pthread_cond_t ap_work, ap_room;
	struct local_apply_item *ap_head, *ap_tail;
	uint32_t ap_n;
	uint64_t ap_bytes;   /* the batch memory of the groups handed over */
	uint32_t ap_batches; /* their batches */
	int ap_busy;         /* the apply thread is writing what it took */
	int ap_stop;
	uint32_t ap_urgent;     /* readers, sweeps and waiters that need a pass now */
	uint32_t ap_open;       /* partition transactions the apply thread holds open */
	pthread_cond_t ap_idle; /* signalled when nothing waits and ap_busy is 0 */
	err_t behind_err;       /* why the first kept group could not be written (under ap_mu) */
	/* Sealing (local_seal.c), on the apply thread between passes: when the
	 * next step is due (time_mono_ns), the open partition it looks at next,
	 * and local_seal_wait's requests (seal_req, under ap_mu) and the last
	 * one done (seal_gen). */
	int64_t seal_next;
	uint32_t seal_cursor;
	int seal_found;      /* the first step opened today's and yesterday's files (seal_discover) */
	int seal_off;        /* store_config_t.seal_off */
	int seal_wait_quiet; /* tests: local_seal_wait keeps the quiet rule (LOCAL_SEAL_QUIET_MS) */
	uint64_t seal_req, seal_gen;
	struct local_sealer *sealer;
	_Atomic uint64_t sealed_blocks, sealed_chunks;
	/* The checkpointer thread and what it shares with the writer, under ckpt_mu. */
	pthread_t ckpt_thread;
	int ckpt_running; /* set and cleared by the thread that opens / closes the store */
	pthread_mutex_t ckpt_mu;
	pthread_cond_t ckpt_cv, ckpt_done;
	local_dirty_t *dirty; /* partition files written since the last checkpoint */
	uint64_t dirty_gen;   /* rounds of that list taken by the checkpointer */
	uint32_t n_dirty;
	size_t cap_dirty;
	/* Partition files and directories made since the last checkpoint, not
	 * synced when made (the log holds all they contain): the checkpointer
	 * fsyncs them before it lets the log recycle. */
	char **fresh;
	uint32_t n_fresh;
	size_t cap_fresh;
	uint64_t applied_end;      /* every group before it is committed in its partitions */
	pthread_cond_t applied_cv; /* broadcast when applied_end moves or a group is kept */
	/* The end of the last group durable in the log and answered (log thread
	 * writes, readers wait for applied_end to reach it: local_read_barrier). */
	_Atomic uint64_t durable_end;
	/* The checkpointer's own: files whose -wal its last round synced without
	 * copying it into the file (LOCAL_CKPT_COPY_FRAMES). */
	char **unfilled;
	uint32_t n_unfilled;
	int ckpt_ms;                 /* between rounds while partitions are dirty or unfilled; 0:
	                                LIMIT_STORE_WAL_CHECKPOINT_MS (tests set less) */
	int ckpt_sync_any;           /* tests: sync-only rounds however few partitions are written */
	uint64_t log_since_ckpt;     /* log bytes since the last checkpoint started */
	uint32_t spare_asked_seg;    /* log thread: the segment whose half woke the checkpointer */
	uint64_t ckpt_req, ckpt_gen; /* checkpoints asked for, run */
	int ckpt_stop, ckpt_rc;
	err_t ckpt_err;
	uint64_t ckpt_lsn; /* checkpointer thread: the log's checkpoint */

	/* The merged-hours compactor (local_hours.c): its thread; hours_pass_mu
	 * makes passes one at a time and guards hours_seen (what each day file
	 * looked like at its last pass). */
	store_ticker_t hours_ticker;
	int hours_inited;
	pthread_mutex_t hours_pass_mu;
	int64_t hours_margin_ns; /* an hour is merged once it ended this long ago */
	/* Commits of a profile older than the compactor's cutoff (an hour that
	 * ended hours_margin_ns ago): a pass merges a day file written since
	 * its last pass only when this moved (local_part_commit adds). */
	_Atomic uint64_t hours_late_gen;
	int hours_pass_ms; /* between passes */
	local_hours_seen_t *hours_seen;
	uint32_t n_hours_seen;
	size_t cap_hours_seen;
	/* Counters for tests and benchmarks: merged rows written; merged rows
	 * and chunks that store_view_sums added; day files a pass looked into;
	 * chunks the compactor decoded. */
	_Atomic uint64_t hours_written, hours_used, hours_chunks, hours_looked, hours_merged;

	/* Writer thread only. */
	local_part_t **parts;
	uint32_t n_parts;
	/* The open partitions by key: set key % LOCAL_PART_SETS holds up to
	 * LOCAL_PART_WAYS of them (the least recently used one makes room), so
	 * that finding one is seldom a walk over all of them (local_part_get;
	 * an entry is checked, and cleared when its partition closes). */
	local_part_t *part_slot[LOCAL_PART_SETS][LOCAL_PART_WAYS];
	uint64_t route_gen; /* apply passes routed (local_log.c apply_group) */
	size_t cap_parts;
	uint64_t tick;
	int part_format;          /* format of new partition files: LOCAL_FORMAT (tests set 1) */
	unsigned char *part_tmpl; /* a new partition file's bytes (local_partition.c: part_create) */
	size_t part_tmpl_len;
	int part_tmpl_format;
	uint32_t open_max;    /* the LRU's size: LIMIT_STORE_OPEN_PARTS or what RLIMIT_NOFILE allows */
	uint64_t part_opens;  /* partitions opened so far (tests: the LRU kept them) */
	int64_t ahead_now_ns; /* tests: the clock making ahead reads (0: time_now_ns) */
	size_t cache_entries;
	size_t cache_budget; /* LIMIT_STORE_CACHE; tests set a smaller one before writing */
	local_scratch_t sc;
};

/* ---- local_chunk.c: encodings (pure functions, no SQLite) ---- */
/* Encodes a project name into a file-name component of [A-Za-z0-9_-]
 * ('_' escapes: "__" is '_', "_hh" any other byte). -1 if empty or too long. */
int local_project_dir(slice_t project, char out[3 * LIMIT_NAME_BYTES + 2]);
/* Decodes a project directory name (the inverse of local_project_dir); -1
 * unless dir is exactly what local_project_dir makes of some project. */
int local_project_name(const char *dir, char out[LIMIT_NAME_BYTES], size_t *n);
/* Encodes e[0..n) (as store_entries_merge leaves them) column-wise into
 * raw (reset first). *scale receives the common divisor of the values (stored in the chunk row, so
 * payloads that differ only by a factor, like samples:count and
 * cpu:nanoseconds of one pprof, are equal), *total their sum in entry
 * order, saturating (format-1 files written before saturation hold the
 * wrapping sum: the decoder accepts either). */
void local_payload_raw(const store_wentry_t *e, uint32_t n, buf_t *raw, int64_t *scale, int64_t *total);
/* raw -> stored form: format byte, then raw or zstd (whichever is smaller). */
void local_payload_pack(const buf_t *raw, buf_t *out, void *zc);
/* Decodes a payload; checks every length and id (nodes <= max_node, where 0
 * is the root: samples with an empty stack; attrsets <= max_attrset) and
 * that count and total match the chunk header. *tmp is
 * a reusable decompression buffer. -1 on a payload that fails a check: err
 * is 500 with what failed ("truncated value column"); the caller names the
 * file and chunk (err_prefix). */
int local_payload_decode(slice_t data, int64_t t_ns, int64_t scale, uint32_t n_expect, int64_t total_expect,
                         uint32_t max_node, uint32_t max_attrset, void *zd, uint8_t **tmp, size_t *cap_tmp,
                         store_entry_t **out, size_t *cap_out, err_t *err);
void local_labels_encode(const model_label_t *l, uint32_t n, buf_t *out);
/* The stored form of a span_id / trace_id value (spans table): even-length
 * hex (either case) becomes its bytes in out (LOCAL_SPAN_HEX), any other
 * string stays text (LOCAL_SPAN_TEXT, the value itself); the two never
 * compare equal in SQLite. LOCAL_SPAN_NONE when empty or longer than
 * LIMIT_SPAN_ID_BYTES bytes (not indexed). */
enum { LOCAL_SPAN_NONE, LOCAL_SPAN_HEX, LOCAL_SPAN_TEXT };
int local_span_key(slice_t v, uint8_t out[LIMIT_SPAN_ID_BYTES / 2], size_t *n);
/* Format 2's stack nodes (node_runs rows): the nodes a write added, local
 * ids first..first+n-1, each as varints local - parent (>= 1; the root's
 * children have parent 0) and frame local id. The node's 64-bit id is not
 * stored: it is hash_pair(parent's id, frame's id) (model/model.h), which
 * local_node_ids recomputes. */
void local_node_run_add(buf_t *run, uint32_t local, uint32_t parent, uint32_t frame);
/* Decodes the run of nodes first..first+n-1 into parent[] and frame[]
 * (indexed by local id); -1 with *what when a varint is cut short, a parent
 * is not below its node, a frame is not in 1..max_frame, or bytes are left. */
int local_node_run_decode(slice_t data, uint32_t first, uint32_t n, uint32_t max_frame, uint32_t *parent,
                          uint32_t *frame, const char **what);
/* id[k] for k in from..to (parents before children, id[0] = 0: the root). */
void local_node_ids(const uint32_t *parent, const uint32_t *frame, const uint64_t *frame_id, uint32_t from,
                    uint32_t to, uint64_t *id);
/* Decodes a labels blob; strings are copied into the arena. -1 on damage. */
int local_labels_decode(slice_t blob, arena_t *a, model_label_t **out, uint32_t *n);

/* The sums of a merged hour, r[0..n) sorted by (node, attrset) with no
 * repeats, raw: count, then per row the node's delta from the previous
 * row's, attrset, zigzag value (varints). Stored as local_payload_pack
 * leaves it (format byte, raw or zstd). */
void local_sums_encode(const local_hsum_t *r, uint32_t n, buf_t *raw);
/* Decodes a stored sums blob (packed) into *out (grown; *cap its capacity),
 * decompressing with zd into *tmp; -1 when it fails a check (format,
 * length, order, nodes <= max_node, attrsets <= max_attrset). */
int local_sums_decode(slice_t blob, uint32_t max_node, uint32_t max_attrset, void *zd, uint8_t **tmp,
                      size_t *cap_tmp, local_hsum_t **out, size_t *cap, uint32_t *n);

/* ---- local_seal.c: hours of format-2 partitions into blocks ---- */
/* An hour is sealed once it ended this long ago (late pushes go in first;
 * the merged hours, 5 min, then read it sealed). */
#define LOCAL_SEAL_DELAY_S 120
/* Entries of one block at most (its chunks' entries decoded in memory):
 * an hour with more is split. */
#define LOCAL_SEAL_MAX_ENTRIES (1u << 20)
/* An open partition is looked at again this long after it had nothing to seal. */
#define LOCAL_SEAL_POLL_MS 10000
/* The apply thread takes a sealing step this often when idle or waiting
 * for groups to gather, at once again after a step that sealed. */
#define LOCAL_SEAL_STEP_MS 1000
/* An hour that profiles are still being written into after it was due
 * (late pushes, replay, a backfill) is sealed once this long passed
 * without one, so it becomes one block, not one per step. */
#define LOCAL_SEAL_QUIET_MS 30000
/* The start of t's UTC hour. */
int64_t local_hour_floor(int64_t t);
typedef struct local_sealer local_sealer_t;
/* Seals the oldest hour of one series of p (format 2) with chunks before
 * cutoff_ns whose payloads are stored one by one (not one written into late
 * in the last LOCAL_SEAL_QUIET_MS, unless now), in p's transaction: begin
 * opens one when none is open, only once there is a block to write (a look
 * that finds nothing writes nothing). 1 when a block was written, 0 when
 * there is nothing to seal (or the hour cannot be: logged, p->seal_broken),
 * -1 with err on a SQLite failure (the caller rolls the transaction back
 * when one is open). Apply thread. */
int local_part_seal(store_t *s, local_part_t *p, int64_t cutoff_ns, int now,
                    int (*begin)(store_t *s, local_part_t *p, err_t *err), err_t *err);
void local_sealer_free(local_sealer_t *z);

/* ---- local_partition.c: partition files for the writer ---- */
/* Finds or opens the partition of (project dir, day); NULL with err. */
local_part_t *local_part_get(store_t *s, const char *proj, int64_t day, err_t *err);
/* The same for a file that exists, never made nor moved aside: NULL (err
 * unset) when there is none, NULL with err when it does not open. */
local_part_t *local_part_get_existing(store_t *s, const char *proj, int64_t day, err_t *err);
/* Sizes the writer's LRU and id caches (local_open): raises RLIMIT_NOFILE's
 * soft limit to its hard limit, then keeps open at most
 * (nofile - max(LIMIT_STORE_FD_RESERVE, nofile / 4)) / 3 partitions (3 fds
 * each: .db, -wal, -shm), between LIMIT_STORE_OPEN_PARTS_MIN and
 * LIMIT_STORE_OPEN_PARTS; logs one line when that is below the latter. */
void local_parts_init(store_t *s);
/* Closes least-recently-used partitions beyond min(keep, s->open_max) (none in a transaction). */
void local_parts_trim(store_t *s, uint32_t keep);
void local_parts_close_all(store_t *s);
/* Closes the partitions whose last SQLite call found the file corrupt (none
 * in a transaction) and moves their files aside (local_quarantine): the next
 * write to that day starts a fresh file. */
void local_parts_drop_damaged(store_t *s);
int local_part_begin(store_t *s, local_part_t *p, err_t *err);
/* -1 with err when COMMIT fails: the transaction is still open (the caller
 * reads the error code, then rolls back). */
int local_part_commit(store_t *s, local_part_t *p, err_t *err);
/* Rolls back the open transaction and forgets everything cached since. */
void local_part_rollback(store_t *s, local_part_t *p);
/* Sets meta.applied_lsn and meta.applied_log (the log's id) inside the open transaction. */
int local_part_set_applied(local_part_t *p, uint64_t lsn, uint64_t log, err_t *err);
/* Writes the profiles of b that belong to partition p (day). Inside a transaction. */
int local_part_write(store_t *s, local_part_t *p, const model_batch_t *b, int64_t day, err_t *err);
/* Closes the writer's connections to partitions of project dir proj before day (none is in a transaction). */
void local_parts_close_before(store_t *s, const char *proj, int64_t day);
/* Creates the tables of a partition in db (an empty partition: the writer's new
 * files, a view's stand-in for a partition deleted since it was listed). */
int local_schema_init(sqlite3 *db, int format);
/* Reads format 2's node_runs of db into parent[1..max_node] and
 * frame[1..max_node] (local_node_run_decode). SQLITE_DONE when done, with
 * *what set when they are damaged (not dense, or a run fails to decode);
 * another SQLite code when reading failed. */
int local_node_runs_load(sqlite3 *db, uint32_t max_node, uint32_t max_frame, uint32_t *parent,
                         uint32_t *frame, const char **what);
/* fsync()s a directory so the names created or removed in it are durable (errors ignored). */
void local_fsync_dir(const char *dir);
/* path + "-wal" (SQLite's log beside database file path), malloc'd. */
char *local_wal_path(const char *path);
/* Binds span or trace id v at parameter i of st in its stored form
 * (local_span_key); 1, or 0 with NULL bound when v cannot be indexed. */
int local_bind_span_key(sqlite3_stmt *st, int i, slice_t v);
/* Sets err from a SQLite failure: 503 + retry for full disk / I/O / busy, 500 otherwise. */
int local_sqlite_err(err_t *err, sqlite3 *db, int rc, const char *path, const char *what);

/* ---- local_log.c: the write-ahead log under the partitions ---- */
/* Opens DIR/_wal, replays every group after its checkpoint into the
 * partitions (one log line saying what was replayed or dropped), starts the
 * checkpointer and checkpoints what replay wrote. Before the writer thread
 * starts. 0, or -1 with err; local_log_close is needed either way. */
int local_log_open(store_t *s, err_t *err);
/* Stops the checkpointer after a last checkpoint (the writer is stopped and
 * its partitions closed), closes the log. */
void local_log_close(store_t *s);
/* The log thread's half of a group commit: b[0..n) (checked:
 * batch_codec_check, project dirs, retention floor) encoded into one record
 * (in log_rec, reused) and appended, synced; *lsn its position, *rec_n its
 * size, and durable_end moved past it (local_read_barrier). 0 once durable;
 * -1 with err (503 on I/O or a full log, 413 when the record cannot fit a
 * segment) and nothing stored. */
int local_log_append(store_t *s, model_batch_t *const *b, uint32_t n, uint64_t *lsn, uint64_t *rec_n,
                     err_t *err);
/* The apply thread's half: the groups g[0..n) (in LSN order) written to
 * their partitions after any group to redo, into each partition's open
 * transaction (begun if none). Groups that cannot be written yet are left
 * in the log to redo (redo_from, redo_to) and `behind` set; they stay
 * durable, so their batches are acknowledged either way. */
void local_log_apply(store_t *s, const local_group_t *g, uint32_t n);
/* Commits the open partition transactions that are LOCAL_APPLY_TXN_MS old
 * (all of them when all is set) and moves applied_end to the first group
 * not committed everywhere. A commit that fails leaves its groups to redo. */
void local_log_settle(store_t *s, int all);
/* Before a read: waits until every group answered so far is in its
 * partitions, so a reader sees what was acknowledged before it began
 * (not while groups are kept: `behind`; at most
 * LIMIT_STORE_READ_BARRIER_MS). */
void local_read_barrier(store_t *s);
/* One sealing step (apply thread, between passes): the open format-2
 * partitions whose time to be looked at came (all of them when all is
 * set), in turn from where the last step stopped, until one seals an hour
 * (1; in its transaction, begun if none) or 64 had nothing (0); now_all
 * seals hours still written late too (local_part_seal's now). A SQLite
 * failure rolls that partition's transaction back (its groups redone). */
int local_log_seal_step(store_t *s, int all, int now_all);
/* Seals every hour due in the open partitions and commits (tests): also
 * hours still written late unless s->seal_wait_quiet. */
void local_seal_wait(store_t *s);
/* Waits until the apply thread has finished everything handed to it (the
 * log thread after a sweep; tests that look at the writer's state). */
void local_apply_wait(store_t *s);
/* delta +1: a reader waits for what was answered, so the apply thread
 * starts its pass now (LOCAL_APPLY_DELAY_MS); -1 once it stopped waiting. */
void local_apply_hurry(store_t *s, int delta);
/* Writes the groups to redo, read back from the log in order, to their
 * partitions and commits. 0 when none is left (`behind` cleared); -1 with a
 * 503 while one still cannot be written. */
int local_log_retry(store_t *s, err_t *err);
/* Runs a checkpoint now and waits for it: every group written so far is then
 * durable in its partitions and never replayed (the sweep calls it before it
 * deletes files). 0, or -1 with err. */
int local_log_checkpoint(store_t *s, err_t *err);
/* Adds a file or directory the apply thread made (unsynced) to what the next
 * checkpoint fsyncs before the log lets go of the records it holds. */
void local_log_fresh(store_t *s, const char *path);

/* ---- local_damage.c: partitions SQLite calls corrupt ---- */
/* 1 for SQLITE_CORRUPT / SQLITE_NOTADB (and their extended codes). */
int local_is_damage(int sqlite_rc);
void local_damage_init(store_t *s);
void local_damage_free(store_t *s);
/* Logs `store partition is damaged` (file, action, error) once per file and
 * counts it (store_stats_t.damaged). Thread-safe. */
void local_report_damaged(store_t *s, const char *path, const char *why, const char *action);
/* Reports path and renames it (and its -wal, -shm) to path.damaged-UNIXSECONDS
 * so that a fresh partition can take its place. Writer thread, with no
 * connection of the writer open on it. 0, or -1 when a rename failed. */
int local_quarantine(store_t *s, const char *path, const char *why);

/* ---- local_retention_t.c: retention state, the sweep, the project list ---- */
void local_retention_init(store_t *s, int default_days);
void local_retention_free(store_t *s);
/* Retention in days of project dir proj (its own or the default; 0 = none). */
int local_retention_days(store_t *s, const char *proj);
/* 0 when every profile of b may be written into project dir proj, else -1
 * with a 400 naming the first day before the last sweep's floor. */
int local_retention_check(store_t *s, const char *proj, const model_batch_t *b, err_t *err);
/* The sweep of job j (writer thread, between groups). */
int local_retention_run(store_t *s, local_job_t *j, err_t *err);

/* ---- local_shared.c: keys.db and usage.db (store.h's keys and usage) ---- */
/* Sets up the mutexes and, unless keys_usage_only, opens (creating them)
 * keys.db and usage.db, so a server that cannot use them fails at start.
 * local_shared_close is needed either way. 0, or -1 + err. */
int local_shared_open(store_t *s, err_t *err);
void local_shared_close(store_t *s);
int local_usage_write(store_t *s, const store_usage_row_t *rows, uint32_t n, err_t *err);
int local_usage_read(store_t *s, slice_t project, int64_t from_day, int64_t until_day,
                     void (*cb)(const store_usage_row_t *row, void *ctx), void *ctx, err_t *err);
int local_keys_create(store_t *s, const store_key_row_t *row, err_t *err);
int local_keys_revoke(store_t *s, slice_t name, int64_t now_ns, err_t *err);
int local_keys_read(store_t *s, void (*cb)(const store_key_row_t *row, void *ctx), void *ctx, err_t *err);
int local_keys_poll(store_t *s, int64_t *stamp, void (*cb)(const store_key_row_t *row, void *ctx), void *ctx,
                    err_t *err);

/* ---- local_hours.c: merged hours (docs/STORE.md "Merged hours") ----
 * A derived file DAY.db.hours beside each day partition holds, per (series,
 * UTC hour) whose hour ended hours_margin_ns ago, the sums of its chunks and
 * the stamp of the chunks summed; once the whole day has passed, the same
 * per (series, day). Written only by the compactor thread,
 * never by the writer; read by store_view_sums (local_view.c), which uses a
 * row only when its stamp equals that of the chunks the view lists. */
/* Starts the compactor (a pass every hours_pass_ms; KILN_TEST_HOURS_MS and
 * KILN_TEST_HOURS_MARGIN_S override the pass interval and the margin). */
int local_hours_start(store_t *s, err_t *err);
/* Stops and joins it (idempotent; nothing when it never started). */
void local_hours_stop(store_t *s);
/* One pass now, on the caller's thread (tests): every project, every day.
 * 0, or -1 with err (a day that failed is left for the next pass). */
int local_hours_pass(store_t *s, err_t *err);
void local_hstamp_add(local_hstamp_t *st, const store_chunk_head_t *h);
void local_hacc_init(local_hacc_t *a);
void local_hacc_free(local_hacc_t *a);
void local_hacc_clear(local_hacc_t *a);
void local_hacc_add(local_hacc_t *a, uint32_t node, uint32_t attrset, int64_t value);
/* The sums as rows sorted by (node, attrset) in *out (grown); 1 when a sum
 * did not fit int64 and was clamped, else 0. */
int local_hacc_rows(const local_hacc_t *a, local_hsum_t **out, size_t *cap, uint32_t *n);
/* The identity of day file path (device and inode, hashed; 0 when it cannot be stat()ed). */
uint64_t local_file_ident(const char *path);
/* Opens day_path's merged hours read-only when they were made from the file
 * of identity ident; NULL when absent, damaged or made from another file. */
sqlite3 *local_hours_open_ro(const char *day_path, uint64_t ident);
/* The merged row of (series, hour), or with day set of (series, day), when
 * its stamp equals want and its sums decode (ids within max_node,
 * max_attrset): 1 with (*out)[0..*n). 0 when there is none (or a bad one:
 * the caller reads the hours or chunks). *st is the statement of that kind,
 * prepared on first use (finalize it with the connection). */
int local_hours_lookup(sqlite3 *db, sqlite3_stmt **st, int day, uint32_t series, int64_t key,
                       const local_hstamp_t *want, uint32_t max_node, uint32_t max_attrset, void *zd,
                       uint8_t **tmp, size_t *cap_tmp, local_hsum_t **out, size_t *cap, uint32_t *n);
/* 1 when n is a day partition's name, "YYYY-MM-DD.db". */
int local_name_is_day(const char *n);
/* Identity (local_file_ident) of the file partition p of v opened; 0 unknown. */
uint64_t local_view_ident(store_view_t *v, uint32_t p);
/* The UTC hour (hours since 1970) of t_ns, rounded down. */
static inline int64_t local_hour(int64_t t_ns)
{
	int64_t h = t_ns / (3600 * NS_PER_SEC);
	return h - (t_ns % (3600 * NS_PER_SEC) < 0);
}

/* ---- the engine's entry points (store_local_engine, local_writer.c) ---- */
/* mkdir -p dir. 0, or -1 + err (500). */
int local_mkdir_p(const char *dir, err_t *err);
void local_drain(store_t *s);
void local_close(store_t *s);
void local_submit(store_t *s, model_batch_t *b, store_done_fn done, void *ctx);
uint32_t local_queue_depth(store_t *s);
int local_set_retention(store_t *s, slice_t project, int days, err_t *err);
int64_t local_retention_start(store_t *s, slice_t project, int64_t now_ns);
int local_projects(store_t *s, void (*cb)(slice_t project, void *ctx), void *ctx, err_t *err);
int local_retention_sweep(store_t *s, slice_t project, int keep_days, int64_t now_ns, uint32_t *deleted,
                          err_t *err);
void local_get_stats(store_t *s, store_stats_t *out);
int local_view_open(store_t *s, slice_t project, int64_t from_ns, int64_t until_ns, store_view_t **out,
                    err_t *err);
void local_view_close(store_view_t *v);
uint32_t local_view_partitions(const store_view_t *v);
int local_view_skipped(const store_view_t *v, uint32_t p);
int local_view_series(store_view_t *v, uint32_t p, const store_series_t **out, uint32_t *n, err_t *err);
int local_view_heads(store_view_t *v, uint32_t p, const uint32_t *series, uint32_t n_series,
                     const store_chunk_head_t **out, uint32_t *n, err_t *err);
int local_view_entries(store_view_t *v, uint32_t p, const store_chunk_head_t *h, const store_entry_t **out,
                       uint32_t *n, err_t *err);
int local_view_nodes(store_view_t *v, uint32_t p, store_nodes_t *out, err_t *err);
int local_view_frames(store_view_t *v, uint32_t p, const model_frame_t **out, uint32_t *n, err_t *err);
int local_view_attrsets(store_view_t *v, uint32_t p, const model_attrset_t **sets,
                        const model_label_t **labels, uint32_t *n, err_t *err);
int local_view_span_chunks(store_view_t *v, uint32_t p, slice_t span_id, slice_t trace_id,
                           const store_span_hit_t **out, uint32_t *n, err_t *err);
int local_view_sums(store_view_t *v, uint32_t p, const uint32_t *series, uint32_t n_series,
                    const store_sum_t **out, uint32_t *n, err_t *err);
/* Adds to acc the merged row of (series, hour) of partition p when its
 * stamp is st and its sums decode: 1; 0 when there is no such row (acc
 * untouched); -1 with err. The compactor extends a row this way. */
int local_view_merged_hour(store_view_t *v, uint32_t p, uint32_t series, int64_t hour,
                           const local_hstamp_t *st, local_hacc_t *acc, err_t *err);

#endif
