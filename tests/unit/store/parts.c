/* The embedded writer with many open partitions (docs/STORE.md, plan step 6):
 * 1,000 projects stay open in the LRU and are written and read back, and the
 * id caches are evicted per least-recently-used partition under a small
 * budget, the evicted partitions going on through their SELECT lookups. */
#include <dirent.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "helpers.h"
#include "store/local.h"

#define N_PROJECTS 1000

/* test_batch (stacks main;a;b = v, main;a;c = 2v, main;d = 3v) in project name. */
static model_batch_t *project_batch(const char *name, int64_t t_ns, int64_t v)
{
	model_batch_t *b = test_batch(t_ns, v);
	b->project = arena_slice(b->arena, slice_cstr(name));
	return b;
}

static local_part_t *find_part(store_t *s, const char *proj)
{
	for (uint32_t i = 0; i < s->n_parts; i++)
		if (!strcmp(s->parts[i]->proj, proj))
			return s->parts[i];
	return NULL;
}

static uint32_t count_fds(void)
{
	uint32_t n = 0;
	DIR *d = opendir("/proc/self/fd");
	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "VmRSS: %ld", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

/* The answers of one round: each posts sem; failures are counted. */
typedef struct {
	sem_t sem;
	atomic_int failed;
} round_t;

static void round_done(void *ctx, const err_t *err)
{
	round_t *r = ctx;
	if (err)
		atomic_fetch_add(&r->failed, 1);
	sem_post(&r->sem);
}

/* One batch to each project, all queued at once (groups of up to 256
 * partitions), then waits for every answer. */
static void write_round(store_t *s, int64_t t_ns, int64_t v0)
{
	round_t r = {.failed = 0};
	assert_int_equal(sem_init(&r.sem, 0, 0), 0);
	for (int i = 0; i < N_PROJECTS; i++) {
		char name[16];
		snprintf(name, sizeof name, "p%d", i);
		store_submit(s, project_batch(name, t_ns, v0 + i), round_done, &r);
	}
	for (int i = 0; i < N_PROJECTS; i++)
		while (sem_wait(&r.sem) != 0)
			;
	sem_destroy(&r.sem);
	assert_int_equal(atomic_load(&r.failed), 0);
	local_apply_wait(s); /* answered once in the log: the partitions are written after */
}

/* write_ok, then the apply thread's pass is over (the LRU trimmed after it). */
static void write_applied(store_t *s, model_batch_t *b)
{
	write_ok(s, b);
	local_apply_wait(s);
}

static void test_thousand_projects_stay_open(void **state)
{
	store_fix *f = *state;
	store_t *s = f->s;
	if (s->open_max < N_PROJECTS)
		skip(); /* RLIMIT_NOFILE's hard limit is below 4 × 1,024 here */
	for (int i = 0; i < N_PROJECTS;
	     i++) { /* the directories: not what is tested, and each mkdir fsyncs DIR */
		char d[512];
		snprintf(d, sizeof d, "%s/p%d", f->dir, i);
		assert_int_equal(mkdir(d, 0755), 0);
	}
	/* The store log's segment is opened by the first write: made before counting. */
	assert_int_equal(store_write_sync(s, test_batch(DAY0, 1), &(err_t){0}), 0);
	local_apply_wait(s);
	local_parts_close_all(s);
	s->part_opens = 0;
	uint32_t fds0 = count_fds();
	long rss0 = rss_kib();

	write_round(s, DAY0 + 10 * NS_PER_SEC, 1);
	assert_int_equal(s->n_parts, N_PROJECTS);
	assert_int_equal(s->part_opens, N_PROJECTS);
	/* .db, -wal, -shm each, and at most one more: a checkpointer connection
	 * closed while the writer's holds the file's lock leaves its descriptor
	 * to SQLite, which reuses it at the next open of that file. */
	uint32_t fds = count_fds() - fds0;
	assert_in_range(fds, 3 * N_PROJECTS, 4 * N_PROJECTS);

	write_round(s, DAY0 + 20 * NS_PER_SEC, 1000);
	assert_int_equal(s->n_parts, N_PROJECTS);
	assert_int_equal(s->part_opens, N_PROJECTS); /* none closed and reopened */
	/* The cost of an open partition, for docs/PERFORMANCE.md (not asserted:
	 * it depends on the SQLite build). Freed batches are given back first. */
	malloc_trim(0);
	long rss = rss_kib() - rss0;
	printf("# %d open partitions: %ld KiB more RSS, %ld KiB each; SQLite %lld KiB each\n", N_PROJECTS,
	       rss, rss / N_PROJECTS, (long long)sqlite3_memory_used() / 1024 / N_PROJECTS);

	for (int i = 0; i < N_PROJECTS; i++) {
		char name[16];
		snprintf(name, sizeof name, "p%d", i);
		uint32_t chunks;
		assert_int_equal(sum_totals(s, name, DAY0, DAY0 + NS_PER_DAY, &chunks),
		                 6 * (1 + i) + 6 * (1000 + i));
		assert_int_equal(chunks, 2);
	}
}

/* In a child (the limit is the process's): soft 1,024 and hard 4,096 open
 * files. The store raises the soft limit to 4,096 and keeps (4,096 − 1,024) / 4
 * partitions open; with a hard limit of 1,024 it keeps the 8 of old. */
static void test_open_files_size_the_lru(void **state)
{
	(void)state;
	static const rlim_t hard[2] = {4096, 1024};
	static const uint32_t want[2] = {768, LIMIT_STORE_OPEN_PARTS_MIN};
	for (int k = 0; k < 2; k++) {
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			struct rlimit rl = {1024, hard[k]};
			if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
				_exit(10);
			char *dir = tmpdir_new();
			store_t *s = open_store(dir);
			int rc = s->open_max == want[k] ? 0 : 11;
			if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur != hard[k])
				rc = 12;
			store_close(s);
			tmpdir_free(dir);
			_exit(rc);
		}
		int st;
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
}

/* Rows of table in project proj's DAY0 partition. */
static int64_t rows(const char *dir, const char *proj, const char *table)
{
	char path[512], sql[64];
	snprintf(path, sizeof path, "%s/%s/2023-05-24.db", dir, proj);
	snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
	return sql_int(path, sql);
}

/* Format 2's stack nodes of proj's partition: the counts of its node runs. */
static int64_t node_rows(const char *dir, const char *proj)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s/2023-05-24.db", dir, proj);
	return sql_int(path, "SELECT coalesce(sum(n), 0) FROM node_runs");
}

static size_t cached(const local_part_t *p)
{
	size_t n = 0;
	for (int t = 0; t < LT_COUNT; t++)
		n += p->cache[t].len;
	return n;
}

static int all_complete(const local_part_t *p)
{
	int n = 0;
	for (int t = 0; t < LT_COUNT; t++)
		n += p->complete[t];
	return n == LT_COUNT;
}

/* Format 1 (files written before format 2, written on as format 1): ids
 * not cached are found by SELECT through the tables' UNIQUE indexes. */
static void test_cache_evicts_least_recent(void **state)
{
	store_fix *f = *state;
	store_t *s = f->s;
	s->part_format = 1;
	/* Each project's batch caches 11 ids: 5 frames, 5 nodes, 1 series
	 * (the empty attribute set has no row). Budget 30: two fit, a third
	 * passes it. */
	s->cache_budget = 30;
	write_applied(s, project_batch("a", DAY0, 1));
	write_applied(s, project_batch("b", DAY0, 2));
	assert_int_equal(s->cache_entries, 22);
	/* c's 9th id reaches 30: a, the least recently used, gives its 11 up. */
	write_applied(s, project_batch("c", DAY0, 3));
	local_part_t *a = find_part(s, "a"), *b = find_part(s, "b"), *c = find_part(s, "c");
	assert_int_equal(cached(a), 0);
	assert_false(a->complete[LT_NODE]);
	assert_int_equal(cached(b), 11);
	assert_true(all_complete(b));
	assert_int_equal(cached(c), 11);
	assert_true(all_complete(c));
	assert_int_equal(s->cache_entries, 22);

	/* a without caches: its ids are found by SELECT (not cached), the new
	 * frame and node of main;e inserted once and cached, and so is a second
	 * series (a profile finished after project_batch renamed the batch: its
	 * id hashes "a", not "default"). */
	model_batch_t *more = project_batch("a", DAY0 + NS_PER_SEC, 10);
	model_profile_t *pr = test_profile(more, "cpu", "nanoseconds", DAY0 + NS_PER_SEC, "pod-1");
	model_sample_add(more, pr, test_stack(more, "main;e"), 0, 7, 0);
	model_profile_finish(more, pr);
	write_applied(s, more);
	assert_int_equal(cached(a), 3);
	assert_int_equal(s->cache_entries, 25);
	assert_int_equal(rows(f->dir, "a", "frames"), 6);
	assert_int_equal(rows(f->dir, "a", "nodes"), 6);
	assert_int_equal(rows(f->dir, "a", "series"), 2);
	uint32_t chunks;
	assert_int_equal(sum_totals(s, "a", DAY0, DAY0 + NS_PER_DAY, &chunks), 6 + 60 + 7);
	assert_int_equal(chunks, 3);

	/* Two partitions open at most: d's 6th id reaches 30 and b (least
	 * recent with a cache) gives its 11 up; after the group b and c close. */
	s->open_max = 2;
	write_applied(s, project_batch("d", DAY0, 4));
	assert_int_equal(s->n_parts, 2);
	assert_null(find_part(s, "b"));
	assert_null(find_part(s, "c"));
	assert_non_null(a = find_part(s, "a"));
	local_part_t *d = find_part(s, "d");
	assert_non_null(d);
	assert_int_equal(cached(a), 3);
	assert_int_equal(cached(d), 11);
	assert_int_equal(s->cache_entries, 14);

	/* Loading makes room the same way: budget 20, b reopened loads 5 frames
	 * (19), then its 5 nodes need 15 or less: a (3) and d (11) give theirs up. */
	s->cache_budget = 20;
	uint64_t opens = s->part_opens;
	write_applied(s, project_batch("b", DAY0 + NS_PER_SEC, 5));
	assert_int_equal(s->part_opens, opens + 1);
	b = find_part(s, "b");
	assert_non_null(b);
	assert_true(all_complete(b));
	assert_int_equal(cached(b), 11);
	assert_int_equal(cached(d), 0);
	assert_false(d->complete[LT_FRAME]);
	assert_int_equal(s->cache_entries, 11);
	assert_null(find_part(s, "a")); /* closed by the trim: least recent */
	assert_int_equal(sum_totals(s, "b", DAY0, DAY0 + NS_PER_DAY, &chunks), 12 + 30);
	assert_int_equal(chunks, 2);
	assert_int_equal(rows(f->dir, "b", "nodes"), 5);

	/* d goes on through SELECT: same ids, no new rows. */
	write_applied(s, project_batch("d", DAY0 + NS_PER_SEC, 6));
	assert_int_equal(rows(f->dir, "d", "frames"), 5);
	assert_int_equal(rows(f->dir, "d", "nodes"), 5);
	assert_int_equal(sum_totals(s, "d", DAY0, DAY0 + NS_PER_DAY, &chunks), 24 + 36);
	assert_int_equal(chunks, 2);
}

/* Stack nodes of format 2 (node_runs: no index on their ids): a partition
 * whose node map was evicted loads it whole before its next write, and one
 * whose map alone passes the budget keeps it while it writes. */
static void test_cache_node_maps(void **state)
{
	store_fix *f = *state;
	store_t *s = f->s;
	s->cache_budget = 30;
	write_applied(s, project_batch("a", DAY0, 1));
	write_applied(s, project_batch("b", DAY0, 2));
	write_applied(s, project_batch("c", DAY0, 3));
	local_part_t *a = find_part(s, "a");
	assert_int_equal(cached(a), 0);
	assert_false(a->complete[LT_NODE]);
	model_batch_t *more = project_batch("a", DAY0 + NS_PER_SEC, 10);
	model_profile_t *pr = test_profile(more, "cpu", "nanoseconds", DAY0 + NS_PER_SEC, "pod-1");
	model_sample_add(more, pr, test_stack(more, "main;e"), 0, 7, 0);
	model_profile_finish(more, pr);
	write_applied(s, more);
	assert_true(a->complete[LT_NODE]);
	assert_int_equal(a->cache[LT_NODE].len, 6); /* 5 loaded, main;e's e added */
	assert_int_equal(rows(f->dir, "a", "frames"), 6);
	assert_int_equal(node_rows(f->dir, "a"), 6);
	uint32_t chunks;
	assert_int_equal(sum_totals(s, "a", DAY0, DAY0 + NS_PER_DAY, &chunks), 6 + 60 + 7);
	assert_int_equal(chunks, 3);

	/* Budget 3: d's 5 nodes alone pass it; its frames and series go, its
	 * nodes stay, and the same stacks again add no node. */
	s->cache_budget = 3;
	write_applied(s, project_batch("d", DAY0, 4));
	local_part_t *d = find_part(s, "d");
	assert_true(d->complete[LT_NODE]);
	assert_int_equal(d->cache[LT_NODE].len, 5);
	write_applied(s, project_batch("d", DAY0 + NS_PER_SEC, 6));
	assert_int_equal(node_rows(f->dir, "d"), 5);
	assert_int_equal(rows(f->dir, "d", "frames"), 5);
	assert_int_equal(sum_totals(s, "d", DAY0, DAY0 + NS_PER_DAY, &chunks), 24 + 36);
	assert_int_equal(chunks, 2);
	/* Reopened, the map is loaded from the runs and finds the same ids. */
	store_close(f->s);
	f->s = s = open_store(f->dir);
	write_applied(s, project_batch("a", DAY0 + 2 * NS_PER_SEC, 1));
	assert_int_equal(node_rows(f->dir, "a"), 6);
	assert_int_equal(rows(f->dir, "a", "node_runs"), 2); /* one per write that added nodes */
}

static int day_file_exists(const store_fix *f, const char *proj, const char *day)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s/%s.db", f->dir, proj, day);
	return access(path, F_OK) == 0;
}

/* A project's next day file is made ahead (LOCAL_DAY_AHEAD_S): by a write
 * dated in the last seconds of its day while the clock is there too; not by
 * one earlier in the day, nor by a late write of an old day, nor when half
 * the LRU is open. The next day's first write then finds its partition open. */
static void test_next_day_made_ahead(void **state)
{
	store_fix *f = *state;
	store_t *s = f->s;
	int64_t eve = DAY0 + NS_PER_DAY - (int64_t)LOCAL_DAY_AHEAD_S * NS_PER_SEC;
	s->ahead_now_ns = eve + 60 * NS_PER_SEC;
	write_applied(s, project_batch("a", eve - NS_PER_SEC, 1));
	assert_false(day_file_exists(f, "a", "2023-05-25"));
	write_applied(s, project_batch("a", eve + 30 * NS_PER_SEC, 2));
	assert_true(day_file_exists(f, "a", "2023-05-25"));
	assert_int_equal(s->part_opens, 2);
	write_applied(s, project_batch("a", DAY0 + NS_PER_DAY + NS_PER_SEC, 3));
	assert_int_equal(s->part_opens, 2); /* opened ahead */

	/* A push dated in the eve but the clock a day later: a late write, nothing made. */
	s->ahead_now_ns = DAY0 + NS_PER_DAY + 60 * NS_PER_SEC;
	write_applied(s, project_batch("b", eve + 30 * NS_PER_SEC, 4));
	assert_false(day_file_exists(f, "b", "2023-05-25"));
	/* The clock before the eve (a push dated ahead of it): nothing made yet. */
	s->ahead_now_ns = eve - 60 * NS_PER_SEC;
	write_applied(s, project_batch("c", eve + 30 * NS_PER_SEC, 5));
	assert_false(day_file_exists(f, "c", "2023-05-25"));
	s->ahead_now_ns = eve;
	write_applied(s, project_batch("c", eve + 31 * NS_PER_SEC, 6));
	assert_true(day_file_exists(f, "c", "2023-05-25"));
	/* A batch whose first profile is before the eve and a later one in it. */
	const int64_t run[2] = {eve - NS_PER_SEC, eve + 32 * NS_PER_SEC};
	write_applied(s, test_batch_at("e", run, 2, 8));
	assert_true(day_file_exists(f, "e", "2023-05-25"));
	/* Once per partition: with tomorrow's file closed again (the LRU), a
	 * later write of today's eve does not open it a second time. */
	uint64_t opens = s->part_opens;
	write_applied(s, project_batch("f", eve + 30 * NS_PER_SEC, 9));
	assert_true(day_file_exists(f, "f", "2023-05-25"));
	assert_int_equal(s->part_opens, opens + 2);
	local_part_t *tomorrow = NULL;
	for (uint32_t i = 0; i < s->n_parts; i++)
		if (!strcmp(s->parts[i]->proj, "f") && s->parts[i]->day == DAY0 / NS_PER_DAY + 1)
			tomorrow = s->parts[i];
	assert_non_null(tomorrow);
	assert_false(tomorrow->in_txn);
	/* The apply thread is idle (write_applied waited for it, and no
	 * transaction is left open): the LRU can be trimmed from here. */
	tomorrow->last_use = 0; /* the least recently used: the one a trim by one closes */
	local_parts_trim(s, s->n_parts - 1);
	for (uint32_t i = 0; i < s->n_parts; i++)
		assert_false(!strcmp(s->parts[i]->proj, "f") && s->parts[i]->day == DAY0 / NS_PER_DAY + 1);
	write_applied(s, project_batch("f", eve + 40 * NS_PER_SEC, 10));
	assert_int_equal(s->part_opens, opens + 2);
	/* Half the LRU open already: nothing opened ahead, which would close today's files. */
	s->open_max = 2 * (s->n_parts + 1);
	write_applied(s, project_batch("d", eve + 30 * NS_PER_SEC, 7));
	assert_false(day_file_exists(f, "d", "2023-05-25"));

	uint32_t chunks;
	assert_int_equal(sum_totals(s, "a", DAY0, DAY0 + NS_PER_DAY, &chunks), 6 * 3);
	assert_int_equal(sum_totals(s, "a", DAY0 + NS_PER_DAY, DAY0 + 2 * NS_PER_DAY, &chunks), 6 * 3);
	assert_int_equal(chunks, 1);
	assert_int_equal(sum_totals(s, "c", DAY0 + NS_PER_DAY, DAY0 + 2 * NS_PER_DAY, &chunks), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_open_files_size_the_lru),
	    cmocka_unit_test_setup_teardown(test_thousand_projects_stay_open, store_fix_setup_nosync,
	                                    store_fix_teardown),
	    cmocka_unit_test_setup_teardown(test_cache_node_maps, store_fix_setup, store_fix_teardown),
	    cmocka_unit_test_setup_teardown(test_cache_evicts_least_recent, store_fix_setup,
	                                    store_fix_teardown),
	    cmocka_unit_test_setup_teardown(test_next_day_made_ahead, store_fix_setup, store_fix_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
