/* store/local_wal.c: the process-wide log alone (no SQLite). Records are
 * appended with known payloads, the files are damaged the way a crash or a
 * disk does it (the last record cut at every byte, each of its bytes flipped,
 * a middle record flipped, a failed fdatasync), and replay must return exactly
 * the records the test kept as its oracle, with one report; each case is
 * reopened to check the same records come back and that appends go on. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "helpers.h"
#include "store/local_wal.h"

#define SEG (64u << 10)

typedef struct {
	uint64_t lsn;
	uint32_t kind, n, len;
	uint8_t *p;
} rec_t;

typedef struct {
	rec_t r[64];
	size_t n;
} recs_t;

/* Payload i of length len: bytes no other record has at the same place. */
static void fill(uint8_t *p, uint32_t len, uint32_t i)
{
	for (uint32_t j = 0; j < len; j++)
		p[j] = (uint8_t)(i * 131 + j * 7 + (j >> 8));
}

static void recs_free(recs_t *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		free(rs->r[i].p);
	rs->n = 0;
}

/* Appends record i (len bytes) and adds it to the oracle. */
static void add(local_wal_t *w, recs_t *rs, uint32_t i, uint32_t len)
{
	rec_t r = {.kind = LOCAL_WAL_GROUP, .n = i, .len = len, .p = malloc(len + 1)};
	fill(r.p, len, i);
	err_t err = {0};
	if (local_wal_append(w, r.kind, r.n, slice_make(r.p, len), &r.lsn, &err) != 0)
		fail_msg("append %u: %s", i, err.msg);
	assert_int_equal(r.lsn % 8, 0);
	rs->r[rs->n++] = r;
}

/* rec (from replay or read back) is exactly the oracle's e. */
static void rec_expect(const local_wal_rec_t *rec, const rec_t *e)
{
	assert_int_equal(rec->lsn, e->lsn);
	assert_int_equal(rec->kind, e->kind);
	assert_int_equal(rec->n, e->n);
	assert_int_equal(rec->payload.n, e->len);
	assert_memory_equal(rec->payload.p, e->p, e->len);
}

static local_wal_t *wopen(const char *dir, const local_wal_opts_t *o)
{
	local_wal_t *w;
	err_t err = {0};
	if (local_wal_open(dir, o, &w, &err) != 0)
		fail_msg("open: %s", err.msg);
	return w;
}

/* Opens the log, replays it and checks the records are exactly want[0..n) (by index
 * into rs); returns the open log with its report in *rep. */
static local_wal_t *replay_expect(const char *dir, const local_wal_opts_t *o, const recs_t *rs,
                                  const size_t *want, size_t n, local_wal_report_t *rep)
{
	local_wal_t *w = wopen(dir, o);
	local_wal_rec_t rec;
	err_t err = {0};
	size_t got = 0;
	int rc;
	while ((rc = local_wal_replay_next(w, &rec, &err)) == 1) {
		if (got >= n)
			fail_msg("extra record at lsn 0x%llx (%zu expected)", (unsigned long long)rec.lsn, n);
		rec_expect(&rec, &rs->r[want[got]]);
		got++;
	}
	if (rc != 0)
		fail_msg("replay: %s", err.msg);
	assert_int_equal(got, n);
	*rep = *local_wal_report(w);
	assert_int_equal(rep->records, n);
	return w;
}

/* A fresh log, replayed (nothing in it), ready for appends. */
static local_wal_t *wopen_new(const char *dir, const local_wal_opts_t *o)
{
	local_wal_t *w = wopen(dir, o);
	local_wal_rec_t rec;
	err_t err = {0};
	assert_int_equal(local_wal_replay_next(w, &rec, &err), 0);
	assert_string_equal(local_wal_report(w)->why, "clean");
	return w;
}

/* The last check of a case: a clean replay of want[0..n), then everything is freed. */
static void finish_clean(char *dir, const local_wal_opts_t *o, recs_t *rs, const size_t *want, size_t n)
{
	local_wal_report_t rep;
	local_wal_t *w = replay_expect(dir, o, rs, want, n, &rep);
	assert_string_equal(rep.why, "clean");
	local_wal_close(w);
	recs_free(rs);
	tmpdir_free(dir);
}

static void seq_list(size_t *want, size_t n)
{
	for (size_t i = 0; i < n; i++)
		want[i] = i;
}

static char *seg_file(const char *dir, uint64_t seq)
{
	char *p = malloc(strlen(dir) + 40);
	sprintf(p, "%s/_wal/%016llx.log", dir, (unsigned long long)seq);
	return p;
}

static uint8_t *slurp(const char *path, size_t *n)
{
	return read_file_or_fail(path, n);
}

static void spit(const char *path, const uint8_t *p, size_t n)
{
	int fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, p, n, 0), (ssize_t)n);
	close(fd);
}

static uint64_t rec_size(uint32_t len)
{
	return (LOCAL_WAL_REC_HEADER + len + 7) & ~7ull;
}

/* local_wal_read from lsn on, chained by its next: exactly want[0..n) (by index
 * into rs), then the end of the log. */
static void read_back_expect(local_wal_t *w, uint64_t lsn, const recs_t *rs, const size_t *want, size_t n)
{
	uint8_t *buf = NULL;
	size_t cap = 0;
	err_t err = {0};
	local_wal_rec_t rec;
	for (size_t i = 0; i < n; i++) {
		uint64_t next = 0;
		if (local_wal_read(w, lsn, &rec, &next, &buf, &cap, &err) != 1)
			fail_msg("read back %zu at 0x%llx: %s", i, (unsigned long long)lsn, err.msg);
		rec_expect(&rec, &rs->r[want[i]]);
		assert_true(next > lsn);
		lsn = next;
	}
	uint64_t next = 0;
	assert_int_equal(local_wal_read(w, lsn, &rec, &next, &buf, &cap, &err), 0);
	assert_int_equal(lsn, local_wal_end(w));
	free(buf);
}

static void test_roundtrip(void **state)
{
	(void)state;
	char *dir = tmpdir_new();
	local_wal_opts_t o = {.segment_bytes = 16384};
	local_wal_t *w = wopen_new(dir, &o);
	local_wal_report_t rep;
	err_t err = {0};
	recs_t rs = {0};
	uint32_t lens[] = {0, 1, 7, 8, 100, 5000, 5000, 12248, 3};
	for (uint32_t i = 0; i < sizeof lens / sizeof *lens; i++)
		add(w, &rs, i, lens[i]);
	/* one record from three iovecs */
	uint8_t a[10], b[5];
	fill(a, 10, 99);
	memcpy(b, a + 5, 5);
	struct iovec v[3] = {{a, 5}, {b, 5}, {NULL, 0}};
	rec_t r = {.kind = LOCAL_WAL_FLOOR, .n = 7, .len = 10, .p = malloc(10)};
	memcpy(r.p, a, 10);
	assert_int_equal(local_wal_appendv(w, r.kind, r.n, v, 3, &r.lsn, &err), 0);
	rs.r[rs.n++] = r;
	/* 12249 bytes cannot fit a 16 KiB segment: 413, nothing written */
	uint8_t *big = calloc(1, 12249);
	assert_int_equal(local_wal_append(w, 1, 0, slice_make(big, 12249), NULL, &err), -1);
	assert_int_equal(err.status, 413);
	assert_int_equal(local_wal_append(w, 0, 0, slice_make(big, 1), NULL, &err), -1);
	assert_int_equal(err.status, 500);
	free(big);
	uint64_t end = local_wal_end(w);
	assert_int_equal(end, rs.r[rs.n - 1].lsn + rec_size(10));
	size_t want[16] = {0};
	seq_list(want, rs.n);
	/* read back while open, across the segments, from the first and from a later one */
	read_back_expect(w, rs.r[0].lsn, &rs, want, rs.n);
	read_back_expect(w, rs.r[5].lsn, &rs, want + 5, rs.n - 5);
	{
		uint8_t *buf = NULL;
		size_t cap = 0;
		local_wal_rec_t rec;
		uint64_t next;
		assert_int_equal(local_wal_read(w, rs.r[5].lsn + 8, &rec, &next, &buf, &cap, &err), -1);
		assert_int_equal(err.status, 500);
		assert_non_null(strstr(err.msg, "reading back lsn"));
		free(buf);
	}
	local_wal_close(w);
	w = replay_expect(dir, &o, &rs, want, rs.n, &rep);
	read_back_expect(w, rs.r[0].lsn, &rs, want, rs.n); /* segment ends known from replay */
	assert_string_equal(rep.why, "clean");
	assert_int_equal(rep.end_lsn, end);
	assert_int_equal(rep.damaged + rep.torn_bytes, 0);
	/* the first 7 share segment 1, 12248 fills segment 2 alone, the last two are in 3 */
	for (size_t i = 0; i < rs.n; i++) {
		assert_int_equal(rs.r[i].lsn >> 32, i < 7 ? 1 : i == 7 ? 2 : 3);
		if (i)
			assert_true(rs.r[i].lsn > rs.r[i - 1].lsn);
	}
	local_wal_close(w);
	recs_free(&rs);
	tmpdir_free(dir);
}

/* Writes records of lens into a fresh log in dir (one segment); returns the oracle. */
static void write_log(const char *dir, const local_wal_opts_t *o, recs_t *rs, const uint32_t *lens, size_t n)
{
	local_wal_t *w = wopen_new(dir, o);
	for (size_t i = 0; i < n; i++)
		add(w, rs, (uint32_t)i, lens[i]);
	local_wal_close(w);
}

/* After a damaged log replayed to want[0..n): reopen gives the same, and an append
 * lands after them and is replayed with them. */
static void reopen_and_append(const char *dir, const local_wal_opts_t *o, recs_t *rs, size_t *want, size_t n)
{
	local_wal_report_t rep;
	local_wal_t *w = replay_expect(dir, o, rs, want, n, &rep);
	uint64_t damaged = rep.damaged;
	add(w, rs, 50, 33);
	local_wal_close(w);
	want[n] = rs->n - 1;
	w = replay_expect(dir, o, rs, want, n + 1, &rep);
	assert_int_equal(rep.damaged, damaged);
	assert_int_equal(rep.torn_bytes, 0);
	local_wal_close(w);
	free(rs->r[--rs->n].p);
}

static void test_torn_last_record(void **state)
{
	(void)state;
	char *dir = tmpdir_new();
	local_wal_opts_t o = {.segment_bytes = SEG};
	recs_t rs = {0};
	uint32_t lens[] = {100, 200, 300};
	write_log(dir, &o, &rs, lens, 3);
	char *path = seg_file(dir, 1);
	size_t n;
	uint8_t *orig = slurp(path, &n);
	assert_int_equal(n, SEG);
	uint64_t start = rs.r[2].lsn & 0xffffffffu, end = start + LOCAL_WAL_REC_HEADER + 300;
	uint8_t *img = malloc(n);
	size_t want[8] = {0, 1};
	for (uint64_t cut = start; cut < end; cut++) {
		/* the record reached the disk up to cut; the rest of the file is as preallocated (zeros) */
		memcpy(img, orig, n);
		memset(img + cut, 0, end - cut);
		spit(path, img, n);
		local_wal_report_t rep;
		local_wal_t *w = replay_expect(dir, &o, &rs, want, 2, &rep);
		assert_int_equal(rep.damaged, 0);
		assert_int_equal(rep.end_lsn, rs.r[2].lsn);
		/* torn once its magic and LSN are there: the claimed size once its header is
		 * whole. Whole means its bytes are unchanged, not cut past its end: the
		 * header checksum is seeded with the segment's random salt, and when its
		 * last bytes happen to be zero, zeros written over them leave it valid. */
		uint64_t lsn_there = 0;
		for (int i = 7; i >= 0; i--)
			lsn_there = lsn_there << 8 | img[start + 8 + i];
		int claimed = cut - start >= 4 && lsn_there == rs.r[2].lsn;
		int hdr_whole = memcmp(img + start, orig + start, LOCAL_WAL_REC_HEADER) == 0;
		uint64_t torn = !claimed ? 0 : hdr_whole ? rec_size(300) : 40;
		assert_int_equal(rep.torn_bytes, torn);
		if (!torn)
			assert_string_equal(rep.why, "clean");
		else
			assert_non_null(strstr(rep.why, "torn tail"));
		local_wal_close(w);
		reopen_and_append(dir, &o, &rs, want, 2);
	}
	/* each byte flipped (the padding after it is not covered: flipping it changes nothing) */
	for (uint64_t at = start; at < start + rec_size(300); at++) {
		memcpy(img, orig, n);
		img[at] ^= 0xff;
		spit(path, img, n);
		size_t k = at < end ? 2 : 3;
		want[2] = 2;
		local_wal_report_t rep;
		local_wal_t *w = replay_expect(dir, &o, &rs, want, k, &rep);
		assert_int_equal(rep.damaged, 0);
		local_wal_close(w);
		reopen_and_append(dir, &o, &rs, want, k);
	}
	free(img);
	free(orig);
	free(path);
	recs_free(&rs);
	tmpdir_free(dir);
}

static void test_damaged_middle_record(void **state)
{
	(void)state;
	char *dir = tmpdir_new();
	local_wal_opts_t o = {.segment_bytes = SEG};
	recs_t rs = {0};
	uint32_t lens[] = {100, 200, 300, 50, 70};
	write_log(dir, &o, &rs, lens, 5);
	char *path = seg_file(dir, 1);
	size_t n;
	uint8_t *orig = slurp(path, &n);
	uint64_t start = rs.r[2].lsn & 0xffffffffu;
	/* magic, length, LSN, kind, both checksums, payload: each makes record 2 invalid */
	uint64_t at_list[] = {0, 5, 9, 16, 26, 35, 40, 41, 339};
	for (size_t k = 0; k < sizeof at_list / sizeof *at_list; k++) {
		uint8_t *img = malloc(n);
		memcpy(img, orig, n);
		img[start + at_list[k]] ^= 0x10;
		spit(path, img, n);
		free(img);
		size_t want[8] = {0, 1, 3, 4};
		local_wal_report_t rep;
		local_wal_t *w = replay_expect(dir, &o, &rs, want, 4, &rep);
		assert_int_equal(rep.damaged, 1);
		assert_int_equal(rep.damaged_bytes, rec_size(300));
		assert_int_equal(rep.first_damaged_lsn, rs.r[2].lsn);
		assert_int_equal(rep.torn_bytes, 0);
		assert_non_null(strstr(rep.why, "damaged record at lsn"));
		local_wal_close(w);
		reopen_and_append(dir, &o, &rs, want, 4);
	}
	free(orig);
	free(path);
	recs_free(&rs);
	tmpdir_free(dir);
}

static ino_t inode(const char *path)
{
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	return st.st_ino;
}

static int count_files(const char *dir)
{
	char p[512];
	snprintf(p, sizeof p, "%s/_wal", dir);
	DIR *d = opendir(p);
	assert_non_null(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static void test_checkpoint_recycle_stale(void **state)
{
	(void)state;
	char *dir = tmpdir_new();
	local_wal_opts_t o = {.segment_bytes = 16384};
	local_wal_t *w = wopen_new(dir, &o);
	err_t err = {0};
	recs_t rs = {0};
	/* 3 records of 4000 per segment: 6 records fill segments 1 and 2 */
	for (uint32_t i = 0; i < 6; i++)
		add(w, &rs, i, 4000);
	assert_int_equal(rs.r[5].lsn >> 32, 2);
	assert_int_equal(local_wal_checkpoint(w, local_wal_end(w) + 8, &err), -1);
	assert_int_equal(err.status, 500);
	/* checkpoint after record 2 (the end of segment 1): it becomes the spare */
	char *seg1 = seg_file(dir, 1);
	ino_t ino1 = inode(seg1);
	assert_int_equal(local_wal_checkpoint(w, rs.r[2].lsn + rec_size(4000), &err), 0);
	char spare[512];
	snprintf(spare, sizeof spare, "%s/_wal/spare", dir);
	assert_int_equal(inode(spare), ino1);
	assert_int_equal(access(seg1, F_OK), -1);
	assert_int_equal(local_wal_make_spare(w, &err), 0); /* there is one */
	/* segment 3 is the recycled file: its stale records of seq 1 lie past the new ones */
	add(w, &rs, 6, 4000);
	add(w, &rs, 7, 100);
	char *seg3 = seg_file(dir, 3);
	assert_int_equal(inode(seg3), ino1);
	assert_int_equal(rs.r[6].lsn >> 32, 3);
	local_wal_close(w);
	size_t want[8] = {3, 4, 5, 6, 7};
	local_wal_report_t rep;
	w = replay_expect(dir, &o, &rs, want, 5, &rep);
	assert_int_equal(rep.from_lsn, rs.r[2].lsn + rec_size(4000));
	assert_string_equal(rep.why, "clean");
	/* the same when the new end falls exactly on a stale record header */
	add(w, &rs, 8, 4000 - 100 - LOCAL_WAL_REC_HEADER - 4);
	local_wal_close(w);
	want[5] = 8;
	w = replay_expect(dir, &o, &rs, want, 6, &rep);
	assert_string_equal(rep.why, "clean");
	/* checkpoint everything: all but the current segment leave (one spare) */
	assert_int_equal(local_wal_checkpoint(w, local_wal_end(w), &err), 0);
	assert_int_equal(count_files(dir), 4); /* 0000…3.log, spare, checkpoint, id */
	assert_int_equal(local_wal_disk_bytes(w), 2 * 16384);
	uint64_t end = local_wal_end(w);
	local_wal_close(w);
	w = replay_expect(dir, &o, &rs, want, 0, &rep);
	assert_int_equal(rep.from_lsn, end);
	assert_int_equal(rep.end_lsn, end);
	add(w, &rs, 9, 10);
	local_wal_close(w);
	want[0] = rs.n - 1;
	w = replay_expect(dir, &o, &rs, want, 1, &rep);
	local_wal_close(w);
	/* opened with another segment size: the log reads as before, the old spare goes */
	assert_int_equal(access(spare, F_OK), 0);
	local_wal_opts_t o2 = {.segment_bytes = 32768};
	w = replay_expect(dir, &o2, &rs, want, 1, &rep);
	assert_int_equal(access(spare, F_OK), -1);
	assert_int_equal(local_wal_disk_bytes(w), 16384);
	add(w, &rs, 10, 20000); /* fits only a new segment of the new size */
	assert_int_equal(rs.r[rs.n - 1].lsn >> 32, 4);
	local_wal_close(w);
	want[1] = rs.n - 1;
	w = replay_expect(dir, &o, &rs, want, 2, &rep);
	assert_string_equal(rep.why, "clean");
	local_wal_close(w);
	free(seg1);
	free(seg3);
	recs_free(&rs);
	tmpdir_free(dir);
}

typedef struct {
	int calls, fail_from, fail_to; /* calls numbered from 1; fail those in [from, to] */
} hook_t;

static int sync_hook(int fd, void *arg)
{
	hook_t *h = arg;
	h->calls++;
	if (h->calls >= h->fail_from && h->calls <= h->fail_to) {
		errno = EIO;
		return -1;
	}
	return fdatasync(fd);
}

static uint64_t header_prev_end(const char *dir, uint64_t seq)
{
	char *p = seg_file(dir, seq);
	size_t n;
	uint8_t *b = slurp(p, &n);
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[24 + i];
	free(b);
	free(p);
	return v;
}

static void test_sync_failure(void **state)
{
	(void)state;
	char *dir = tmpdir_new();
	hook_t h = {0};
	local_wal_opts_t o = {.segment_bytes = SEG, .sync = sync_hook, .sync_arg = &h};
	local_wal_t *w = wopen_new(dir, &o);
	err_t err = {0};
	recs_t rs = {0};
	add(w, &rs, 0, 100);
	add(w, &rs, 1, 200);
	/* the next sync (record 2's) fails: record 2 is abandoned, segment 2 hides it */
	h.fail_from = h.fail_to = h.calls + 1;
	uint8_t p[300];
	fill(p, 300, 2);
	assert_int_equal(local_wal_append(w, 1, 2, slice_make(p, 300), NULL, &err), -1);
	assert_int_equal(err.status, 503);
	assert_non_null(strstr(err.msg, "record abandoned"));
	uint64_t end1 = rs.r[1].lsn + rec_size(200);
	assert_int_equal(local_wal_end(w), end1);
	assert_int_equal(header_prev_end(dir, 2), end1);
	add(w, &rs, 3, 50);
	assert_int_equal(rs.r[2].lsn >> 32, 2);
	size_t want[8] = {0, 1, 2};
	read_back_expect(w, rs.r[0].lsn, &rs, want, 3); /* the abandoned record is skipped */
	local_wal_close(w);
	/* record 2 is in segment 1 whole and valid, yet never replayed */
	h = (hook_t){0};
	local_wal_report_t rep;
	w = replay_expect(dir, &o, &rs, want, 3, &rep);
	read_back_expect(w, rs.r[0].lsn, &rs, want, 3);
	assert_string_equal(rep.why, "clean");
	/* both the record's sync and the new segment header's fail: appends are refused */
	h.fail_from = h.calls + 1;
	h.fail_to = h.calls + 2;
	assert_int_equal(local_wal_append(w, 1, 4, slice_make(p, 300), NULL, &err), -1);
	assert_int_equal(err.status, 503);
	assert_non_null(strstr(err.msg, "refuses writes"));
	assert_int_equal(local_wal_append(w, 1, 5, slice_make(p, 10), NULL, &err), -1);
	assert_int_equal(err.status, 503);
	assert_non_null(strstr(err.msg, "refused"));
	local_wal_close(w);
	/* reopened: the failed record stays hidden (segment 3's header reached the file) */
	h = (hook_t){0};
	w = replay_expect(dir, &o, &rs, want, 3, &rep);
	add(w, &rs, 6, 10);
	local_wal_close(w);
	want[3] = 3;
	finish_clean(dir, &o, &rs, want, 4);
}

static void test_log_full(void **state)
{
	(void)state;
	char *dir = tmpdir_new();
	local_wal_opts_t o = {.segment_bytes = 16384, .max_bytes = 4 * 16384};
	local_wal_t *w = wopen_new(dir, &o);
	err_t err = {0};
	recs_t rs = {0};
	/* two records of 5000 per segment, four segments at most */
	for (uint32_t i = 0; i < 8; i++)
		add(w, &rs, i, 5000);
	uint8_t p[5000];
	fill(p, 5000, 8);
	assert_int_equal(local_wal_append(w, 1, 8, slice_make(p, 5000), NULL, &err), LOCAL_WAL_FULL);
	assert_int_equal(err.status, 503);
	assert_true(err.retry_after > 0);
	assert_non_null(strstr(err.msg, "store log full"));
	assert_int_equal(local_wal_disk_bytes(w), 4 * 16384);
	assert_int_equal(local_wal_make_spare(w, &err), 0); /* no room for one */
	/* a checkpoint retires segments 1..3: the first becomes the spare, the
	 * others reserves (LOCAL_WAL_RESERVE), so the log keeps its files and
	 * moves on into them by renames, never past the bound */
	char *seg2 = seg_file(dir, 2), *seg3 = seg_file(dir, 3), res0[512], res1[512];
	ino_t ino2 = inode(seg2), ino3 = inode(seg3);
	assert_int_equal(local_wal_checkpoint(w, rs.r[5].lsn + rec_size(5000), &err), 0);
	snprintf(res0, sizeof res0, "%s/_wal/reserve.0", dir);
	snprintf(res1, sizeof res1, "%s/_wal/reserve.1", dir);
	assert_int_equal(inode(res0), ino2);
	assert_int_equal(inode(res1), ino3);
	assert_int_equal(local_wal_disk_bytes(w), 4 * 16384);
	/* segments 5 (the spare), 6 (reserve.1: the last one first) and 7 (reserve.0) */
	for (uint32_t i = 8; i < 14; i++)
		add(w, &rs, i, 5000);
	assert_int_equal(rs.r[rs.n - 1].lsn >> 32, 7);
	char *seg6 = seg_file(dir, 6), *seg7 = seg_file(dir, 7);
	assert_int_equal(inode(seg6), ino3);
	assert_int_equal(inode(seg7), ino2);
	assert_int_equal(access(res0, F_OK), -1);
	assert_int_equal(access(res1, F_OK), -1);
	assert_int_equal(local_wal_disk_bytes(w), 4 * 16384);
	/* full again until a checkpoint */
	assert_int_equal(local_wal_append(w, 1, 8, slice_make(p, 5000), NULL, &err), LOCAL_WAL_FULL);
	local_wal_close(w);
	free(seg2);
	free(seg3);
	free(seg6);
	free(seg7);
	size_t want[8] = {6, 7, 8, 9, 10, 11, 12, 13};
	finish_clean(dir, &o, &rs, want, 8);
}

static void test_spare_and_bad_files(void **state)
{
	(void)state;
	char *dir = tmpdir_new();
	local_wal_opts_t o = {.segment_bytes = 16384};
	local_wal_t *w = wopen_new(dir, &o);
	err_t err = {0};
	assert_int_equal(local_wal_make_spare(w, &err), 1);
	char spare[512];
	snprintf(spare, sizeof spare, "%s/_wal/spare", dir);
	size_t n;
	uint8_t *b = slurp(spare, &n);
	assert_int_equal(n, 16384);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(b[i], 0);
	free(b);
	ino_t ino = inode(spare);
	recs_t rs = {0};
	add(w, &rs, 0, 10);
	char *seg1 = seg_file(dir, 1);
	assert_int_equal(inode(seg1), ino);
	local_wal_close(w);
	/* a segment whose header never became durable (garbage) goes back to being the spare;
	 * a damaged checkpoint makes replay start from the oldest segment */
	char *seg2 = seg_file(dir, 2);
	FILE *f = fopen(seg2, "wb");
	for (int i = 0; i < 16384; i++)
		fputc(i * 13, f);
	fclose(f);
	char ck[512];
	snprintf(ck, sizeof ck, "%s/_wal/checkpoint", dir);
	f = fopen(ck, "wb");
	fputs("KILNCKPT garbage garbage", f);
	fclose(f);
	size_t want[4] = {0, 1};
	local_wal_report_t rep;
	w = replay_expect(dir, &o, &rs, want, 1, &rep);
	assert_non_null(strstr(rep.why, "checkpoint damaged: replayed from the oldest segment"));
	assert_non_null(strstr(rep.why, "newest segment 2 has no valid header"));
	assert_int_equal(access(seg2, F_OK), -1);
	assert_int_equal(access(spare, F_OK), 0);
	add(w, &rs, 1, 20000 - 16384); /* fits segment 1 */
	add(w, &rs, 2, 12000);         /* segment 2, from the spare: no gap in the chain */
	assert_int_equal(rs.r[2].lsn >> 32, 2);
	local_wal_close(w);
	want[2] = 2;
	w = replay_expect(dir, &o, &rs, want, 3, &rep);
	assert_string_equal(rep.why, "checkpoint damaged: replayed from the oldest segment");
	assert_int_equal(rep.damaged, 0);
	local_wal_close(w);
	free(seg1);
	free(seg2);
	recs_free(&rs);
	tmpdir_free(dir);
}

/* A middle segment whose header is damaged: its records are dropped and reported, the
 * segments around it are replayed, and the next segment number passes it. */
static void test_damaged_segment_header(void **state)
{
	(void)state;
	char *dir = tmpdir_new();
	local_wal_opts_t o = {.segment_bytes = 16384};
	recs_t rs = {0};
	uint32_t lens[] = {6000, 6000, 6000, 6000, 6000, 6000};
	write_log(dir, &o, &rs, lens, 6); /* two records per segment: segments 1, 2, 3 */
	assert_int_equal(rs.r[5].lsn >> 32, 3);
	char *seg2 = seg_file(dir, 2);
	size_t n;
	uint8_t *img = slurp(seg2, &n);
	img[20] ^= 1; /* seq */
	spit(seg2, img, n);
	free(img);
	size_t want[8] = {0, 1, 4, 5};
	local_wal_report_t rep;
	local_wal_t *w = replay_expect(dir, &o, &rs, want, 4, &rep);
	assert_int_equal(rep.damaged, 1);
	assert_int_equal(rep.damaged_bytes, 16384);
	assert_int_equal(rep.first_damaged_lsn, 2ull << 32);
	assert_string_equal(rep.why, "segment 2: damaged header, its records dropped");
	add(w, &rs, 6, 6000);
	add(w, &rs, 7, 6000);
	assert_int_equal(rs.r[7].lsn >> 32, 4);
	local_wal_close(w);
	want[4] = 6;
	want[5] = 7;
	w = replay_expect(dir, &o, &rs, want, 6, &rep);
	assert_int_equal(rep.damaged, 1);
	local_wal_close(w);
	free(seg2);
	recs_free(&rs);
	tmpdir_free(dir);
}

/* Random bytes of random segment files changed, headers included: replay never fails,
 * never returns a record that was not written as it was written, keeps LSN order,
 * and returns every record when the damage hit none (padding, zeros past the end). */
static void test_random_damage(void **state)
{
	(void)state;
	char *dir = tmpdir_new();
	local_wal_opts_t o = {.segment_bytes = 16384};
	recs_t rs = {0};
	uint32_t lens[24];
	for (int i = 0; i < 24; i++)
		lens[i] = (uint32_t)(i * 997 % 3000);
	write_log(dir, &o, &rs, lens, 24);
	uint64_t last_seq = rs.r[23].lsn >> 32;
	uint8_t *orig[8];
	size_t n[8];
	char *path[8];
	for (uint64_t q = 1; q <= last_seq; q++) {
		path[q] = seg_file(dir, q);
		orig[q] = slurp(path[q], &n[q]);
	}
	char wal[512];
	snprintf(wal, sizeof wal, "%s/_wal", dir);
	srand(15);
	int damaged_rounds = 0, short_rounds = 0;
	for (int round = 0; round < 300; round++) {
		/* the files as written, nothing else */
		char p[600];
		snprintf(p, sizeof p, "%s/spare", wal);
		unlink(p);
		for (uint64_t q = 1; q <= last_seq; q++) {
			uint8_t *img = malloc(n[q]);
			memcpy(img, orig[q], n[q]);
			int flips = round % 3 == 0 ? 0 : rand() % 3;
			for (int k = 0; k < flips; k++) {
				/* one flip in 8 in a segment header, the others among the records */
				size_t at = rand() % 8 ? LOCAL_WAL_HEADER_BYTES +
				                             (size_t)rand() % (n[q] - LOCAL_WAL_HEADER_BYTES)
				                       : (size_t)rand() % 64;
				img[at] ^= (uint8_t)(1 + rand() % 255);
			}
			FILE *f = fopen(path[q], "wb");
			assert_int_equal(fwrite(img, 1, n[q], f), n[q]);
			fclose(f);
			free(img);
		}
		local_wal_t *w = wopen(dir, &o);
		local_wal_rec_t rec;
		err_t err = {0};
		size_t next = 0, got = 0;
		int rc;
		while ((rc = local_wal_replay_next(w, &rec, &err)) == 1) {
			while (next < rs.n && rs.r[next].lsn < rec.lsn)
				next++;
			assert_true(next < rs.n);
			const rec_t *e = &rs.r[next++];
			assert_int_equal(rec.lsn, e->lsn);
			assert_int_equal(rec.n, e->n);
			assert_int_equal(rec.payload.n, e->len);
			assert_memory_equal(rec.payload.p, e->p, e->len);
			got++;
		}
		assert_int_equal(rc, 0);
		if (round % 3 == 0)
			assert_int_equal(got, rs.n);
		damaged_rounds += local_wal_report(w)->damaged > 0;
		short_rounds += got < rs.n;
		/* a record lost without a word can only be the last one: a clean end */
		if (!strcmp(local_wal_report(w)->why, "clean"))
			assert_true(got + 1 >= rs.n);
		local_wal_close(w);
	}
	/* the damage did reach records, inside the log and at its end */
	assert_true(damaged_rounds > 100);
	assert_true(short_rounds >= damaged_rounds);
	for (uint64_t q = 1; q <= last_seq; q++) {
		free(orig[q]);
		free(path[q]);
	}
	recs_free(&rs);
	tmpdir_free(dir);
}

/* Reserves found at open: those of the segment size are kept and numbered
 * from 0, others removed; the first segment is then a reserve, renamed. */
static void test_reserves_on_open(void **state)
{
	(void)state;
	char *dir = tmpdir_new();
	local_wal_opts_t o = {.segment_bytes = 16384};
	local_wal_t *w = wopen_new(dir, &o);
	local_wal_close(w);
	const char *names[] = {"reserve.2", "reserve.7", "reserve.0"};
	const off_t sizes[] = {16384, 100, 16384};
	ino_t ino[3];
	for (int i = 0; i < 3; i++) {
		char p[512];
		snprintf(p, sizeof p, "%s/_wal/%s", dir, names[i]);
		int fd = open(p, O_WRONLY | O_CREAT, 0644);
		assert_true(fd >= 0);
		assert_int_equal(ftruncate(fd, sizes[i]), 0);
		close(fd);
		ino[i] = inode(p);
	}
	w = wopen_new(dir, &o);
	assert_int_equal(local_wal_disk_bytes(w), 2 * 16384);
	char r0[512], r1[512], r7[512];
	snprintf(r0, sizeof r0, "%s/_wal/reserve.0", dir);
	snprintf(r1, sizeof r1, "%s/_wal/reserve.1", dir);
	snprintf(r7, sizeof r7, "%s/_wal/reserve.7", dir);
	assert_int_equal(access(r0, F_OK), 0);
	assert_int_equal(access(r1, F_OK), 0);
	assert_int_equal(access(r7, F_OK), -1);
	recs_t rs = {0};
	add(w, &rs, 0, 100);
	char *seg1 = seg_file(dir, 1);
	ino_t i1 = inode(seg1);
	assert_true(i1 == ino[0] || i1 == ino[2]);
	assert_int_equal(local_wal_disk_bytes(w), 2 * 16384);
	local_wal_close(w);
	free(seg1);
	size_t want[1] = {0};
	finish_clean(dir, &o, &rs, want, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_roundtrip),
	    cmocka_unit_test(test_torn_last_record),
	    cmocka_unit_test(test_damaged_middle_record),
	    cmocka_unit_test(test_checkpoint_recycle_stale),
	    cmocka_unit_test(test_sync_failure),
	    cmocka_unit_test(test_log_full),
	    cmocka_unit_test(test_reserves_on_open),
	    cmocka_unit_test(test_spare_and_bad_files),
	    cmocka_unit_test(test_damaged_segment_header),
	    cmocka_unit_test(test_random_damage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
