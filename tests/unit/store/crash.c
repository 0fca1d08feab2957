/* Crash safety of store/local: a child process writes with store_write_sync
 * and reports each acknowledged batch on a pipe; the parent kill -9s it at a
 * random moment, reopens the store and checks that every acknowledged batch
 * is there and that every chunk still decodes. Many rounds on one directory. */
#include <signal.h>
#include <unistd.h>
#include <sys/wait.h>
#include <time.h>

#include "helpers.h"

#define ROUNDS 24
#define SPACING (NS_PER_SEC / 1000) /* one batch per millisecond of profile time */

static int64_t batch_time(int round, int i)
{
	return DAY0 + ((int64_t)round * 1000000 + i) * SPACING;
}

static void child(const char *dir, int round, int fd)
{
	store_t *s = open_store(dir);
	for (int i = 0;; i++) {
		err_t err = {0};
		if (store_write_sync(s, test_batch(batch_time(round, i), 1 + i % 7), &err) != 0)
			_exit(3);
		if (write(fd, &i, sizeof i) != sizeof i)
			_exit(4);
	}
}

/* Every chunk of the day, decoded; marks which batches of round r are present. */
static void collect(store_t *s, int round, unsigned char *present, int max)
{
	store_view_t *v;
	err_t err = {0};
	if (store_view_open(s, slice_cstr("default"), DAY0, DAY0 + NS_PER_DAY, &v, &err) != 0)
		fail_msg("view: %s", err.msg);
	/* A child killed before its first commit leaves no partition or no series. */
	const store_series_t *se;
	uint32_t n_se = 0, n_h;
	if (store_view_partitions(v) == 1)
		assert_int_equal(store_view_series(v, 0, &se, &n_se, &err), 0);
	if (n_se == 0) {
		store_view_close(v);
		return;
	}
	assert_int_equal(n_se, 1);
	const store_chunk_head_t *h;
	assert_int_equal(store_view_heads(v, 0, &se[0].local, 1, &h, &n_h, &err), 0);
	for (uint32_t k = 0; k < n_h; k++) {
		const store_entry_t *e;
		uint32_t n_e;
		store_chunk_head_t head = h[k];
		if (store_view_entries(v, 0, &head, &e, &n_e, &err) != 0)
			fail_msg("entries: %s", err.msg);
		assert_int_equal(n_e, 3);
		int64_t off = head.t_ns - batch_time(round, 0);
		if (off < 0 || off % SPACING)
			continue;
		int64_t i = off / SPACING;
		if (i < max) {
			assert_int_equal(head.total, 6 * (1 + i % 7));
			present[i] = 1;
		}
	}
	store_view_close(v);
}

static void test_kill_during_ingest(void **state)
{
	(void)state;
	char *dir = tmpdir_new();
	srand((unsigned)time(NULL));
	int total_acked = 0;
	for (int round = 0; round < ROUNDS; round++) {
		int fd;
		pid_t pid = fork_writer(child, dir, round, &fd);
		usleep(20000 + (useconds_t)(rand() % 180000));
		kill(pid, SIGKILL);
		int status;
		waitpid(pid, &status, 0);
		assert_true(WIFSIGNALED(status));
		int acked = -1, i;
		while (read(fd, &i, sizeof i) == sizeof i) {
			assert_int_equal(i, acked + 1);
			acked = i;
		}
		close(fd);
		total_acked += acked + 1;

		int max = acked + 64;
		unsigned char *present = calloc((size_t)max, 1);
		store_t *s = open_store(dir);
		collect(s, round, present, max);
		for (int k = 0; k <= acked; k++)
			if (!present[k])
				fail_msg("round %d: acknowledged batch %d of %d is missing", round, k,
				         acked + 1);
		/* The store still takes writes after the crash. */
		write_ok(s, test_batch(batch_time(round, 999999), 1));
		store_close(s);
		free(present);
	}
	print_message("crash: %d rounds, %d acknowledged batches, all present\n", ROUNDS, total_acked);
	assert_true(total_acked > 0);
	tmpdir_free(dir);
}

/* Writes one batch to a new project's new day, reports it acknowledged and
 * waits to be killed: no checkpoint has synced the partition file since. */
static void child_fresh(const char *dir, int round, int fd)
{
	store_t *s = open_store(dir);
	int64_t t = DAY0 + round;
	err_t err = {0};
	if (store_write_sync(s, test_batch_at("fresh", &t, 1, 5), &err) != 0)
		_exit(3);
	if (write(fd, &round, sizeof round) != sizeof round)
		_exit(4);
	pause();
}

/* A partition file is made without an fsync (the log holds its rows until
 * the checkpointer syncs it). What a power cut can leave of it: nothing of
 * its bytes (an empty file) or no name at all; in both cases the store
 * starts, makes the file again and replay puts the acknowledged batch back. */
static void test_fresh_partition_lost(void **state)
{
	(void)state;
	for (int how = 0; how < 2; how++) {
		char *dir = tmpdir_new();
		int fd;
		pid_t pid = fork_writer(child_fresh, dir, how, &fd);
		int got;
		assert_int_equal(read(fd, &got, sizeof got), (ssize_t)sizeof got);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(fd);
		char path[4200], side[4300];
		snprintf(path, sizeof path, "%s/fresh/2023-05-24.db", dir);
		assert_int_equal(access(path, F_OK), 0);
		for (int k = 0; k < 2; k++) {
			snprintf(side, sizeof side, "%s%s", path, k ? "-shm" : "-wal");
			unlink(side);
		}
		if (how == 0)
			assert_int_equal(truncate(path, 0), 0);
		else
			assert_int_equal(unlink(path), 0);
		store_t *s = open_store(dir);
		uint32_t chunks;
		assert_int_equal(sum_totals(s, "fresh", DAY0, DAY0 + NS_PER_DAY, &chunks), 30);
		assert_int_equal(chunks, 1);
		assert_int_equal(sql_int(path, "SELECT count(*) FROM chunks"), 1);
		store_close(s);
		tmpdir_free(dir);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kill_during_ingest),
	    cmocka_unit_test(test_fresh_partition_lost),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
