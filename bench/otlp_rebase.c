/* Shifts every timestamp of an OTLP ExportProfilesServiceRequest (protobuf)
 * so that the latest one is AGO seconds before now: Profile.time_unix_nano
 * and Sample.timestamps_unix_nano (fixed64, packed or not), rewritten in
 * place (fixed-width, so nothing else moves). For benchmarks: a fixture
 * recorded weeks ago lies outside Kiln's time window.
 *
 *   otlp_rebase IN.pb OUT.pb [AGO_SECONDS=60] [GRPC_OUT]
 * GRPC_OUT, when given, gets the same message as one gRPC frame (a zero
 * compression flag, the 4-byte big-endian length, the message): a body for
 * h2load. Prints {"timestamps":N,"shift_ns":S,"latest_ns":T}. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "bench_file.h"
#include "base/limits.h"
#include "base/timeutil.h"
#include "wire/pb.h"

typedef struct {
	uint8_t *base; /* the mutable copy of the request */
	int64_t shift; /* added to every timestamp (pass 2) */
	int64_t latest;
	uint64_t count;
	int apply;
} rebase;

/* One timestamp at p (8 bytes, little endian): note it, or shift it. */
static void stamp(rebase *rb, const uint8_t *at)
{
	uint8_t *p = rb->base + (at - rb->base);
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	if (v == 0)
		return; /* "not set" stays not set */
	rb->count++;
	if (!rb->apply) {
		if ((int64_t)v > rb->latest)
			rb->latest = (int64_t)v;
		return;
	}
	v = (uint64_t)((int64_t)v + rb->shift);
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Calls fn for every field `want` of msg; -1 on malformed input. */
typedef int (*field_fn)(rebase *rb, pb_reader_t *r, int wt);
static int each(rebase *rb, slice_t msg, uint32_t want, field_fn fn)
{
	pb_reader_t r = pb_reader_make(msg);
	while (!pb_done(&r)) {
		uint32_t num;
		int wt;
		if (pb_key(&r, &num, &wt) < 0)
			return -1;
		if (num == want) {
			if (fn(rb, &r, wt) < 0)
				return -1;
		} else if (pb_skip(&r, wt) < 0) {
			return -1;
		}
	}
	return 0;
}

static int on_sample_stamps(rebase *rb, pb_reader_t *r, int wt)
{
	if (wt == PB_I64) {
		if (r->end - r->p < 8)
			return -1;
		stamp(rb, r->p);
		r->p += 8;
		return 0;
	}
	slice_t s;
	if (wt != PB_LEN || pb_bytes(r, &s) < 0 || s.n % 8)
		return -1;
	for (size_t i = 0; i < s.n; i += 8)
		stamp(rb, s.p + i);
	return 0;
}

static int on_sample(rebase *rb, pb_reader_t *r, int wt)
{
	slice_t s;
	if (wt != PB_LEN || pb_bytes(r, &s) < 0)
		return -1;
	return each(rb, s, 5, on_sample_stamps);
}

static int on_profile_time(rebase *rb, pb_reader_t *r, int wt)
{
	return on_sample_stamps(rb, r, wt == PB_I64 ? wt : -1);
}

static int on_profile(rebase *rb, pb_reader_t *r, int wt)
{
	slice_t s;
	if (wt != PB_LEN || pb_bytes(r, &s) < 0)
		return -1;
	return each(rb, s, 3, on_profile_time) < 0 ? -1 : each(rb, s, 2, on_sample);
}

static int on_scope(rebase *rb, pb_reader_t *r, int wt)
{
	slice_t s;
	if (wt != PB_LEN || pb_bytes(r, &s) < 0)
		return -1;
	return each(rb, s, 2, on_profile);
}

static int on_resource(rebase *rb, pb_reader_t *r, int wt)
{
	slice_t s;
	if (wt != PB_LEN || pb_bytes(r, &s) < 0)
		return -1;
	return each(rb, s, 2, on_scope);
}

static int write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		perror(path);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: otlp_rebase IN.pb OUT.pb [AGO_SECONDS=60] [GRPC_OUT]\n");
		return 2;
	}
	int64_t ago = argc > 3 ? atoll(argv[3]) : 60;
	buf_t raw;
	if (bench_read_file(argv[1], &raw) < 0)
		return 1;
	rebase rb = {.base = raw.p};
	slice_t req = buf_slice(&raw);
	if (each(&rb, req, 1, on_resource) < 0 || rb.count == 0) {
		fprintf(stderr, "%s: not an OTLP profiles request with timestamps\n", argv[1]);
		return 1;
	}
	rb.shift = time_now_ns() - ago * INT64_C(1000000000) - rb.latest;
	rb.apply = 1;
	rb.count = 0;
	each(&rb, req, 1, on_resource);
	if (write_file(argv[2], raw.p, raw.n) < 0)
		return 1;
	if (argc > 4) {
		uint8_t prefix[5] = {0, (uint8_t)(raw.n >> 24), (uint8_t)(raw.n >> 16), (uint8_t)(raw.n >> 8),
		                     (uint8_t)raw.n};
		buf_t g;
		buf_init(&g, SIZE_MAX);
		if (buf_append(&g, prefix, 5) < 0 || buf_append(&g, raw.p, raw.n) < 0 ||
		    write_file(argv[4], g.p, g.n) < 0)
			return 1;
		buf_free(&g);
	}
	printf("{\"timestamps\":%" PRIu64 ",\"shift_ns\":%" PRId64 ",\"latest_ns\":%" PRId64 "}\n", rb.count,
	       rb.shift, rb.latest + rb.shift);
	buf_free(&raw);
	return 0;
}
