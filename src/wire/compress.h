/* Decompression with a hard output bound: never allocates past the limit,
 * whatever the input claims (gzip/zstd/deflate bombs, lying size fields). */
#ifndef KILN_WIRE_COMPRESS_H
#define KILN_WIRE_COMPRESS_H

#include "base/buf.h"
#include "base/err.h"

int gz_is_gzip(slice_t in); /* magic bytes 1f 8b */
/* Inflates a gzip stream (concatenated members allowed) into out, whose
 * ceiling must be set; the limit is out->max. 413 naming the limit when the
 * output would pass it, 400 for corrupt data. */
int gz_inflate(slice_t in, buf_t *out, err_t *err);
/* Compresses in as gzip (level 1..12, libdeflate levels), appended to out. */
int gz_deflate(slice_t in, int level, buf_t *out);

/* Decompresses zstd frames (concatenated frames allowed) into out, streaming
 * so that out never grows past out->max: 413 naming the limit past it (or
 * for a frame whose window passes it), 400 for corrupt or truncated data. */
int zstd_inflate(slice_t in, buf_t *out, err_t *err);
/* Compresses in as one zstd frame (level 1..19), appended to out. For tests
 * and benches; -1 on failure. */
int zstd_deflate(slice_t in, int level, buf_t *out);
/* HTTP `Content-Encoding: deflate`: a zlib stream (RFC 1950, as RFC 9110
 * says), or raw deflate when the zlib header is absent, as some senders do.
 * Same bounds and statuses as gz_inflate. */
int zlib_inflate(slice_t in, buf_t *out, err_t *err);
/* Decodes a body by its Content-Encoding (or grpc-encoding) into out:
 * "gzip" (or "x-gzip"), "zstd", "deflate", "identity" or "" (copied);
 * case-insensitive. 415 for any other encoding, naming the supported ones;
 * otherwise the statuses above. */
int body_decode(slice_t encoding, slice_t in, buf_t *out, err_t *err);

#endif
