/* Group commit alone: THREADS threads each decode a pprof and store it with
 * store_write_sync (durable, fsync on) in a loop, like the HTTP server's
 * upload path without the network. The embedded writer has no window
 * (STORE: Writing); WINDOW_MS > 0 brings back the 2 ms window it had before
 * issue 15, to see what it cost. ClickHouse: WINDOW_MS 0 is its 5 ms
 * window, -1 none, > 0 that window.
 *
 *   commit FILE.pb[.gz] THREADS SECONDS WINDOW_MS DATA_DIR   (WINDOW_MS 0 or -1 = none)
 *   commit FILE.pb[.gz] THREADS SECONDS WINDOW_MS http://HOST:PORT/DATABASE
 * The second form writes to the ClickHouse engine, to time that store
 * without HTTP too.
 * Prints one line of JSON: {"threads","window_ms","uploads","per_s","mean_ms"}. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
static atomic_llong lat_sum_ns;

static void *run(void *arg)
{
	long k = (long)(intptr_t)arg;
	long i = 0;
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
		model_batch_t *b = model_batch_new(slice_cstr("default"));
		pprof_decode_opts_t opts = {.service = slice_cstr("commit"),
		                            .now_ns = time_now_ns(),
		                            .time_ns = t_base + (k * 1000000 + i++) * 1000000LL,
		                            .max_rows = LIMIT_SAMPLE_ROWS};
		if (pprof_decode(in, &opts, b, &err) < 0) {
			fprintf(stderr, "%s\n", err.msg);
			exit(1);
		}
		buf_free(&data);
		if (store_write_sync(store, b, &err) < 0) {
			fprintf(stderr, "store: %s\n", err.msg);
			exit(1);
		}
		atomic_fetch_add(&n_done, 1);
		atomic_fetch_add(&lat_sum_ns, time_mono_ns() - t0);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: commit FILE.pb[.gz] THREADS SECONDS WINDOW_MS DATA_DIR\n");
		return 2;
	}
	int threads = atoi(argv[2]);
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
	t_base = (time_now_ns() / NS_PER_SEC / 3600 * 3600 - 7200) * NS_PER_SEC;
	int64_t start = time_mono_ns();
	deadline = start + (int64_t)(seconds * 1e9);
	pthread_t *th = calloc((size_t)threads, sizeof *th);
	for (int k = 0; k < threads; k++)
		pthread_create(&th[k], NULL, run, (void *)(intptr_t)k);
	for (int k = 0; k < threads; k++)
		pthread_join(th[k], NULL);
	double secs = (double)(time_mono_ns() - start) / 1e9;
	store_close(store);
	long done = atomic_load(&n_done);
	printf("{\"threads\":%d,\"window_ms\":%d,\"uploads\":%ld,\"per_s\":%.1f,\"mean_ms\":%.2f}\n", threads,
	       window, done, (double)done / secs,
	       done ? (double)atomic_load(&lat_sum_ns) / 1e6 / (double)done : 0.0);
	return 0;
}
