/* Group commit alone: THREADS threads each decode a pprof and store it with
 * store_submit, waiting for its answer (durable, fsync on), in a loop, like
 * the HTTP server's upload path without the network (store_write_sync would
 * also wait for the batch to reach its partition). The embedded writer has no window
 * (STORE: Writing); WINDOW_MS > 0 brings back the 2 ms window it had before
 * issue 15, to see what it cost. ClickHouse: WINDOW_MS 0 is its 5 ms
 * window, -1 none, > 0 that window.
 *
 *   commit FILE.pb[.gz] THREADS SECONDS WINDOW_MS DATA_DIR   (WINDOW_MS 0 or -1 = none)
 *   commit FILE.pb[.gz] THREADS SECONDS WINDOW_MS http://HOST:PORT/DATABASE
 * The second form writes to the ClickHouse engine, to time that store
 * without HTTP too.
 * Profiles are dated from 5 minutes before the start, 1 ms apart.
 * PROJECTS=N (environment, default 1): the uploads go round N projects
 * (p0, p1, ...), as N tenants' keys would. WARMUP=S: S seconds of the same
 * load first, not counted.
 * DATED=now: each profile is dated by the clock when it is made instead.
 * With faketime (Debian package), a run crosses a midnight as a store
 * does once a day, the store's own clock included (bench/midnight.sh):
 *   TZ=UTC FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f '@2026-12-06 23:59:45' \
 *     env DATED=now WARMUP=15 PROJECTS=1000 build/bench/commit FILE 8 10 0 DIR
 * Prints one line of JSON: {"threads","window_ms","projects","uploads","per_s","mean_ms",
 * "p99_ms","max_ms","worst_s","cpu_us"}: latency percentiles of the measured
 * uploads (submit to durable answer) and, in worst_s, the slowest upload's
 * second into the measured part;
 * cpu_us: CPU µs per upload of each of the process's threads by name
 * (store threads, and "commit" for the decoding client threads), up to the
 * close. */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/limits.h"
#include "base/timeutil.h"
#include "model/model.h"
#include "store/store.h"
#include "wire/compress.h"
#include "wire/pprof.h"

static slice_t body;
static store_t *store;
static int64_t deadline, t_base;
static atomic_long n_done;
static long projects = 1;
static atomic_long seq; /* uploads begun: each one's time is t_base + seq ms */
static atomic_llong lat_sum_ns;
static int dated_now;         /* DATED=now */
static int64_t measure_start; /* time_mono_ns() at the measured part's start */
/* Latencies of the measured uploads (ns), and when each ended (ns after
 * measure_start): at most LAT_MAX, the rest only counted. */
#define LAT_MAX (1u << 22)
static int64_t *lat_ns, *lat_end;
static atomic_long n_lat;
static atomic_int measuring;

/* One submit's answer, waited for by the thread that submitted. */
typedef struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done;
	err_t err;
} ack_t;

static void ack_done(void *ctx, const err_t *err)
{
	ack_t *a = ctx;
	pthread_mutex_lock(&a->mu);
	if (err)
		a->err = *err;
	a->done = 1;
	pthread_cond_signal(&a->cv);
	pthread_mutex_unlock(&a->mu);
}

static void *run(void *arg)
{
	(void)arg;
	while (time_mono_ns() < deadline) {
		int64_t t0 = time_mono_ns();
		err_t err = {0};
		buf_t data;
		buf_init(&data, LIMIT_DECODED_BYTES);
		slice_t in = body;
		if (gz_is_gzip(body)) {
			if (gz_inflate(body, &data, &err) < 0) {
				fprintf(stderr, "%s\n", err.msg);
				exit(1);
			}
			in = buf_slice(&data);
		}
		long q = atomic_fetch_add(&seq, 1);
		char project[32] = "default";
		if (projects > 1)
			snprintf(project, sizeof project, "p%ld", q % projects);
		model_batch_t *b = model_batch_new(slice_cstr(project));
		pprof_decode_opts_t opts = {.service = slice_cstr("commit"),
		                            .now_ns = time_now_ns(),
		                            .time_ns = dated_now ? time_now_ns() : t_base + q * 1000000LL,
		                            .max_rows = LIMIT_SAMPLE_ROWS};
		if (pprof_decode(in, &opts, b, &err) < 0) {
			fprintf(stderr, "%s\n", err.msg);
			exit(1);
		}
		buf_free(&data);
		ack_t a = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
		store_submit(store, b, ack_done, &a);
		pthread_mutex_lock(&a.mu);
		while (!a.done)
			pthread_cond_wait(&a.cv, &a.mu);
		pthread_mutex_unlock(&a.mu);
		if (a.err.status) {
			fprintf(stderr, "store: %s\n", a.err.msg);
			exit(1);
		}
		int64_t t1 = time_mono_ns();
		atomic_fetch_add(&n_done, 1);
		atomic_fetch_add(&lat_sum_ns, t1 - t0);
		if (atomic_load(&measuring)) {
			long i = atomic_fetch_add(&n_lat, 1);
			if (i < (long)LAT_MAX) {
				lat_ns[i] = t1 - t0;
				lat_end[i] = t1 - measure_start;
			}
		}
	}
	return NULL;
}

/* CPU ticks (utime + stime) of this process's threads, summed by name. */
typedef struct {
	char names[32][16];
	double ticks[32];
	int n;
} ticks_t;

static void ticks_take(ticks_t *t)
{
	t->n = 0;
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char path[300], line[1024];
		snprintf(path, sizeof path, "/proc/self/task/%s/stat", de->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t len = fread(line, 1, sizeof line - 1, f);
		fclose(f);
		line[len] = 0;
		char *open = strchr(line, '('), *close = strrchr(line, ')');
		if (!open || !close)
			continue;
		char name[16];
		snprintf(name, sizeof name, "%.*s", (int)(close - open - 1), open + 1);
		unsigned long ut = 0, st = 0;
		/* after ")": state and 10 more fields, then utime and stime */
		if (sscanf(close + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
			continue;
		int i = 0;
		while (i < t->n && strcmp(t->names[i], name) != 0)
			i++;
		if (i == t->n) {
			if (t->n == 32)
				continue;
			snprintf(t->names[i], sizeof t->names[i], "%s", name);
			t->ticks[t->n++] = 0;
		}
		t->ticks[i] += (double)(ut + st);
	}
	if (d)
		closedir(d);
}

/* Appends "NAME":µs for each thread name: its CPU from before to after per upload. */
static void ticks_per_upload(buf_t *out, const ticks_t *before, const ticks_t *after, long uploads)
{
	double hz = (double)sysconf(_SC_CLK_TCK);
	for (int i = 0; i < after->n; i++) {
		double t = after->ticks[i];
		for (int j = 0; j < before->n; j++)
			if (strcmp(before->names[j], after->names[i]) == 0)
				t -= before->ticks[j];
		char item[64];
		int m = snprintf(item, sizeof item, "%s\"%s\":%.1f", i ? "," : "", after->names[i],
		                 uploads ? t / hz * 1e6 / (double)uploads : 0.0);
		buf_append(out, item, (size_t)m);
	}
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Runs the client threads until now + seconds. */
static void run_for(int threads, double seconds)
{
	deadline = time_mono_ns() + (int64_t)(seconds * 1e9);
	pthread_t *th = calloc((size_t)threads, sizeof *th);
	for (int k = 0; k < threads; k++)
		pthread_create(&th[k], NULL, run, (void *)(intptr_t)k);
	for (int k = 0; k < threads; k++)
		pthread_join(th[k], NULL);
	free(th);
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: commit FILE.pb[.gz] THREADS SECONDS WINDOW_MS DATA_DIR\n");
		return 2;
	}
	int threads = atoi(argv[2]);
	if (getenv("PROJECTS") && atol(getenv("PROJECTS")) > 1)
		projects = atol(getenv("PROJECTS"));
	double seconds = atof(argv[3]);
	int window = atoi(argv[4]);
	FILE *f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	static buf_t raw;
	buf_init(&raw, LIMIT_BODY_BYTES);
	uint8_t tmp[65536];
	size_t n;
	while ((n = fread(tmp, 1, sizeof tmp, f)) > 0)
		buf_append(&raw, tmp, n);
	fclose(f);
	body = buf_slice(&raw);

	err_t err = {0};
	store_config_t cfg = {.dir = argv[5], .commit_interval_ms = window, .sync = 1};
	static char ch_url[512];
	if (strncmp(argv[5], "http://", 7) == 0) {
		/* http://HOST:PORT/DATABASE: the URL up to the last '/', then the database. */
		const char *slash = strrchr(argv[5] + 7, '/');
		if (!slash || !slash[1] || (size_t)(slash - argv[5]) >= sizeof ch_url) {
			fprintf(stderr, "commit: ClickHouse target is http://HOST:PORT/DATABASE\n");
			return 2;
		}
		memcpy(ch_url, argv[5], (size_t)(slash - argv[5]));
		cfg = (store_config_t){.engine = STORE_ENGINE_CLICKHOUSE,
		                       .ch_url = ch_url,
		                       .ch_database = slash + 1,
		                       .commit_interval_ms = window};
	}
	store = store_open(&cfg, &err);
	if (!store) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	/* Live profiles: dated from 5 minutes ago on, a millisecond apart (not
	 * in hours that ended long ago, which sealing and the merged hours would
	 * take up while the run lasts). */
	t_base = time_now_ns() - 300 * NS_PER_SEC;
	/* WARMUP seconds first (not counted): at PROJECTS=1,000 the first
	 * seconds create every project's partition file of the day, a cost paid
	 * once a day per project. */
	double warmup = getenv("WARMUP") ? atof(getenv("WARMUP")) : 0;
	measure_start = time_mono_ns() + (int64_t)(warmup * 1e9);
	dated_now = getenv("DATED") && strcmp(getenv("DATED"), "now") == 0;
	lat_ns = malloc(LAT_MAX * sizeof *lat_ns);
	lat_end = malloc(LAT_MAX * sizeof *lat_end);
	if (!lat_ns || !lat_end)
		return 1;
	if (warmup > 0) {
		run_for(threads, warmup);
		atomic_store(&n_done, 0);
		atomic_store(&lat_sum_ns, 0);
	}
	ticks_t t0, t1;
	ticks_take(&t0);
	int64_t start = time_mono_ns();
	atomic_store(&measuring, 1);
	run_for(threads, seconds);
	double secs = (double)(time_mono_ns() - start) / 1e9;
	long done = atomic_load(&n_done);
	ticks_take(&t1);
	long nl = atomic_load(&n_lat);
	if (nl > (long)LAT_MAX)
		nl = LAT_MAX;
	double p99_ms = 0, max_ms = 0, worst_s = 0;
	for (long i = 0; i < nl; i++)
		if ((double)lat_ns[i] / 1e6 > max_ms) {
			max_ms = (double)lat_ns[i] / 1e6;
			worst_s = (double)(lat_end[i] - (start - measure_start)) / 1e9;
		}
	if (nl > 0) {
		qsort(lat_ns, (size_t)nl, sizeof *lat_ns, cmp_i64);
		p99_ms = (double)lat_ns[(size_t)((double)(nl - 1) * 0.99)] / 1e6;
	}
	buf_t cpu;
	buf_init(&cpu, SIZE_MAX);
	ticks_per_upload(&cpu, &t0, &t1, done);
	store_close(store);
	printf("{\"threads\":%d,\"window_ms\":%d,\"projects\":%ld,\"uploads\":%ld,\"per_s\":%.1f,"
	       "\"mean_ms\":%.2f,\"p99_ms\":%.2f,\"max_ms\":%.2f,\"worst_s\":%.2f,\"cpu_us\":{%.*s}}\n",
	       threads, window, projects, done, (double)done / secs,
	       done ? (double)atomic_load(&lat_sum_ns) / 1e6 / (double)done : 0.0, p99_ms, max_ms, worst_s,
	       (int)cpu.n, (char *)cpu.p);
	free(lat_ns);
	free(lat_end);
	buf_free(&cpu);
	return 0;
}
