/* Crash safety of grouped writes (issue 15; STORE: Writing, and STORE: Next
 * version of the embedded engine, "How a 200 stays durable"), through the
 * public store API only, so it holds for the engine of today and for the one
 * on the write-ahead log. A child process opens the store and writes from
 * several threads at once (store_write_sync, and bursts of store_submit), so
 * that the writer forms groups, for 20 projects over two UTC days (profile
 * times either side of one midnight; a third of the batches have a profile
 * on each side), and reports each acknowledged batch on a pipe. The parent
 * kill -9s it at a random moment, reopens the store and checks:
 *  - every acknowledged batch is there, whole, exactly once;
 *  - no batch has a part stored twice, every chunk decodes to the values its
 *    batch was given, and no chunk is one that was never written;
 *  - what earlier rounds left is still exactly there (many rounds, one
 *    directory);
 *  - no partition is damaged.
 * A batch that was never acknowledged may be there or not, but whole: the
 * engine writes a group as one record of its log (DATA/_wal), so no kill
 * leaves half of one (the "known window" of the engine before the log did).
 * KILN_CRASH_SEED=N repeats a run's random delays. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "helpers.h"
#include "store/local_wal.h"

#define ROUNDS 30
#define PROJECTS 20
#define SYNC_THREADS 6  /* threads calling store_write_sync */
#define BURST_THREADS 2 /* threads calling store_submit BURST times, then waiting for the callbacks */
#define BURST 8
#define MAX_IDS (1 << 16) /* batch ids per round; a child stops there */
#define SPACING (NS_PER_SEC / 1000)
#define MIDNIGHT (DAY0 + NS_PER_DAY) /* the two days are [DAY0, MIDNIGHT) and [MIDNIGHT, +1 day) */
#define MAX_DELAY_MS 300
#define PROGRESS_WAIT_MS 1500 /* the longest an odd round waits for its acknowledgements */

/* Batch id of a round → its project, the days it has a profile on (bit 0:
 * the day before midnight, bit 1: the day after) and its value. k is unique
 * over the whole run: round * MAX_IDS + id. */
static int project_of(uint32_t id)
{
	return (int)(id % PROJECTS);
}

static unsigned parts_of(uint32_t id)
{
	return id % 3 == 0 ? 3u : id % 3 == 1 ? 1u : 2u;
}

static int64_t value_of(int64_t k)
{
	return 1 + k % 1000;
}

static int64_t part_time(int64_t k, int part)
{
	return part == 0 ? MIDNIGHT - (1 + k) * SPACING : MIDNIGHT + k * SPACING;
}

static void project_name(int p, char *out, size_t n)
{
	snprintf(out, n, "crash-p%02d", p);
}

static model_batch_t *batch_of(int round, uint32_t id)
{
	int64_t k = (int64_t)round * MAX_IDS + id, t[2];
	int n = 0;
	for (int part = 0; part < 2; part++)
		if (parts_of(id) & (1u << part))
			t[n++] = part_time(k, part);
	char name[32];
	project_name(project_of(id), name, sizeof name);
	return test_batch_at(name, t, n, value_of(k));
}

/* ---- The child ---------------------------------------------------------- */

typedef struct {
	store_t *s;
	int round, fd;
	atomic_uint next;
	pthread_mutex_t mu;
	pthread_cond_t cv;
} crash_child;

static uint32_t take_id(crash_child *c)
{
	uint32_t id = atomic_fetch_add(&c->next, 1);
	while (id >= MAX_IDS)
		pause(); /* enough for a round: wait for the kill */
	return id;
}

/* One 4-byte write: atomic on a pipe, so threads need no lock. */
static void report(crash_child *c, uint32_t id)
{
	if (write(c->fd, &id, sizeof id) != (ssize_t)sizeof id)
		_exit(4);
}

static void *sync_main(void *arg)
{
	crash_child *c = arg;
	for (;;) {
		uint32_t id = take_id(c);
		err_t err = {0};
		if (store_write_sync(c->s, batch_of(c->round, id), &err) != 0)
			_exit(3);
		report(c, id);
	}
	return NULL;
}

typedef struct {
	crash_child *c;
	uint32_t id;
	int *pending;
} crash_job;

/* On the writer thread: a refusal is a failure of the test (exit 3). */
static void burst_done(void *ctx, const err_t *err)
{
	crash_job *j = ctx;
	if (err)
		_exit(3);
	report(j->c, j->id);
	pthread_mutex_lock(&j->c->mu);
	if (--*j->pending == 0)
		pthread_cond_broadcast(&j->c->cv);
	pthread_mutex_unlock(&j->c->mu);
}

static void *burst_main(void *arg)
{
	crash_child *c = arg;
	crash_job jobs[BURST];
	int pending;
	for (;;) {
		pending = BURST;
		for (int i = 0; i < BURST; i++) {
			jobs[i] = (crash_job){.c = c, .id = take_id(c), .pending = &pending};
			store_submit(c->s, batch_of(c->round, jobs[i].id), burst_done, &jobs[i]);
		}
		pthread_mutex_lock(&c->mu);
		while (pending > 0)
			pthread_cond_wait(&c->cv, &c->mu);
		pthread_mutex_unlock(&c->mu);
	}
	return NULL;
}

static void child(const char *dir, int round, int fd)
{
	store_config_t cfg = {.dir = dir, .sync = 1};
	err_t err = {0};
	static crash_child c;
	c.s = store_open(&cfg, &err);
	if (!c.s)
		_exit(2);
	c.round = round;
	c.fd = fd;
	pthread_mutex_init(&c.mu, NULL);
	pthread_cond_init(&c.cv, NULL);
	pthread_t th;
	for (int i = 0; i < SYNC_THREADS + BURST_THREADS; i++)
		if (pthread_create(&th, NULL, i < SYNC_THREADS ? sync_main : burst_main, &c) != 0)
			_exit(5);
	for (;;)
		pause();
}

/* ---- The parent --------------------------------------------------------- */

/* What the parent knows, per k = round * MAX_IDS + id. */
typedef struct {
	uint8_t *acked;      /* 1: reported on the pipe */
	uint8_t *stored;     /* parts found by the last check (bit per day) */
	uint8_t *count[2];   /* chunks of each part found by the current check */
	uint32_t hi[ROUNDS]; /* ids of a round checked: 0 .. hi - 1 */
	int strict;          /* the engine writes through its log: half batches fail */
	uint64_t half, found, chunks;
} crash_state;

/* Reads the pipe until want acknowledgements came (want > 0), until the
 * deadline (poll) or, with deadline_ms < 0, until EOF; marks the
 * acknowledged ids of round. Returns how many it read. */
static uint32_t read_acks(int fd, crash_state *st, int round, uint32_t want, int64_t deadline_ms)
{
	static uint8_t buf[4096];
	static size_t have;
	uint32_t n = 0;
	for (;;) {
		if (want > 0 && n >= want)
			return n;
		if (deadline_ms >= 0) {
			int64_t left = deadline_ms - time_now_ns() / 1000000;
			if (left <= 0)
				return n;
			struct pollfd pfd = {.fd = fd, .events = POLLIN};
			if (poll(&pfd, 1, (int)left) <= 0)
				continue;
		}
		ssize_t r = read(fd, buf + have, sizeof buf - have);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			assert_int_equal(have, 0); /* records are written whole */
			return n;
		}
		have += (size_t)r;
		size_t used = 0;
		for (; have - used >= sizeof(uint32_t); used += sizeof(uint32_t), n++) {
			uint32_t id;
			memcpy(&id, buf + used, sizeof id);
			assert_true(id < MAX_IDS);
			uint8_t *a = &st->acked[(size_t)round * MAX_IDS + id];
			if (*a)
				fail_msg("round %d: batch %u acknowledged twice", round, id);
			*a = 1;
			if (id >= st->hi[round])
				st->hi[round] = id + 1;
		}
		memmove(buf, buf + used, have - used);
		have -= used;
	}
}

/* One chunk of project p at head h, decoded and matched to its batch. */
static void check_chunk(crash_state *st, int round, int p, const store_chunk_head_t *h,
                        const store_entry_t *e, uint32_t n_e)
{
	int part = h->t_ns >= MIDNIGHT;
	int64_t off = part ? h->t_ns - MIDNIGHT : MIDNIGHT - h->t_ns - SPACING;
	if (off < 0 || off % SPACING)
		fail_msg("project %d: a chunk at t_ns %lld was never written", p, (long long)h->t_ns);
	int64_t k = off / SPACING;
	int r = (int)(k / MAX_IDS);
	uint32_t id = (uint32_t)(k % MAX_IDS);
	if (r > round || project_of(id) != p || !(parts_of(id) & (1u << part)))
		fail_msg("project %d: a chunk at t_ns %lld (round %d, batch %u) was never written", p,
		         (long long)h->t_ns, r, id);
	int64_t v = value_of(k), sum = 0;
	assert_int_equal(h->total, 6 * v);
	assert_int_equal(n_e, 3);
	unsigned mult = 0;
	for (uint32_t i = 0; i < n_e; i++) {
		sum += e[i].value;
		assert_true(e[i].value % v == 0 && e[i].value / v >= 1 && e[i].value / v <= 3);
		mult |= 1u << (e[i].value / v);
	}
	assert_int_equal(sum, h->total);
	assert_int_equal(mult, 0xe);
	uint8_t *c = &st->count[part][k];
	if (++*c > 1)
		fail_msg("round %d, batch %u: its chunk of day %d is stored %u times", r, id, part, *c);
	if (id >= st->hi[r])
		st->hi[r] = id + 1;
	st->chunks++;
}

/* Every chunk of every project over the two days, decoded. */
static void collect(store_t *s, crash_state *st, int round)
{
	for (int p = 0; p < PROJECTS; p++) {
		char name[32];
		project_name(p, name, sizeof name);
		store_view_t *v;
		err_t err = {0};
		if (store_view_open(s, slice_cstr(name), MIDNIGHT - NS_PER_DAY, MIDNIGHT + NS_PER_DAY, &v,
		                    &err) != 0)
			fail_msg("view %s: %s", name, err.msg);
		for (uint32_t part = 0; part < store_view_partitions(v); part++) {
			const store_series_t *se;
			uint32_t n_se, n_h;
			if (store_view_series(v, part, &se, &n_se, &err) != 0)
				fail_msg("series %s: %s", name, err.msg);
			assert_true(n_se <= 1); /* one series: service svc, pod-1 */
			if (n_se == 0)
				continue; /* a partition created by a batch that never committed */
			const store_chunk_head_t *h;
			if (store_view_heads(v, part, &se[0].local, 1, &h, &n_h, &err) != 0)
				fail_msg("heads %s: %s", name, err.msg);
			store_chunk_head_t *heads = malloc((n_h + 1) * sizeof *heads);
			memcpy(heads, h, n_h * sizeof *heads);
			for (uint32_t i = 0; i < n_h; i++) {
				const store_entry_t *e;
				uint32_t n_e;
				if (store_view_entries(v, part, &heads[i], &e, &n_e, &err) != 0)
					fail_msg("entries %s: %s", name, err.msg);
				check_chunk(st, round, p, &heads[i], e, n_e);
			}
			free(heads);
			assert_false(store_view_skipped(v, part));
		}
		store_view_close(v);
	}
}

/* Compares what collect found with what was acknowledged and with what the
 * previous checks found. */
static void judge(crash_state *st, int round)
{
	for (int r = 0; r <= round; r++)
		for (uint32_t id = 0; id < st->hi[r]; id++) {
			size_t k = (size_t)r * MAX_IDS + id;
			unsigned got = (st->count[0][k] ? 1u : 0) | (st->count[1][k] ? 2u : 0),
			         want = parts_of(id);
			if (st->acked[k] && got != want)
				fail_msg("round %d: acknowledged batch %u is %s after the crash of round %d",
				         r, id, got ? "half there" : "missing", round);
			if (got && got != want) {
				if (st->strict)
					fail_msg("round %d: batch %u (never acknowledged) is half there: day "
					         "mask %u of %u",
					         r, id, got, want);
				if (r == round)
					st->half++;
			}
			if (r < round && got != st->stored[k])
				fail_msg("round %d: batch %u changed (day mask %u → %u) with the crash of "
				         "round %d",
				         r, id, st->stored[k], got, round);
			st->stored[k] = (uint8_t)got;
			if (got && r == round)
				st->found++;
		}
}

static int is_dir(const char *dir, const char *sub)
{
	char path[512];
	struct stat sb;
	snprintf(path, sizeof path, "%s/%s", dir, sub);
	return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static void test_kill_during_grouped_ingest(void **state)
{
	(void)state;
	char *dir = tmpdir_new();
	const char *env = getenv("KILN_CRASH_SEED");
	unsigned seed = env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)time(NULL) ^ (unsigned)getpid();
	srand(seed);
	print_message("crash_groups: seed %u (KILN_CRASH_SEED to repeat)\n", seed);
	crash_state st = {0};
	size_t n = (size_t)ROUNDS * MAX_IDS;
	st.acked = calloc(n, 1);
	st.stored = calloc(n, 1);
	st.count[0] = malloc(n);
	st.count[1] = malloc(n);
	uint64_t acked = 0;
	int64_t t0 = time_now_ns();
	for (int round = 0; round < ROUNDS; round++) {
		int fd;
		pid_t pid = fork_writer(child, dir, round, &fd);
		/* Even rounds: the kill comes at a random moment after the start (the
		 * open and the first partitions included); odd ones at a random moment
		 * after a random number of acknowledgements, so that batches get
		 * through however slow the disk is. */
		uint32_t want = round % 2 ? 1 + (uint32_t)(rand() % 4) : 0;
		if (want)
			acked += read_acks(fd, &st, round, want, time_now_ns() / 1000000 + PROGRESS_WAIT_MS);
		int delay_ms = 1 + rand() % MAX_DELAY_MS;
		acked += read_acks(fd, &st, round, 0, time_now_ns() / 1000000 + delay_ms);
		kill(pid, SIGKILL);
		int status;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFSIGNALED(status))
			fail_msg("round %d: the child exited by itself (status %d)", round,
			         WEXITSTATUS(status));
		acked += read_acks(fd, &st, round, 0, -1);
		close(fd);

		store_t *s = open_store(dir);
		st.strict = 1;
		assert_true(is_dir(dir, LOCAL_WAL_DIR));
		memset(st.count[0], 0, n);
		memset(st.count[1], 0, n);
		st.chunks = 0;
		collect(s, &st, round);
		judge(&st, round);
		store_stats_t stats;
		store_get_stats(s, &stats);
		assert_int_equal(stats.damaged, 0);
		store_close(s);
	}
	print_message(
	    "crash_groups: %d rounds in %.1f s, %llu batches acknowledged, %llu found (%llu chunks at the "
	    "end), %llu never-acknowledged batches half there (%s)\n",
	    ROUNDS, (double)(time_now_ns() - t0) / NS_PER_SEC, (unsigned long long)acked,
	    (unsigned long long)st.found, (unsigned long long)st.chunks, (unsigned long long)st.half,
	    st.strict ? "engine on its log: asserted none" : "today's engine: the known window");
	assert_true(acked >= ROUNDS / 2); /* the odd rounds got batches through */
	free(st.acked);
	free(st.stored);
	free(st.count[0]);
	free(st.count[1]);
	tmpdir_free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kill_during_grouped_ingest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
