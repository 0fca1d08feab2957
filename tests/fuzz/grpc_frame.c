/* libFuzzer target for net/grpc.c's request framing (grpc_frame_check), fed
 * as the server sees a body: the first byte sets how many bytes each DATA
 * frame adds and a small max_message; the body is checked after every frame,
 * then once complete. When the message is whole and compressed it is
 * decompressed with the same bound (gzip or zstd, by a bit of the first
 * byte). It checks for crashes, leaks and UB and that verdicts agree. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "net/grpc.h"
#include "wire/compress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t piece = 1 + (data[0] & 0x3f);
	size_t max = data[0] & 0x40 ? 64 : 1u << 20;
	const uint8_t *body = data + 1;
	size_t n = size - 1, seen = 0;
	grpc_frame_t f;
	char m[160];
	int code = GRPC_OK;
	while (seen < n && code == GRPC_OK) { /* as DATA frames arrive */
		seen += n - seen < piece ? n - seen : piece;
		code = grpc_frame_check(slice_make(body, seen), 0, max, &f, m, sizeof m);
		if (f.whole || (code != GRPC_OK && !memchr(m, 0, sizeof m)))
			abort();
	}
	if (code != GRPC_OK)
		return 0; /* answered early: the server reads no further */
	code = grpc_frame_check(slice_make(body, n), 1, max, &f, m, sizeof m);
	if ((code == GRPC_OK) != f.whole)
		abort();
	if (code != GRPC_OK)
		return 0;
	if (f.msg.n != f.len || f.msg.n > max || f.compressed > 1 || f.msg.p + f.msg.n != body + n)
		abort();
	if (f.compressed) {
		buf_t out;
		buf_init(&out, max);
		err_t err = {0};
		if (data[0] & 0x80)
			gz_inflate(f.msg, &out, &err);
		else
			zstd_inflate(f.msg, &out, &err);
		if (out.n > max)
			abort();
		buf_free(&out);
	}
	return 0;
}
