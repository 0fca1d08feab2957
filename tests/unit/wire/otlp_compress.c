/* Tests of the encodings an OTLP body may carry (src/wire/compress.c):
 * zstd and deflate (zlib-wrapped and raw) round trips, bombs stopped at the
 * output ceiling, corrupt and truncated streams, and body_decode's choice
 * by Content-Encoding (415 for the unknown ones). */
#include "testutil.h"

#include <libdeflate.h>

#include "base/buf.h"
#include "wire/compress.h"

static uint8_t *text(size_t n)
{
	uint8_t *p = malloc(n + 1);
	uint32_t x = 7;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)("abcdefgh ij\n"[(x >> 16) % 12]);
	}
	return p;
}

static void zlib_of(slice_t in, int raw, buf_t *out)
{
	struct libdeflate_compressor *c = libdeflate_alloc_compressor(6);
	size_t bound = libdeflate_zlib_compress_bound(c, in.n);
	assert_int_equal(buf_reserve(out, bound), 0);
	size_t n = raw ? libdeflate_deflate_compress(c, in.p, in.n, out->p, bound)
	               : libdeflate_zlib_compress(c, in.p, in.n, out->p, bound);
	assert_true(n > 0);
	out->n = n;
	libdeflate_free_compressor(c);
}

static void test_round_trips(void **state)
{
	(void)state;
	size_t sizes[] = {1, 1000, 300000};
	for (size_t i = 0; i < 3; i++) {
		uint8_t *in = text(sizes[i]);
		slice_t s = slice_make(in, sizes[i]);
		buf_t z, out;
		err_t err = {0};
		buf_init(&z, SIZE_MAX);
		assert_int_equal(zstd_deflate(s, 3, &z), 0);
		buf_init(&out, 1 << 20);
		assert_int_equal(zstd_inflate(buf_slice(&z), &out, &err), 0);
		assert_int_equal(out.n, sizes[i]);
		assert_memory_equal(out.p, in, sizes[i]);
		buf_reset(&out);
		assert_int_equal(body_decode(slice_cstr("ZSTD"), buf_slice(&z), &out, &err), 0);
		assert_int_equal(out.n, sizes[i]);
		for (int raw = 0; raw < 2; raw++) {
			buf_reset(&z);
			zlib_of(s, raw, &z);
			buf_reset(&out);
			assert_int_equal(body_decode(slice_cstr("deflate"), buf_slice(&z), &out, &err), 0);
			assert_int_equal(out.n, sizes[i]);
			assert_memory_equal(out.p, in, sizes[i]);
		}
		buf_reset(&z);
		assert_int_equal(gz_deflate(s, 6, &z), 0);
		buf_reset(&out);
		assert_int_equal(body_decode(slice_cstr("gzip"), buf_slice(&z), &out, &err), 0);
		assert_int_equal(out.n, sizes[i]);
		buf_reset(&out);
		assert_int_equal(body_decode(slice_cstr(""), s, &out, &err), 0);
		assert_int_equal(out.n, sizes[i]);
		buf_reset(&out);
		assert_int_equal(body_decode(slice_cstr("identity"), s, &out, &err), 0);
		assert_int_equal(out.n, sizes[i]);
		buf_free(&z);
		buf_free(&out);
		free(in);
	}
	/* Two concatenated zstd frames. */
	buf_t z, out;
	err_t err = {0};
	buf_init(&z, SIZE_MAX);
	buf_init(&out, 100);
	assert_int_equal(zstd_deflate(slice_cstr("hello "), 1, &z), 0);
	assert_int_equal(zstd_deflate(slice_cstr("world"), 1, &z), 0);
	assert_int_equal(zstd_inflate(buf_slice(&z), &out, &err), 0);
	assert_int_equal(out.n, 11);
	assert_memory_equal(out.p, "hello world", 11);
	buf_free(&z);
	buf_free(&out);
}

static void test_bombs(void **state)
{
	(void)state;
	size_t n = 64u << 20; /* 64 MiB of zeros: a few KB compressed */
	uint8_t *zeros = calloc(1, n);
	buf_t z, out;
	err_t err = {0};
	buf_init(&z, SIZE_MAX);
	assert_int_equal(zstd_deflate(slice_make(zeros, n), 3, &z), 0);
	assert_true(z.n < 64 * 1024);
	buf_init(&out, 1u << 20);
	assert_int_equal(zstd_inflate(buf_slice(&z), &out, &err), -1);
	assert_int_equal(err.status, 413);
	assert_string_equal(err.msg, "decompressed body exceeds the 1 MiB limit");
	assert_true(out.cap <= (1u << 20));
	assert_int_equal(out.n, 0);
	buf_free(&out);
	for (int raw = 0; raw < 2; raw++) {
		buf_reset(&z);
		zlib_of(slice_make(zeros, n), raw, &z);
		buf_init(&out, 1u << 20);
		assert_int_equal(zlib_inflate(buf_slice(&z), &out, &err), -1);
		assert_int_equal(err.status, 413);
		assert_true(out.cap <= (1u << 20));
		buf_free(&out);
	}
	/* Exactly at the limit is fine. */
	buf_reset(&z);
	assert_int_equal(zstd_deflate(slice_make(zeros, 1u << 20), 3, &z), 0);
	buf_init(&out, 1u << 20);
	assert_int_equal(zstd_inflate(buf_slice(&z), &out, &err), 0);
	assert_int_equal(out.n, 1u << 20);
	buf_free(&out);
	buf_free(&z);
	free(zeros);
}

static void test_corrupt(void **state)
{
	(void)state;
	buf_t z, out;
	err_t err = {0};
	uint8_t *in = text(100000);
	buf_init(&z, SIZE_MAX);
	buf_init(&out, 1 << 20);
	assert_int_equal(zstd_deflate(slice_make(in, 100000), 3, &z), 0);
	/* Truncated. */
	assert_int_equal(zstd_inflate(slice_make(z.p, z.n / 2), &out, &err), -1);
	assert_int_equal(err.status, 400);
	assert_int_equal(out.n, 0);
	/* Trailing garbage after the frame, then a damaged magic number. */
	buf_putc(&z, 0x42);
	assert_int_equal(zstd_inflate(buf_slice(&z), &out, &err), -1);
	assert_int_equal(err.status, 400);
	z.p[0] ^= 0xff;
	assert_int_equal(zstd_inflate(buf_slice(&z), &out, &err), -1);
	assert_int_equal(err.status, 400);
	/* Not zstd at all, and empty. */
	assert_int_equal(zstd_inflate(slice_cstr("hello world"), &out, &err), -1);
	assert_int_equal(err.status, 400);
	assert_int_equal(zstd_inflate(slice_make(NULL, 0), &out, &err), -1);
	assert_string_equal(err.msg, "zstd body is corrupt: empty body");
	/* deflate: garbage, truncation, trailing bytes. */
	assert_int_equal(zlib_inflate(slice_cstr("\xff\xff\xff\xff"), &out, &err), -1);
	assert_int_equal(err.status, 400);
	buf_reset(&z);
	zlib_of(slice_make(in, 100000), 0, &z);
	assert_int_equal(zlib_inflate(slice_make(z.p, z.n - 10), &out, &err), -1);
	assert_int_equal(err.status, 400);
	buf_putc(&z, 'x');
	assert_int_equal(zlib_inflate(slice_make(z.p, z.n), &out, &err), -1);
	assert_int_equal(err.status, 400);
	/* Unknown encodings: 415 naming the supported ones. */
	assert_int_equal(body_decode(slice_cstr("br"), slice_cstr("x"), &out, &err), -1);
	assert_int_equal(err.status, 415);
	assert_string_equal(
	    err.msg, "unsupported content encoding \"br\": Kiln accepts gzip, zstd, deflate or identity");
	/* identity past the ceiling: 413. */
	buf_t small;
	buf_init(&small, 4);
	assert_int_equal(body_decode(slice_cstr("identity"), slice_cstr("hello"), &small, &err), -1);
	assert_int_equal(err.status, 413);
	buf_free(&small);
	buf_free(&z);
	buf_free(&out);
	free(in);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trips),
	    cmocka_unit_test(test_bombs),
	    cmocka_unit_test(test_corrupt),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
