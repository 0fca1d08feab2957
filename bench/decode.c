/* The CPU cost of one upload's worker step, single-threaded and without the
 * network or the store: gunzip (gz_inflate) + pprof_decode into a batch, as
 * api/upload.c's worker does through ingest_pprof. Tells the ceiling the
 * worker pool puts on ingest: cores × 1e6 / µs-per-upload.
 *
 *   decode FILE.pb[.gz] [SECONDS]      (default 3 s of repetitions)
 * Prints one line of JSON: {"file","gz_bytes","raw_bytes","profiles","rows",
 * "iterations","inflate_us","decode_us","free_us","total_us","per_core_per_s"}. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "bench_file.h"
#include "base/limits.h"
#include "base/timeutil.h"
#include "model/model.h"
#include "wire/compress.h"
#include "wire/pprof.h"

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: decode FILE.pb[.gz] [SECONDS]\n");
		return 2;
	}
	double seconds = argc > 2 ? atof(argv[2]) : 3.0;
	buf_t raw;
	if (bench_read_file(argv[1], &raw) < 0)
		return 1;
	slice_t body = buf_slice(&raw);
	int gz = gz_is_gzip(body);

	int64_t t_inflate = 0, t_decode = 0, t_free = 0;
	long iters = 0;
	size_t raw_bytes = 0;
	uint32_t profiles = 0, rows = 0;
	int64_t deadline = time_mono_ns() + (int64_t)(seconds * 1e9);
	pprof_decode_opts_t opts = {
	    .service = slice_cstr("bench"), .now_ns = time_now_ns(), .max_rows = LIMIT_SAMPLE_ROWS};
	do {
		err_t err = {0};
		int64_t t0 = time_mono_ns();
		buf_t data;
		buf_init(&data, LIMIT_DECODED_BYTES);
		slice_t in = body;
		if (gz) {
			if (gz_inflate(body, &data, &err) < 0) {
				fprintf(stderr, "%s: %s\n", argv[1], err.msg);
				return 1;
			}
			in = buf_slice(&data);
		}
		int64_t t1 = time_mono_ns();
		model_batch_t *b = model_batch_new(slice_cstr("default"));
		if (pprof_decode(in, &opts, b, &err) < 0) {
			fprintf(stderr, "%s: %s\n", argv[1], err.msg);
			return 1;
		}
		int64_t t2 = time_mono_ns();
		raw_bytes = in.n;
		profiles = b->n_profiles;
		rows = b->n_samples;
		model_batch_free(b);
		buf_free(&data);
		int64_t t3 = time_mono_ns();
		t_inflate += t1 - t0;
		t_decode += t2 - t1;
		t_free += t3 - t2;
		iters++;
	} while (time_mono_ns() < deadline);
	double us_i = (double)t_inflate / 1e3 / (double)iters, us_d = (double)t_decode / 1e3 / (double)iters,
	       us_f = (double)t_free / 1e3 / (double)iters;
	double total = us_i + us_d + us_f;
	printf("{\"file\":\"%s\",\"gz_bytes\":%zu,\"raw_bytes\":%zu,\"profiles\":%u,\"rows\":%u,\"iterations\":%ld,"
	       "\"inflate_us\":%.1f,\"decode_us\":%.1f,\"free_us\":%.1f,\"total_us\":%.1f,\"per_core_per_s\":%.0f}\n",
	       argv[1], body.n, raw_bytes, profiles, rows, iters, us_i, us_d, us_f, total, 1e6 / total);
	return 0;
}
