/* Recovery of store/local through the store (issue 15; STORE: Writing,
 * "Replay", and "The log: files and record format"): a child process writes
 * N batches with store_write_sync, one group each, and _exits without
 * store_close, so its log DIR/_wal holds every group. Its partitions are then
 * removed from the kept copy, as a power loss may lose their unsynced SQLite
 * commits (the log is the durable copy): everything the store finds comes
 * from replaying the log. On copies of that directory the last record is
 * zeroed from every byte offset to its end, or has one byte flipped at every
 * offset, or the segment file is cut short (ftruncate) at every offset of the
 * last record and the 8 bytes before it, and a middle record has a byte
 * flipped; each copy is opened, and
 * the store must hold exactly the batches of the records left whole, report
 * what it dropped in one log line, accept a new write, and come back clean
 * after store_close. The oracle is the test's own parse of the segment
 * (records at 8-byte offsets after the 4,096-byte header, "KREC", len, LSN)
 * and the rules of STORE: "The log" for what replay calls a torn tail. */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "helpers.h"

#define N 5         /* batches the child writes, one group (one record) each */
#define MID 2       /* the middle record damaged by the last test */
#define REC_HDR 40u /* a record's header: magic, len, lsn, kind, n, two checksums */
#define NEW_I 100   /* index of the batch written after recovery */

static int64_t batch_time(int i)
{
	return DAY0 + (int64_t)(i + 1) * 60 * NS_PER_SEC;
}

static int64_t batch_value(int i)
{
	return 10 + 7 * i;
}

static void child(const char *dir, int round, int fd)
{
	(void)round;
	(void)fd;
	store_t *s = open_store(dir);
	for (int i = 0; i < N; i++)
		write_ok(s, test_batch(batch_time(i), batch_value(i)));
	_exit(0); /* no store_close: no checkpoint, the log keeps every group */
}

/* ---- directories ---- */

static void copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY);
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(in >= 0 && out >= 0);
	char buf[1 << 16];
	ssize_t r;
	while ((r = read(in, buf, sizeof buf)) > 0)
		assert_int_equal(write(out, buf, (size_t)r), r);
	assert_int_equal(r, 0);
	close(in);
	close(out);
}

/* Copies the regular files and directories under from into the existing directory to. */
static void copy_tree(const char *from, const char *to)
{
	DIR *d = opendir(from);
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char a[512], b[512];
		snprintf(a, sizeof a, "%s/%s", from, e->d_name);
		snprintf(b, sizeof b, "%s/%s", to, e->d_name);
		struct stat st;
		assert_int_equal(lstat(a, &st), 0);
		if (S_ISDIR(st.st_mode)) {
			assert_int_equal(mkdir(b, 0755), 0);
			copy_tree(a, b);
		} else if (S_ISREG(st.st_mode)) {
			copy_file(a, b);
		}
	}
	closedir(d);
}

/* A fresh directory for one case: on /dev/shm when there is one (tmpfs: the
 * store's fsyncs cost nothing there, and each case reopens a store twice),
 * else under /tmp. */
static char *case_dir_new(void)
{
	struct stat st;
	if (stat("/dev/shm", &st) != 0 || !S_ISDIR(st.st_mode) || access("/dev/shm", W_OK) != 0)
		return tmpdir_new();
	char *d = strdup("/dev/shm/kiln-recovery-XXXXXX");
	assert_non_null(mkdtemp(d));
	return d;
}

/* ---- the log as the test reads it ---- */

typedef struct {
	char path[512]; /* the newest segment, relative to the data directory */
	uint64_t seq;
	uint32_t off[N + 1], len[N + 1]; /* each record's offset and payload length */
	uint32_t n;
} seg_t;

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static uint32_t rec_bytes(uint32_t len)
{
	return (REC_HDR + len + 7) & ~7u;
}

/* Finds the newest segment of dir's log and the records in it: each at an
 * 8-byte offset after the header, with the magic and its own LSN. */
static void seg_find(const char *dir, seg_t *g)
{
	char wal[512];
	snprintf(wal, sizeof wal, "%s/_wal", dir);
	DIR *d = opendir(wal);
	assert_non_null(d);
	struct dirent *e;
	char best[64] = "";
	while ((e = readdir(d)))
		if (strlen(e->d_name) == 20 && !strcmp(e->d_name + 16, ".log") && strcmp(e->d_name, best) > 0)
			memcpy(best, e->d_name, 21);
	closedir(d);
	assert_true(best[0] != 0);
	snprintf(g->path, sizeof g->path, "_wal/%s", best);
	g->seq = strtoull(best, NULL, 16);
	char full[1024];
	snprintf(full, sizeof full, "%s/%s", dir, g->path);
	size_t size;
	uint8_t *p = read_file_or_fail(full, &size);
	g->n = 0;
	for (uint64_t off = 4096; off + REC_HDR <= size; off += rec_bytes(le32(p + off + 4))) {
		if (memcmp(p + off, "KREC", 4) != 0 || le64(p + off + 8) != (g->seq << 32 | off))
			break;
		assert_true(g->n < N + 1);
		g->off[g->n] = (uint32_t)off;
		g->len[g->n] = le32(p + off + 4);
		g->n++;
	}
	free(p);
}

static uint64_t rec_lsn(const seg_t *g, uint32_t r)
{
	return g->seq << 32 | g->off[r];
}

/* How a case damages the segment. */
typedef enum {
	ZERO, /* a record's bytes from k to end zeroed; the file keeps its size (a crash in a preallocated
	         segment) */
	FLIP, /* a record's byte k xor 0xff */
	CUT,  /* the file truncated at a record's byte k (a copy or a file system that lost its end) */
} harm_t;

static const char *const harm_name[] = {"zeroed from", "flipped at", "cut at"};

/* In dir's copy of the segment: record r harmed at byte k (see harm_t). */
static void damage(const char *dir, const seg_t *g, uint32_t r, uint32_t k, uint32_t end, harm_t harm)
{
	char full[1024];
	snprintf(full, sizeof full, "%s/%s", dir, g->path);
	int fd = open(full, O_RDWR);
	assert_true(fd >= 0);
	if (harm == CUT) {
		assert_int_equal(ftruncate(fd, (off_t)g->off[r] + k), 0);
		close(fd);
		return;
	}
	int flip = harm == FLIP;
	uint8_t buf[4096];
	off_t at = (off_t)g->off[r] + k;
	size_t n = flip ? 1 : end - k;
	assert_true(n <= sizeof buf);
	assert_int_equal(pread(fd, buf, n, at), (ssize_t)n);
	for (size_t i = 0; i < n; i++)
		buf[i] = flip ? buf[i] ^ 0xff : 0;
	assert_int_equal(pwrite(fd, buf, n, at), (ssize_t)n);
	close(fd);
}

/* ---- opening with stderr captured ---- */

/* Opens the store of dir with stderr in a file, whose text goes to log (NUL-terminated). */
static store_t *open_logged(const char *dir, char *log, size_t cap)
{
	char path[600];
	snprintf(path, sizeof path, "%s.stderr", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	fflush(stderr);
	int saved = dup(2);
	assert_true(saved >= 0);
	assert_int_equal(dup2(fd, 2), 2);
	store_config_t cfg = {.dir = dir, .sync = 0};
	err_t err = {0};
	store_t *s = store_open(&cfg, &err);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	ssize_t got = pread(fd, log, cap - 1, 0);
	close(fd);
	unlink(path);
	if (!s)
		fail_msg("store_open: %s", err.msg);
	assert_true(got >= 0 && (size_t)got < cap - 1);
	log[got] = 0;
	return s;
}

/* The lines of log holding msg="what": their count, and the first one's fields after it in line. */
static int log_lines(const char *log, const char *what, char *line, size_t cap)
{
	char key[128];
	snprintf(key, sizeof key, "msg=\"%s\" ", what);
	int n = 0;
	line[0] = 0;
	for (const char *p = strstr(log, key); p; p = strstr(p + 1, key)) {
		if (n++ == 0) {
			const char *f = p + strlen(key), *nl = strchr(f, '\n');
			size_t len = nl ? (size_t)(nl - f) : strlen(f);
			assert_true(len < cap);
			memcpy(line, f, len);
			line[len] = 0;
		}
	}
	return n;
}

/* ---- what the store holds ---- */

/* Asserts the store holds exactly the batches i with want[i] (i < N) and, when
 * with_new, the one written after recovery: one chunk each, its time and total. */
static void expect_batches(store_t *s, const int *want, int with_new, const char *ctx)
{
	store_view_t *v;
	err_t err = {0};
	if (store_view_open(s, slice_cstr("default"), DAY0, DAY0 + NS_PER_DAY, &v, &err) != 0)
		fail_msg("%s: view: %s", ctx, err.msg);
	int found[N] = {0}, found_new = 0, expected = with_new;
	for (int i = 0; i < N; i++)
		expected += want[i] != 0;
	uint32_t n_h = 0;
	if (store_view_partitions(v) == 1) {
		const store_series_t *se;
		uint32_t n_se;
		assert_int_equal(store_view_series(v, 0, &se, &n_se, &err), 0);
		if (n_se != (expected ? 1u : 0u))
			fail_msg("%s: %u series", ctx, n_se);
		const store_chunk_head_t *h = NULL;
		if (n_se)
			assert_int_equal(store_view_heads(v, 0, &se[0].local, 1, &h, &n_h, &err), 0);
		for (uint32_t k = 0; k < n_h; k++) {
			int i = (int)((h[k].t_ns - DAY0) / (60 * NS_PER_SEC)) - 1;
			if (h[k].t_ns == batch_time(NEW_I) && h[k].total == 6 * batch_value(NEW_I))
				found_new++;
			else if (i >= 0 && i < N && h[k].t_ns == batch_time(i) &&
			         h[k].total == 6 * batch_value(i))
				found[i]++;
			else
				fail_msg("%s: a chunk at %" PRId64 " with total %" PRId64
				         " that no batch wrote",
				         ctx, h[k].t_ns, h[k].total);
		}
	} else if (expected) {
		fail_msg("%s: %u partitions", ctx, store_view_partitions(v));
	}
	store_view_close(v);
	for (int i = 0; i < N; i++)
		if (found[i] != (want[i] ? 1 : 0))
			fail_msg("%s: batch %d found %d times, want %d", ctx, i, found[i], want[i] ? 1 : 0);
	if (found_new != with_new)
		fail_msg("%s: the new batch found %d times", ctx, found_new);
	assert_int_equal(n_h, (uint32_t)expected);
}

/* ---- the fixture: one child's directory, its partitions removed ---- */

typedef struct {
	char *pristine;
	seg_t g;
	uint8_t last[4096]; /* the last record's bytes as the child wrote them */
} fix_t;

static int fix_setup(void **state)
{
	fix_t *f = calloc(1, sizeof *f);
	f->pristine = case_dir_new();
	int rfd, status;
	pid_t pid = fork_writer(child, f->pristine, 0, &rfd);
	close(rfd);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* The partitions' unsynced commits lost: only the log holds the groups. */
	char proj[600];
	snprintf(proj, sizeof proj, "%s/default", f->pristine);
	struct stat st;
	assert_int_equal(stat(proj, &st), 0);
	assert_int_equal(nftw(proj, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
	seg_find(f->pristine, &f->g);
	assert_int_equal(f->g.n, N); /* one record per group, all in the newest segment */
	uint32_t bytes = rec_bytes(f->g.len[N - 1]);
	assert_true(bytes <= sizeof f->last);
	char seg[1024];
	snprintf(seg, sizeof seg, "%s/%s", f->pristine, f->g.path);
	int fd = open(seg, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, f->last, bytes, f->g.off[N - 1]), (ssize_t)bytes);
	close(fd);
	*state = f;
	return 0;
}

static int fix_teardown(void **state)
{
	fix_t *f = *state;
	tmpdir_free(f->pristine);
	free(f);
	return 0;
}

typedef struct {
	int want[N];         /* the batches the store must hold */
	uint32_t groups;     /* the groups replay applied (each one batch) */
	uint32_t dropped;    /* dropped_bytes of the replay line */
	char why[256];       /* its why exactly, or, with why_end set, how it starts */
	const char *why_end; /* NULL, or how the why ends (the check the code tried first is its choice) */
	char damaged[256];   /* the fields of msg="store log damaged", or "" for no such line */
} expect_t;

/* One case: a copy of the pristine directory with record r damaged at byte k
 * (see damage), opened (the log lines and the batches checked against x) and
 * written to; with reopen, also closed and opened again: clean, no replay
 * line, and the same batches plus the new one. */
static void run_case(const fix_t *f, uint32_t r, uint32_t k, uint32_t end, harm_t harm, int reopen,
                     const expect_t *x)
{
	char ctx[128];
	snprintf(ctx, sizeof ctx, "record %u, %s byte %u", r, harm_name[harm], k);
	char *dir = case_dir_new();
	copy_tree(f->pristine, dir);
	damage(dir, &f->g, r, k, end, harm);

	static char log[1 << 16];
	char line[1024];
	store_t *s = open_logged(dir, log, sizeof log);
	if (log_lines(log, "store log replayed", line, sizeof line) != 1)
		fail_msg("%s: not one replay line in:\n%s", ctx, log);
	char head[512];
	snprintf(head, sizeof head, "groups=%u batches=%u dropped_bytes=%u why=\"%s", x->groups, x->groups,
	         x->dropped, x->why);
	size_t n = strlen(line), h = strlen(head), m = x->why_end ? strlen(x->why_end) : 0;
	int ok = x->why_end ? strncmp(line, head, h) == 0 && n >= h + m + 1 &&
	                          strncmp(line + n - m - 1, x->why_end, m) == 0 && line[n - 1] == '"'
	                    : strncmp(line, head, h) == 0 && n == h + 1 && line[h] == '"';
	if (!ok)
		fail_msg("%s: replay line\n  %s\nwant\n  %s%s%s\"", ctx, line, head, x->why_end ? "…" : "",
		         x->why_end ? x->why_end : "");
	int n_dmg = log_lines(log, "store log damaged", line, sizeof line);
	if (n_dmg != (x->damaged[0] ? 1 : 0) || (n_dmg && strcmp(line, x->damaged) != 0))
		fail_msg("%s: %d damage lines, first \"%s\", want \"%s\"", ctx, n_dmg, line, x->damaged);
	expect_batches(s, x->want, 0, ctx);
	write_ok(s, test_batch(batch_time(NEW_I), batch_value(NEW_I)));
	expect_batches(s, x->want, 1, ctx);
	store_close(s);
	if (!reopen) {
		tmpdir_free(dir);
		return;
	}
	s = open_logged(dir, log, sizeof log);
	if (log_lines(log, "store log replayed", line, sizeof line) ||
	    log_lines(log, "store log damaged", line, sizeof line))
		fail_msg("%s: reopened after store_close, the log was not clean:\n%s", ctx, log);
	expect_batches(s, x->want, 1, ctx);
	store_close(s);
	tmpdir_free(dir);
}

/* What replay must say when the last record was damaged at byte k, from
 * its bytes as damaged (STORE: "The log": the tail is torn only when its
 * first 16 bytes still claim the position, the magic and its own LSN; then
 * a header still valid claims the record's whole aligned size, a broken one
 * its 40 header bytes; anything else is a clean end). A record none of
 * whose bytes changed (zeros written over zeros, the padding that no
 * checksum covers) stays whole. */
static void expect_last(const fix_t *f, uint32_t k, int flip, expect_t *x)
{
	const seg_t *g = &f->g;
	uint32_t last = N - 1, len = g->len[last], bytes = rec_bytes(len);
	uint64_t lsn = rec_lsn(g, last);
	uint8_t r[sizeof f->last];
	memcpy(r, f->last, bytes);
	for (uint32_t i = k; i < (flip ? k + 1 : bytes); i++)
		r[i] = flip ? r[i] ^ 0xff : 0;
	int hdr_changed = memcmp(r, f->last, REC_HDR) != 0;
	int payload_changed = memcmp(r + REC_HDR, f->last + REC_HDR, len) != 0;
	int claims = memcmp(r, "KREC", 4) == 0 && le64(r + 8) == lsn;
	memset(x, 0, sizeof *x);
	for (int i = 0; i < N; i++)
		x->want[i] = i != (int)last || (!hdr_changed && !payload_changed);
	x->groups = x->want[last] ? N : N - 1;
	if (x->want[last] || !claims) {
		snprintf(x->why, sizeof x->why, "clean");
	} else if (!hdr_changed) {
		x->dropped = bytes;
		snprintf(x->why, sizeof x->why,
		         "torn tail at lsn 0x%llx (payload checksum), %u bytes dropped",
		         (unsigned long long)lsn, x->dropped);
	} else {
		x->dropped = REC_HDR;
		snprintf(x->why, sizeof x->why, "torn tail at lsn 0x%llx (", (unsigned long long)lsn);
		x->why_end = "), 40 bytes dropped";
	}
}

static void sweep_last(void **state, int flip)
{
	fix_t *f = *state;
	uint32_t last = N - 1, bytes = rec_bytes(f->g.len[last]);
	uint32_t torn = 0, clean = 0, same = 0;
	for (uint32_t k = 0; k < bytes; k++) {
		expect_t x;
		expect_last(f, k, flip, &x);
		/* Reopening after the new write, at every header byte and every 16th of the
		 * payload, keeps the run short (a case costs a store open). */
		run_case(f, last, k, bytes, flip ? FLIP : ZERO,
		         k < REC_HDR + 8 || k % 16 == 0 || k + 1 == bytes, &x);
		if (x.want[last])
			same++;
		else if (x.dropped)
			torn++;
		else
			clean++;
	}
	print_message("recovery: last record (%u bytes) %s at each offset: %u torn tails, %u clean ends, "
	              "%u left it unchanged\n",
	              bytes, flip ? "flipped" : "zeroed", torn, clean, same);
}

static void test_last_zeroed(void **state)
{
	sweep_last(state, 0);
}

static void test_last_flipped(void **state)
{
	sweep_last(state, 1);
}

/* What replay must say when the segment file was cut at byte at (a whole
 * record or more before it left): the segment's readable extent is its size
 * rounded down to 8 bytes (local_wal.c, seg_header_read), and records must
 * end by it. So a record is kept when its header and payload end by the cut
 * rounded down: one whose padding alone was cut, every byte its checksums
 * cover still there, is dropped too (the extent stops at its last 8-byte
 * boundary). The first record lost is a torn tail when its 40 header bytes
 * are still there ("record length past the segment"; its length claims more
 * than the file holds, so only the header counts as dropped), else the log
 * ends cleanly there (no record claims the position: "clean", nothing
 * dropped, but the replay line is still written for the groups applied). */
static void expect_cut(const fix_t *f, uint32_t at, expect_t *x)
{
	const seg_t *g = &f->g;
	uint32_t limit = at & ~7u;
	memset(x, 0, sizeof *x);
	snprintf(x->why, sizeof x->why, "clean");
	for (uint32_t i = 0; i < N; i++) {
		x->want[i] = g->off[i] + REC_HDR + g->len[i] <= limit;
		if (x->want[i]) {
			x->groups++;
		} else if (i == x->groups && g->off[i] + REC_HDR <= limit) {
			x->dropped = REC_HDR;
			snprintf(x->why, sizeof x->why,
			         "torn tail at lsn 0x%llx (record length past the segment), %u bytes dropped",
			         (unsigned long long)rec_lsn(g, i), x->dropped);
		}
	}
}

/* The segment file cut at every byte of the last record and at the 8 bytes
 * before it (the end of the record before, its padding or payload): each
 * copy opens, holds exactly the records that end before the cut, says so in
 * one replay line, takes a new write and reopens clean. */
static void test_last_cut(void **state)
{
	fix_t *f = *state;
	const seg_t *g = &f->g;
	uint32_t last = N - 1, bytes = rec_bytes(g->len[last]);
	uint32_t torn = 0, clean = 0;
	for (uint32_t at = g->off[last] - 8; at < g->off[last] + bytes; at++) {
		uint32_t r = at < g->off[last] ? last - 1 : last;
		expect_t x;
		expect_cut(f, at, &x);
		assert_int_equal(x.want[last], 0); /* a cut anywhere in it loses the last group */
		run_case(f, r, at - g->off[r], 0, CUT, 1, &x);
		if (x.dropped)
			torn++;
		else
			clean++;
	}
	print_message(
	    "recovery: segment cut at each of the %u bytes from 8 before the last record (%u bytes) "
	    "to its end: %u torn tails, %u clean ends\n",
	    bytes + 8, bytes, torn, clean);
}

/* A middle record with a flipped byte (in its magic, LSN, header checksum,
 * payload): dropped and reported as damage, the records after it kept. */
static void test_middle_flipped(void **state)
{
	fix_t *f = *state;
	const seg_t *g = &f->g;
	uint32_t bytes = g->off[MID + 1] - g->off[MID];
	assert_int_equal(bytes, rec_bytes(g->len[MID]));
	unsigned long long lsn = (unsigned long long)rec_lsn(g, MID);
	const uint32_t ks[] = {0, 9, 35, REC_HDR, REC_HDR + g->len[MID] / 2, REC_HDR + g->len[MID] - 1};
	for (size_t c = 0; c < sizeof ks / sizeof *ks; c++) {
		expect_t x = {.groups = N - 1, .dropped = bytes};
		for (int i = 0; i < N; i++)
			x.want[i] = i != MID;
		snprintf(x.damaged, sizeof x.damaged, "lsn=0x%llx bytes=%u stretches=1", lsn, bytes);
		if (ks[c] >= REC_HDR) {
			snprintf(x.why, sizeof x.why, "damaged record at lsn 0x%llx (payload checksum)", lsn);
		} else {
			snprintf(x.why, sizeof x.why, "damaged record at lsn 0x%llx (", lsn);
			x.why_end = ")";
		}
		run_case(f, MID, ks[c], 0, FLIP, 1, &x);
	}
	print_message("recovery: middle record (%u bytes) flipped at %zu offsets: dropped, reported, the "
	              "rest kept\n",
	              bytes, sizeof ks / sizeof *ks);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_last_zeroed),
	    cmocka_unit_test(test_last_flipped),
	    cmocka_unit_test(test_last_cut),
	    cmocka_unit_test(test_middle_flipped),
	};
	return cmocka_run_group_tests(tests, fix_setup, fix_teardown);
}
