/* libFuzzer target for the OTLP/HTTP JSON path: otlp_json_to_pb, then
 * otlp_decode of what it produced; everything freed. It checks for crashes,
 * leaks and undefined behaviour, not values. */
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/limits.h"
#include "model/model.h"
#include "wire/otlp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	buf_t pb;
	buf_init(&pb, 4u << 20);
	err_t err = {0};
	if (otlp_json_to_pb(slice_make(data, size), &pb, &err) == 0) {
		model_batch_t *b = model_batch_new(slice_cstr("fuzz"));
		otlp_decode_opts_t o = {.now_ns = 1, .max_rows = LIMIT_SAMPLE_ROWS};
		otlp_result_t r;
		otlp_decode(buf_slice(&pb), &o, b, &r, &err);
		model_batch_free(b);
	}
	buf_free(&pb);
	return 0;
}
