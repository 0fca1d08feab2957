/* libFuzzer target for wire/jfr.c: jfr_decode of the input as a JFR
 * recording (several chunks, every section reached through the header's
 * offsets), and the symbol renaming of the input as a name. It checks for
 * crashes, leaks and undefined behaviour, and that an answer keeps the
 * decoder's contract: on success every profile is named, within the time
 * range and at most max_rows samples; on failure a 400 or 413 whose message
 * names the chunk and an offset inside the input (or the empty body). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "model/model.h"
#include "wire/jfr.h"
#include "wire/jfr_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > (8u << 20))
		return 0;
	jfr_decode_opts_t o = {.service = slice_cstr("svc"),
	                       .from_ns = 1706241880000000000LL,
	                       .until_ns = 1706241890000000000LL,
	                       .sample_rate = 100,
	                       .max_rows = 64};
	model_batch_t *b = model_batch_new(slice_cstr("p"));
	err_t err = {0};
	int rc = jfr_decode(slice_make(data, size), &o, b, &err);
	if (rc == 0) {
		for (uint32_t i = 0; i < b->n_profiles; i++) {
			const model_profile_t *p = &b->profiles[i];
			if (p->samples_count > 64 || p->time_ns != o.from_ns ||
			    p->duration_ns != o.until_ns - o.from_ns || p->labels_count != 1)
				abort();
			if (!model_profile_name_valid(b->series_labels[p->labels_first].value))
				abort();
		}
	} else {
		if (err.status != 400 && err.status != 413)
			abort();
		if (strncmp(err.msg, "chunk ", 6) == 0) {
			const char *at = strstr(err.msg, " at offset ");
			if (!at || strtoull(at + 11, NULL, 10) > size)
				abort();
		} else if (size != 0) {
			abort();
		}
	}
	model_batch_free(b);

	arena_t *a = arena_new();
	slice_t s = jfr_symbol_merge(a, slice_make(data, size < 512 ? size : 512));
	if (s.n > (size < 512 ? size : 512) + 1)
		abort();
	arena_free(a);
	return 0;
}
