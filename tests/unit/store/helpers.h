/* Helpers shared by the store/local unit tests: temporary data directories,
 * a store fixture, batches built with the model API, reading a whole series
 * back, SQL on a partition file. */
#ifndef KILN_TESTS_STORE_HELPERS_H
#define KILN_TESTS_STORE_HELPERS_H

#include <ftw.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/timeutil.h"
#include "model/model.h"
#include "store/store.h"
#include "testutil.h"

#define DAY0 (19501LL * NS_PER_DAY) /* 2023-05-24 */

/* Decodes the hex string h into out (strlen(h) / 2 bytes); returns the count. */
static inline size_t hex_bytes(const char *h, uint8_t *out)
{
	size_t n = 0;
	for (; h[0] && h[1]; h += 2) {
		unsigned v;
		assert_int_equal(sscanf(h, "%2x", &v), 1);
		out[n++] = (uint8_t)v;
	}
	return n;
}

static inline char *tmpdir_new(void)
{
	char *d = strdup("/tmp/kiln-store-XXXXXX");
	assert_non_null(mkdtemp(d));
	return d;
}

static inline int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static inline void tmpdir_free(char *d)
{
	nftw(d, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(d);
}

/* A store in dir with fsync on (sync 1) or off (-1), sealing off. */
static inline store_t *open_store_sync(const char *dir, int sync)
{
	store_config_t cfg = {.dir = dir, .sync = sync, .seal_off = 1};
	err_t err = {0};
	store_t *s = store_open(&cfg, &err);
	if (!s)
		fail_msg("store_open: %s", err.msg);
	return s;
}

static inline store_t *open_store(const char *dir)
{
	return open_store_sync(dir, 1);
}

/* cmocka setup/teardown: *state is a store_fix with an open store in a fresh directory. */
typedef struct {
	char *dir;
	store_t *s;
} store_fix;

static inline int store_fix_setup(void **state)
{
	store_fix *f = calloc(1, sizeof *f);
	f->dir = tmpdir_new();
	f->s = open_store(f->dir);
	*state = f;
	return 0;
}

/* store_fix_setup with fsync off (store_config_t.sync -1), for tests of
 * which file exists when, or of many files (1,000 with fsync take minutes). */
static inline int store_fix_setup_nosync(void **state)
{
	store_fix *f = calloc(1, sizeof *f);
	f->dir = tmpdir_new();
	f->s = open_store_sync(f->dir, -1);
	*state = f;
	return 0;
}

static inline int store_fix_teardown(void **state)
{
	store_fix *f = *state;
	store_close(f->s);
	tmpdir_free(f->dir);
	free(f);
	return 0;
}

/* The first column of the first row of sql on the database at path. */
static inline int64_t sql_int(const char *path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	int64_t n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

static inline void sql_exec(const char *path, const char *sql)
{
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	char *msg = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("%s: %s", sql, msg);
	sqlite3_close(db);
}

static inline uint32_t test_frame(model_batch_t *b, const char *name)
{
	model_frame_t f = {0};
	f.name = slice_cstr(name);
	f.file = slice_cstr("main.go");
	f.binary = slice_cstr("app");
	f.kind = slice_cstr("go");
	return model_frame_intern(b, &f);
}

/* A stack written root first, frames separated by ';'. Returns its leaf node. */
static inline uint32_t test_stack(model_batch_t *b, const char *stack)
{
	char buf[512];
	snprintf(buf, sizeof buf, "%s", stack);
	uint32_t node = MODEL_NONE;
	char *save = NULL;
	for (char *tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save))
		node = model_node_intern(b, node, test_frame(b, tok));
	return node;
}

static inline model_profile_t *test_profile(model_batch_t *b, const char *type, const char *unit,
                                            int64_t t_ns, const char *pod)
{
	model_profile_t *p = model_profile_add(b);
	model_profile_set_service(b, p, slice_cstr("svc"));
	model_profile_set_type(b, p, slice_cstr(type), slice_cstr(unit), slice_cstr("cpu"),
	                       slice_cstr("nanoseconds"), 10000000);
	model_profile_add_label(b, p, slice_cstr("pod"), slice_cstr(pod));
	model_profile_add_label(b, p, slice_cstr("namespace"), slice_cstr("prod"));
	p->time_ns = t_ns;
	p->duration_ns = 10 * NS_PER_SEC;
	return p;
}

/* One cpu profile at t_ns: stacks main;a;b (=v), main;a;c (=2v), main;d (=3v). */
static inline model_batch_t *test_batch(int64_t t_ns, int64_t v)
{
	model_batch_t *b = model_batch_new(slice_cstr("default"));
	uint32_t s1 = test_stack(b, "main;a;b"), s2 = test_stack(b, "main;a;c"), s3 = test_stack(b, "main;d");
	model_profile_t *p = test_profile(b, "cpu", "nanoseconds", t_ns, "pod-1");
	model_sample_add(b, p, s1, 0, v, 0);
	model_sample_add(b, p, s2, 0, 2 * v, 0);
	model_sample_add(b, p, s3, 0, 3 * v, 0);
	model_profile_finish(b, p);
	return b;
}

/* Forks a child that runs fn(dir, round, fd) with fd the write end of a
 * pipe (fn never returns: it is killed); returns its pid and the read end in
 * *rfd. The crash tests' writer processes. */
static inline pid_t fork_writer(void (*fn)(const char *dir, int round, int fd), const char *dir, int round,
                                int *rfd)
{
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		fn(dir, round, fds[1]);
		_exit(1);
	}
	close(fds[1]);
	*rfd = fds[0];
	return pid;
}

/* A batch of project with one profile of test_batch's series, stacks and
 * values (v, 2v, 3v: total 6v) at each of the n times t_ns[0..n). */
static inline model_batch_t *test_batch_at(const char *project, const int64_t *t_ns, int n, int64_t v)
{
	model_batch_t *b = model_batch_new(slice_cstr(project));
	uint32_t s1 = test_stack(b, "main;a;b"), s2 = test_stack(b, "main;a;c"), s3 = test_stack(b, "main;d");
	for (int i = 0; i < n; i++) {
		model_profile_t *p = test_profile(b, "cpu", "nanoseconds", t_ns[i], "pod-1");
		model_sample_add(b, p, s1, 0, v, 0);
		model_sample_add(b, p, s2, 0, 2 * v, 0);
		model_sample_add(b, p, s3, 0, 3 * v, 0);
		model_profile_finish(b, p);
	}
	return b;
}

static inline void write_ok(store_t *s, model_batch_t *b)
{
	err_t err = {0};
	if (store_write_sync(s, b, &err) != 0)
		fail_msg("store_write_sync: %d %s", err.status, err.msg);
}

/* Sum of the totals of every chunk of every series of the project over [from, until). */
/* Calls fn with the heads of every series of each partition of project's
 * view [from, until) (in the view's order; fn may read entries). */
static inline void each_heads(store_t *s, const char *project, int64_t from, int64_t until,
                              void (*fn)(store_view_t *v, uint32_t p, const store_chunk_head_t *h, uint32_t n,
                                         void *ctx),
                              void *ctx)
{
	store_view_t *v;
	err_t err = {0};
	if (store_view_open(s, slice_cstr(project), from, until, &v, &err) != 0)
		fail_msg("view: %s", err.msg);
	for (uint32_t p = 0; p < store_view_partitions(v); p++) {
		const store_series_t *se;
		uint32_t n_se, n_h;
		assert_int_equal(store_view_series(v, p, &se, &n_se, &err), 0);
		uint32_t ids[64];
		assert_true(n_se <= 64);
		for (uint32_t i = 0; i < n_se; i++)
			ids[i] = se[i].local;
		const store_chunk_head_t *h;
		assert_int_equal(store_view_heads(v, p, ids, n_se, &h, &n_h, &err), 0);
		fn(v, p, h, n_h, ctx);
	}
	store_view_close(v);
}

typedef struct {
	int64_t sum;
	uint32_t chunks;
} test_totals_t;

static inline void add_totals(store_view_t *v, uint32_t p, const store_chunk_head_t *h, uint32_t n, void *ctx)
{
	(void)v, (void)p;
	test_totals_t *t = ctx;
	for (uint32_t i = 0; i < n; i++)
		t->sum += h[i].total;
	t->chunks += n;
}

/* The sum of the chunk totals of project in [from, until); *chunks = how many chunks. */
static inline int64_t sum_totals(store_t *s, const char *project, int64_t from, int64_t until,
                                 uint32_t *chunks)
{
	test_totals_t t = {0, 0};
	each_heads(s, project, from, until, add_totals, &t);
	*chunks = t.chunks;
	return t.sum;
}

/* Sends stderr (the log) to a temporary file until stderr_back, which puts
 * the saved fd back and reads what was logged into out. */
static inline int stderr_to_file(void)
{
	fflush(stderr);
	int saved = dup(2);
	FILE *tmp = tmpfile();
	assert_non_null(tmp);
	dup2(fileno(tmp), 2);
	fclose(tmp); /* fd 2 keeps the file */
	return saved;
}

static inline void stderr_back(int saved, char *out, size_t cap)
{
	fflush(stderr);
	ssize_t n = pread(2, out, cap - 1, 0);
	out[n > 0 ? n : 0] = 0;
	dup2(saved, 2);
	close(saved);
}

#endif
