/* Tests of src/wire/compress.c: round trips, concatenated members, gzip bombs
 * stopped at the output ceiling without allocating past it, lying ISIZE
 * trailers, and corrupt or truncated streams. */
#include "testutil.h"

#include "base/buf.h"
#include "wire/compress.h"

static void fill_text(uint8_t *p, size_t n)
{
	uint32_t x = 12345;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)("abcdefgh ij\n"[(x >> 16) % 12]);
	}
}

static void test_is_gzip(void **state)
{
	(void)state;
	assert_true(gz_is_gzip(slice_make("\x1f\x8b\x08", 3)));
	assert_false(gz_is_gzip(slice_make("\x1f", 1)));
	assert_false(gz_is_gzip(slice_make("\x0a\x8b", 2)));
	assert_false(gz_is_gzip(slice_make(NULL, 0)));
}

static void test_round_trip(void **state)
{
	(void)state;
	size_t sizes[] = {0, 1, 1000, 300000};
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		uint8_t *in = malloc(sizes[i] + 1);
		fill_text(in, sizes[i]);
		for (int level = 1; level <= 12; level += 5) {
			buf_t gz, out;
			buf_init(&gz, SIZE_MAX);
			buf_init(&out, 1 << 20);
			assert_int_equal(gz_deflate(slice_make(in, sizes[i]), level, &gz), 0);
			assert_true(gz_is_gzip(buf_slice(&gz)));
			err_t err = {0};
			assert_int_equal(gz_inflate(buf_slice(&gz), &out, &err), 0);
			assert_int_equal(out.n, sizes[i]);
			if (sizes[i])
				assert_memory_equal(out.p, in, sizes[i]);
			buf_free(&gz);
			buf_free(&out);
		}
		free(in);
	}
	buf_t gz;
	buf_init(&gz, SIZE_MAX);
	assert_int_equal(gz_deflate(slice_make("x", 1), 0, &gz), -1);
	assert_int_equal(gz_deflate(slice_make("x", 1), 13, &gz), -1);
	buf_free(&gz);
}

static void test_concatenated_members(void **state)
{
	(void)state;
	buf_t gz, out;
	buf_init(&gz, SIZE_MAX);
	buf_init(&out, 1 << 20);
	uint8_t big[70000];
	fill_text(big, sizeof big);
	assert_int_equal(gz_deflate(slice_make("hello ", 6), 6, &gz), 0);
	assert_int_equal(gz_deflate(slice_make(NULL, 0), 6, &gz), 0); /* an empty member */
	assert_int_equal(gz_deflate(slice_make(big, sizeof big), 1, &gz), 0);
	assert_int_equal(gz_deflate(slice_make("world", 5), 9, &gz), 0);
	err_t err = {0};
	assert_int_equal(gz_inflate(buf_slice(&gz), &out, &err), 0);
	assert_int_equal(out.n, 6 + sizeof big + 5);
	assert_memory_equal(out.p, "hello ", 6);
	assert_memory_equal(out.p + 6, big, sizeof big);
	assert_memory_equal(out.p + 6 + sizeof big, "world", 5);

	/* Garbage after the last member is refused. */
	buf_append(&gz, "junk", 4);
	buf_reset(&out);
	assert_int_equal(gz_inflate(buf_slice(&gz), &out, &err), -1);
	assert_int_equal(err.status, 400);
	assert_non_null(strstr(err.msg, "gzip body is corrupt: trailing garbage"));
	assert_int_equal(out.n, 0);
	buf_free(&gz);
	buf_free(&out);
}

static void test_bomb(void **state)
{
	(void)state;
	/* 64 MiB of zeros compresses to ~64 KiB; the limit is 32 MiB. */
	size_t n = 64u << 20;
	uint8_t *zeros = calloc(1, n);
	buf_t gz;
	buf_init(&gz, SIZE_MAX);
	assert_int_equal(gz_deflate(slice_make(zeros, n), 12, &gz), 0);
	free(zeros);
	assert_true(gz.n < (1u << 20));

	buf_t out;
	buf_init(&out, 32u << 20);
	err_t err = {0};
	assert_int_equal(gz_inflate(buf_slice(&gz), &out, &err), -1);
	assert_int_equal(err.status, 413);
	assert_string_equal(err.msg, "decompressed body exceeds the 32 MiB limit");
	assert_true(out.cap <= out.max); /* never allocated past the ceiling */
	assert_int_equal(out.n, 0);
	buf_free(&out);

	/* A trailer that lies (ISIZE = 10) changes nothing. */
	gz.p[gz.n - 4] = 10;
	gz.p[gz.n - 3] = gz.p[gz.n - 2] = gz.p[gz.n - 1] = 0;
	buf_init(&out, 32u << 20);
	assert_int_equal(gz_inflate(buf_slice(&gz), &out, &err), -1);
	assert_int_equal(err.status, 413);
	assert_true(out.cap <= out.max);
	buf_free(&out);

	/* A small ceiling that is not a whole number of MiB is named in bytes. */
	buf_init(&out, 1000);
	assert_int_equal(gz_inflate(buf_slice(&gz), &out, &err), -1);
	assert_int_equal(err.status, 413);
	assert_string_equal(err.msg, "decompressed body exceeds the 1000-byte limit");
	assert_true(out.cap <= 1000);
	buf_free(&out);
	buf_free(&gz);
}

static void test_exact_limit(void **state)
{
	(void)state;
	uint8_t data[5000];
	fill_text(data, sizeof data);
	buf_t gz, out;
	buf_init(&gz, SIZE_MAX);
	assert_int_equal(gz_deflate(slice_make(data, sizeof data), 6, &gz), 0);
	err_t err = {0};
	buf_init(&out, sizeof data); /* exactly fits */
	assert_int_equal(gz_inflate(buf_slice(&gz), &out, &err), 0);
	assert_int_equal(out.n, sizeof data);
	buf_free(&out);
	buf_init(&out, sizeof data - 1); /* one byte short */
	assert_int_equal(gz_inflate(buf_slice(&gz), &out, &err), -1);
	assert_int_equal(err.status, 413);
	buf_free(&out);
	buf_free(&gz);
}

static void test_corrupt(void **state)
{
	(void)state;
	uint8_t data[3000];
	fill_text(data, sizeof data);
	buf_t gz, out;
	buf_init(&gz, SIZE_MAX);
	buf_init(&out, 1 << 20);
	assert_int_equal(gz_deflate(slice_make(data, sizeof data), 6, &gz), 0);
	err_t err = {0};

	/* A flipped byte in the deflate data or the CRC. */
	size_t where[] = {20, gz.n - 7};
	for (size_t i = 0; i < 2; i++) {
		gz.p[where[i]] ^= 0x55;
		assert_int_equal(gz_inflate(buf_slice(&gz), &out, &err), -1);
		assert_int_equal(err.status, 400);
		assert_non_null(strstr(err.msg, "gzip body is corrupt: "));
		assert_int_equal(out.n, 0);
		gz.p[where[i]] ^= 0x55;
	}
	/* Every truncation. */
	for (size_t n = 0; n < gz.n; n++) {
		buf_reset(&out);
		assert_int_equal(gz_inflate(slice_make(gz.p, n), &out, &err), -1);
		assert_int_equal(err.status, 400);
	}
	/* Not gzip at all. */
	assert_int_equal(gz_inflate(slice_make("this is not gzip, not at all", 28), &out, &err), -1);
	assert_int_equal(err.status, 400);
	assert_non_null(strstr(err.msg, "not a gzip stream"));
	buf_free(&gz);
	buf_free(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_is_gzip),
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_concatenated_members),
	    cmocka_unit_test(test_bomb),
	    cmocka_unit_test(test_exact_limit),
	    cmocka_unit_test(test_corrupt),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
