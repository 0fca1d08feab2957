/* libFuzzer target for the pprof upload path: gzip detection and bounded
 * inflate, then pprof_sample_types and the Pyroscope profile name of the
 * sample types (what /ingest reads before decoding), then pprof_decode into
 * a batch, everything freed. It checks for crashes, leaks and undefined
 * behaviour, not for decoded values (but a derived name must be valid). */
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/limits.h"
#include "model/model.h"
#include "wire/compress.h"
#include "wire/pprof.h"
#include "wire/sample_type_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	slice_t in = slice_make(data, size);
	buf_t inflated;
	/* A smaller ceiling than production keeps each run fast; the bound
	 * logic is the same. */
	buf_init(&inflated, 4u << 20);
	err_t err = {0};
	if (gz_is_gzip(in)) {
		if (gz_inflate(in, &inflated, &err) < 0)
			goto out;
		in = buf_slice(&inflated);
	}
	slice_t types[LIMIT_SAMPLE_TYPES];
	uint32_t n = pprof_sample_types(in, types, LIMIT_SAMPLE_TYPES);
	slice_t name = pyro_stc_profile_name(NULL, types, n);
	if (name.n && !model_profile_name_valid(name))
		__builtin_trap();
	model_batch_t *b = model_batch_new(slice_cstr("fuzz"));
	pprof_decode_opts_t opts = {
	    .service = slice_cstr("fuzz"), .now_ns = 1, .max_rows = LIMIT_SAMPLE_ROWS};
	pprof_decode(in, &opts, b, &err);
	model_batch_free(b);
out:
	buf_free(&inflated);
	return 0;
}
