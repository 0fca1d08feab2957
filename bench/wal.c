/* The store log alone (store/local_wal.c): the latency of one durable append
 * (one pwrite + one fdatasync) for records of 4 KiB, 64 KiB and 1 MiB, one
 * writer, on the disk of DATA_DIR. A second thread plays the checkpointer of
 * STORE: "Checkpointing" (every 50 ms: checkpoint at the log's end, which
 * recycles the old segments, and keep a spare ready), so segment changes cost
 * what they will cost in the engine. Compare with one SQLite COMMIT:
 * `build/bench/commit FILE 1 SECONDS -1 DIR` (its mean_ms, one thread).
 *
 *   wal DATA_DIR SECONDS_PER_SIZE [SIZES...]   (default sizes 4096 65536 1048576)
 * Prints one line of JSON per size: {"bytes","appends","mean_ms","p50_ms","p99_ms","max_ms"}. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/timeutil.h"
#include "store/local_wal.h"

static local_wal_t *wal;
static atomic_int stop;

static void *checkpointer(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		err_t err = {0};
		if (local_wal_checkpoint(wal, local_wal_end(wal), &err) != 0 ||
		    local_wal_make_spare(wal, &err) < 0)
			fprintf(stderr, "checkpointer: %s\n", err.msg);
		usleep(50000);
	}
	return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int run(size_t bytes, double seconds)
{
	uint8_t *p = malloc(bytes);
	for (size_t i = 0; i < bytes; i++)
		p[i] = (uint8_t)(i * 2654435761u >> 13);
	size_t cap = 1 << 16, n = 0;
	int64_t *lat = malloc(cap * sizeof *lat);
	int64_t end = time_mono_ns() + (int64_t)(seconds * 1e9), sum = 0;
	while (time_mono_ns() < end && n < cap) {
		err_t err = {0};
		p[0] = (uint8_t)n; /* each payload differs */
		int64_t t0 = time_mono_ns();
		if (local_wal_append(wal, LOCAL_WAL_GROUP, 1, slice_make(p, bytes), NULL, &err) != 0) {
			fprintf(stderr, "append: %s\n", err.msg);
			return -1;
		}
		lat[n] = time_mono_ns() - t0;
		sum += lat[n++];
	}
	qsort(lat, n, sizeof *lat, cmp_i64);
	printf("{\"bytes\":%zu,\"appends\":%zu,\"mean_ms\":%.3f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"max_ms\":%."
	       "3f}\n",
	       bytes, n, (double)sum / 1e6 / (double)n, (double)lat[n / 2] / 1e6,
	       (double)lat[n * 99 / 100] / 1e6, (double)lat[n - 1] / 1e6);
	free(lat);
	free(p);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: wal DATA_DIR SECONDS_PER_SIZE [SIZES...]\n");
		return 2;
	}
	err_t err = {0};
	if (local_wal_open(argv[1], NULL, &wal, &err) != 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	local_wal_rec_t rec;
	while (local_wal_replay_next(wal, &rec, &err) == 1)
		;
	if (local_wal_make_spare(wal, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	pthread_t th;
	pthread_create(&th, NULL, checkpointer, NULL);
	static const size_t def[] = {4096, 65536, 1048576};
	int rc = 0;
	double seconds = atof(argv[2]);
	for (int i = 3; i < argc && rc == 0; i++)
		rc = run((size_t)atoll(argv[i]), seconds);
	for (size_t i = 0; argc == 3 && i < sizeof def / sizeof *def && rc == 0; i++)
		rc = run(def[i], seconds);
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	local_wal_close(wal);
	return rc ? 1 : 0;
}
