/* Decode speed of JFR recordings: jfr_decode of one uncompressed recording
 * (inflated once first when the file is gzip) into a fresh batch, repeated
 * for SECONDS on one core. MB/s counts the uncompressed recording (issue 18:
 * >= 200 MB/s per core on async-profiler.jfr.gz).
 *
 *   jfr_decode FILE.jfr[.gz] [SECONDS]      (default 3 s)
 * Prints one line of JSON: {"file","bytes","profiles","samples",
 * "iterations","decode_us","mb_per_s"}. */
#include <stdio.h>
#include <stdlib.h>

#include "base/buf.h"
#include "bench_file.h"
#include "base/limits.h"
#include "base/timeutil.h"
#include "model/model.h"
#include "wire/compress.h"
#include "wire/jfr.h"

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: jfr_decode FILE.jfr[.gz] [SECONDS]\n");
		return 2;
	}
	double seconds = argc > 2 ? atof(argv[2]) : 3.0;
	buf_t raw, data;
	err_t err = {0};
	if (bench_read_file(argv[1], &raw) < 0)
		return 1;
	slice_t in = buf_slice(&raw);
	buf_init(&data, LIMIT_DECODED_BYTES);
	if (gz_is_gzip(in)) {
		if (gz_inflate(in, &data, &err) < 0) {
			fprintf(stderr, "%s: %s\n", argv[1], err.msg);
			return 1;
		}
		in = buf_slice(&data);
	}
	jfr_decode_opts_t opts = {.service = slice_cstr("bench"),
	                          .from_ns = time_now_ns() - 10000000000LL,
	                          .until_ns = time_now_ns(),
	                          .sample_rate = 100};
	long iters = 0;
	uint32_t profiles = 0, samples = 0;
	int64_t t_decode = 0, deadline = time_mono_ns() + (int64_t)(seconds * 1e9);
	do {
		model_batch_t *b = model_batch_new(slice_cstr("default"));
		int64_t t0 = time_mono_ns();
		if (jfr_decode(in, &opts, b, &err) < 0) {
			fprintf(stderr, "%s: %s\n", argv[1], err.msg);
			return 1;
		}
		t_decode += time_mono_ns() - t0;
		profiles = b->n_profiles;
		samples = b->n_samples;
		model_batch_free(b);
		iters++;
	} while (time_mono_ns() < deadline);
	double us = (double)t_decode / 1e3 / (double)iters;
	printf("{\"file\":\"%s\",\"bytes\":%zu,\"profiles\":%u,\"samples\":%u,\"iterations\":%ld,"
	       "\"decode_us\":%.1f,\"mb_per_s\":%.1f}\n",
	       argv[1], in.n, profiles, samples, iters, us, (double)in.n / us);
	buf_free(&data);
	buf_free(&raw);
	return 0;
}
