/* Decompression with a hard output bound: never allocates past the limit,
 * whatever the input claims (gzip bombs, lying ISIZE trailers). */
#ifndef KILN_WIRE_COMPRESS_H
#define KILN_WIRE_COMPRESS_H

#include "base/buf.h"
#include "base/err.h"

int gz_is_gzip(slice_t in); /* magic bytes 1f 8b */
/* Inflates a gzip stream (concatenated members allowed) into out, whose
 * ceiling must be set; the limit is out->max. 413 naming the limit when the
 * output would pass it, 400 for corrupt data. */
int gz_inflate(slice_t in, buf_t *out, kn_err *err);
/* Compresses in as gzip (level 1..12, libdeflate levels), appended to out. */
int gz_deflate(slice_t in, int level, buf_t *out);

#endif
