/* store/local's write-ahead log: segment files, the spare, record append +
 * sync, abandon-on-sync-failure, the replay iterator with its torn-tail and
 * damage rules, the checkpoint file and segment recycling. The contract and
 * the on-disk layout are in local_wal.h and STORE: "The log: files and record
 * format"; this file knows nothing of what a payload holds. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "base/alloc.h"
#include "base/fileio.h"
#include "base/limits.h"
#include "base/timeutil.h"
#include "store/local_wal.h"

/* Segment header: magic[8], u32 version, u32 0, u64 seq, u64 prev_end,
 * u64 created_ns, u64 segment_bytes, u64 salt, u64 XXH3 of bytes 0..55. */
#define SEG_MAGIC "KILNWAL"
#define SEG_VERSION 1u
#define SEG_HDR_USED 64u
/* Record header: "KREC", u32 len, u64 lsn, u32 kind, u32 n, u64 XXH3(payload), u64 XXH3(0..31). */
#define REC_MAGIC "KREC"
/* Checkpoint file: "KILNCKPT", u64 lsn, u64 XXH3 of bytes 0..15. */
#define CKPT_MAGIC "KILNCKPT"
#define CKPT_BYTES 24u
/* Id file: "KILNLGID", u64 id, u64 XXH3 of bytes 0..15 (the checkpoint's layout). */
#define ID_MAGIC "KILNLGID"
#define SCAN_BLOCK (1u << 20)      /* bytes read at a time when scanning for a valid header */
#define ZERO_BLOCK (1u << 20)      /* bytes written at a time when zero-filling a spare */
#define SEG_BYTES_MAX (1ull << 32) /* an offset is the low 32 bits of an LSN */

typedef struct {
	uint64_t seq;
	uint64_t bytes;      /* readable extent: the header's size, at most the file's */
	uint64_t file_bytes; /* st_size, for the disk bound */
	uint64_t prev_end, salt;
	uint64_t end; /* LSN where its valid records end; 0: not known yet */
	int valid;    /* header valid */
} wal_seg_t;

struct local_wal {
	char *dir; /* DIR/_wal */
	uint64_t seg_bytes, max_bytes;
	local_wal_sync_fn sync;
	void *sync_arg;
	pthread_mutex_t mu;
	pthread_cond_t spare_done;
	wal_seg_t *segs; /* by seq */
	size_t n_segs, cap_segs;
	int have_spare, making_spare;
	uint64_t spare_bytes;
	uint32_t n_reserve; /* full-size retired segments kept as DIR/_wal/reserve.<k>, k < n_reserve */
	uint64_t
	    next_bytes; /* size of the next spare: segments grow from LOCAL_WAL_SEGMENT_FIRST to seg_bytes */
	uint64_t ckpt, next_seq;
	uint64_t id; /* the id file's value; 0: a log from before ids */
	/* writer */
	int fd; /* current segment, -1: none */
	uint64_t cur_seq, cur_bytes, cur_salt, off, end_lsn;
	int replay_done, failed;
	XXH3_state_t *xs;
	/* replay */
	size_t r_i; /* segment being read */
	int r_fd;   /* its fd, -1: not open */
	uint64_t r_off, r_limit;
	int r_bounded;   /* r_limit comes from the next segment's prev_end */
	size_t r_last;   /* index of the last valid segment read (SIZE_MAX: none) */
	uint64_t r_seen; /* seq of the last segment replay looked at (0: none) */
	uint8_t *buf;
	size_t buf_cap;
	local_wal_report_t rep;
	char ckpt_why[96];
};

/* ---- little-endian fields ---- */

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint64_t align8(uint64_t v)
{
	return (v + 7) & ~(uint64_t)7;
}

static uint64_t lsn_of(uint64_t seq, uint64_t off)
{
	return seq << 32 | off;
}

/* ---- files ---- */

static char *wal_path(const local_wal_t *w, const char *name)
{
	size_t n = strlen(w->dir) + strlen(name) + 2;
	char *p = xmalloc(n);
	snprintf(p, n, "%s/%s", w->dir, name);
	return p;
}

static char *seg_path(const local_wal_t *w, uint64_t seq)
{
	char name[32];
	snprintf(name, sizeof name, "%016llx.log", (unsigned long long)seq);
	return wal_path(w, name);
}

/* fsync of the log directory, so that names created, renamed or removed in it are durable. */
static int dir_sync(const local_wal_t *w)
{
	int fd = open(w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	close(fd);
	return rc;
}

static int do_sync(local_wal_t *w, int fd)
{
	return w->sync ? w->sync(fd, w->sync_arg) : fdatasync(fd);
}

static int io_err(err_t *err, const char *what, const char *path)
{
	err_set(err, 503, "store log: %s %s: %s", what, path, strerror(errno));
	if (err)
		err->retry_after = 5;
	return -1;
}

/* Reads n bytes at off; returns the count read (short at the end of the file) or -1. */
static ssize_t read_at(int fd, void *p, size_t n, uint64_t off)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(fd, (uint8_t *)p + got, n - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

static uint64_t disk_bytes(const local_wal_t *w)
{
	uint64_t b = w->have_spare || w->making_spare ? w->spare_bytes : 0;
	b += (uint64_t)w->n_reserve * w->seg_bytes;
	for (size_t i = 0; i < w->n_segs; i++)
		b += w->segs[i].file_bytes;
	return b;
}

/* ---- segment headers ---- */

static void seg_header_encode(uint8_t h[SEG_HDR_USED], const wal_seg_t *s, uint64_t created_ns)
{
	memset(h, 0, SEG_HDR_USED);
	memcpy(h, SEG_MAGIC, 8); /* with its NUL */
	put32(h + 8, SEG_VERSION);
	put64(h + 16, s->seq);
	put64(h + 24, s->prev_end);
	put64(h + 32, created_ns);
	put64(h + 40, s->bytes);
	put64(h + 48, s->salt);
	put64(h + 56, XXH3_64bits(h, 56));
}

/* Fills s from the header of an open segment file; 0, or -1 when it is not a valid header for seq. */
static int seg_header_read(int fd, uint64_t seq, wal_seg_t *s)
{
	uint8_t h[SEG_HDR_USED];
	struct stat st;
	if (fstat(fd, &st) != 0 || read_at(fd, h, sizeof h, 0) != (ssize_t)sizeof h)
		return -1;
	uint64_t bytes = get64(h + 40);
	if (memcmp(h, SEG_MAGIC, 8) != 0 || get32(h + 8) != SEG_VERSION ||
	    get64(h + 56) != XXH3_64bits(h, 56) || get64(h + 16) != seq || bytes < LOCAL_WAL_SEGMENT_MIN ||
	    bytes >= SEG_BYTES_MAX || bytes % 8 || get64(h + 24) >= lsn_of(seq, 0))
		return -1;
	s->prev_end = get64(h + 24);
	s->salt = get64(h + 48);
	uint64_t size = (uint64_t)st.st_size & ~(uint64_t)7;
	s->bytes = bytes < size ? bytes : size;
	s->valid = s->bytes >= LOCAL_WAL_HEADER_BYTES;
	return s->valid ? 0 : -1;
}

/* ---- record headers ---- */

static void rec_header_encode(uint8_t h[LOCAL_WAL_REC_HEADER], uint32_t len, uint64_t lsn, uint32_t kind,
                              uint32_t n, uint64_t payload_hash, uint64_t salt)
{
	memcpy(h, REC_MAGIC, 4);
	put32(h + 4, len);
	put64(h + 8, lsn);
	put32(h + 16, kind);
	put32(h + 20, n);
	put64(h + 24, payload_hash);
	put64(h + 32, XXH3_64bits_withSeed(h, 32, salt));
}

/* Why the record header h at offset off of segment s (records must end by limit) is not
 * valid, or NULL when it is. */
static const char *rec_header_check(const uint8_t *h, const wal_seg_t *s, uint64_t off, uint64_t limit)
{
	if (memcmp(h, REC_MAGIC, 4) != 0)
		return "no record header";
	if (get64(h + 32) != XXH3_64bits_withSeed(h, 32, s->salt))
		return "record header checksum";
	if (get64(h + 8) != lsn_of(s->seq, off))
		return "record of another position";
	uint32_t kind = get32(h + 16);
	if (kind == 0 || kind > LOCAL_WAL_KIND_MAX)
		return "unknown record kind";
	if (off + LOCAL_WAL_REC_HEADER + get32(h + 4) > limit)
		return "record length past the segment";
	return NULL;
}

/* ---- open ---- */

static int parse_seg_name(const char *name, uint64_t *seq)
{
	if (strlen(name) != 20 || strcmp(name + 16, ".log") != 0)
		return 0;
	uint64_t v = 0;
	for (int i = 0; i < 16; i++) {
		char c = name[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (d < 0)
			return 0;
		v = v << 4 | (uint64_t)d;
	}
	if (v == 0 || v >= (1ull << 31))
		return 0;
	*seq = v;
	return 1;
}

static int seg_cmp(const void *a, const void *b)
{
	uint64_t x = ((const wal_seg_t *)a)->seq, y = ((const wal_seg_t *)b)->seq;
	return x < y ? -1 : x > y;
}

static void why_add(local_wal_t *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void why_add(local_wal_t *w, const char *fmt, ...)
{
	char *why = w->rep.why;
	size_t used = strlen(why);
	if (used + 3 >= sizeof w->rep.why)
		return;
	if (used) {
		memcpy(why + used, "; ", 3);
		used += 2;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why + used, sizeof w->rep.why - used, fmt, ap);
	va_end(ap);
}

/* The log's small files (checkpoint, id): magic[8], u64 value, u64 XXH3 of
 * bytes 0..15. 1 with *value, 0 when absent, -1 when unreadable or damaged
 * (why says which). */
static int stamp_read(const local_wal_t *w, const char *name, const char *magic, uint64_t *value, char *why,
                      size_t why_n)
{
	char *p = wal_path(w, name);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	free(p);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(why, why_n, "%s unreadable (%s)", name, strerror(errno));
		return -1;
	}
	uint8_t b[CKPT_BYTES];
	ssize_t got = read_at(fd, b, sizeof b, 0);
	close(fd);
	if (got != (ssize_t)sizeof b || memcmp(b, magic, 8) != 0 || get64(b + 16) != XXH3_64bits(b, 16)) {
		snprintf(why, why_n, "%s damaged", name);
		return -1;
	}
	*value = get64(b + 8);
	return 1;
}

/* Writes a small file (stamp_read's layout) durably: a temporary file,
 * fsync, rename, fsync of the directory. 0, or -1 with err. */
static int stamp_write(local_wal_t *w, const char *name, const char *magic, uint64_t value, err_t *err)
{
	uint8_t b[CKPT_BYTES];
	memcpy(b, magic, 8);
	put64(b + 8, value);
	put64(b + 16, XXH3_64bits(b, 16));
	char tmp_name[32];
	snprintf(tmp_name, sizeof tmp_name, "%s.tmp", name);
	char *tmp = wal_path(w, tmp_name), *p = wal_path(w, name);
	int rc = -1;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		io_err(err, "cannot create", tmp);
	} else if (fd_write_all(fd, b, sizeof b, 0) != 0 || fsync(fd) != 0) {
		io_err(err, "cannot write", tmp);
	} else if (rename(tmp, p) != 0 || dir_sync(w) != 0) {
		io_err(err, "cannot rename to", p);
	} else {
		rc = 0;
	}
	if (fd >= 0)
		close(fd);
	if (rc != 0)
		unlink(tmp);
	free(tmp);
	free(p);
	return rc;
}

static void read_checkpoint(local_wal_t *w)
{
	if (stamp_read(w, "checkpoint", CKPT_MAGIC, &w->ckpt, w->ckpt_why, sizeof w->ckpt_why) < 0)
		w->ckpt = 0;
}

static void seg_remove_at(local_wal_t *w, size_t i)
{
	memmove(&w->segs[i], &w->segs[i + 1], (w->n_segs - i - 1) * sizeof *w->segs);
	w->n_segs--;
}

static char *reserve_path(const local_wal_t *w, uint32_t k)
{
	char name[32];
	snprintf(name, sizeof name, "reserve.%u", k);
	return wal_path(w, name);
}

/* Segment i leaves the list: a full-size one becomes the spare when there is
 * none, else a reserve while there are fewer than LOCAL_WAL_RESERVE (a later
 * spare is then a rename, not a zero-fill); any other is removed. The caller
 * syncs the directory. */
static void seg_retire(local_wal_t *w, size_t i)
{
	char *p = seg_path(w, w->segs[i].seq);
	int full = w->segs[i].file_bytes == w->seg_bytes, kept = 0;
	if (full && !w->have_spare && !w->making_spare) {
		char *sp = wal_path(w, "spare");
		kept = rename(p, sp) == 0;
		free(sp);
		if (kept) {
			w->have_spare = 1;
			w->spare_bytes = w->segs[i].file_bytes;
		}
	} else if (full && w->n_reserve < LOCAL_WAL_RESERVE) {
		char *rp = reserve_path(w, w->n_reserve);
		kept = rename(p, rp) == 0;
		free(rp);
		w->n_reserve += (uint32_t)kept;
	}
	if (!kept)
		unlink(p);
	free(p);
	seg_remove_at(w, i);
}

/* Retires every segment other than the current one whose records all end at or before lsn. */
static int recycle(local_wal_t *w, uint64_t lsn)
{
	int changed = 0;
	for (size_t i = 0; i < w->n_segs;) {
		const wal_seg_t *s = &w->segs[i];
		int done = s->seq < (lsn >> 32) || (s->end && s->end <= lsn);
		if (done && !(w->fd >= 0 && s->seq == w->cur_seq)) {
			seg_retire(w, i);
			changed = 1;
		} else {
			i++;
		}
	}
	return changed ? dir_sync(w) : 0;
}

static int list_dir(local_wal_t *w, err_t *err)
{
	DIR *d = opendir(w->dir);
	if (!d)
		return err_set(err, 500, "store log: cannot read %s: %s", w->dir, strerror(errno));
	uint32_t res[LOCAL_WAL_RESERVE];
	uint32_t n_res = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		uint64_t seq;
		struct stat st;
		char *p = wal_path(w, e->d_name);
		if (len > 4 && strcmp(e->d_name + len - 4, ".tmp") == 0) {
			unlink(p); /* a spare or checkpoint that was being written */
		} else if (strcmp(e->d_name, "spare") == 0 && stat(p, &st) == 0) {
			/* a spare of another size (the setting changed) is made again */
			if (S_ISREG(st.st_mode) && (uint64_t)st.st_size == w->seg_bytes) {
				w->have_spare = 1;
				w->spare_bytes = w->seg_bytes;
			} else {
				unlink(p);
			}
		} else if (strncmp(e->d_name, "reserve.", 8) == 0) {
			/* renumbered below; one of another size (the setting changed) goes */
			char *end;
			unsigned long k = strtoul(e->d_name + 8, &end, 10);
			if (*end == 0 && end != e->d_name + 8 && k < 1000 && stat(p, &st) == 0 &&
			    S_ISREG(st.st_mode) && (uint64_t)st.st_size == w->seg_bytes &&
			    n_res < LOCAL_WAL_RESERVE)
				res[n_res++] = (uint32_t)k;
			else
				unlink(p);
		} else if (parse_seg_name(e->d_name, &seq) && stat(p, &st) == 0) {
			w->segs = xgrow(w->segs, &w->cap_segs, w->n_segs + 1, sizeof *w->segs);
			w->segs[w->n_segs++] = (wal_seg_t){.seq = seq, .file_bytes = (uint64_t)st.st_size};
		}
		free(p);
	}
	closedir(d);
	/* Numbered 0.. in the order of their numbers: each goes to a number at
	 * most its own, never onto one not yet moved. */
	for (uint32_t i = 1; i < n_res; i++)
		for (uint32_t j = i; j > 0 && res[j - 1] > res[j]; j--) {
			uint32_t t = res[j];
			res[j] = res[j - 1];
			res[j - 1] = t;
		}
	for (uint32_t i = 0; i < n_res; i++) {
		char *from = reserve_path(w, res[i]), *to = reserve_path(w, w->n_reserve);
		if (res[i] == w->n_reserve || rename(from, to) == 0)
			w->n_reserve++;
		else
			unlink(from);
		free(from);
		free(to);
	}
	if (w->n_segs) /* segs is NULL in an empty directory: qsort's argument must not be */
		qsort(w->segs, w->n_segs, sizeof *w->segs, seg_cmp);
	return 0;
}

int local_wal_open(const char *dir, const local_wal_opts_t *o, local_wal_t **out, err_t *err)
{
	local_wal_opts_t def = {0};
	if (!o)
		o = &def;
	local_wal_t *w = xcalloc(1, sizeof *w);
	size_t n = strlen(dir) + sizeof LOCAL_WAL_DIR + 1;
	w->dir = xmalloc(n);
	snprintf(w->dir, n, "%s/" LOCAL_WAL_DIR, dir);
	w->seg_bytes = o->segment_bytes ? o->segment_bytes : LIMIT_STORE_WAL_SEGMENT;
	w->max_bytes = o->max_bytes ? o->max_bytes : LIMIT_STORE_WAL_BYTES;
	w->sync = o->sync;
	w->sync_arg = o->sync_arg;
	w->fd = w->r_fd = -1;
	w->next_seq = 1;
	w->r_last = SIZE_MAX;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->spare_done, NULL);
	w->xs = xcheck(XXH3_createState());
	if (w->seg_bytes < LOCAL_WAL_SEGMENT_MIN || w->seg_bytes >= SEG_BYTES_MAX || w->seg_bytes % 8) {
		err_set(err, 500, "store log: segment size %llu is not a multiple of 8 in [%u, 2^32)",
		        (unsigned long long)w->seg_bytes, LOCAL_WAL_SEGMENT_MIN);
		goto fail;
	}
	if (mkdir(w->dir, 0755) == 0) {
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0) {
			fsync(fd);
			close(fd);
		}
	} else if (errno != EEXIST) {
		err_set(err, 500, "store log: cannot create %s: %s", w->dir, strerror(errno));
		goto fail;
	}
	if (list_dir(w, err) != 0)
		goto fail;
	read_checkpoint(w);

	/* Headers. The newest segment with an invalid header is one whose start never
	 * became durable (or whose header was damaged: the two look alike): it goes back
	 * to being the spare. Other invalid ones stay, reported by replay as damage. */
	uint64_t last_valid = 0;
	for (size_t i = 0; i < w->n_segs; i++) {
		char *p = seg_path(w, w->segs[i].seq);
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		free(p);
		if (fd >= 0 && seg_header_read(fd, w->segs[i].seq, &w->segs[i]) == 0)
			last_valid = w->segs[i].seq;
		if (fd >= 0)
			close(fd);
	}
	if (w->n_segs && !w->segs[w->n_segs - 1].valid) {
		why_add(w,
		        "newest segment %llu has no valid header (a start that never became durable): reused",
		        (unsigned long long)w->segs[w->n_segs - 1].seq);
		seg_retire(w, w->n_segs - 1);
	}
	uint64_t c = w->ckpt;
	if (c &&
	    ((c >> 32) > last_valid || (c & 0xffffffffu) % 8 || (c & 0xffffffffu) < LOCAL_WAL_HEADER_BYTES)) {
		snprintf(w->ckpt_why, sizeof w->ckpt_why, "checkpoint 0x%llx past the log",
		         (unsigned long long)c);
		w->ckpt = 0;
	}
	if (w->ckpt_why[0])
		why_add(w, "%s: replayed from the oldest segment", w->ckpt_why);
	/* The log's id: a new log gets a random one, so what recorded positions in
	 * a log before it (a deleted DIR/_wal) can tell (local_wal_id). */
	char id_why[96];
	int id_rc = stamp_read(w, "id", ID_MAGIC, &w->id, id_why, sizeof id_why);
	if (id_rc == 0 && !w->n_segs && !w->ckpt) {
		while (!w->id)
			if (getrandom(&w->id, sizeof w->id, 0) != (ssize_t)sizeof w->id)
				w->id = XXH3_64bits_withSeed(w, sizeof *w, (uint64_t)time_now_ns());
		if (stamp_write(w, "id", ID_MAGIC, w->id, err) != 0)
			goto fail;
	} else if (id_rc < 0) {
		w->id = 0;
		why_add(w, "%s: taken as 0", id_why);
	}
	/* the next segment continues the chain: no gap where an unstarted one was retired */
	uint64_t top = w->n_segs ? w->segs[w->n_segs - 1].seq : 0;
	w->next_seq = ((w->ckpt >> 32) > top ? (w->ckpt >> 32) : top) + 1;
	/* Segments grow from a small first one, so a store that writes little uses little disk. */
	w->next_bytes = LOCAL_WAL_SEGMENT_FIRST < w->seg_bytes ? LOCAL_WAL_SEGMENT_FIRST : w->seg_bytes;
	if (w->n_segs && w->segs[w->n_segs - 1].file_bytes > w->next_bytes / 2)
		w->next_bytes = w->segs[w->n_segs - 1].file_bytes * 2 < w->seg_bytes
		                    ? w->segs[w->n_segs - 1].file_bytes * 2
		                    : w->seg_bytes;
	w->rep.from_lsn = w->ckpt;
	w->rep.end_lsn = w->end_lsn = w->ckpt;
	if (recycle(w, w->ckpt) != 0) {
		err_set(err, 500, "store log: cannot sync %s: %s", w->dir, strerror(errno));
		goto fail;
	}
	*out = w;
	return 0;
fail:
	local_wal_close(w);
	return -1;
}

void local_wal_close(local_wal_t *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	if (w->r_fd >= 0)
		close(w->r_fd);
	XXH3_freeState(w->xs);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->spare_done);
	free(w->segs);
	free(w->buf);
	free(w->dir);
	free(w);
}

/* ---- replay ---- */

/* The first offset in [from, limit) at an 8-byte step holding a valid record header of
 * segment s (records ending by limit), or 0 when there is none. */
static int64_t scan_valid(local_wal_t *w, int fd, const wal_seg_t *s, uint64_t from, uint64_t limit)
{
	uint8_t *blk = xmalloc(SCAN_BLOCK);
	int64_t found = 0;
	uint64_t pos = from;
	while (!found && pos + LOCAL_WAL_REC_HEADER <= limit) {
		uint64_t want = limit - pos < SCAN_BLOCK ? limit - pos : SCAN_BLOCK;
		ssize_t got = read_at(fd, blk, want, pos);
		if (got < (ssize_t)LOCAL_WAL_REC_HEADER)
			break;
		uint64_t k = 0;
		for (; k + LOCAL_WAL_REC_HEADER <= (uint64_t)got; k += 8)
			if (blk[k] == 'K' && !rec_header_check(blk + k, s, pos + k, limit)) {
				found = (int64_t)(pos + k);
				break;
			}
		pos += k;
	}
	free(blk);
	return found;
}

/* Why the record at r_off of the segment being read is invalid (NULL: valid, payload
 * read into w->buf, *len its length); -1 in *io on a read error. */
static const char *rec_read(local_wal_t *w, const wal_seg_t *s, uint8_t h[LOCAL_WAL_REC_HEADER],
                            uint32_t *len, int *io)
{
	ssize_t got = read_at(w->r_fd, h, LOCAL_WAL_REC_HEADER, w->r_off);
	if (got < 0) {
		*io = -1;
		return "read error";
	}
	if (got != (ssize_t)LOCAL_WAL_REC_HEADER)
		return "end of file";
	const char *why = rec_header_check(h, s, w->r_off, w->r_limit);
	if (why)
		return why;
	*len = get32(h + 4);
	w->buf = xgrow(w->buf, &w->buf_cap, *len ? *len : 1, 1);
	if (read_at(w->r_fd, w->buf, *len, w->r_off + LOCAL_WAL_REC_HEADER) != (ssize_t)*len) {
		*io = -1;
		return "read error";
	}
	if (XXH3_64bits_withSeed(w->buf, *len, s->salt) != get64(h + 24))
		return "payload checksum";
	return NULL;
}

/* The index of the next valid segment after i (n_segs: none). */
static size_t next_valid(const local_wal_t *w, size_t i)
{
	for (i++; i < w->n_segs && !w->segs[i].valid; i++)
		;
	return i;
}

/* Reports segment i (why: its header is damaged; NULL: valid) and the missing segments
 * between the one replay looked at before it and it. */
static void seg_lost(local_wal_t *w, size_t i, const char *why)
{
	uint64_t seq = w->segs[i].seq;
	if (w->r_seen && seq > w->r_seen + 1) {
		w->rep.damaged++;
		if (!w->rep.first_damaged_lsn)
			w->rep.first_damaged_lsn = lsn_of(w->r_seen + 1, 0);
		why_add(w, "segments %llu..%llu missing", (unsigned long long)w->r_seen + 1,
		        (unsigned long long)seq - 1);
	}
	w->r_seen = seq;
	if (!why)
		return;
	w->rep.damaged++;
	w->rep.damaged_bytes += w->segs[i].file_bytes;
	if (!w->rep.first_damaged_lsn)
		w->rep.first_damaged_lsn = lsn_of(seq, 0);
	why_add(w, "segment %llu: %s, its records dropped", (unsigned long long)seq, why);
}

/* Opens segment i for reading from off, bounded by the next valid segment's prev_end. */
static int replay_enter(local_wal_t *w, size_t i, uint64_t off, err_t *err)
{
	wal_seg_t *s = &w->segs[i];
	char *p = seg_path(w, s->seq);
	w->r_fd = open(p, O_RDONLY | O_CLOEXEC);
	if (w->r_fd < 0) {
		io_err(err, "cannot open", p);
		free(p);
		return -1;
	}
	free(p);
	w->r_i = i;
	w->r_off = off;
	w->r_limit = s->bytes;
	w->r_bounded = 0;
	size_t j = next_valid(w, i);
	if (j < w->n_segs) {
		uint64_t pe = w->segs[j].prev_end;
		if ((pe >> 32) == s->seq && (pe & 0xffffffffu) <= s->bytes) {
			w->r_limit = pe & 0xffffffffu;
			w->r_bounded = 1;
		} else if ((pe >> 32) < s->seq) {
			/* the segment's first record was abandoned: nothing in it counts */
			w->r_limit = LOCAL_WAL_HEADER_BYTES;
			w->r_bounded = 1;
		}
	}
	return 0;
}

static void damage(local_wal_t *w, const wal_seg_t *s, uint64_t from, uint64_t to, const char *why)
{
	w->rep.damaged++;
	w->rep.damaged_bytes += to - from;
	if (!w->rep.first_damaged_lsn) {
		w->rep.first_damaged_lsn = lsn_of(s->seq, from);
		why_add(w, "damaged record at lsn 0x%llx (%s)", (unsigned long long)lsn_of(s->seq, from),
		        why);
	}
}

/* The end of the log in the last segment: bytes there that claim this position (the
 * magic and this LSN: the first 16 bytes of a record) are a torn record; anything else
 * (zeros, a record of the segment's previous life, the middle of one) is a clean end. */
static void tail(local_wal_t *w, const wal_seg_t *s, const char *why)
{
	uint8_t h[LOCAL_WAL_REC_HEADER];
	if (w->r_off + sizeof h > s->bytes || read_at(w->r_fd, h, sizeof h, w->r_off) != (ssize_t)sizeof h ||
	    memcmp(h, REC_MAGIC, 4) != 0 || get64(h + 8) != lsn_of(s->seq, w->r_off))
		return;
	int hdr_ok = get64(h + 32) == XXH3_64bits_withSeed(h, 32, s->salt);
	uint64_t claim = align8(LOCAL_WAL_REC_HEADER + (uint64_t)get32(h + 4));
	w->rep.torn_bytes = hdr_ok && w->r_off + claim <= s->bytes ? claim : LOCAL_WAL_REC_HEADER;
	why_add(w, "torn tail at lsn 0x%llx (%s), %llu bytes dropped",
	        (unsigned long long)lsn_of(s->seq, w->r_off), why, (unsigned long long)w->rep.torn_bytes);
}

/* Replay is over: the writer continues in the last valid segment, at its end. */
static int replay_finish(local_wal_t *w, err_t *err)
{
	w->replay_done = 1;
	w->end_lsn = w->rep.end_lsn;
	if (!w->rep.why[0])
		snprintf(w->rep.why, sizeof w->rep.why, "clean");
	if (w->r_last == SIZE_MAX)
		return 0;
	const wal_seg_t *s = &w->segs[w->r_last];
	char *p = seg_path(w, s->seq);
	w->fd = open(p, O_RDWR | O_CLOEXEC);
	if (w->fd < 0) {
		io_err(err, "cannot open", p);
		free(p);
		w->failed = 1;
		return -1;
	}
	free(p);
	w->cur_seq = s->seq;
	w->cur_bytes = s->bytes;
	w->cur_salt = s->salt;
	w->off = s->end & 0xffffffffu;
	return 0;
}

int local_wal_replay_next(local_wal_t *w, local_wal_rec_t *rec, err_t *err)
{
	if (w->replay_done)
		return 0;
	for (;;) {
		if (w->r_fd < 0) {
			/* the next segment to read: the first valid one at or after the checkpoint's;
			 * a missing segment or one with a damaged header on the way is damage */
			size_t i = w->r_last == SIZE_MAX ? 0 : w->r_last + 1;
			for (; i < w->n_segs && (!w->segs[i].valid || w->segs[i].seq < (w->ckpt >> 32)); i++)
				if (w->segs[i].seq >= (w->ckpt >> 32))
					seg_lost(w, i, "damaged header");
			if (i >= w->n_segs)
				return replay_finish(w, err);
			seg_lost(w, i, NULL);
			uint64_t off = LOCAL_WAL_HEADER_BYTES;
			if (w->segs[i].seq == (w->ckpt >> 32))
				off = w->ckpt & 0xffffffffu;
			if (replay_enter(w, i, off, err) != 0)
				return -1;
			w->r_last = i;
		}
		wal_seg_t *s = &w->segs[w->r_i];
		uint8_t h[LOCAL_WAL_REC_HEADER];
		uint32_t len = 0;
		int io = 0;
		const char *why = "end of segment";
		if (w->r_off + LOCAL_WAL_REC_HEADER <= w->r_limit) {
			why = rec_read(w, s, h, &len, &io);
			if (io) {
				err_set(err, 503, "store log: cannot read segment %llu: %s",
				        (unsigned long long)s->seq, strerror(errno));
				return -1;
			}
			if (!why) {
				rec->lsn = lsn_of(s->seq, w->r_off);
				rec->kind = get32(h + 16);
				rec->n = get32(h + 20);
				rec->payload = slice_make(w->buf, len);
				w->r_off += align8(LOCAL_WAL_REC_HEADER + len);
				if (w->r_off > w->r_limit)
					w->r_off = w->r_limit;
				s->end = w->rep.end_lsn = lsn_of(s->seq, w->r_off);
				w->rep.records++;
				return 1;
			}
			int64_t next = scan_valid(w, w->r_fd, s, w->r_off + 8, w->r_limit);
			if (next > 0) {
				damage(w, s, w->r_off, (uint64_t)next, why);
				w->r_off = (uint64_t)next;
				continue;
			}
		}
		/* Nothing valid follows in this segment. */
		if (w->r_bounded && w->r_off < w->r_limit) {
			damage(w, s, w->r_off, w->r_limit, why);
			w->r_off = w->r_limit;
		}
		s->end = w->rep.end_lsn = lsn_of(s->seq, w->r_off);
		if (next_valid(w, w->r_i) >= w->n_segs)
			tail(w, s, why);
		close(w->r_fd);
		w->r_fd = -1;
	}
}

const local_wal_report_t *local_wal_report(const local_wal_t *w)
{
	return &w->rep;
}

/* ---- the spare ---- */

/* Writes a zero-filled, fsynced segment file of size bytes at DIR/_wal/spare.tmp.
 * Runs without the lock (making_spare keeps others off the name). Each block
 * is written out and waited for before the next is written: the disk's queue
 * then holds at most one block of it ahead of the log's fdatasync, which
 * otherwise waited behind the whole file's write-back (13-46 ms syncs while
 * a 16-64 MiB spare was flushed, bench at 8 connections). */
static int spare_write(local_wal_t *w, uint64_t bytes, err_t *err)
{
	char *p = wal_path(w, "spare.tmp");
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int rc = -1;
	if (fd < 0) {
		io_err(err, "cannot create", p);
		free(p);
		return -1;
	}
	uint8_t *zero = xcalloc(1, ZERO_BLOCK);
	uint64_t off = 0;
	for (; off < bytes; off += ZERO_BLOCK) {
		uint64_t n = bytes - off < ZERO_BLOCK ? bytes - off : ZERO_BLOCK;
		if (fd_write_all(fd, zero, n, off) != 0)
			break;
		/* a hint: the fsync below makes it durable whatever this does */
		(void)sync_file_range(fd, (off_t)off, (off_t)n,
		                      SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
		                          SYNC_FILE_RANGE_WAIT_AFTER);
	}
	free(zero);
	if (off < bytes)
		io_err(err, "cannot write", p);
	else if (fsync(fd) != 0)
		io_err(err, "cannot sync", p);
	else
		rc = 0;
	close(fd);
	if (rc != 0)
		unlink(p);
	free(p);
	return rc;
}

/* Makes the spare with w->mu held (released while zero-filling); waits for one
 * another thread is making. Its size is next_bytes, or the power of two that
 * holds need bytes, at most seg_bytes; a spare smaller than need is replaced.
 * 1 made, 0 nothing to do or no room (when bounded), -1 err. */
static int spare_make_locked(local_wal_t *w, int bounded, uint64_t need, err_t *err)
{
	while (w->making_spare)
		pthread_cond_wait(&w->spare_done, &w->mu);
	if (w->have_spare && w->spare_bytes < need) {
		char *sp = wal_path(w, "spare");
		unlink(sp);
		free(sp);
		w->have_spare = 0;
	}
	if (!w->have_spare && w->n_reserve && need <= w->seg_bytes) {
		/* a reserve becomes the spare: a rename (made durable by the directory
		 * sync of the segment start that takes it) */
		char *rp = reserve_path(w, w->n_reserve - 1), *sp = wal_path(w, "spare");
		int ok = rename(rp, sp) == 0;
		free(rp);
		free(sp);
		if (ok) {
			w->n_reserve--;
			w->have_spare = 1;
			w->spare_bytes = w->seg_bytes;
			return 1;
		}
	}
	uint64_t bytes = w->next_bytes;
	while (bytes < need && bytes < w->seg_bytes)
		bytes *= 2;
	if (bytes > w->seg_bytes)
		bytes = w->seg_bytes;
	if (w->have_spare || (bounded && disk_bytes(w) + bytes > w->max_bytes))
		return 0;
	w->making_spare = 1;
	w->spare_bytes = bytes;
	pthread_mutex_unlock(&w->mu);
	int rc = spare_write(w, bytes, err);
	if (rc == 0) {
		char *tmp = wal_path(w, "spare.tmp"), *sp = wal_path(w, "spare");
		if (rename(tmp, sp) != 0 || dir_sync(w) != 0)
			rc = io_err(err, "cannot rename to", sp);
		free(tmp);
		free(sp);
	}
	pthread_mutex_lock(&w->mu);
	w->making_spare = 0;
	w->have_spare = rc == 0;
	pthread_cond_broadcast(&w->spare_done);
	return rc == 0 ? 1 : -1;
}

int local_wal_make_spare(local_wal_t *w, err_t *err)
{
	pthread_mutex_lock(&w->mu);
	int rc = spare_make_locked(w, 1, 0, err);
	pthread_mutex_unlock(&w->mu);
	return rc;
}

/* ---- appending ---- */

/* seg_start's return when no spare could be made: nothing changed, a retry may work. */
#define SEG_NO_SPARE (-3)

/* Starts segment next_seq from the spare (made here when there is none, or
 * when it is smaller than need bytes) with prev_end = the end of the last
 * durable record: header written and synced, name made durable. forced: past
 * max_bytes if need be (abandoning a record must be able to hide it).
 * 0, LOCAL_WAL_FULL, SEG_NO_SPARE, or -1 with err (a half-started segment). */
static int seg_start(local_wal_t *w, int forced, uint64_t need, err_t *err)
{
	if (!w->have_spare || w->spare_bytes < need) {
		int rc = spare_make_locked(w, !forced, need, err);
		if (rc < 0)
			return SEG_NO_SPARE;
		if (!w->have_spare) {
			err_set(err, 503,
			        "store log full: %llu bytes of log segments on disk, at most %llu; a "
			        "checkpoint frees "
			        "them",
			        (unsigned long long)disk_bytes(w), (unsigned long long)w->max_bytes);
			if (err)
				err->retry_after = 5;
			return LOCAL_WAL_FULL;
		}
	}
	wal_seg_t s = {.seq = w->next_seq, .prev_end = w->end_lsn, .valid = 1};
	char *sp = wal_path(w, "spare"), *p = seg_path(w, s.seq);
	int rc = -1, fd = -1;
	struct stat st;
	if (rename(sp, p) != 0) {
		io_err(err, "cannot rename the spare to", p);
		goto out;
	}
	w->have_spare = 0;
	w->next_seq++;
	fd = open(p, O_RDWR | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		io_err(err, "cannot open", p);
		goto out;
	}
	s.file_bytes = (uint64_t)st.st_size;
	s.bytes = s.file_bytes & ~(uint64_t)7;
	if (s.bytes < LOCAL_WAL_SEGMENT_MIN || s.bytes >= SEG_BYTES_MAX) {
		err_set(err, 500, "store log: %s has %llu bytes, not a segment", p,
		        (unsigned long long)s.file_bytes);
		goto out;
	}
	if (getrandom(&s.salt, sizeof s.salt, 0) != (ssize_t)sizeof s.salt)
		s.salt = XXH3_64bits_withSeed(&s, sizeof s, (uint64_t)time_now_ns());
	uint8_t *h = xcalloc(1, LOCAL_WAL_HEADER_BYTES);
	seg_header_encode(h, &s, (uint64_t)time_now_ns());
	int wrc = fd_write_all(fd, h, LOCAL_WAL_HEADER_BYTES, 0);
	free(h);
	if (wrc != 0 || do_sync(w, fd) != 0 || dir_sync(w) != 0) {
		io_err(err, "cannot write the header of", p);
		goto out;
	}
	w->segs = xgrow(w->segs, &w->cap_segs, w->n_segs + 1, sizeof *w->segs);
	w->segs[w->n_segs++] = s;
	if (w->fd >= 0)
		close(w->fd);
	w->fd = fd;
	fd = -1;
	w->cur_seq = s.seq;
	w->cur_bytes = s.bytes;
	if (w->next_bytes < w->seg_bytes && w->next_bytes <= s.file_bytes)
		w->next_bytes = s.file_bytes * 2 < w->seg_bytes ? s.file_bytes * 2 : w->seg_bytes;
	w->cur_salt = s.salt;
	w->off = LOCAL_WAL_HEADER_BYTES;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	free(sp);
	free(p);
	return rc;
}

static wal_seg_t *cur_seg(local_wal_t *w)
{
	for (size_t i = w->n_segs; i-- > 0;)
		if (w->segs[i].seq == w->cur_seq)
			return &w->segs[i];
	return NULL;
}

/* The write or sync of the record at w->off failed: the current segment ends at the
 * last durable record, and a new segment's prev_end says so. */
static int abandon(local_wal_t *w, uint64_t lsn, const char *what, err_t *err)
{
	int e = errno;
	wal_seg_t *s = cur_seg(w);
	if (s)
		s->end = w->end_lsn;
	err_t e2 = {0};
	if (seg_start(w, 1, 0, &e2) != 0) {
		w->failed = 1;
		err_set(err, 503,
		        "store log: %s of the record at lsn 0x%llx failed (%s), and starting a new segment "
		        "failed "
		        "(%s): the log refuses writes until the store is reopened",
		        what, (unsigned long long)lsn, strerror(e), e2.msg);
	} else {
		err_set(err, 503, "store log: %s of the record at lsn 0x%llx failed (%s): record abandoned",
		        what, (unsigned long long)lsn, strerror(e));
	}
	if (err)
		err->retry_after = 5;
	return -1;
}

int local_wal_appendv(local_wal_t *w, uint32_t kind, uint32_t n, const struct iovec *iov, int iovcnt,
                      uint64_t *lsn, err_t *err)
{
	uint64_t len = 0;
	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	pthread_mutex_lock(&w->mu);
	int rc = -1;
	uint64_t size = align8(LOCAL_WAL_REC_HEADER + len);
	uint64_t room = w->seg_bytes - LOCAL_WAL_HEADER_BYTES; /* of the largest segment */
	if (!w->replay_done) {
		err_set(err, 500, "store log: append before replay reached the end of the log");
	} else if (w->failed) {
		err_set(err, 503, "store log: writes refused since a failed sync (see the earlier error)");
		if (err)
			err->retry_after = 5;
	} else if (kind == 0 || kind > LOCAL_WAL_KIND_MAX || iovcnt < 0 || iovcnt > IOV_MAX - 2) {
		err_set(err, 500, "store log: bad record (kind %u, %d iovecs)", kind, iovcnt);
	} else if ((w->fd < 0 || w->off + size > w->cur_bytes) && size > room) {
		err_set(err, 413,
		        "store log: a record of %llu bytes cannot fit in a log segment (%llu bytes)",
		        (unsigned long long)len, (unsigned long long)room + LOCAL_WAL_HEADER_BYTES);
	} else if ((w->fd < 0 || w->off + size > w->cur_bytes) &&
	           (rc = seg_start(w, 0, LOCAL_WAL_HEADER_BYTES + size, err)) != 0) {
		if (rc == -1)
			w->failed = 1; /* a half-started segment: reopen to sort it out */
		else if (rc == SEG_NO_SPARE)
			rc = -1;
	} else if (w->off + size > w->cur_bytes) {
		err_set(err, 413, "store log: a record of %llu bytes cannot fit in log segment %llu",
		        (unsigned long long)len, (unsigned long long)w->cur_seq);
	} else {
		uint64_t at = lsn_of(w->cur_seq, w->off);
		XXH3_64bits_reset_withSeed(w->xs, w->cur_salt);
		for (int i = 0; i < iovcnt; i++)
			XXH3_64bits_update(w->xs, iov[i].iov_base, iov[i].iov_len);
		uint8_t h[LOCAL_WAL_REC_HEADER];
		static const uint8_t pad[8];
		rec_header_encode(h, (uint32_t)len, at, kind, n, XXH3_64bits_digest(w->xs), w->cur_salt);
		struct iovec v[IOV_MAX];
		v[0] = (struct iovec){h, sizeof h};
		memcpy(v + 1, iov, (size_t)iovcnt * sizeof *iov);
		v[iovcnt + 1] = (struct iovec){(void *)pad, size - LOCAL_WAL_REC_HEADER - len};
		ssize_t wr = pwritev(w->fd, v, iovcnt + 2, (off_t)w->off);
		if (wr != (ssize_t)size) {
			if (wr >= 0)
				errno = EIO; /* a short write to a preallocated file */
			rc = abandon(w, at, "the write", err);
		} else if (do_sync(w, w->fd) != 0) {
			rc = abandon(w, at, "the sync", err);
		} else {
			w->off += size;
			w->end_lsn = lsn_of(w->cur_seq, w->off);
			cur_seg(w)->end = w->end_lsn;
			if (lsn)
				*lsn = at;
			rc = 0;
		}
	}
	pthread_mutex_unlock(&w->mu);
	return rc;
}

int local_wal_append(local_wal_t *w, uint32_t kind, uint32_t n, slice_t payload, uint64_t *lsn, err_t *err)
{
	struct iovec v = {(void *)payload.p, payload.n};
	return local_wal_appendv(w, kind, n, &v, payload.n ? 1 : 0, lsn, err);
}

int local_wal_wants_spare(local_wal_t *w)
{
	pthread_mutex_lock(&w->mu);
	int want = !w->have_spare && !w->making_spare && (w->fd < 0 || w->off >= w->cur_bytes / 2);
	pthread_mutex_unlock(&w->mu);
	return want;
}

uint64_t local_wal_end(local_wal_t *w)
{
	pthread_mutex_lock(&w->mu);
	uint64_t e = w->end_lsn;
	pthread_mutex_unlock(&w->mu);
	return e;
}

uint64_t local_wal_disk_bytes(local_wal_t *w)
{
	pthread_mutex_lock(&w->mu);
	uint64_t b = disk_bytes(w);
	pthread_mutex_unlock(&w->mu);
	return b;
}

/* ---- reading back ---- */

int local_wal_read(local_wal_t *w, uint64_t lsn, local_wal_rec_t *rec, uint64_t *next, uint8_t **buf,
                   size_t *cap, err_t *err)
{
	pthread_mutex_lock(&w->mu);
	if (lsn >= w->end_lsn) {
		pthread_mutex_unlock(&w->mu);
		return 0;
	}
	/* The segment holding lsn; at or past its last record, the next one's first. */
	uint64_t seq = lsn >> 32, off = lsn & 0xffffffffu;
	wal_seg_t s = {0};
	size_t i = 0;
	while (i < w->n_segs && w->segs[i].seq < seq)
		i++;
	for (; i < w->n_segs; i++, off = LOCAL_WAL_HEADER_BYTES) {
		const wal_seg_t *c = &w->segs[i];
		if (!c->valid || !c->end || (c->end >> 32) != c->seq)
			continue;
		if (c->seq == seq && off < (c->end & 0xffffffffu) && off >= LOCAL_WAL_HEADER_BYTES) {
			s = *c;
			break;
		}
		if (c->seq > seq && (c->end & 0xffffffffu) > LOCAL_WAL_HEADER_BYTES) {
			s = *c;
			break;
		}
	}
	pthread_mutex_unlock(&w->mu);
	if (!s.valid)
		return err_set(err, 500, "store log: no record at lsn 0x%llx", (unsigned long long)lsn);
	/* Durable records are never rewritten, and segments at or after the
	 * checkpoint are not recycled: read without the lock. */
	char *p = seg_path(w, s.seq);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		io_err(err, "cannot open", p);
		free(p);
		return -1;
	}
	free(p);
	uint64_t limit = s.end & 0xffffffffu;
	uint8_t h[LOCAL_WAL_REC_HEADER];
	int rc = -1;
	const char *why = NULL;
	if (read_at(fd, h, sizeof h, off) != (ssize_t)sizeof h) {
		why = "cannot read the header";
	} else if ((why = rec_header_check(h, &s, off, limit)) == NULL) {
		uint32_t len = get32(h + 4);
		*buf = xgrow(*buf, cap, len ? len : 1, 1);
		if (read_at(fd, *buf, len, off + LOCAL_WAL_REC_HEADER) != (ssize_t)len)
			why = "cannot read the payload";
		else if (XXH3_64bits_withSeed(*buf, len, s.salt) != get64(h + 24))
			why = "payload checksum";
		else {
			rec->lsn = lsn_of(s.seq, off);
			rec->kind = get32(h + 16);
			rec->n = get32(h + 20);
			rec->payload = slice_make(*buf, len);
			uint64_t after = off + align8(LOCAL_WAL_REC_HEADER + len);
			*next = lsn_of(s.seq, after < limit ? after : limit);
			rc = 1;
		}
	}
	close(fd);
	if (rc < 0)
		err_set(err, 500, "store log: reading back lsn 0x%llx: %s",
		        (unsigned long long)lsn_of(s.seq, off), why);
	return rc;
}

/* ---- checkpoint ---- */

int local_wal_checkpoint(local_wal_t *w, uint64_t lsn, err_t *err)
{
	uint64_t end = local_wal_end(w);
	if (lsn > end)
		return err_set(err, 500, "store log: checkpoint 0x%llx past the end of the log 0x%llx",
		               (unsigned long long)lsn, (unsigned long long)end);
	int rc = stamp_write(w, "checkpoint", CKPT_MAGIC, lsn, err);
	if (rc == 0) {
		pthread_mutex_lock(&w->mu);
		w->ckpt = lsn;
		if (recycle(w, lsn) != 0)
			rc = io_err(err, "cannot sync", w->dir);
		pthread_mutex_unlock(&w->mu);
	}
	return rc;
}

uint64_t local_wal_id(const local_wal_t *w)
{
	return w->id;
}
