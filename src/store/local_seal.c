/* store/local sealing: the chunks of one series and one UTC hour of a
 * format-2 partition, their payloads stored one by one, become one block
 * (local_block.c: column-wise, one zstd frame for the entries of every
 * chunk) once the hour ended LOCAL_SEAL_DELAY_S ago. The chunk rows stay
 * (heads, spans and merged hours read them as before); each one's payload
 * column becomes -(the block's local id), and payloads no unsealed chunk
 * uses any more are deleted. A chunk that arrives for an hour already
 * sealed is a row with its own payload, sealed later into another block of
 * that hour. Runs on the apply thread, in the partition's transaction
 * (local_log.c: local_log_seal_step); docs/STORE.md, Blocks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "store/local.h"
#include "store/local_block.h"

struct local_sealer {
	ZSTD_DCtx *zd;
	ZSTD_CCtx *zc;
	uint8_t *tmp;
	size_t cap_tmp;
	store_entry_t *dec;
	size_t cap_dec;
	store_wentry_t *went;
	size_t cap_went;
	local_block_in_t *in;
	int64_t *payload, *tmp_payload; /* each in's payload column; by_id's room */
	size_t cap_in, cap_payload, cap_tmp_payload;
	local_block_scratch_t bs;
	buf_t head, data;
};

void local_sealer_free(local_sealer_t *z)
{
	if (!z)
		return;
	ZSTD_freeDCtx(z->zd);
	ZSTD_freeCCtx(z->zc);
	free(z->tmp);
	free(z->dec);
	free(z->went);
	free(z->in);
	free(z->payload);
	free(z->tmp_payload);
	local_block_scratch_free(&z->bs);
	buf_free(&z->head);
	buf_free(&z->data);
	free(z);
}

static local_sealer_t *sealer(store_t *s)
{
	if (!s->sealer) {
		local_sealer_t *z = xcalloc(1, sizeof *z);
		z->zd = xcheck(ZSTD_createDCtx());
		z->zc = xcheck(ZSTD_createCCtx());
		local_block_scratch_init(&z->bs);
		buf_init(&z->head, SIZE_MAX);
		buf_init(&z->data, SIZE_MAX);
		s->sealer = z;
	}
	return s->sealer;
}

int64_t local_hour_floor(int64_t t)
{
	int64_t h = 3600 * NS_PER_SEC;
	return t >= 0 ? t - t % h : t - ((t % h) + h) % h;
}

/* One statement step that must finish (an INSERT, UPDATE or DELETE). */
static int step_done(local_part_t *p, sqlite3_stmt *st, err_t *err)
{
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : local_sqlite_err(err, p->db, rc, p->path, "sealing");
}

/* The chunks of (series, [hour, hour + 1 h)) not sealed yet, in (t_ns, id)
 * order after (after_t, after_id) (at most LOCAL_BLOCK_MAX_CHUNKS and about
 * LOCAL_SEAL_MAX_ENTRIES entries), with their entries decoded into z. The
 * index on (series, t_ns) seeks there, so the blocks of a busy series' hour
 * do not each walk the chunks sealed before them. *n = how many; 1 when one
 * could not be decoded (*bad names it), 0, or -1 with err on a SQLite
 * failure. */
static int gather(local_part_t *p, local_sealer_t *z, int64_t series, int64_t hour, int64_t after_t,
                  int64_t after_id, uint32_t *n, char *bad, size_t bad_n, err_t *err)
{
	sqlite3_stmt *sel = NULL, *pay = NULL;
	int rc =
	    sqlite3_prepare_v2(p->db,
	                       "SELECT local, t_ns, duration_ns, n_entries, total, scale, payload FROM chunks"
	                       " WHERE series = ?1 AND t_ns >= ?2 AND t_ns < ?3 AND payload > 0"
	                       " AND (t_ns, local) > (?5, ?6) ORDER BY t_ns, local LIMIT ?4",
	                       -1, &sel, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(p->db, "SELECT data FROM payloads WHERE local = ?1", -1, &pay, NULL);
	size_t k = 0, went = 0;
	int ret = 0;
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(sel, 1, series);
		sqlite3_bind_int64(sel, 2, hour);
		sqlite3_bind_int64(sel, 3, hour + 3600 * NS_PER_SEC);
		sqlite3_bind_int64(sel, 4, LOCAL_BLOCK_MAX_CHUNKS);
		sqlite3_bind_int64(sel, 5, after_t);
		sqlite3_bind_int64(sel, 6, after_id);
	}
	uint32_t max_node = p->next[LT_NODE] - 1, max_attrset = p->next[LT_ATTRSET] - 1;
	while (rc == SQLITE_OK && (rc = sqlite3_step(sel)) == SQLITE_ROW) {
		local_block_chunk_t h = {.id = sqlite3_column_int64(sel, 0),
		                         .t_ns = sqlite3_column_int64(sel, 1),
		                         .duration_ns = sqlite3_column_int64(sel, 2),
		                         .total = sqlite3_column_int64(sel, 4),
		                         .scale = sqlite3_column_int64(sel, 5)};
		int64_t n_entries = sqlite3_column_int64(sel, 3), payload = sqlite3_column_int64(sel, 6);
		if (k && went + (size_t)n_entries > LOCAL_SEAL_MAX_ENTRIES)
			break; /* the rest goes into the next block */
		if (n_entries < 0 || n_entries > (int64_t)LIMIT_CHUNK_ENTRIES || h.scale < 1) {
			snprintf(bad, bad_n, "chunk %lld: header out of range", (long long)h.id);
			ret = 1;
			break;
		}
		h.n_entries = (uint32_t)n_entries;
		sqlite3_bind_int64(pay, 1, payload);
		rc = sqlite3_step(pay);
		if (rc != SQLITE_ROW) {
			sqlite3_reset(pay);
			if (rc == SQLITE_DONE) {
				snprintf(bad, bad_n, "chunk %lld: payload missing", (long long)h.id);
				ret = 1;
			}
			break;
		}
		err_t e = {0};
		slice_t data = slice_make(sqlite3_column_blob(pay, 0), (size_t)sqlite3_column_bytes(pay, 0));
		int d =
		    local_payload_decode(data, h.t_ns, h.scale, h.n_entries, h.total, max_node, max_attrset,
		                         z->zd, &z->tmp, &z->cap_tmp, &z->dec, &z->cap_dec, &e);
		sqlite3_reset(pay);
		rc = SQLITE_OK;
		if (d < 0) {
			snprintf(bad, bad_n, "chunk %lld: %.200s", (long long)h.id, e.msg);
			ret = 1;
			break;
		}
		z->went = xgrow(z->went, &z->cap_went, went + h.n_entries + 1, sizeof *z->went);
		for (uint32_t i = 0; i < h.n_entries; i++)
			z->went[went + i] = (store_wentry_t){.node = z->dec[i].node,
			                                     .attrset = z->dec[i].attrset,
			                                     .t_off = (z->dec[i].t_ns - h.t_ns) / NS_PER_SEC,
			                                     .value = z->dec[i].value};
		z->in = xgrow(z->in, &z->cap_in, k + 1, sizeof *z->in);
		z->payload = xgrow(z->payload, &z->cap_payload, k + 1, sizeof *z->payload);
		/* went may still move: e is set once all are gathered, from first */
		h.first = (uint32_t)went;
		z->in[k] = (local_block_in_t){.head = h};
		z->payload[k] = payload;
		k++;
		went += h.n_entries;
	}
	if (ret == 0 && rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW)
		ret = local_sqlite_err(err, p->db, rc, p->path, "sealing");
	sqlite3_finalize(sel);
	sqlite3_finalize(pay);
	for (size_t i = 0; i < k; i++)
		z->in[i].e = z->went + z->in[i].head.first;
	*n = (uint32_t)k;
	return ret;
}

static int in_id_cmp(const void *a, const void *b)
{
	const local_block_in_t *x = a, *y = b;
	return (x->head.id > y->head.id) - (x->head.id < y->head.id);
}

/* z's n gathered chunks in id order, the block's (readers find a chunk in
 * it by binary search): their payloads go along. */
static void by_id(local_sealer_t *z, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		z->in[i].head.first = i; /* where its payload is, until write_block */
	qsort(z->in, n, sizeof *z->in, in_id_cmp);
	z->tmp_payload = xgrow(z->tmp_payload, &z->cap_tmp_payload, (size_t)n + 1, sizeof *z->tmp_payload);
	for (uint32_t i = 0; i < n; i++)
		z->tmp_payload[i] = z->payload[z->in[i].head.first];
	memcpy(z->payload, z->tmp_payload, n * sizeof *z->payload);
}

/* Writes z's first n gathered chunks as one block: the block row, the chunk
 * rows pointed at it, their payloads deleted when no unsealed chunk uses them. */
static int write_block(local_part_t *p, local_sealer_t *z, int64_t series, int64_t hour, uint32_t n,
                       err_t *err)
{
	sqlite3_stmt *ins = NULL, *upd = NULL, *del = NULL;
	int rc = sqlite3_prepare_v2(
	    p->db, "INSERT INTO blocks(series, hour, head, data) VALUES(?1, ?2, ?3, ?4)", -1, &ins, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(p->db, "UPDATE chunks SET payload = ?1 WHERE local = ?2", -1, &upd,
		                        NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(p->db,
		                        "DELETE FROM payloads WHERE local = ?1 AND NOT EXISTS"
		                        " (SELECT 1 FROM chunks WHERE payload = ?1 AND payload > 0)",
		                        -1, &del, NULL);
	int ret = 0;
	if (rc != SQLITE_OK) {
		ret = local_sqlite_err(err, p->db, rc, p->path, "sealing");
		goto out;
	}
	sqlite3_bind_int64(ins, 1, series);
	sqlite3_bind_int64(ins, 2, hour);
	sqlite3_bind_blob(ins, 3, z->head.p, (int)z->head.n, SQLITE_STATIC);
	sqlite3_bind_blob(ins, 4, z->data.p, (int)z->data.n, SQLITE_STATIC);
	if ((ret = step_done(p, ins, err)) < 0)
		goto out;
	int64_t block = sqlite3_last_insert_rowid(p->db);
	for (uint32_t i = 0; i < n && ret == 0; i++) {
		sqlite3_bind_int64(upd, 1, -block);
		sqlite3_bind_int64(upd, 2, z->in[i].head.id);
		ret = step_done(p, upd, err);
	}
	for (uint32_t i = 0; i < n && ret == 0; i++) {
		sqlite3_bind_int64(del, 1, z->payload[i]);
		ret = step_done(p, del, err);
	}
	/* The payloads' pages back to the file system (auto_vacuum=INCREMENTAL). */
	if (ret == 0 &&
	    (rc = sqlite3_exec(p->db, "PRAGMA incremental_vacuum", NULL, NULL, NULL)) != SQLITE_OK)
		ret = local_sqlite_err(err, p->db, rc, p->path, "sealing");
out:
	sqlite3_finalize(ins);
	sqlite3_finalize(upd);
	sqlite3_finalize(del);
	return ret;
}

int local_part_seal(store_t *s, local_part_t *p, int64_t cutoff_ns, int now,
                    int (*begin)(store_t *s, local_part_t *p, err_t *err), err_t *err)
{
	if (p->format < 2 || p->seal_broken)
		return 0;
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(p->db,
	                            "SELECT series, t_ns FROM chunks WHERE payload > 0 AND t_ns < ?1"
	                            " AND NOT (t_ns >= ?2 AND t_ns < ?3) LIMIT 1",
	                            -1, &st, NULL);
	if (rc != SQLITE_OK)
		return local_sqlite_err(err, p->db, rc, p->path, "sealing");
	sqlite3_bind_int64(st, 1, cutoff_ns);
	/* Not the hour that profiles went into late less than LOCAL_SEAL_QUIET_MS ago. */
	int quiet =
	    now || !p->late_at || time_mono_ns() - p->late_at >= (int64_t)LOCAL_SEAL_QUIET_MS * 1000000;
	sqlite3_bind_int64(st, 2, quiet ? 0 : p->late_hour);
	sqlite3_bind_int64(st, 3, quiet ? 0 : p->late_hour + 3600 * NS_PER_SEC);
	rc = sqlite3_step(st);
	int64_t series = sqlite3_column_int64(st, 0), hour = local_hour_floor(sqlite3_column_int64(st, 1));
	sqlite3_finalize(st);
	if (rc == SQLITE_DONE)
		return 0;
	if (rc != SQLITE_ROW)
		return local_sqlite_err(err, p->db, rc, p->path, "sealing");
	local_sealer_t *z = sealer(s);
	uint32_t n;
	char bad[256] = "";
	/* The last step sealed this hour's chunks up to seal_after: go on from
	 * there; from the start when nothing is left after it (a late chunk
	 * before it) or it is another hour. */
	int resume = p->seal_after && p->seal_series == series && p->seal_hour == hour;
	int g = gather(p, z, series, hour, resume ? p->seal_t : INT64_MIN, resume ? p->seal_id : 0, &n, bad,
	               sizeof bad, err);
	if (g == 0 && !n && resume)
		g = gather(p, z, series, hour, INT64_MIN, 0, &n, bad, sizeof bad, err);
	p->seal_after = 0;
	if (g < 0)
		return -1;
	uint32_t gathered = n;
	local_block_chunk_t last = n ? z->in[n - 1].head : (local_block_chunk_t){0};
	by_id(z, n);
	err_t e = {0};
	/* An hour whose raw entries pass LIMIT_STORE_BLOCK_BYTES is split. */
	while (g == 0 && n && local_block_encode(z->in, n, z->zc, &z->bs, &z->head, &z->data, &e) < 0) {
		if (n == 1) {
			snprintf(bad, sizeof bad, "chunk %lld: %.200s", (long long)z->in[0].head.id, e.msg);
			g = 1;
		}
		n /= 2;
	}
	if (g == 1 || !n) {
		/* Left as it is (readers check each payload as before), and never tried again while open. */
		p->seal_broken = 1;
		log_error("store: a partition's hour cannot be sealed; its chunks stay as they are",
		          "file=%s series=%lld hour=%lld err=\"%s\"", p->path, (long long)series,
		          (long long)(hour / NS_PER_SEC), bad);
		return 0;
	}
	/* Everything so far only read: the transaction begins when there is a block to write. */
	if (!p->in_txn && begin(s, p, err) < 0)
		return -1;
	if (write_block(p, z, series, hour, n, err) < 0)
		return -1;
	atomic_fetch_add(&s->sealed_blocks, 1);
	atomic_fetch_add(&s->sealed_chunks, n);
	if (n == gathered) { /* all sealed: the next step starts after them */
		p->seal_after = 1;
		p->seal_series = series;
		p->seal_hour = hour;
		p->seal_t = last.t_ns;
		p->seal_id = last.id;
	}
	return 1;
}
