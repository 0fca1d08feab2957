/* The embedded engine's process-wide write-ahead log (STORE: Next version of
 * the embedded engine, "The log: files and record format", "Checkpointing"):
 * segment files DIR/_wal/<seq, 16 hex digits>.log, one zero-filled spare
 * (DIR/_wal/spare) and up to LOCAL_WAL_RESERVE recycled segments waiting to
 * be the spare (DIR/_wal/reserve.<k>), records appended with one pwrite and made durable with one
 * fdatasync, a replay iterator from the checkpoint LSN that tells a torn tail
 * from damage inside the log, the checkpoint file DIR/_wal/checkpoint, and
 * segment recycling. Payloads are opaque bytes here (the caller encodes
 * groups with store/batch_codec.c); no SQLite, no threads of its own.
 *
 * Positions: LSN = (seq << 32) + offset in the segment, so an LSN does not
 * depend on the segment size (a log written with one size is read with
 * another). Records start at offsets that are multiples of 8, at or after
 * LOCAL_WAL_HEADER_BYTES; 0 is never the LSN of a record.
 *
 * Use: local_wal_open, then local_wal_replay_next until it returns 0 (the
 * report then says what was read and dropped), then local_wal_append from one
 * thread while another may call local_wal_make_spare and local_wal_checkpoint
 * (the handle locks what they share; the spare's zero-fill runs unlocked).
 * Everything read from disk is checked: sizes, offsets, seqs, checksums. */
#ifndef KILN_STORE_LOCAL_WAL_H
#define KILN_STORE_LOCAL_WAL_H

#include <stdint.h>
#include <sys/uio.h>

#include "base/err.h"
#include "base/slice.h"

/* The log's directory under the data directory: no project's directory can
 * have this name (local_project_dir never writes '_' before a non-hex letter). */
#define LOCAL_WAL_DIR "_wal"
#define LOCAL_WAL_HEADER_BYTES 4096u /* a segment's header block; its first record follows */
#define LOCAL_WAL_REC_HEADER 40u     /* bytes of a record's header */
#define LOCAL_WAL_SEGMENT_MIN 8192u  /* the smallest segment local_wal_open accepts (tests) */
#define LOCAL_WAL_SEGMENT_FIRST                                                                              \
	(1u << 20) /* a new log's first segment; each next one is twice                                      \
	              the last, up to segment_bytes */

/* Full-size segments a checkpoint retires beyond the spare are kept (as
 * DIR/_wal/reserve.<k>) up to this many and become the spare by a rename,
 * so a busy log between checkpoints does not zero-fill a segment per segment
 * it moves on by; more are removed. */
#define LOCAL_WAL_RESERVE 4

/* Record kinds (a record of another kind is not valid). */
enum { LOCAL_WAL_GROUP = 1, LOCAL_WAL_FLOOR = 2, LOCAL_WAL_KIND_MAX = 2 };

/* local_wal_append's return when the log on disk is at max_bytes: nothing was
 * written; err is 503 "store log full" with a Retry-After. */
#define LOCAL_WAL_FULL (-2)

typedef struct local_wal local_wal_t;

/* Replaces fdatasync(fd) (test hook): returns 0, or -1 with errno set. */
typedef int (*local_wal_sync_fn)(int fd, void *arg);

typedef struct {
	uint64_t segment_bytes; /* size of segments this log creates; 0: LIMIT_STORE_WAL_SEGMENT */
	uint64_t max_bytes;     /* segments + spare on disk; 0: LIMIT_STORE_WAL_BYTES */
	local_wal_sync_fn sync; /* NULL: fdatasync */
	void *sync_arg;
} local_wal_opts_t;

/* What replay found: one report, for one log line by the caller. */
typedef struct {
	uint64_t from_lsn;      /* the checkpoint replay started from (0: none, the oldest segment) */
	uint64_t end_lsn;       /* where the valid log ends (the next append goes at or after it) */
	uint64_t records;       /* valid records returned */
	uint64_t damaged;       /* damaged stretches inside the log (a valid record after each), dropped */
	uint64_t damaged_bytes; /* their bytes */
	uint64_t first_damaged_lsn; /* where the first one starts (0: none) */
	uint64_t torn_bytes;        /* an incomplete last record, dropped (0: the log ended cleanly) */
	char why[240];              /* "clean", or what was dropped and why, in words */
} local_wal_report_t;

/* One record as replay returns it; payload is valid until the next call. */
typedef struct {
	uint64_t lsn;
	uint32_t kind, n;
	slice_t payload;
} local_wal_rec_t;

/* Opens (creating DIR/_wal if needed) the log of data directory dir: reads the
 * checkpoint and every segment header, removes leftover temporary files,
 * recycles segments wholly before the checkpoint, and makes the newest segment
 * the spare again when its header is invalid (a start that never became
 * durable; reported). Invalid headers elsewhere are damage, reported by replay.
 * 0, or -1 with err (500 for a directory that cannot be read or created).
 * o may be NULL (defaults). */
int local_wal_open(const char *dir, const local_wal_opts_t *o, local_wal_t **out, err_t *err);
void local_wal_close(local_wal_t *w);

/* The next valid record at or after the checkpoint, in LSN order: 1 with *rec
 * set, 0 at the end of the log (the report is then final and appends are
 * allowed), -1 with err on an I/O error. Follows the rules of STORE: "The
 * log": a segment is read only up to the prev_end of the segment after it; an
 * invalid record with nothing valid after it ends the log (a torn tail, never
 * acknowledged: the next append overwrites it); an invalid record followed by
 * a valid one (found at 8-byte steps: a header with a valid checksum and its
 * own LSN) is damage, dropped and counted, and replay goes on after it. */
int local_wal_replay_next(local_wal_t *w, local_wal_rec_t *rec, err_t *err);
const local_wal_report_t *local_wal_report(const local_wal_t *w);

/* Appends one record (kind, n, and the payload: iov[0..iovcnt), or bytes)
 * with one pwrite at the end of the log, then syncs it; *lsn (may be NULL) is
 * its LSN. A record that does not fit in the current segment starts the next
 * one (from the spare when there is one); one that cannot fit in an empty
 * segment is refused (413). 0 once durable; LOCAL_WAL_FULL when the log on
 * disk would pass max_bytes (nothing written); -1 with err otherwise:
 * - 500 before replay reached the end, for a bad kind or too many iovecs;
 * - 503 when the write or its sync failed: the record is abandoned (the next
 *   segment is started, its prev_end hides the record from replay, so it can
 *   never be applied later) and a retry may succeed; if starting that segment
 *   fails too, every later append is refused (503) until the log is reopened. */
int local_wal_appendv(local_wal_t *w, uint32_t kind, uint32_t n, const struct iovec *iov, int iovcnt,
                      uint64_t *lsn, err_t *err);
int local_wal_append(local_wal_t *w, uint32_t kind, uint32_t n, slice_t payload, uint64_t *lsn, err_t *err);

/* Reads back the durable record at lsn, or the first one after it when lsn is
 * the end of its segment (a record that did not fit started the next one, a
 * failed append abandoned the rest): 1 with *rec set (its payload in *buf, of
 * *cap bytes, grown as needed; valid until the next call with that buffer)
 * and *next the LSN to read next, 0 at the end of the log, -1 with err (500:
 * no valid record there; 503: I/O). Records at or after the checkpoint only
 * (older segments are recycled). For a group that was appended but could not
 * be applied: the caller keeps LSNs, not copies. Any thread, after replay. */
int local_wal_read(local_wal_t *w, uint64_t lsn, local_wal_rec_t *rec, uint64_t *next, uint8_t **buf,
                   size_t *cap, err_t *err);

/* The end of the last durable record (0: none yet). */
uint64_t local_wal_end(local_wal_t *w);
/* 1 when there is no spare and the current segment is half used (or none is
 * started): the time to local_wal_make_spare, off the append path. */
int local_wal_wants_spare(local_wal_t *w);
/* The log's id, random, written when the log was created (DIR/_wal/id);
 * 0 for a log made before ids. Whoever records LSNs of this log records
 * its id with them: LSNs of another log (the directory deleted and made
 * again) say nothing about this one. */
uint64_t local_wal_id(const local_wal_t *w);
/* Bytes of segment and spare files on disk. */
uint64_t local_wal_disk_bytes(local_wal_t *w);

/* Creates the zero-filled, fsynced spare segment when there is none and the
 * disk bound leaves room (the checkpointer's job; also called by an append
 * that needs a segment and finds no spare). 1 created, 0 nothing to do, -1
 * with err (503) on an I/O error. */
int local_wal_make_spare(local_wal_t *w, err_t *err);

/* Records that every record ending at or before lsn is in its partitions:
 * writes DIR/_wal/checkpoint (temporary file, fsync, rename, directory fsync),
 * then recycles the segments that end at or before lsn (the first becomes the
 * spare when there is none, the others are removed). lsn must not pass
 * local_wal_end (500). 0, or -1 with err (503 on I/O). */
int local_wal_checkpoint(local_wal_t *w, uint64_t lsn, err_t *err);

#endif
