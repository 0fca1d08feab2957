/* Decode speed of OTLP profiles: otlp_decode (and, for a .json file,
 * otlp_json_to_pb first) of one uncompressed request into a fresh batch,
 * repeated for SECONDS on one core. MB/s counts the uncompressed input.
 *
 *   otlp_decode FILE.pb|FILE.json [SECONDS]      (default 3 s)
 * Prints one line of JSON: {"file","bytes","profiles","samples",
 * "iterations","decode_us","mb_per_s","minflt_per_iter"} (minor page faults
 * per request: fresh memory the allocator got from the kernel). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "base/buf.h"
#include "bench_file.h"
#include "base/limits.h"
#include "base/timeutil.h"
#include "model/model.h"
#include "wire/otlp.h"

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: otlp_decode FILE.pb|FILE.json [SECONDS]\n");
		return 2;
	}
	double seconds = argc > 2 ? atof(argv[2]) : 3.0;
	buf_t raw;
	if (bench_read_file(argv[1], &raw) < 0)
		return 1;
	size_t len = strlen(argv[1]);
	int is_json = len > 5 && strcmp(argv[1] + len - 5, ".json") == 0;
	otlp_decode_opts_t o = {.now_ns = 1};
	otlp_result_t r = {0};
	uint64_t iterations = 0;
	struct rusage ru0, ru1;
	getrusage(RUSAGE_SELF, &ru0);
	int64_t start = time_mono_ns(), elapsed = 0;
	while (elapsed < (int64_t)(seconds * 1e9) || iterations == 0) {
		err_t err = {0};
		buf_t pb;
		buf_init(&pb, LIMIT_DECODED_BYTES);
		slice_t in = buf_slice(&raw);
		if (is_json) {
			if (otlp_json_to_pb(in, &pb, &err) < 0) {
				fprintf(stderr, "%s: %d %s\n", argv[1], err.status, err.msg);
				return 1;
			}
			in = buf_slice(&pb);
		}
		model_batch_t *b = model_batch_new(slice_cstr("bench"));
		if (otlp_decode(in, &o, b, &r, &err) < 0) {
			fprintf(stderr, "%s: %d %s\n", argv[1], err.status, err.msg);
			return 1;
		}
		model_batch_free(b);
		buf_free(&pb);
		iterations++;
		elapsed = time_mono_ns() - start;
	}
	getrusage(RUSAGE_SELF, &ru1);
	double us = (double)elapsed / 1e3 / (double)iterations;
	printf("{\"file\":\"%s\",\"bytes\":%zu,\"profiles\":%" PRIu32 ",\"samples\":%" PRIu64
	       ",\"iterations\":%" PRIu64 ",\"decode_us\":%.1f,\"mb_per_s\":%.1f,\"minflt_per_iter\":%.1f}\n",
	       argv[1], raw.n, r.profiles, r.samples, iterations, us, (double)raw.n / us,
	       (double)(ru1.ru_minflt - ru0.ru_minflt) / (double)iterations);
	buf_free(&raw);
	return 0;
}
