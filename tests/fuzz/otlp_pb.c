/* libFuzzer target for the OTLP/HTTP protobuf path: body_decode by the
 * encoding the first byte picks (identity, gzip, zstd, deflate), then
 * otlp_decode with a time window, and both responses; everything freed.
 * It checks for crashes, leaks and undefined behaviour, not values. */
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/limits.h"
#include "model/model.h"
#include "wire/compress.h"
#include "wire/otlp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const encodings[] = {"", "gzip", "zstd", "deflate"};
	if (size == 0)
		return 0;
	/* Byte 0 selects the encoding only when it is one of 0xf0..0xf3, so a
	 * plain request (which starts with 0x0a or 0x12) is used as it is. */
	slice_t in = slice_make(data, size);
	const char *enc = "";
	if (data[0] >= 0xf0 && data[0] <= 0xf3) {
		enc = encodings[data[0] - 0xf0];
		in = slice_make(data + 1, size - 1);
	}
	buf_t body;
	buf_init(&body, 4u << 20); /* smaller than production; the bound logic is the same */
	err_t err = {0};
	if (body_decode(slice_cstr(enc), in, &body, &err) < 0)
		goto out;
	model_batch_t *b = model_batch_new(slice_cstr("fuzz"));
	otlp_decode_opts_t o = {.now_ns = 1700000000000000000,
	                        .min_time_ns = 1600000000000000000,
	                        .max_time_ns = 1800000000000000000,
	                        .max_rows = LIMIT_SAMPLE_ROWS};
	otlp_result_t r;
	if (otlp_decode(buf_slice(&body), &o, b, &r, &err) == 0) {
		buf_t resp;
		buf_init(&resp, SIZE_MAX);
		otlp_response_pb(&r, &resp);
		otlp_response_json(&r, &resp);
		buf_free(&resp);
	}
	model_batch_free(b);
out:
	buf_free(&body);
	return 0;
}
