/* The cost of the write-ahead log's batch codec (store/batch_codec.c),
 * single-threaded, on batches decoded from real fixtures as the ingest path
 * decodes them: pprof (gunzipped when gzipped) or an OTLP protobuf
 * request (*.pb under an otlp/ folder). Encoding is on the ack path (once
 * per batch per group commit), decoding on replay.
 *
 *   batch_codec [SECONDS] FILE...      (default 2 s per direction and file)
 *   batch_codec --seeds DIR FILE...    writes each file's encoding to DIR/seed-<name>
 *                                      (<name> up to its first dot: the fuzz
 *                                      target's seed corpus)
 * Prints one line of JSON per file: {"file","profiles","samples","nodes",
 * "frames","encoded_bytes","encode_ns","decode_ns","encode_mb_s","decode_mb_s"}
 * (ns per batch; MB/s of encoded bytes, 1 MB = 1e6 bytes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/limits.h"
#include "base/timeutil.h"
#include "bench_file.h"
#include "model/model.h"
#include "store/batch_codec.h"
#include "wire/compress.h"
#include "wire/otlp.h"
#include "wire/pprof.h"

static model_batch_t *load_batch(const char *path)
{
	buf_t raw, plain;
	if (bench_read_file(path, &raw) < 0)
		return NULL;
	buf_init(&plain, LIMIT_DECODED_BYTES);
	slice_t in = buf_slice(&raw);
	err_t err = {0};
	model_batch_t *b = model_batch_new(slice_cstr("default"));
	int rc;
	if (strstr(path, "otlp/")) {
		otlp_decode_opts_t o = {.now_ns = time_now_ns()};
		otlp_result_t r;
		rc = otlp_decode(in, &o, b, &r, &err);
	} else {
		if (gz_is_gzip(in) && gz_inflate(in, &plain, &err) < 0)
			rc = -1;
		else {
			pprof_decode_opts_t o = {.service = slice_cstr("bench"),
			                         .now_ns = time_now_ns(),
			                         .max_rows = LIMIT_SAMPLE_ROWS};
			rc = pprof_decode(gz_is_gzip(in) ? buf_slice(&plain) : in, &o, b, &err);
		}
	}
	buf_free(&raw);
	buf_free(&plain);
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", path, err.msg);
		model_batch_free(b);
		return NULL;
	}
	return b;
}

static int write_seed(const char *dir, const char *path, const buf_t *enc)
{
	const char *name = strrchr(path, '/');
	name = name ? name + 1 : path;
	char out[1024];
	snprintf(out, sizeof out, "%s/seed-%.*s", dir, (int)strcspn(name, "."), name);
	FILE *f = fopen(out, "wb");
	if (!f || fwrite(enc->p, 1, enc->n, f) != enc->n) {
		perror(out);
		if (f)
			fclose(f);
		return -1;
	}
	return fclose(f);
}

int main(int argc, char **argv)
{
	const char *seeds = NULL;
	double seconds = 2.0;
	int i = 1;
	if (argc > 2 && strcmp(argv[1], "--seeds") == 0)
		seeds = argv[2], i = 3;
	else if (argc > 1 && atof(argv[1]) > 0)
		seconds = atof(argv[1]), i = 2;
	if (i >= argc) {
		fprintf(stderr, "usage: batch_codec [SECONDS] FILE... | --seeds DIR FILE...\n");
		return 2;
	}
	for (; i < argc; i++) {
		model_batch_t *b = load_batch(argv[i]);
		if (!b)
			return 1;
		buf_t enc;
		buf_init(&enc, SIZE_MAX);
		if (batch_codec_encode(b, &enc) < 0)
			return 1;
		if (seeds) {
			if (write_seed(seeds, argv[i], &enc) < 0)
				return 1;
			buf_free(&enc);
			model_batch_free(b);
			continue;
		}
		/* encode: into a reused buffer, as the log thread does for a group */
		long n_enc = 0, n_dec = 0;
		int64_t t0 = time_mono_ns(), deadline = t0 + (int64_t)(seconds * 1e9), t1;
		do {
			for (int k = 0; k < 16; k++) {
				buf_reset(&enc);
				batch_codec_encode(b, &enc);
			}
			n_enc += 16;
		} while ((t1 = time_mono_ns()) < deadline);
		double enc_ns = (double)(t1 - t0) / (double)n_enc;
		/* decode: a fresh arena per record, as replay does */
		t0 = time_mono_ns();
		deadline = t0 + (int64_t)(seconds * 1e9);
		do {
			for (int k = 0; k < 16; k++) {
				arena_t *a = arena_new();
				model_batch_t d;
				err_t err = {0};
				if (batch_codec_decode(buf_slice(&enc), a, &d, &err) < 0) {
					fprintf(stderr, "%s: %s\n", argv[i], err.msg);
					return 1;
				}
				arena_free(a);
			}
			n_dec += 16;
		} while ((t1 = time_mono_ns()) < deadline);
		double dec_ns = (double)(t1 - t0) / (double)n_dec;
		printf("{\"file\":\"%s\",\"profiles\":%u,\"samples\":%u,\"nodes\":%u,\"frames\":%u,"
		       "\"encoded_bytes\":%zu,\"encode_ns\":%.0f,\"decode_ns\":%.0f,\"encode_mb_s\":%.0f,"
		       "\"decode_mb_s\":%.0f}\n",
		       argv[i], b->n_profiles, b->n_samples, b->n_nodes, b->n_frames, enc.n, enc_ns, dec_ns,
		       (double)enc.n / enc_ns * 1e3, (double)enc.n / dec_ns * 1e3);
		buf_free(&enc);
		model_batch_free(b);
	}
	return 0;
}
