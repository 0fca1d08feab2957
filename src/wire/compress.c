/* gzip with a hard output bound (compress.h), on libdeflate: whole-buffer
 * inflate of each member into a buffer that never grows past out->max.
 * No streaming and no zstd here; callers hold the whole body in memory. */
#include "wire/compress.h"

#include <libdeflate.h>
#include <stdint.h>

#include "base/err.h"

int gz_is_gzip(slice_t in)
{
	return in.n >= 2 && in.p[0] == 0x1f && in.p[1] == 0x8b;
}

static int too_big(kn_err *err, size_t max)
{
	if (max >= (1u << 20) && max % (1u << 20) == 0)
		return err_set(err, 413, "decompressed body exceeds the %zu MiB limit", max >> 20);
	return err_set(err, 413, "decompressed body exceeds the %zu-byte limit", max);
}

static const char *result_name(enum libdeflate_result r)
{
	switch (r) {
	case LIBDEFLATE_BAD_DATA:
		return "invalid deflate data or checksum mismatch";
	case LIBDEFLATE_SHORT_OUTPUT:
		return "output shorter than expected";
	default:
		return "decompression failed";
	}
}

/* The first guess of a member's size: the ISIZE trailer of the remaining
 * input (exact for the last member, a hint otherwise; a liar only costs a
 * retry) but at least as large as the compressed data itself. */
static size_t first_guess(const uint8_t *p, size_t n, size_t room)
{
	uint32_t isize = (uint32_t)p[n - 4] | (uint32_t)p[n - 3] << 8 | (uint32_t)p[n - 2] << 16 |
	                 (uint32_t)p[n - 1] << 24;
	size_t g = isize > n ? isize : n;
	return g < room ? g : room;
}

int gz_inflate(slice_t in, buf_t *out, kn_err *err)
{
	if (in.n == 0)
		return err_set(err, 400, "gzip body is corrupt: empty body");
	struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
	if (!d)
		return err_set(err, 500, "out of memory for the gzip decompressor");
	size_t start = out->n;
	const uint8_t *p = in.p;
	size_t left = in.n;
	int rc = -1;
	for (unsigned member = 0; left > 0; member++) {
		/* 10-byte header + 8-byte trailer is the smallest possible member. */
		if (!gz_is_gzip(slice_make(p, left))) {
			err_set(err, 400, "gzip body is corrupt: %s at byte %zu",
			        member ? "trailing garbage" : "not a gzip stream", in.n - left);
			goto out;
		}
		if (left < 18) {
			err_set(err, 400,
			        "gzip body is corrupt: truncated (member %u at byte %zu has %zu bytes)",
			        member, in.n - left, left);
			goto out;
		}
		size_t room = out->max > out->n ? out->max - out->n : 0;
		size_t guess = first_guess(p, left, room);
		for (;;) {
			if (buf_reserve(out, guess) < 0) { /* guess <= room, so only if the caller lied */
				too_big(err, out->max);
				goto out;
			}
			size_t used_in = 0, used_out = 0;
			uint8_t dummy; /* an empty member into a still unallocated buffer */
			uint8_t *dst = out->p ? out->p + out->n : &dummy;
			enum libdeflate_result r =
			    libdeflate_gzip_decompress_ex(d, p, left, dst, guess, &used_in, &used_out);
			if (r == LIBDEFLATE_SUCCESS) {
				out->n += used_out;
				p += used_in;
				left -= used_in;
				break;
			}
			if (r != LIBDEFLATE_INSUFFICIENT_SPACE) {
				err_set(err, 400, "gzip body is corrupt: %s (member %u at byte %zu)",
				        result_name(r), member, in.n - left);
				goto out;
			}
			if (guess >= room) {
				too_big(err, out->max);
				goto out;
			}
			guess = guess > room / 2 ? room : (guess ? guess * 2 : 4096);
			if (guess > room)
				guess = room;
		}
	}
	rc = 0;
out:
	if (rc < 0)
		out->n = start;
	libdeflate_free_decompressor(d);
	return rc;
}

int gz_deflate(slice_t in, int level, buf_t *out)
{
	if (level < 1 || level > 12)
		return -1;
	struct libdeflate_compressor *c = libdeflate_alloc_compressor(level);
	if (!c)
		return -1;
	size_t bound = libdeflate_gzip_compress_bound(c, in.n);
	int rc = -1;
	if (buf_reserve(out, bound) == 0) {
		size_t n = libdeflate_gzip_compress(c, in.p, in.n, out->p + out->n, bound);
		if (n) {
			out->n += n;
			rc = 0;
		}
	}
	libdeflate_free_compressor(c);
	return rc;
}
