/* The storage interface. Engines: store/local (embedded, SQLite partitions)
 * and store/clickhouse (ClickHouse over HTTP; docs/STORE.md). Writes go
 * through one writer thread with group commit; a write's completion is
 * reported only after its data is durable (local: fsynced; ClickHouse: the
 * INSERT answered 200). Reads use views that run concurrently with writes.
 * store.c dispatches every call to the engine chosen at store_open. */
#ifndef KILN_STORE_STORE_H
#define KILN_STORE_STORE_H

#include <stdint.h>

#include "base/err.h"
#include "base/limits.h"
#include "model/model.h"

typedef struct store store_t;

enum { STORE_ENGINE_LOCAL = 0, STORE_ENGINE_CLICKHOUSE = 1 };

typedef struct {
	int engine;      /* STORE_ENGINE_* (default local) */
	const char *dir; /* local: data directory (created if missing) */
	/* clickhouse: HTTP interface URL (http://host:8123), database (created if
	 * missing), credentials, and an optional cluster name (tables created
	 * ON CLUSTER: Distributed over MergeTree tables on every shard). */
	const char *ch_url, *ch_database, *ch_user, *ch_password, *ch_cluster;
	int ch_replicated; /* with a cluster: Replicated*MergeTree local tables ({shard}, {replica} macros) */
	/* clickhouse: MiB one answer may hold (0: LIMIT_CH_ANSWER_BYTES); past it a read fails with a
	 * 503 that names store.maxAnswerMiB. */
	uint32_t ch_max_answer_mib;
	/* The embedded writer takes what is queued as soon as it is free (STORE:
	 * Writing): 0 (default) or -1, no window; > 0, a group gathers this long
	 * after its first batch, as before issue 15 (benchmarks only). ClickHouse
	 * (STORE: store/clickhouse, Writing): 0 is its 5 ms window, -1 none. */
	int commit_interval_ms;
	int max_batches_per_commit; /* default LIMIT_STORE_GROUP_BATCHES (256) */
	/* Caps on the batches queued or being written: their number (0:
	 * LIMIT_STORE_QUEUE_BATCHES, store.queueBatches) and their memory in MiB
	 * (0: LIMIT_STORE_QUEUE_BYTES, store.queueMiB). Past either, store_submit
	 * refuses at once with the busy error (store_busy). */
	uint32_t queue_batches, queue_mib;
	/* Test-only (the env hook of cli/store_open.c, tests/unit/store/queue.c,
	 * crash_groups.c): called on the writer thread with the n batches of a
	 * group, in the group's order (a retention sweep is not passed), after
	 * the group is taken and before it is written; the array lives only for
	 * the call. May block, which holds the writer. NULL: none. */
	void (*hold)(void *arg, const model_batch_t *const *batches, size_t n);
	void *hold_arg;
	int sync;            /* 1 (default): fsync at commit (PRAGMA synchronous=FULL) */
	int seal_off;        /* test-only: 1, the embedded engine seals no hour into blocks unless a test
	                        asks (local_seal_wait), so tests can look at payload rows */
	int retention_days;  /* retention of projects without store_set_retention; 0 (default):
	                        none, views are not clamped (tools, tests); the server passes the
	                        configured default (14 days, OPS: Retention). */
	int keys_usage_only; /* 1: only keys and usage will be used (kiln keys, kiln usage beside a
	                        running server): the embedded engine takes no lock, starts no writer
	                        (writes get a 503) and creates nothing until a key or count is written */
} store_config_t;

store_t *store_open(const store_config_t *cfg, err_t *err);
/* Stops accepting writes, commits everything queued (each queued write's
 * done callback runs), stops the writer thread, closes. */
void store_close(store_t *s);
/* The first half of store_close: stops accepting writes and commits
 * everything queued (each done callback runs), but keeps the store usable
 * for reads, usage and keys until store_close (which then only frees). */
void store_drain(store_t *s);

/* Called on the writer thread once the batch is durable (err == NULL) or
 * refused (err set: 503 when the disk is full or the store shuts down, 500 on
 * a bug); on the caller's thread, from store_submit itself, when the store
 * refuses at once (shutting down; busy, below). Must not block; typically
 * posts to the event loop. */
typedef void (*store_done_fn)(void *ctx, const err_t *err);

/* Queues b for writing; takes ownership of b (freed by the store). Each
 * profile goes to the partition of (b->project, UTC day of its time_ns).
 * All of one batch commits in one transaction per partition. When the
 * batches queued or being written already reach a cap (queue_batches,
 * queue_mib of store_config_t), b is refused at once: done runs before
 * store_submit returns with the busy error (503, retry_after 1, nothing of b
 * stored, nothing queued touched). */
void store_submit(store_t *s, model_batch_t *b, store_done_fn done, void *ctx);
/* 1 when err is that busy refusal (API: Push errors; the scraper's store_busy). */
int store_busy(const err_t *err);
/* store_submit + wait; on success every read begun after it returns sees
 * the batch (the embedded engine answers a write once it is durable in its
 * log and writes its partitions after: it waits for them here). For the
 * CLI, tests and benchmarks. 0 or -1 with err. */
int store_write_sync(store_t *s, model_batch_t *b, err_t *err);

/* Queued batches not yet committed (for /metrics and backpressure). */
uint32_t store_queue_depth(store_t *s);

/* ---- Retention (OPS: Retention) -------------------------------------------
 * Data is kept for a number of days per project and deleted by whole day
 * partitions (docs/STORE.md, "Retention"). Two separate things:
 *  - what queries see: every view of a project with a retention of K days
 *    starts no earlier than now - K * 86400 s (the view's from_ns is raised
 *    at store_view_open, by the wall clock), so expired samples are never
 *    returned, whenever the sweep runs and even before it deletes their day;
 *  - what is on disk: store_retention_sweep deletes the partitions whose
 *    whole day is at least keep_days old. */

/* Sets the retention of project (1..LIMIT_RETENTION_DAYS days; 0: back to
 * store_config_t.retention_days). Views opened afterwards are clamped to it.
 * Thread-safe. 0, or -1 with a 400 (bad project name or days). */
int store_set_retention(store_t *s, slice_t project, int days, err_t *err);
/* The first instant a view of project opened at now_ns may return:
 * now_ns - days * NS_PER_DAY, or INT64_MIN when the project has no retention. */
int64_t store_retention_start(store_t *s, slice_t project, int64_t now_ns);

/* Calls cb with the (unescaped) name of every project that has a directory
 * in the store, sorted by directory name. The slice is valid during the call.
 * Thread-safe. 0, or -1 with err (500) when the data directory is unreadable. */
int store_projects(store_t *s, void (*cb)(slice_t project, void *ctx), void *ctx, err_t *err);

/* Deletes every day partition of project whose whole day is at least
 * keep_days old at now_ns: with today = the UTC day of now_ns, the partition
 * of day D ([D, D + 1 day)) goes when D < today - keep_days, i.e. when
 * D + 1 day <= now_ns - keep_days days rounded down to midnight. Keep 14: a
 * sample 14 days old or younger always stays (its day is today - 14 or
 * later); 15 days old is gone. Days kept: today and the keep_days before it.
 *
 * Runs on the writer thread between two commit groups (queued like a batch,
 * this call waits): the writer's cached connections to those partitions are
 * closed, then DAY.db, DAY.db-wal, DAY.db-shm (and a leftover DAY.db.new)
 * are unlinked and the directory fsynced. A view that has already read a
 * deleted partition keeps reading its open files (POSIX unlink); a view that
 * had listed it but not yet read it finds it empty; later views do not list
 * it. Afterwards the store refuses (400, the whole batch) writes to a day
 * before today - keep_days of that sweep, so a late write cannot bring a
 * deleted day back; a later sweep of the project replaces that floor (none
 * after a restart until the first sweep). keep_days: 1..LIMIT_RETENTION_DAYS.
 * *deleted (may be NULL) = partitions deleted (0 when there was nothing to
 * do). 0, or -1 with err (400 bad arguments, 503 shutting down, 500 when a
 * file could not be unlinked: the others are still deleted). */
int store_retention_sweep(store_t *s, slice_t project, int keep_days, int64_t now_ns, uint32_t *deleted,
                          err_t *err);

/* The upper bounds (ns, inclusive) of the store's time histograms' buckets
 * (store_stats_t's commit_buckets and ack_buckets, /metrics'
 * kiln_store_commit_seconds and kiln_store_ack_seconds); their last bucket,
 * STORE_TIME_BUCKETS, holds what is longer than every bound. */
#define STORE_TIME_BUCKETS 21
extern const uint64_t store_time_bounds_ns[STORE_TIME_BUCKETS];

/* Operational figures for /metrics. Thread-safe. */
typedef struct {
	uint64_t commits;       /* group commits since open */
	uint64_t commit_ns_sum; /* time spent in them */
	uint64_t commit_ns_max; /* the longest */
	/* The commits by their time; not cumulative: [i] counts those above
	 * bound i - 1 and up to bound i (store_time_bounds_ns). */
	uint64_t commit_buckets[STORE_TIME_BUCKETS + 1];
	uint32_t partitions;    /* day partition files on disk (all projects) */
	uint64_t damaged;       /* damaged partition files found since open (skipped by reads, moved aside
	                           by the writer; docs/OPERATIONS.md) */
	uint64_t sealed_blocks; /* embedded engine: blocks written by sealing since open (STORE: Blocks) */
	uint64_t sealed_chunks; /* the chunks they took in */
	/* Summed hours and days (STORE: Merged hours; store/clickhouse Summed
	 * hours): rows the compactor wrote, and rows views added instead of
	 * reading their chunks, since open. */
	uint64_t hours_written, hours_used;
	/* Batches acknowledged as stored since open, by the time from entering
	 * the write queue to their ack (both engines: the write queue's), as
	 * commit_buckets; ack_ns_sum: their summed times. */
	uint64_t ack_buckets[STORE_TIME_BUCKETS + 1];
	uint64_t ack_ns_sum;
} store_stats_t;
void store_get_stats(store_t *s, store_stats_t *out);
/* "local" or "clickhouse". */
const char *store_engine_name(const store_t *s);

/* ---- Usage counters and ingestion keys (OPS: Usage, OPS: Projects and keys) -------------
 * Every engine keeps them. The embedded engine: DATA/usage.db and
 * DATA/keys.db (SQLite, WAL, synchronous=FULL), which `kiln keys` and
 * `kiln usage` open beside a running server (store_config_t.keys_usage_only).
 * ClickHouse: its usage and keys tables, shared by every Kiln process on it,
 * so a query node sees what every ingestor counted and a key created once
 * works everywhere. All of these are thread-safe. */
typedef struct {
	int64_t day; /* days since 1970-01-01, UTC */
	slice_t project, key;
	uint64_t counts[5]; /* accepted, rejected: rate_limited, too_large, invalid, out_of_window */
} store_usage_row_t;
/* Adds rows to the stored counters (one transaction / one insert). 0, or -1
 * with err (500; 503 when ClickHouse is unreachable). */
int store_usage_write(store_t *s, const store_usage_row_t *rows, uint32_t n, err_t *err);
/* Calls cb with the summed rows of project (every project when empty) for
 * days from_day..until_day inclusive, ordered by day, project, key. Nothing
 * stored yet (no usage.db) is no rows. */
int store_usage_read(store_t *s, slice_t project, int64_t from_day, int64_t until_day,
                     void (*cb)(const store_usage_row_t *row, void *ctx), void *ctx, err_t *err);

/* The whole state of one key name (only the key's SHA-256 hash is stored). */
typedef struct {
	slice_t name, project, scope;   /* scope: "ingest" | "query" | "both" */
	slice_t hash;                   /* 32 bytes */
	int64_t created_ns, revoked_ns; /* revoked_ns 0: active */
} store_key_row_t;
/* Adds the key row->name, durable before this returns 0. -1 + err: 400 when
 * the name is taken (names stay taken after revocation; on ClickHouse two
 * creations of one name at the same instant may both succeed, the newer row
 * wins), 500/503 on I/O. */
int store_keys_create(store_t *s, const store_key_row_t *row, err_t *err);
/* Revokes the key called name at now_ns: 0 revoked now, 1 already revoked,
 * -1 + err (404 unknown name, 500/503 I/O). */
int store_keys_revoke(store_t *s, slice_t name, int64_t now_ns, err_t *err);
/* Every key name's current row, ordered by project, then name. No keys yet
 * (no keys.db) is no rows. Rows are the engine's bytes: callers check them. */
int store_keys_read(store_t *s, void (*cb)(const store_key_row_t *row, void *ctx), void *ctx, err_t *err);
/* store_keys_read when the keys may have changed since *stamp (start with
 * *stamp = 0), which the engine then updates: 1 read (cb called), 0 unchanged
 * (cb not called), -1 + err. The engine decides what is cheap: embedded, a
 * look at keys.db's change counter (PRAGMA data_version), so polling it every
 * 250 ms costs one query while nothing changes, and a failed read is tried
 * again at the next poll; ClickHouse cannot tell, so it re-reads the table,
 * at most once a second, even after a failure. */
int store_keys_poll(store_t *s, int64_t *stamp, void (*cb)(const store_key_row_t *row, void *ctx), void *ctx,
                    err_t *err);

/* ---- Reading ---------------------------------------------------------
 * A view is a read snapshot of one project's partitions overlapping
 * [from_ns, until_ns), where from_ns is first raised to the project's
 * retention start (store_retention_start at the time of opening). Thread-safe
 * across views; one view per thread.
 * Inside a partition, series, nodes, frames and attrsets have dense local ids
 * starting at 1 (0 = none). A node's parent always has a smaller local id.
 * An entry or sum with node 0 holds samples with an empty stack (a pprof
 * Sample without locations): its value is the root's own (model/model.h). */
typedef struct store_view store_view_t;

typedef struct {
	uint32_t local; /* local id in its partition */
	uint64_t id;    /* global series id (hash) */
	slice_t service;
	slice_t type; /* "sample_type:sample_unit" */
	slice_t period_type, period_unit;
	int64_t period;
	uint8_t aggregation; /* MODEL_WINDOW / MODEL_SNAPSHOT */
	uint8_t cpu_alias;
	const model_label_t *labels; /* series labels, sorted by key */
	uint32_t n_labels;
} store_series_t;

typedef struct {
	uint32_t series; /* local series id */
	int64_t t_ns;    /* profile start */
	int64_t duration_ns;
	uint32_t n_entries;
	int64_t total;            /* sum of the chunk's values */
	int64_t chunk_id;         /* unique within the view; tells chunks apart (not an order) */
	int64_t _payload, _scale; /* engine-private */
} store_chunk_head_t;

typedef struct {
	uint32_t node;    /* local node id (leaf of the stack); 0: the root, an empty stack */
	uint32_t attrset; /* local attrset id, 0 = no attributes */
	int64_t value;
	int64_t t_ns; /* sample time at 1 s resolution (API: Frames); the chunk's t_ns when the
	                 samples had none. A chunk may hold one (node, attrset) several
	                 times, once per distinct second. */
} store_entry_t;

typedef struct {
	uint32_t n;             /* ids 1..n valid; index 0 unused */
	const uint32_t *parent; /* 0 = root frame */
	const uint32_t *frame;  /* local frame id */
	const uint64_t *id;     /* global node id (hash) */
} store_nodes_t;

int store_view_open(store_t *s, slice_t project, int64_t from_ns, int64_t until_ns, store_view_t **out,
                    err_t *err);
void store_view_close(store_view_t *v);
uint32_t store_view_partitions(const store_view_t *v);

/* Series of partition p (0-based). Valid for the view's lifetime. */
int store_view_series(store_view_t *v, uint32_t p, const store_series_t **out, uint32_t *n, err_t *err);
/* Chunk headers of partition p for the given local series ids, whose t_ns is
 * in [from_ns, until_ns) of the view; no chunk data is decoded. Valid until
 * the next call on v. */
int store_view_heads(store_view_t *v, uint32_t p, const uint32_t *series, uint32_t n_series,
                     const store_chunk_head_t **out, uint32_t *n, err_t *err);
/* Decodes one chunk. Entries valid until the next call on v. A damaged chunk
 * makes its partition skipped (below), never a crash. */
int store_view_entries(store_view_t *v, uint32_t p, const store_chunk_head_t *h, const store_entry_t **out,
                       uint32_t *n, err_t *err);
int store_view_nodes(store_view_t *v, uint32_t p, store_nodes_t *out, err_t *err);
/* Damaged partitions (SQLite finds the file corrupt, a value out of range, a
 * partition format this Kiln cannot read): the first call that meets the
 * damage reports it (log `store partition is damaged`, store_stats_t.damaged)
 * and, instead of failing, answers empty; so does every later call on that
 * partition in the view. A query over several partitions answers from the
 * others. 1 when partition p of v is being skipped so. */
int store_view_skipped(const store_view_t *v, uint32_t p);
/* frames[1..n]; frames[0] unused. Valid for the view's lifetime. */
int store_view_frames(store_view_t *v, uint32_t p, const model_frame_t **out, uint32_t *n, err_t *err);
/* attrsets[1..n] as label ranges; attrsets[0] is the empty set. */
int store_view_attrsets(store_view_t *v, uint32_t p, const model_attrset_t **sets,
                        const model_label_t **labels, uint32_t *n, err_t *err);

/* ---- Aggregation pushed into the engine ------------------------------
 * The values of every chunk of the given local series of partition p whose
 * t_ns is in the view's range (the chunks store_view_heads lists), summed
 * per (series, node, attrset) by the engine itself (ClickHouse: GROUP BY),
 * so a long range moves one row per distinct stack instead of every chunk.
 * 1 when v's engine can do this (store_view_sums may be called), else 0:
 * the caller reads the chunks with store_view_entries instead. */
typedef struct {
	uint32_t series, node, attrset; /* local ids; node 0: the root, an empty stack */
	int64_t value;
} store_sum_t;
int store_view_can_sum(const store_view_t *v);
/* Valid until the next call on v. 0 or -1 with err. */
int store_view_sums(store_view_t *v, uint32_t p, const uint32_t *series, uint32_t n_series,
                    const store_sum_t **out, uint32_t *n, err_t *err);

/* ---- Span links (API: Span links) ------------------------------------------
 * Every stored chunk entry whose attribute set has a `span_id` label is
 * indexed by (span_id, trace_id of the same set if any). Values longer than
 * LIMIT_SPAN_ID_BYTES bytes are not indexed (a trace_id that long is indexed
 * as absent). Even-length hex ids match case-insensitively; any other string
 * exactly. */

typedef struct {
	store_chunk_head_t head; /* a chunk with linked samples (pass to store_view_entries) */
	uint32_t attrset;        /* local attrset id: its entries with this attrset are the linked ones */
} store_span_hit_t;

/* Chunks of partition p whose t_ns is in the view's range and that hold
 * samples linked to a span: one hit per (chunk, attrset), sorted by (t_ns,
 * series, chunk, attrset). With span_id non-empty: samples of that span;
 * trace_id, when non-empty, must then match too, except that samples linked
 * without a trace_id (pprof labels often carry span_id alone) match any.
 * With span_id empty: every sample linked to trace_id (required then).
 * A partition written before the index existed has no hits. Valid until the
 * next call on v. Each partition is opened on first use, so a view over
 * many days costs little until a partition is read. */
int store_view_span_chunks(store_view_t *v, uint32_t p, slice_t span_id, slice_t trace_id,
                           const store_span_hit_t **out, uint32_t *n, err_t *err);

#endif
