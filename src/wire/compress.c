/* Bounded decompression (compress.h): gzip and deflate on libdeflate
 * (whole-buffer inflate into a buffer that never grows past out->max), zstd
 * on libzstd's streaming decoder. Callers hold the whole body in memory. */
#include "wire/compress.h"

#include <libdeflate.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "base/alloc.h"
#include "base/err.h"

int gz_is_gzip(slice_t in)
{
	return in.n >= 2 && in.p[0] == 0x1f && in.p[1] == 0x8b;
}

static int too_big(err_t *err, size_t max)
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

static pthread_key_t dd_key;
static pthread_once_t dd_once = PTHREAD_ONCE_INIT;

static void dd_free(void *d)
{
	libdeflate_free_decompressor(d);
}

static void dd_key_make(void)
{
	xpthread_key_create(&dd_key, dd_free);
}

/* This thread's decompressor, made at its first body and freed when it
 * exits: libdeflate's allocation zeroes ~11 KB of tables, once a thread
 * instead of once a body (a decompressor keeps no state between calls). */
static struct libdeflate_decompressor *decompressor(void)
{
	pthread_once(&dd_once, dd_key_make);
	struct libdeflate_decompressor *d = pthread_getspecific(dd_key);
	if (!d) {
		d = xcheck(libdeflate_alloc_decompressor());
		xpthread_setspecific(dd_key, d);
	}
	return d;
}

int gz_inflate(slice_t in, buf_t *out, err_t *err)
{
	if (in.n == 0)
		return err_set(err, 400, "gzip body is corrupt: empty body");
	struct libdeflate_decompressor *d = decompressor();
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
	return rc;
}

int gz_deflate(slice_t in, int level, buf_t *out)
{
	if (level < 1 || level > 12)
		return -1;
	struct libdeflate_compressor *c = xcheck(libdeflate_alloc_compressor(level));
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

/* ---- zstd ------------------------------------------------------------------ */

int zstd_inflate(slice_t in, buf_t *out, err_t *err)
{
	if (in.n == 0)
		return err_set(err, 400, "zstd body is corrupt: empty body");
	ZSTD_DStream *ds = xcheck(ZSTD_createDStream());
	/* The window is memory the decoder allocates on the frame's say-so:
	 * no more than the output could ever hold (and at least zstd's minimum). */
	int wlog = 10;
	while (wlog < 31 && ((size_t)1 << wlog) < out->max)
		wlog++;
	ZSTD_DCtx_setParameter(ds, ZSTD_d_windowLogMax, wlog);
	size_t start = out->n;
	ZSTD_inBuffer ib = {in.p, in.n, 0};
	int rc = -1;
	size_t ret = 1;
	for (;;) {
		size_t room = out->max - out->n;
		if (out->cap - out->n == 0 && room > 0) {
			size_t want = out->n ? out->n : (in.n > 4096 ? in.n * 2 : 8192);
			if (want > room)
				want = room;
			if (buf_reserve(out, want) < 0) {
				too_big(err, out->max);
				goto out;
			}
		}
		size_t avail = out->cap - out->n;
		if (avail > room)
			avail = room;
		uint8_t probe; /* at the ceiling: does any output remain? */
		ZSTD_outBuffer ob = {avail ? out->p + out->n : &probe, avail ? avail : 1, 0};
		ret = ZSTD_decompressStream(ds, &ob, &ib);
		if (ZSTD_isError(ret) && ZSTD_getErrorCode(ret) == ZSTD_error_frameParameter_windowTooLarge) {
			too_big(err, out->max); /* the frame says its content may be that large */
			goto out;
		}
		if (ZSTD_isError(ret)) {
			err_set(err, 400, "zstd body is corrupt: %s (input byte %zu)", ZSTD_getErrorName(ret),
			        ib.pos);
			goto out;
		}
		if (!avail && ob.pos) {
			too_big(err, out->max);
			goto out;
		}
		out->n += avail ? ob.pos : 0;
		if (ret == 0 && ib.pos == ib.size)
			break; /* every frame complete and flushed */
		if (ib.pos == ib.size && ob.pos < ob.size) {
			err_set(err, 400, "zstd body is corrupt: truncated (%zu bytes)", in.n);
			goto out;
		}
	}
	rc = 0;
out:
	if (rc < 0)
		out->n = start;
	ZSTD_freeDStream(ds);
	return rc;
}

int zstd_deflate(slice_t in, int level, buf_t *out)
{
	if (level < 1 || level > 19)
		return -1;
	size_t bound = ZSTD_compressBound(in.n);
	if (buf_reserve(out, bound) < 0)
		return -1;
	size_t n = ZSTD_compress(out->p + out->n, bound, in.p, in.n, level);
	if (ZSTD_isError(n))
		return -1;
	out->n += n;
	return 0;
}

/* ---- deflate ------------------------------------------------------------------ */

static int is_zlib_header(slice_t in)
{
	return in.n >= 2 && (in.p[0] & 0x0f) == 8 && (in.p[0] >> 4) <= 7 &&
	       ((unsigned)in.p[0] << 8 | in.p[1]) % 31 == 0;
}

int zlib_inflate(slice_t in, buf_t *out, err_t *err)
{
	if (in.n == 0)
		return err_set(err, 400, "deflate body is corrupt: empty body");
	struct libdeflate_decompressor *d = decompressor();
	int zlib = is_zlib_header(in);
	size_t room = out->max > out->n ? out->max - out->n : 0;
	size_t guess = in.n > room / 4 ? room : (in.n * 4 > 4096 ? in.n * 4 : 4096);
	if (guess > room)
		guess = room;
	int rc = -1;
	for (;;) {
		if (buf_reserve(out, guess) < 0) {
			too_big(err, out->max);
			break;
		}
		size_t used_in = 0, used_out = 0;
		uint8_t dummy;
		uint8_t *dst = out->p ? out->p + out->n : &dummy;
		enum libdeflate_result r =
		    zlib ? libdeflate_zlib_decompress_ex(d, in.p, in.n, dst, guess, &used_in, &used_out)
		         : libdeflate_deflate_decompress_ex(d, in.p, in.n, dst, guess, &used_in, &used_out);
		if (r == LIBDEFLATE_SUCCESS) {
			if (used_in != in.n) {
				err_set(err, 400, "deflate body is corrupt: trailing garbage at byte %zu",
				        used_in);
				break;
			}
			out->n += used_out;
			rc = 0;
			break;
		}
		if (r != LIBDEFLATE_INSUFFICIENT_SPACE) {
			err_set(err, 400, "deflate body is corrupt: %s (%s stream)", result_name(r),
			        zlib ? "zlib" : "raw deflate");
			break;
		}
		if (guess >= room) {
			too_big(err, out->max);
			break;
		}
		guess = guess > room / 2 ? room : guess * 2;
	}
	return rc;
}

/* ---- By Content-Encoding ----------------------------------------------------------- */

static int enc_is(slice_t e, const char *name)
{
	size_t n = strlen(name);
	return e.n == n && strncasecmp((const char *)e.p, name, n) == 0;
}

int body_decode(slice_t encoding, slice_t in, buf_t *out, err_t *err)
{
	if (encoding.n == 0 || enc_is(encoding, "identity")) {
		if (buf_append(out, in.p, in.n) < 0)
			return too_big(err, out->max);
		return 0;
	}
	if (enc_is(encoding, "gzip") || enc_is(encoding, "x-gzip"))
		return gz_inflate(in, out, err);
	if (enc_is(encoding, "zstd"))
		return zstd_inflate(in, out, err);
	if (enc_is(encoding, "deflate"))
		return zlib_inflate(in, out, err);
	return err_set(err, 415,
	               "unsupported content encoding \"%.*s\": Kiln accepts gzip, zstd, deflate or identity",
	               (int)(encoding.n > 40 ? 40 : encoding.n), (const char *)encoding.p);
}
