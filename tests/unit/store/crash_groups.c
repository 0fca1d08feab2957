/* Crash safety of grouped writes (issue 15; STORE: Writing, and STORE: Next
 * version of the embedded engine, "How a 200 stays durable"), through the
 * public store API only, so it holds for the engine of today and for the one
 * on the write-ahead log. A child process opens the store and writes from
 * several threads at once (store_write_sync, and bursts of store_submit), so
 * that the writer forms groups, for 20 projects over two UTC days (profile
 * times either side of one midnight; a third of the batches have a profile
 * on each side), and reports each acknowledged batch on a pipe. The writer's
 * test hook (store_config_t.hold) appends one line per group, the k of its
 * batches, to a file of the round before the group is written (write(2) with
 * O_APPEND: the page cache outlives a kill -9 of the process). The parent
 * kill -9s it at a random moment, reopens the store and checks:
 *  - every acknowledged batch is there, whole, exactly once;
 *  - every group the hook saw is there whole (each of its batches, whole) or
 *    not at all, whether or not it was acknowledged: a group spans projects
 *    and days, and it is one record of the log; every acknowledged batch and
 *    every batch found is in a group the hook saw;
 *  - no batch has a part stored twice, every chunk decodes to the values its
 *    batch was given, and no chunk is one that was never written;
 *  - what earlier rounds left is still exactly there (many rounds, one
 *    directory);
 *  - no partition is damaged.
 * A batch that was never acknowledged may be there or not, but whole, and
 * with the whole of its group: the engine writes a group as one record of its
 * log (DATA/_wal), so no kill leaves half of one (the "known window" of the
 * engine before the log did). A group the hook recorded may not be in the
 * log (killed before the append, or the record torn): then none of it is
 * there. A last line cut by the kill is a group the hook never returned from:
 * it is not counted.
 * KILN_CRASH_SEED=N repeats a run's random delays. */
#include <errno.h>
#include <fcntl.h>
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

static char *groups_dir; /* the files of the groups the hook saw, one per round (groups_path) */

static void groups_path(int round, char *out, size_t n)
{
	snprintf(out, n, "%s/groups-%02d", groups_dir, round);
}

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

/* The k of the batch that has a profile at t_ns (the inverse of part_time),
 * -1 when no batch has one there. */
static int64_t k_of_time(int64_t t_ns)
{
	int64_t off = t_ns >= MIDNIGHT ? t_ns - MIDNIGHT : MIDNIGHT - t_ns - SPACING;
	if (off < 0 || off % SPACING)
		return -1;
	return off / SPACING;
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
	int round, fd, groups_fd;
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

/* The writer's hook: one line per group, the k of each of its batches (from
 * its first profile's time) in the group's order, appended by one write(2)
 * before the group is written. Only the writer thread calls it. */
static void record_group(void *arg, const model_batch_t *const *b, size_t n)
{
	crash_child *c = arg;
	static char line[LIMIT_STORE_GROUP_BATCHES * 21 + 1];
	size_t len = 0;
	if (n == 0 || n > LIMIT_STORE_GROUP_BATCHES)
		_exit(6);
	for (size_t i = 0; i < n; i++) {
		int64_t k = b[i]->n_profiles ? k_of_time(b[i]->profiles[0].time_ns) : -1;
		char name[32];
		if (k >= 0)
			project_name(project_of((uint32_t)(k % MAX_IDS)), name, sizeof name);
		if (k < 0 || k / MAX_IDS != c->round || !slice_eq_cstr(b[i]->project, name))
			_exit(6); /* not a batch of this round */
		len += (size_t)snprintf(line + len, sizeof line - len, "%s%lld", i ? " " : "", (long long)k);
	}
	line[len++] = '\n';
	if (write(c->groups_fd, line, len) != (ssize_t)len)
		_exit(6);
}

static void child(const char *dir, int round, int fd)
{
	static crash_child c;
	char path[512];
	groups_path(round, path, sizeof path);
	c.groups_fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC); /* the parent made it */
	if (c.groups_fd < 0)
		_exit(6);
	store_config_t cfg = {.dir = dir, .sync = 1, .hold = record_group, .hold_arg = &c};
	err_t err = {0};
	c.round = round; /* before store_open: the writer may call the hook at once */
	c.s = store_open(&cfg, &err);
	if (!c.s)
		_exit(2);
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
	/* The groups the hook saw: group g holds ks[first[g] .. first[g + 1]). */
	uint32_t *group_of; /* per k: 1 + its group, 0: in none */
	uint32_t *first, *ks;
	uint32_t n_groups, cap_groups, n_ks;
	uint32_t round_first[ROUNDS]; /* the first group of each round */
	uint64_t g_whole, g_unacked, g_none, g_multi, g_projects, g_days, g_max, g_torn;
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

/* Reads the groups the hook of round recorded: one line per group, the k of
 * its batches. A last line without its newline is a write the kill cut: the
 * hook had not returned, so that group was not written. */
static void read_groups(crash_state *st, int round)
{
	char path[512];
	groups_path(round, path, sizeof path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fail_msg("round %d: no groups file %s", round, path);
	struct stat sb;
	assert_int_equal(fstat(fd, &sb), 0);
	char *text = malloc((size_t)sb.st_size + 1);
	assert_int_equal(read(fd, text, (size_t)sb.st_size), sb.st_size);
	close(fd);
	text[sb.st_size] = 0;
	st->round_first[round] = st->n_groups;
	char *line = text, *nl;
	for (; (nl = strchr(line, '\n')); line = nl + 1) {
		*nl = 0;
		if (st->n_groups + 1 >= st->cap_groups) {
			st->cap_groups = st->cap_groups ? 2 * st->cap_groups : 4096;
			st->first = realloc(st->first, (st->cap_groups + 1) * sizeof *st->first);
		}
		uint32_t g = st->n_groups++;
		st->first[g] = st->n_ks;
		for (char *p = line, *end; *p; p = end) {
			unsigned long long k = strtoull(p, &end, 10);
			if (end == p || (*end && *end != ' ') || k / MAX_IDS != (unsigned)round)
				fail_msg("round %d: group line %u is not ids of the round: %s", round,
				         g - st->round_first[round] + 1, line);
			if (st->group_of[k])
				fail_msg("round %d: batch %llu is in groups %u and %u", round, k % MAX_IDS,
				         st->group_of[k] - 1, g);
			st->group_of[k] = g + 1;
			st->ks[st->n_ks++] = (uint32_t)k;
			if (*end)
				end++;
		}
		st->first[g + 1] = st->n_ks;
		if (st->first[g + 1] == st->first[g])
			fail_msg("round %d: an empty group", round);
	}
	if (*line)
		st->g_torn++;
	free(text);
}

/* One chunk of project p at head h, decoded and matched to its batch. */
static void check_chunk(crash_state *st, int round, int p, const store_chunk_head_t *h,
                        const store_entry_t *e, uint32_t n_e)
{
	int part = h->t_ns >= MIDNIGHT;
	int64_t k = k_of_time(h->t_ns);
	if (k < 0)
		fail_msg("project %d: a chunk at t_ns %lld was never written", p, (long long)h->t_ns);
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

/* Days of k found by the current check (bit per day, as parts_of). */
static unsigned got_of(const crash_state *st, size_t k)
{
	return (st->count[0][k] ? 1u : 0) | (st->count[1][k] ? 2u : 0);
}

/* Every group the hook saw is stored whole or not at all; an acknowledged
 * batch's group is stored whole; every batch acknowledged or found in this
 * round is in a group the hook saw (run after judge). */
static void judge_groups(crash_state *st, int round)
{
	for (uint32_t g = 0; g < st->n_groups; g++) {
		uint32_t n = st->first[g + 1] - st->first[g], whole = 0, acked = 0, projects[PROJECTS] = {0};
		uint32_t some_in = 0, some_out = 0, n_proj = 0;
		unsigned days = 0;
		for (uint32_t i = st->first[g]; i < st->first[g + 1]; i++) {
			uint32_t k = st->ks[i], id = k % MAX_IDS;
			int in = got_of(st, k) == parts_of(id);
			whole += (uint32_t)in;
			acked += st->acked[k];
			*(in ? &some_in : &some_out) = k;
			n_proj += !projects[project_of(id)]++;
			days |= parts_of(id);
		}
		uint32_t r = st->ks[st->first[g]] / MAX_IDS;
		if (whole != 0 && whole != n)
			fail_msg("round %u: group %u (line %u of its file: %u batches, %u projects, days "
			         "mask %u, %u acknowledged) is partly there after the crash of round %d: %u "
			         "batches whole (e.g. %u), %u not (e.g. %u, day mask %u of %u)",
			         r, g, g - st->round_first[r] + 1, n, n_proj, days, acked, round, whole,
			         some_in % MAX_IDS, n - whole, some_out % MAX_IDS, got_of(st, some_out),
			         parts_of(some_out % MAX_IDS));
		if (acked && whole != n)
			fail_msg("round %u: group %u (line %u of its file) has %u acknowledged batches but "
			         "is not there after the crash of round %d",
			         r, g, g - st->round_first[r] + 1, acked, round);
		if (g < st->round_first[round])
			continue;
		*(whole ? &st->g_whole : &st->g_none) += 1;
		st->g_unacked += whole && !acked;
		st->g_multi += n > 1;
		st->g_projects += n_proj > 1;
		st->g_days += days == 3;
		if (n > st->g_max)
			st->g_max = n;
	}
	for (uint32_t id = 0; id < st->hi[round]; id++) {
		size_t k = (size_t)round * MAX_IDS + id;
		if ((st->acked[k] || got_of(st, k)) && !st->group_of[k])
			fail_msg("round %d: batch %u (%s) is in no group the writer's hook saw", round, id,
			         st->acked[k] ? "acknowledged" : "found");
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
	st.group_of = calloc(n, sizeof *st.group_of);
	st.ks = malloc(n * sizeof *st.ks);
	groups_dir = tmpdir_new();
	uint64_t acked = 0;
	int64_t t0 = time_now_ns();
	for (int round = 0; round < ROUNDS; round++) {
		int fd;
		char path[512];
		groups_path(round, path, sizeof path); /* made now: the kill may come before the child runs */
		int gfd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		assert_true(gfd >= 0);
		close(gfd);
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
		read_groups(&st, round);

		store_t *s = open_store(dir);
		st.strict = 1;
		assert_true(is_dir(dir, LOCAL_WAL_DIR));
		memset(st.count[0], 0, n);
		memset(st.count[1], 0, n);
		st.chunks = 0;
		collect(s, &st, round);
		judge(&st, round);
		judge_groups(&st, round);
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
	print_message("crash_groups: %u groups checked: %llu whole (%llu never acknowledged), "
	              "%llu not there at all; %llu of several batches (the largest %llu), %llu over "
	              "several projects, %llu over both days; %llu last lines cut by the kill\n",
	              st.n_groups, (unsigned long long)st.g_whole, (unsigned long long)st.g_unacked,
	              (unsigned long long)st.g_none, (unsigned long long)st.g_multi,
	              (unsigned long long)st.g_max, (unsigned long long)st.g_projects,
	              (unsigned long long)st.g_days, (unsigned long long)st.g_torn);
	assert_true(acked >= ROUNDS / 2); /* the odd rounds got batches through */
	assert_true(st.g_multi > 0);      /* groups formed: the check above looked at some */
	free(st.acked);
	free(st.stored);
	free(st.count[0]);
	free(st.count[1]);
	free(st.group_of);
	free(st.ks);
	free(st.first);
	tmpdir_free(groups_dir);
	tmpdir_free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kill_during_grouped_ingest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
