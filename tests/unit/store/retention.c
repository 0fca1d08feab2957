/* Tests of store/local retention (src/store/local_retention_t.c and the view
 * clamp): the sweep deletes whole expired day partitions (db, wal, shm),
 * views open during it keep reading, later views don't see them, the writer
 * drops its connections and refuses writes to deleted days, projects are
 * independent, views are clamped to the retention, the project list,
 * sweeps while readers run, and a sweep followed by a crash and a restart
 * (the log replayed at open must not bring the expired day back). */
#include <dirent.h>
#include <pthread.h>
#include <sys/wait.h>

#include "helpers.h"

#define NOW (DAY0 + 12 * 3600 * NS_PER_SEC) /* 2023-05-24 12:00 UTC */

static store_view_t *open_view(store_t *s, const char *project, int64_t from, int64_t until)
{
	store_view_t *v;
	err_t err = {0};
	if (store_view_open(s, slice_cstr(project), from, until, &v, &err) != 0)
		fail_msg("view: %s", err.msg);
	return v;
}

/* A batch of project with one cpu profile of value v at t. */
static model_batch_t *dated_batch(const char *project, int64_t t, int64_t v)
{
	model_batch_t *b = model_batch_new(slice_cstr(project));
	uint32_t leaf = test_stack(b, "main;work");
	model_profile_t *p = test_profile(b, "cpu", "nanoseconds", t, "pod-1");
	model_sample_add(b, p, leaf, 0, v, 0);
	model_profile_finish(b, p);
	return b;
}

/* DIR/<proj dir>/<day of t>.db<suffix> */
static void part_path(const store_fix *f, const char *proj_dir, int64_t t, const char *suffix, char *out,
                      size_t n)
{
	char day[11];
	time_day_str(time_day(t), day);
	snprintf(out, n, "%s/%s/%s.db%s", f->dir, proj_dir, day, suffix);
}

static int part_file_exists(const store_fix *f, const char *proj_dir, int64_t t, const char *suffix)
{
	char path[512];
	part_path(f, proj_dir, t, suffix, path, sizeof path);
	return access(path, F_OK) == 0;
}

/* Does this process hold a file descriptor on the day file of t (deleted or not)? */
static int fd_open_on(const store_fix *f, const char *proj_dir, int64_t t)
{
	char want[512], link[1024], fdp[300];
	part_path(f, proj_dir, t, "", want, sizeof want);
	DIR *d = opendir("/proc/self/fd");
	assert_non_null(d);
	int found = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		snprintf(fdp, sizeof fdp, "/proc/self/fd/%s", de->d_name);
		ssize_t n = readlink(fdp, link, sizeof link - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		if (strncmp(link, want, strlen(want)) == 0)
			found = 1;
	}
	closedir(d);
	return found;
}

/* Sum of the chunk totals of partition p of v (every series). */
static int64_t part_total(store_view_t *v, uint32_t p)
{
	err_t err = {0};
	const store_series_t *se;
	uint32_t n_se, n_h;
	if (store_view_series(v, p, &se, &n_se, &err) != 0)
		fail_msg("series: %s", err.msg);
	uint32_t ids[16];
	assert_true(n_se <= 16);
	for (uint32_t i = 0; i < n_se; i++)
		ids[i] = se[i].local;
	const store_chunk_head_t *h;
	if (store_view_heads(v, p, ids, n_se, &h, &n_h, &err) != 0)
		fail_msg("heads: %s", err.msg);
	int64_t sum = 0;
	for (uint32_t i = 0; i < n_h; i++) {
		store_chunk_head_t head = h[i];
		const store_entry_t *e;
		uint32_t n_e;
		if (store_view_entries(v, p, &head, &e, &n_e, &err) != 0)
			fail_msg("entries: %s", err.msg);
		sum += head.total;
	}
	return sum;
}

static uint32_t sweep(store_t *s, const char *project, int keep, int64_t now)
{
	uint32_t deleted = 99;
	err_t err = {0};
	if (store_retention_sweep(s, slice_cstr(project), keep, now, &deleted, &err) != 0)
		fail_msg("sweep: %d %s", err.status, err.msg);
	return deleted;
}

/* How many files of DIR/<proj dir> belong to the day of t (its .db, -wal,
 * -shm, .hours, ...: every name that starts with the day). */
static int day_files(const store_fix *f, const char *proj_dir, int64_t t)
{
	char dir[512], day[11];
	snprintf(dir, sizeof dir, "%s/%s", f->dir, proj_dir);
	time_day_str(time_day(t), day);
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		n += strncmp(de->d_name, day, 10) == 0;
	closedir(d);
	return n;
}

static void test_sweep_deletes_whole_expired_days(void **state)
{
	store_fix *f = *state;
	const int64_t d15 = NOW - 15 * NS_PER_DAY, d14 = NOW - 14 * NS_PER_DAY, d13 = NOW - 13 * NS_PER_DAY;
	write_ok(f->s, dated_batch("default", d15, 1500));
	write_ok(f->s, dated_batch("default", d14, 1400));
	write_ok(f->s, dated_batch("default", d13, 1300));
	write_ok(f->s, dated_batch("default", NOW, 1));
	/* The writer holds its connection to the 15-day partition (LRU). */
	assert_true(fd_open_on(f, "default", d15));

	/* A view that has read the 15-day partition, one that only listed it. */
	store_view_t *read_before = open_view(f->s, "default", 0, NOW + NS_PER_DAY);
	store_view_t *listed_before = open_view(f->s, "default", 0, NOW + NS_PER_DAY);
	assert_int_equal(store_view_partitions(read_before), 4);
	assert_int_equal(part_total(read_before, 0), 1500);
	assert_true(part_file_exists(f, "default", d15, ""));
	assert_true(part_file_exists(f, "default", d15, "-wal"));
	assert_true(part_file_exists(f, "default", d15, "-shm"));

	assert_int_equal(sweep(f->s, "default", 14, NOW), 1);
	assert_false(part_file_exists(f, "default", d15, ""));
	assert_false(part_file_exists(f, "default", d15, "-wal"));
	assert_false(part_file_exists(f, "default", d15, "-shm"));
	assert_true(part_file_exists(f, "default", d14, "")); /* 14 days old: kept */
	assert_true(part_file_exists(f, "default", d13, ""));
	assert_true(part_file_exists(f, "default", NOW, ""));

	/* Open files keep working; a listed but unread partition reads as empty. */
	assert_int_equal(part_total(read_before, 0), 1500);
	assert_int_equal(part_total(read_before, 1), 1400);
	assert_int_equal(part_total(listed_before, 0), 0);
	assert_int_equal(part_total(listed_before, 2), 1300);
	store_view_close(read_before);
	store_view_close(listed_before);
	/* Nothing (the writer included) holds the deleted file any more. */
	assert_false(fd_open_on(f, "default", d15));

	uint32_t chunks;
	assert_int_equal(sum_totals(f->s, "default", 0, NOW + NS_PER_DAY, &chunks), 1400 + 1300 + 1);
	store_view_t *v = open_view(f->s, "default", 0, NOW + NS_PER_DAY);
	assert_int_equal(store_view_partitions(v), 3);
	store_view_close(v);

	/* Twice: nothing more to do. */
	assert_int_equal(sweep(f->s, "default", 14, NOW), 0);
	assert_int_equal(sum_totals(f->s, "default", 0, NOW + NS_PER_DAY, &chunks), 1400 + 1300 + 1);

	/* The writer goes on: today, and a kept old day. */
	write_ok(f->s, dated_batch("default", NOW + NS_PER_SEC, 2));
	write_ok(f->s, dated_batch("default", d14 + NS_PER_SEC, 3));
	assert_int_equal(sum_totals(f->s, "default", 0, NOW + NS_PER_DAY, &chunks), 1400 + 1300 + 1 + 2 + 3);

	/* A late write to the deleted day is refused, not resurrected. */
	err_t err = {0};
	assert_int_equal(store_write_sync(f->s, dated_batch("default", d15 + NS_PER_SEC, 7), &err), -1);
	assert_int_equal(err.status, 400);
	assert_non_null(strstr(err.msg, "retention"));
	assert_false(part_file_exists(f, "default", d15, ""));
	/* ... also as part of a batch that has a current profile (all or nothing). */
	model_batch_t *b = dated_batch("default", NOW, 5);
	model_profile_t *p = test_profile(b, "cpu", "nanoseconds", d15, "pod-2");
	model_sample_add(b, p, 0, 0, 5, 0);
	model_profile_finish(b, p);
	assert_int_equal(store_write_sync(f->s, b, &err), -1);
	assert_int_equal(err.status, 400);
	assert_int_equal(sum_totals(f->s, "default", 0, NOW + NS_PER_DAY, &chunks), 1400 + 1300 + 1 + 2 + 3);

	/* A day later the 14-day partition (now 15) goes too. */
	assert_int_equal(sweep(f->s, "default", 14, NOW + NS_PER_DAY), 1);
	assert_false(part_file_exists(f, "default", d14, ""));
	assert_true(part_file_exists(f, "default", d13, ""));
}

static void test_expiry_boundary(void **state)
{
	store_fix *f = *state;
	/* Keep 2 at NOW (day D): days D-2, D-1, D stay; D-3 goes, even its last nanosecond. */
	write_ok(f->s, dated_batch("default", DAY0 - 2 * NS_PER_DAY, 1));
	write_ok(f->s, dated_batch("default", DAY0 - 2 * NS_PER_DAY - 1, 2));
	assert_int_equal(sweep(f->s, "default", 2, NOW), 1);
	assert_true(part_file_exists(f, "default", DAY0 - 2 * NS_PER_DAY, ""));
	assert_false(part_file_exists(f, "default", DAY0 - 2 * NS_PER_DAY - 1, ""));
	/* At the last nanosecond of day D the day D-2 still stays; at midnight it goes. */
	assert_int_equal(sweep(f->s, "default", 2, DAY0 + NS_PER_DAY - 1), 0);
	assert_int_equal(sweep(f->s, "default", 2, DAY0 + NS_PER_DAY), 1);
}

static void test_projects_are_independent(void **state)
{
	store_fix *f = *state;
	const int64_t old = NOW - 15 * NS_PER_DAY;
	write_ok(f->s, dated_batch("a", old, 10));
	write_ok(f->s, dated_batch("b", old, 20));
	write_ok(f->s, dated_batch("a", NOW, 1));
	assert_int_equal(sweep(f->s, "a", 14, NOW), 1);
	assert_false(part_file_exists(f, "a", old, ""));
	assert_true(part_file_exists(f, "b", old, ""));
	/* b was not swept: its old day still takes writes; a's does not. */
	write_ok(f->s, dated_batch("b", old + NS_PER_SEC, 5));
	err_t err = {0};
	assert_int_equal(store_write_sync(f->s, dated_batch("a", old + NS_PER_SEC, 5), &err), -1);
	assert_int_equal(err.status, 400);
	uint32_t chunks;
	assert_int_equal(sum_totals(f->s, "b", 0, NOW + NS_PER_DAY, &chunks), 25);
	assert_int_equal(sum_totals(f->s, "a", 0, NOW + NS_PER_DAY, &chunks), 1);
	/* A longer retention on b deletes nothing there. */
	assert_int_equal(sweep(f->s, "b", 30, NOW), 0);
	/* A project without a directory: nothing to do. */
	assert_int_equal(sweep(f->s, "nobody", 14, NOW), 0);
}

static void test_bad_arguments(void **state)
{
	store_fix *f = *state;
	err_t err = {0};
	uint32_t deleted = 5;
	assert_int_equal(store_retention_sweep(f->s, slice_cstr("default"), 0, NOW, &deleted, &err), -1);
	assert_int_equal(err.status, 400);
	assert_int_equal(deleted, 0);
	assert_int_equal(store_retention_sweep(f->s, slice_cstr(""), 14, NOW, NULL, &err), -1);
	assert_int_equal(err.status, 400);
	assert_int_equal(store_set_retention(f->s, slice_cstr("default"), -1, &err), -1);
	assert_int_equal(err.status, 400);
	/* the same bound as the config's retention settings */
	assert_int_equal(store_set_retention(f->s, slice_cstr("default"), 3651, &err), -1);
	assert_string_equal(err.msg, "store: retention must be 0 to 3650 days");
	assert_int_equal(store_set_retention(f->s, slice_cstr("default"), 3650, &err), 0);
}

static void test_views_clamped_to_retention(void **state)
{
	store_fix *f = *state;
	int64_t now = time_now_ns();
	write_ok(f->s, dated_batch("c", now - 15 * NS_PER_DAY, 100));
	write_ok(f->s, dated_batch("c", now - 13 * NS_PER_DAY, 10));
	write_ok(f->s, dated_batch("c", now - 3600 * NS_PER_SEC, 1));
	write_ok(f->s, dated_batch("d", now - 15 * NS_PER_DAY, 1000));
	uint32_t chunks;
	const int64_t from = now - 20 * NS_PER_DAY, until = now + NS_PER_DAY;
	assert_int_equal(store_retention_start(f->s, slice_cstr("c"), now), INT64_MIN);
	assert_int_equal(sum_totals(f->s, "c", from, until, &chunks), 111);

	err_t err = {0};
	assert_int_equal(store_set_retention(f->s, slice_cstr("c"), 14, &err), 0);
	assert_int_equal(store_retention_start(f->s, slice_cstr("c"), now), now - 14 * NS_PER_DAY);
	/* Still on disk (no sweep), never returned. */
	assert_int_equal(sum_totals(f->s, "c", from, until, &chunks), 11);
	assert_int_equal(chunks, 2);
	assert_int_equal(sum_totals(f->s, "c", from, now - 14 * NS_PER_DAY, &chunks), 0);
	/* The 15-day partition is not even listed when its whole day is older. */
	store_view_t *v = open_view(f->s, "c", from, until);
	assert_true(store_view_partitions(v) <= 3);
	store_view_close(v);
	/* Other projects keep theirs. */
	assert_int_equal(sum_totals(f->s, "d", from, until, &chunks), 1000);

	/* 0: back to the store's default (none here). */
	assert_int_equal(store_set_retention(f->s, slice_cstr("c"), 0, &err), 0);
	assert_int_equal(sum_totals(f->s, "c", from, until, &chunks), 111);
}

static void test_default_retention_from_config(void **state)
{
	char *dir = tmpdir_new();
	store_config_t cfg = {.dir = dir, .sync = 0, .retention_days = 14};
	err_t err = {0};
	store_t *s = store_open(&cfg, &err);
	assert_non_null(s);
	int64_t now = time_now_ns();
	write_ok(s, dated_batch("default", now - 15 * NS_PER_DAY, 100));
	write_ok(s, dated_batch("default", now - 60 * NS_PER_SEC, 1));
	uint32_t chunks;
	assert_int_equal(sum_totals(s, "default", 0, now + NS_PER_DAY, &chunks), 1);
	/* A project's own setting wins over the default. */
	assert_int_equal(store_set_retention(s, slice_cstr("default"), 30, &err), 0);
	assert_int_equal(sum_totals(s, "default", 0, now + NS_PER_DAY, &chunks), 101);
	store_close(s);
	tmpdir_free(dir);
}

typedef struct {
	char names[8][80];
	int n;
} name_list;

static void collect_name(slice_t project, void *ctx)
{
	name_list *l = ctx;
	assert_true(l->n < 8);
	snprintf(l->names[l->n++], sizeof l->names[0], "%.*s", (int)project.n, (const char *)project.p);
}

static void test_projects_list(void **state)
{
	store_fix *f = *state;
	name_list l = {0};
	err_t err = {0};
	assert_int_equal(store_projects(f->s, collect_name, &l, &err), 0);
	assert_int_equal(l.n, 0);
	write_ok(f->s, dated_batch("team_a/x", NOW, 1));
	write_ok(f->s, dated_batch("default", NOW, 1));
	write_ok(f->s, dated_batch("Zeta", NOW, 1));
	char path[512];
	/* Not projects: a file, a directory name no project encodes to, a non-canonical escape. */
	snprintf(path, sizeof path, "%s/stray", f->dir);
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fclose(fp);
	snprintf(path, sizeof path, "%s/bad_zz", f->dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof path, "%s/_41", f->dir);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(store_projects(f->s, collect_name, &l, &err), 0);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.names[0], "Zeta");
	assert_string_equal(l.names[1], "default");
	assert_string_equal(l.names[2], "team_a/x");
}

/* ---- sweeps while queries run ---- */

#define N_DAYS 10

typedef struct {
	store_t *s;
	volatile int stop;
	int iterations, bad;
} reader_ctx;

/* Reads every partition of "r" over and over: day k holds 2^k, and each
 * partition must read whole (it was open before its deletion) or empty
 * (deleted before the view read it), never fail or read in part. */
static void *reader_main(void *arg)
{
	reader_ctx *c = arg;
	while (!c->stop) {
		store_view_t *v;
		err_t err = {0};
		if (store_view_open(c->s, slice_cstr("r"), 0, NOW + NS_PER_DAY, &v, &err) != 0) {
			c->bad++;
			break;
		}
		for (uint32_t p = 0; p < store_view_partitions(v); p++) {
			int64_t t = part_total(v, p);
			c->bad += t < 0 || (t & (t - 1)) != 0;
		}
		store_view_close(v);
		c->iterations++;
	}
	return NULL;
}

static void test_sweeps_while_reading(void **state)
{
	store_fix *f = *state;
	for (int k = 0; k < N_DAYS; k++)
		write_ok(f->s, dated_batch("r", NOW - (N_DAYS - 1 - k) * NS_PER_DAY, 1LL << k));
	reader_ctx c = {.s = f->s};
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, reader_main, &c), 0);
	/* Sweep i (keep 1 day) moves the floor to the oldest day + i: one day goes each time. */
	for (int i = 1; i <= N_DAYS; i++) {
		usleep(20000);
		assert_int_equal(sweep(f->s, "r", 1, NOW + (i - N_DAYS + 2) * NS_PER_DAY), 1);
	}
	c.stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(c.bad, 0);
	assert_true(c.iterations > 0);
	uint32_t chunks;
	assert_int_equal(sum_totals(f->s, "r", 0, NOW + NS_PER_DAY, &chunks), 0);
}

/* ---- a sweep, then a crash ---- */

#define D15 (NOW - 15 * NS_PER_DAY) /* expired at NOW with keep 14 */
#define D13 (NOW - 13 * NS_PER_DAY) /* kept */

/* store_submit's callback in sweep_then_crash: n[0] counts the answers, n[1] the failed ones. */
static void count_done(void *ctx, const err_t *err)
{
	int *n = ctx;
	__atomic_add_fetch(&n[0], 1, __ATOMIC_SEQ_CST);
	if (err)
		__atomic_add_fetch(&n[1], 1, __ATOMIC_SEQ_CST);
}

/* The writer process of test_sweep_then_crash: batches to the expired day,
 * to two kept days and one to both, submitted without waiting (so the
 * sweep finds their partitions' transactions still open), only in the
 * log (the checkpointer's timer, 10 s, does not run in this short life:
 * only the sweep checkpoints); the sweep; two more groups to kept days,
 * which only the log holds; then _exit without store_close (no closing
 * checkpoint), as a crash. Any failure exits non-zero. */
static void sweep_then_crash(const char *dir, int round, int fd)
{
	(void)round;
	(void)fd;
	store_t *s = open_store(dir);
	int answered[2] = {0, 0}; /* all, failed */
	store_submit(s, dated_batch("default", D15, 1500), count_done, answered);
	store_submit(s, dated_batch("default", D13, 1300), count_done, answered);
	store_submit(s, dated_batch("default", NOW, 1), count_done, answered);
	/* One batch, two days: D13 + 2 s (13) and D15 + 2 s (15). */
	model_batch_t *b = dated_batch("default", D13 + 2 * NS_PER_SEC, 13);
	model_profile_t *p = test_profile(b, "cpu", "nanoseconds", D15 + 2 * NS_PER_SEC, "pod-2");
	model_sample_add(b, p, 0, 0, 15, 0);
	model_profile_finish(b, p);
	store_submit(s, b, count_done, answered);
	/* Answered: durable in the log. A while later (LOCAL_APPLY_DELAY_MS, 250 ms)
	 * the apply thread has written them in transactions it keeps open up to
	 * LOCAL_APPLY_TXN_MS (1 s): the sweep comes while they are (on a slow
	 * machine they may be committed by then, and the test is only weaker). */
	for (int i = 0; i < 5000 && __atomic_load_n(&answered[0], __ATOMIC_SEQ_CST) < 4; i++)
		usleep(1000);
	if (__atomic_load_n(&answered[0], __ATOMIC_SEQ_CST) != 4 || answered[1] != 0)
		_exit(2);
	usleep(400 * 1000);
	if (sweep(s, "default", 14, NOW) != 1)
		_exit(3);
	write_ok(s, dated_batch("default", D13 + NS_PER_SEC, 3));
	write_ok(s, dated_batch("default", NOW + NS_PER_SEC, 2));
	_exit(0);
}

/* The sum of default's chunk totals over the UTC day of t; *chunks = how many. */
static int64_t day_total(const store_fix *f, int64_t t, uint32_t *chunks)
{
	int64_t day = time_day(t) * NS_PER_DAY;
	return sum_totals(f->s, "default", day, day + NS_PER_DAY, chunks);
}

/* The expired day is absent (no file, nothing read over its day) and the
 * kept days hold exactly what was written to them. */
static void expect_after_sweep(const store_fix *f)
{
	uint32_t chunks;
	assert_int_equal(day_files(f, "default", D15), 0);
	assert_int_equal(day_total(f, D15, &chunks), 0);
	assert_int_equal(chunks, 0);
	assert_int_equal(day_total(f, D13, &chunks), 1300 + 13 + 3);
	assert_int_equal(chunks, 3);
	assert_int_equal(day_total(f, NOW, &chunks), 1 + 2);
	assert_int_equal(chunks, 2);
}

/* A sweep checkpoints the log before it deletes (local_retention.c), so
 * replaying the log at the next open cannot write the expired day again,
 * also when the process died without store_close (simulated: a child that
 * _exits; its page cache survives, as after kill -9, not a power loss).
 * After the restart the log replays exactly the two groups written after
 * the sweep, the expired day stays gone and the kept days are exact. The
 * floor that refused late writes to the deleted day is not kept across
 * a restart (store.h: "none after a restart until the first sweep"): a
 * late write to it is then accepted and makes its file again, which the
 * next sweep deletes, after which such writes are refused again. */
static void test_sweep_then_crash(void **state)
{
	(void)state;
	store_fix f = {.dir = tmpdir_new()};
	int rfd, status;
	pid_t pid = fork_writer(sweep_then_crash, f.dir, 0, &rfd);
	close(rfd);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(day_files(&f, "default", D15), 0);

	char log[1 << 14];
	int saved = stderr_to_file();
	f.s = open_store(f.dir);
	stderr_back(saved, log, sizeof log);
	expect_after_sweep(&f);
	if (!strstr(log, "msg=\"store log replayed\" groups=2 batches=2 dropped_bytes=0 why=\"clean\""))
		fail_msg("not the two groups after the sweep replayed:\n%s", log);

	/* No floor after the restart: a late write to the deleted day is taken. */
	write_ok(f.s, dated_batch("default", D15 + NS_PER_SEC, 7));
	assert_true(part_file_exists(&f, "default", D15, ""));
	uint32_t chunks;
	assert_int_equal(day_total(&f, D15, &chunks), 7);
	/* The next sweep deletes it again and sets the floor. */
	assert_int_equal(sweep(f.s, "default", 14, NOW), 1);
	err_t err = {0};
	assert_int_equal(store_write_sync(f.s, dated_batch("default", D15 + NS_PER_SEC, 8), &err), -1);
	assert_int_equal(err.status, 400);
	expect_after_sweep(&f);

	/* Closed and opened again: nothing to replay, the same answers. */
	store_close(f.s);
	saved = stderr_to_file();
	f.s = open_store(f.dir);
	stderr_back(saved, log, sizeof log);
	if (strstr(log, "store log replayed"))
		fail_msg("replayed after store_close:\n%s", log);
	expect_after_sweep(&f);
	store_close(f.s);
	tmpdir_free(f.dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_sweep_deletes_whole_expired_days, store_fix_setup,
	                                    store_fix_teardown),
	    cmocka_unit_test_setup_teardown(test_expiry_boundary, store_fix_setup, store_fix_teardown),
	    cmocka_unit_test_setup_teardown(test_projects_are_independent, store_fix_setup,
	                                    store_fix_teardown),
	    cmocka_unit_test_setup_teardown(test_bad_arguments, store_fix_setup, store_fix_teardown),
	    cmocka_unit_test_setup_teardown(test_views_clamped_to_retention, store_fix_setup,
	                                    store_fix_teardown),
	    cmocka_unit_test(test_default_retention_from_config),
	    cmocka_unit_test_setup_teardown(test_projects_list, store_fix_setup, store_fix_teardown),
	    cmocka_unit_test_setup_teardown(test_sweeps_while_reading, store_fix_setup, store_fix_teardown),
	    cmocka_unit_test(test_sweep_then_crash),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
