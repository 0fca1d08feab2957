/* Private to store/local (the embedded engine): the structures its files share
 * and the functions they call on each other. Nothing outside src/store/local_*.c
 * includes this; the public contract is store/store.h. */
#ifndef KILN_STORE_LOCAL_H
#define KILN_STORE_LOCAL_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/u64map.h"
#include "store/store.h"

#define LOCAL_MAX_OPEN_PARTS 8        /* writer connections kept open (LRU) */
#define LOCAL_CACHE_CAP 1000000u      /* id -> local cache entries over all open partitions */
#define LOCAL_PROJECT_MAX 64u         /* bytes of a project name */
#define LOCAL_FORMAT 1                /* meta.format of the partition files this code writes */
#define LOCAL_MAX_ENTRIES (1u << 24)  /* entries one stored chunk may claim (hostile-file bound) */
#define LOCAL_MAX_IDS (1u << 30)      /* rows of one dictionary table a reader accepts */

/* The dictionaries of a partition that the writer caches (hash id -> local id). */
enum { LT_FRAME, LT_NODE, LT_ATTRSET, LT_SERIES, LT_COUNT };

/* A partition open for writing: one file, one connection, its caches. */
typedef struct local_part {
	char *path;
	char *proj; /* encoded project (local_project_dir) */
	int64_t day;
	sqlite3 *db;
	sqlite3_stmt *ins[LT_COUNT], *sel[LT_COUNT];
	sqlite3_stmt *ins_chunk, *sel_payload, *ins_payload, *del_chunks;
	sqlite3_stmt *ins_span, *del_spans;
	u64map_t cache[LT_COUNT];
	uint32_t next[LT_COUNT];  /* next local id to assign */
	int complete[LT_COUNT];   /* 1: cache holds every row, a miss means "new" */
	int in_txn;
	int64_t first_chunk, last_chunk; /* chunk rowids written by the open transaction */
	uint64_t last_use;
} local_part;

typedef struct local_job {
	model_batch *b;
	store_done_fn done;
	void *ctx;
	struct local_job *next;
	kn_err err;
	int failed;
	char proj[3 * LOCAL_PROJECT_MAX + 2];
} local_job;

/* An entry being encoded: local ids plus the sample's second offset from the chunk's time. */
typedef struct {
	uint32_t node, attrset;
	int64_t value;
	int64_t t_off; /* seconds from the chunk's t_ns */
} local_entry;

/* The span link of one attribute set of a batch, found once per batch and
 * partition when the set is first resolved. */
typedef struct {
	uint32_t span, trace; /* index + 1 of the span_id / trace_id label in attr_labels; 0 = none */
	uint32_t seen;        /* local_scratch.stamp of the last chunk that listed the set */
} local_span_ref;

/* Writer-thread scratch, reused across batches. */
typedef struct {
	uint32_t *frame_map, *node_map, *attr_map, *chain;
	size_t cap_frames, cap_nodes, cap_attrs, cap_chain;
	local_span_ref *span_ref; /* per batch attrset, valid where attr_map is set */
	size_t cap_span_ref;
	uint32_t *span_sets; /* batch attrsets with a span link in the chunk being written */
	uint32_t n_span_sets;
	size_t cap_span_sets;
	uint32_t stamp;      /* chunks written by the current local_part_write, + 1 */
	local_entry *entries;
	size_t cap_entries;
	buf_t raw, packed, labels;
	void *zc; /* ZSTD_CCtx */
} local_scratch;

struct store {
	char *dir;
	int interval_ms, max_batches, sync;

	pthread_mutex_t mu;
	pthread_cond_t cv;
	local_job *head, *tail;
	uint32_t queued; /* queued + being written */
	int closing;
	pthread_t thread;

	/* Writer thread only. */
	local_part **parts;
	uint32_t n_parts;
	size_t cap_parts;
	uint64_t tick;
	size_t cache_entries;
	local_scratch sc;
};

/* ---- local_chunk.c: encodings (pure functions, no SQLite) ---- */
/* Encodes a project name into a file-name component of [A-Za-z0-9_-]
 * ('_' escapes: "__" is '_', "_hh" any other byte). -1 if empty or too long. */
int local_project_dir(slice_t project, char out[3 * LOCAL_PROJECT_MAX + 2]);
/* Sorts and merges e[0..n) by (node, attrset, t_off), drops zero sums; returns the new n. */
uint32_t local_entries_normalize(local_entry *e, uint32_t n);
/* Encodes normalized e[0..n) column-wise into raw (reset first). *scale
 * receives the common divisor of the values (stored in the chunk row, so
 * payloads that differ only by a factor, like samples:count and
 * cpu:nanoseconds of one pprof, are equal), *total their wrapping sum. */
void local_payload_raw(const local_entry *e, uint32_t n, buf_t *raw, int64_t *scale, int64_t *total);
/* raw -> stored form: format byte, then raw or zstd (whichever is smaller). */
void local_payload_pack(const buf_t *raw, buf_t *out, void *zc);
/* Decodes a payload; checks every length and id (nodes <= max_node, attrsets
 * <= max_attrset) and that count and total match the chunk header. *tmp is
 * a reusable decompression buffer. -1 with a reason in *why. */
int local_payload_decode(slice_t data, int64_t t_ns, int64_t scale, uint32_t n_expect, int64_t total_expect,
                         uint32_t max_node, uint32_t max_attrset, void *zd, uint8_t **tmp, size_t *cap_tmp,
                         store_entry **out, size_t *cap_out, const char **why);
void local_labels_encode(const model_label *l, uint32_t n, buf_t *out);
/* The stored form of a span_id / trace_id value (spans table): even-length
 * hex (either case) becomes its bytes in out (LOCAL_SPAN_HEX), any other
 * string stays text (LOCAL_SPAN_TEXT, the value itself); the two never
 * compare equal in SQLite. LOCAL_SPAN_NONE when empty or longer than
 * STORE_SPAN_ID_MAX bytes (not indexed). */
enum { LOCAL_SPAN_NONE, LOCAL_SPAN_HEX, LOCAL_SPAN_TEXT };
int local_span_key(slice_t v, uint8_t out[STORE_SPAN_ID_MAX / 2], size_t *n);
/* Decodes a labels blob; strings are copied into the arena. -1 on damage. */
int local_labels_decode(slice_t blob, arena_t *a, model_label **out, uint32_t *n);

/* ---- local_partition.c: partition files for the writer ---- */
/* Finds or opens the partition of (project dir, day); NULL with err. */
local_part *local_part_get(store_t *s, const char *proj, int64_t day, kn_err *err);
/* Closes least-recently-used partitions beyond LOCAL_MAX_OPEN_PARTS (none in a transaction). */
void local_parts_trim(store_t *s, uint32_t keep);
void local_parts_close_all(store_t *s);
int local_part_begin(store_t *s, local_part *p, kn_err *err);
int local_part_commit(store_t *s, local_part *p, kn_err *err);
/* Rolls back the open transaction and forgets everything cached since. */
void local_part_rollback(store_t *s, local_part *p);
/* Deletes the chunks a committed transaction wrote (undo of a group whose later partition failed). */
int local_part_undo(store_t *s, local_part *p, int64_t first, int64_t last, kn_err *err);
/* Writes the profiles of b that belong to partition p (day). Inside a transaction. */
int local_part_write(store_t *s, local_part *p, const model_batch *b, int64_t day, kn_err *err);
/* Binds span or trace id v at parameter i of st in its stored form
 * (local_span_key); 1, or 0 with NULL bound when v cannot be indexed. */
int local_bind_span_key(sqlite3_stmt *st, int i, slice_t v);
/* Sets err from a SQLite failure: 503 + retry for full disk / I/O / busy, 500 otherwise. */
int local_sqlite_err(kn_err *err, sqlite3 *db, int rc, const char *path, const char *what);

#endif
