/* Private to store/clickhouse (the scale-out engine): the structures its
 * files share. Nothing outside src/store/clickhouse_*.c includes this; the
 * public contract is store/store.h, the design docs/STORE.md ("ClickHouse").
 *
 * Tables (database cfg.ch_database; with a cluster, each is a Distributed
 * table over a T_local table on every shard), all partitioned by
 * (project, day) so retention drops whole partitions:
 *   samples  one row per stored entry: (series, chunk, t_ns, duration_ns,
 *            node, attrset, value, sample_t, span_id, trace_id). A chunk is
 *            one profile of one series, as in the embedded engine; all rows
 *            of one write are one INSERT, so a write is seen whole or not.
 *            Each chunk also has a head row: series 0, node = its series,
 *            attrset = its entry count, value = its total (CH_HEAD_*), in
 *            the same INSERT, so heads are read without grouping entries.
 *   summed   sums of whole hours and days per series, written behind the
 *            writes by clickhouse_hours.c, stamped with the chunks they cover.
 *   series, nodes, frames, attrsets
 *            the dictionaries by content hash id (model/model.h), inserted
 *            before the samples that name them; ReplacingMergeTree, and read
 *            with GROUP BY id, so a row written twice reads once.
 *   usage    SummingMergeTree counters per (day, project, key).
 *   keys     ingestion keys (hashes), ReplacingMergeTree by name (newest version wins). */
#ifndef KILN_STORE_CLICKHOUSE_H
#define KILN_STORE_CLICKHOUSE_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/hash.h"
#include "base/u64map.h"
#include "store/engine.h"

#define CH_ENTRY_BATCH 256u /* chunks whose entries one query fetches */

/* The tables of profile data, all partitioned by (project, day); the
 * retention sweep drops them from the last to the first. */
enum { CH_T_FRAMES, CH_T_NODES, CH_T_ATTRSETS, CH_T_SERIES, CH_T_SAMPLES, CH_T_SUMMED, CH_T_COUNT };
extern const char *const ch_table_names[CH_T_COUNT];

/* The stamp of a set of chunks (clickhouse_hours.c, clickhouse_view.c):
 * their count, largest id and the wrapping sum of a hash of each id. */
typedef struct {
	uint64_t n, max_chunk, hash;
} ch_stamp_t;
static inline void ch_stamp_add(ch_stamp_t *st, uint64_t chunk)
{
	st->n++;
	if (chunk > st->max_chunk)
		st->max_chunk = chunk;
	st->hash += hash_pair(chunk, 0x7374616d70ULL);
}
static inline void ch_stamp_merge(ch_stamp_t *st, const ch_stamp_t *o)
{
	st->n += o->n;
	if (o->max_chunk > st->max_chunk)
		st->max_chunk = o->max_chunk;
	st->hash += o->hash;
}
static inline int ch_stamp_eq(const ch_stamp_t *a, const ch_stamp_t *b)
{
	return a->n == b->n && a->max_chunk == b->max_chunk && a->hash == b->hash;
}

typedef struct ch_hpart ch_hpart_t; /* clickhouse_hours.c */

/* One HTTP connection (a libcurl easy handle) and its answer buffer. */
typedef struct ch_conn {
	CURL *curl;
	int unsent; /* the last ch_exec failed before its request could reach ClickHouse */
	int over;   /* the last answer passed the store's ceiling (resp.max) and was cut off */
	buf_t resp; /* the answer; resp.max is the store's answer_max during a request */
	char errbuf[CURL_ERROR_SIZE];
	struct ch_conn *next; /* the store's free list */
} ch_conn_t;

typedef struct ch_job {
	store_job_t base; /* first: base.b is NULL for a retention sweep */
	slice_t project;
	int keep_days;
	int64_t now_ns;
	uint32_t *deleted;
	char proj[LIMIT_NAME_BYTES + 1];
} ch_job_t;

typedef struct {
	char proj[LIMIT_NAME_BYTES + 1];
	int days;          /* 0 = the store's default */
	int64_t floor_day; /* first day the last sweep (of this process) kept; INT64_MIN = none */
} ch_retention_t;

typedef struct ch_store {
	store_head_t head_; /* first: store.c dispatches through it */
	char *url;          /* base URL, ending in '/' */
	char *db, *user, *password, *cluster;
	int replicated;
	size_t answer_max;   /* bytes one answer may hold (store.maxAnswerMiB, LIMIT_CH_ANSWER_BYTES) */
	uint32_t answer_mib; /* the same in MiB, for messages */

	pthread_mutex_t pool_mu;
	ch_conn_t *pool; /* idle connections */

	_Atomic int64_t last_err_log; /* time_mono_ns of the last logged failure */

	pthread_mutex_t schema_mu;
	_Atomic int schema_ok;

	pthread_mutex_t ret_mu;
	ch_retention_t *ret;
	uint32_t n_ret;
	size_t cap_ret;
	int default_days;

	store_writeq_t q; /* the writes waiting for the writer thread */
	store_commit_stats_t commit_stats;

	/* Writer thread only. */
	ch_conn_t *wconn;
	u64map_t seen;  /* dictionary rows known written (hash of table, project, day, id) */
	u64map_t group; /* ... and queued in the group being built */
	buf_t rows[CH_T_COUNT];
	uint64_t chunk_next;
	/* Chunks of a write answered 503 whose INSERT may still have landed
	 * (ClickHouse unreachable when we asked): removed before the next write. */
	uint64_t *doubt;
	size_t n_doubt, cap_doubt;
	uint32_t *doubt_days;
	size_t n_doubt_days, cap_doubt_days;

	/* The summed-hours compactor (clickhouse_hours.c): the partitions to
	 * look at, under hours_mu (the writer adds, the compactor takes). */
	store_ticker_t hours_ticker;
	int hours_inited, hours_discovered;
	pthread_mutex_t hours_mu;
	int64_t hours_margin_ns; /* an hour is summed once it ended this long ago */
	int hours_pass_ms;
	ch_hpart_t *hparts;
	uint32_t n_hparts;
	size_t cap_hparts;
	u64map_t hpart_ix;
	_Atomic uint64_t hours_written, hours_used; /* rows written; rows views used */
} ch_store_t;

/* ---- clickhouse_http.c: the HTTP interface ---- */
ch_conn_t *ch_conn_get(ch_store_t *s);
/* libcurl's write callback of every request (conn: its ch_conn_t): appends
 * to conn->resp and, past resp.max, refuses the bytes (libcurl then stops
 * the transfer, CURLE_WRITE_ERROR) and sets conn->over. So an answer never
 * holds more than the ceiling, however much ClickHouse sends. */
size_t ch_on_answer(char *p, size_t size, size_t n, void *conn);
void ch_conn_put(ch_store_t *s, ch_conn_t *c);
void ch_conn_free(ch_conn_t *c);
/* Runs sql. With data (an INSERT … FORMAT RowBinary), sql goes in the URL
 * and data is the body; else sql is the body and the answer lands in
 * c->resp. settings: extra URL parameters ("a=1&b=2") or NULL. use_db: pass
 * the database (0 only to create it). 0, or -1 with err: 503 (+ retry) when
 * ClickHouse is unreachable or answers an error (its message goes to the
 * log); 503 without retry, naming store.maxAnswerMiB, when the answer
 * passed s->answer_max (cut off while receiving) or ClickHouse refused to
 * send more than max_result_bytes / max_result_rows (ch_select). */
int ch_exec(ch_store_t *s, ch_conn_t *c, const char *sql, slice_t data, const char *settings, int use_db,
            err_t *err);
/* Runs the SELECT in sql (FORMAT RowBinary is appended) and points rd at
 * the answer (in c->resp, valid until c's next call). Creates the schema
 * first when needed. ClickHouse is asked to throw rather than answer more
 * than s->answer_max bytes or LIMIT_CH_ROWS rows (max_result_bytes,
 * max_result_rows, result_overflow_mode=throw), so an oversized answer is
 * usually refused before it is sent. 0, or -1 with err as ch_exec. */
typedef struct ch_rd ch_rd_t;
int ch_select(ch_store_t *s, ch_conn_t *c, buf_t *sql, ch_rd_t *rd, err_t *err);
/* Makes sure the database and tables exist (once per process, retried after a failure). */
int ch_schema(ch_store_t *s, ch_conn_t *c, err_t *err);

/* Appends a ClickHouse string literal for v ('…' with \\, \' and bytes < 0x20 escaped). */
void ch_sql_str(buf_t *b, slice_t v);

/* RowBinary writers (a varint is buf_put_uvarint). */
void ch_put_u8(buf_t *b, uint8_t v);
void ch_put_u32(buf_t *b, uint32_t v);
void ch_put_u64(buf_t *b, uint64_t v);
static inline void ch_put_i64(buf_t *b, int64_t v)
{
	ch_put_u64(b, (uint64_t)v);
}
void ch_put_str(buf_t *b, slice_t v);

/* RowBinary reader over an answer. An answer must parse exactly to its
 * end: the first thing that does not (a value cut short, a malformed
 * length, a string past the end, bytes left over, or a value the caller
 * rejects with ch_rd_fail) is kept in err, a 503 saying what and where
 * ("a UInt32 cut short at byte 12 of 14"); from then on reads return zeros
 * and ch_rd_more is 0. Callers read rows while ch_rd_more, then ch_rd_end. */
struct ch_rd {
	const uint8_t *start, *p, *end;
	err_t err; /* status 0 while the answer parses */
};
/* A reader over p[0..n) (p may be NULL when n is 0). */
void ch_rd_init(ch_rd_t *r, const uint8_t *p, size_t n);
static inline int ch_rd_more(const ch_rd_t *r)
{
	return !r->err.status && r->p < r->end;
}
static inline int ch_rd_bad(const ch_rd_t *r)
{
	return r->err.status != 0;
}
/* Records that the answer is malformed because of what the caller just
 * read ("a series id of 0"), unless an error is already kept. */
void ch_rd_fail(ch_rd_t *r, const char *what);
/* After the rows: 0 when the answer parsed to its end; else -1 with err
 * set to status and "store: ClickHouse sent a malformed <what>: <the
 * reader's error>" (what: "usage row", "day list", …). */
int ch_rd_end(ch_rd_t *r, err_t *err, int status, const char *what);
uint8_t ch_rd_u8(ch_rd_t *r);
uint32_t ch_rd_u32(ch_rd_t *r);
uint64_t ch_rd_u64(ch_rd_t *r);
static inline int64_t ch_rd_i64(ch_rd_t *r)
{
	return (int64_t)ch_rd_u64(r);
}
uint64_t ch_rd_varint(ch_rd_t *r);
slice_t ch_rd_str(ch_rd_t *r);
/* A sum column read as the pair "sum(value), sum(toFloat64(value))"
 * (CH_SUM_SQL): ClickHouse's sum of Int64 wraps where the embedded engine
 * saturates; a wrap shows as the two differing by about 2^64. */
#define CH_SUM_SQL "sum(value), sum(toFloat64(value))"
int64_t ch_rd_sum(ch_rd_t *r);
/* The same pair read as the exact sum (the Int64's low bits, the wraps the
 * Float64 shows). */
__int128 ch_rd_sum128(ch_rd_t *r);

/* The span index form of a span_id / trace_id value: even-length hex in
 * lower case, any other string as is; empty when not indexed (empty or
 * longer than LIMIT_SPAN_ID_BYTES). out has LIMIT_SPAN_ID_BYTES bytes. */
slice_t ch_span_key(slice_t v, char *out);

/* ---- clickhouse_writer.c ---- */
void ch_drain(store_t *s);
void ch_close(store_t *s);
void ch_submit(store_t *s, model_batch_t *b, store_done_fn done, void *ctx);
uint32_t ch_queue_depth(store_t *s);
void ch_get_stats(store_t *s, store_stats_t *out);
int ch_retention_sweep(store_t *s, slice_t project, int keep_days, int64_t now_ns, uint32_t *deleted,
                       err_t *err);

/* ---- clickhouse_hours.c ---- */
int ch_hours_start(ch_store_t *s, err_t *err);
void ch_hours_stop(ch_store_t *s);
/* After a group: a profile at t_ns of project was written (or tried). */
void ch_hours_touch(ch_store_t *s, slice_t project, int64_t t_ns);
/* One pass (the thread runs one every hours_pass_ms). */
int ch_hours_pass(ch_store_t *s, err_t *err);

/* ---- clickhouse_retention.c ---- */
int ch_set_retention(store_t *s, slice_t project, int days, err_t *err);
int64_t ch_retention_start(store_t *s, slice_t project, int64_t now_ns);
int ch_projects(store_t *s, void (*cb)(slice_t project, void *ctx), void *ctx, err_t *err);
/* 0 when every profile of b may be written, else -1 with a 400 (a day the last sweep deleted). */
int ch_retention_check(ch_store_t *s, const model_batch_t *b, err_t *err);
/* The sweep of job j (writer thread). */
int ch_retention_run(ch_store_t *s, ch_job_t *j, err_t *err);

/* ---- clickhouse_shared.c ---- */
int ch_usage_write(store_t *s, const store_usage_row_t *rows, uint32_t n, err_t *err);
int ch_usage_read(store_t *s, slice_t project, int64_t from_day, int64_t until_day,
                  void (*cb)(const store_usage_row_t *row, void *ctx), void *ctx, err_t *err);

int ch_keys_create(store_t *s, const store_key_row_t *row, err_t *err);
int ch_keys_revoke(store_t *s, slice_t name, int64_t now_ns, err_t *err);
int ch_keys_read(store_t *s, void (*cb)(const store_key_row_t *row, void *ctx), void *ctx, err_t *err);
int ch_keys_poll(store_t *s, int64_t *stamp, void (*cb)(const store_key_row_t *row, void *ctx), void *ctx,
                 err_t *err);

/* ---- clickhouse_view.c ---- */
int ch_view_open(store_t *s, slice_t project, int64_t from_ns, int64_t until_ns, store_view_t **out,
                 err_t *err);
void ch_view_close(store_view_t *v);
uint32_t ch_view_partitions(const store_view_t *v);
int ch_view_skipped(const store_view_t *v, uint32_t p);
int ch_view_series(store_view_t *v, uint32_t p, const store_series_t **out, uint32_t *n, err_t *err);
int ch_view_heads(store_view_t *v, uint32_t p, const uint32_t *series, uint32_t n_series,
                  const store_chunk_head_t **out, uint32_t *n, err_t *err);
int ch_view_entries(store_view_t *v, uint32_t p, const store_chunk_head_t *h, const store_entry_t **out,
                    uint32_t *n, err_t *err);
int ch_view_nodes(store_view_t *v, uint32_t p, store_nodes_t *out, err_t *err);
int ch_view_frames(store_view_t *v, uint32_t p, const model_frame_t **out, uint32_t *n, err_t *err);
int ch_view_attrsets(store_view_t *v, uint32_t p, const model_attrset_t **sets, const model_label_t **labels,
                     uint32_t *n, err_t *err);
int ch_view_span_chunks(store_view_t *v, uint32_t p, slice_t span_id, slice_t trace_id,
                        const store_span_hit_t **out, uint32_t *n, err_t *err);
int ch_view_sums(store_view_t *v, uint32_t p, const uint32_t *series, uint32_t n_series,
                 const store_sum_t **out, uint32_t *n, err_t *err);

#endif
