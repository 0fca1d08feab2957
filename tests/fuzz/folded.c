/* libFuzzer target for wire/folded.c and the folded push decoder
 * (ingest/folded_push.c). The first byte picks the format (0 groups, 1
 * lines, 2 none: sniffed, pprof or groups) and two query parameters; the
 * rest is the body. It checks for crashes and UB; that the reader's stacks
 * stay within the text and its bounds (non-empty frames without ';', at most
 * LIMIT_STACK_DEPTH of them and each at most LIMIT_STRING_BYTES, a
 * non-negative count, rising line numbers) and that its errors are 400/413
 * "line N: ..." with N a line of the text; and that the decoder answers a
 * batch of one profile with at most LIMIT_SAMPLE_ROWS samples or a 400/413. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/limits.h"
#include "ingest/folded_push.h"
#include "wire/folded.h"

#define NOW_NS 1760000000000000000LL /* a fixed now: no clock in the target */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_reader(slice_t text, int format)
{
	static folded_reader_t r;
	folded_init(&r, text, format);
	size_t lines = 1;
	for (size_t i = 0; i < text.n; i++)
		lines += text.p[i] == '\n';
	err_t err = {0};
	uint32_t last = 0;
	int rc;
	while ((rc = folded_next(&r, &err)) > 0) {
		if (r.line <= last || r.line > lines || r.value < 0 ||
		    (format == FOLDED_LINES && r.value != 1) || r.n_frames == 0 ||
		    r.n_frames > LIMIT_STACK_DEPTH ||
		    r.n_frames != (r.depth < LIMIT_STACK_DEPTH ? r.depth : LIMIT_STACK_DEPTH))
			abort();
		last = r.line;
		for (uint32_t i = 0; i < r.n_frames; i++) {
			slice_t f = r.frames[i];
			if (!f.n || f.n > LIMIT_STRING_BYTES || f.p < text.p || f.p + f.n > text.p + text.n ||
			    memchr(f.p, ';', f.n))
				abort();
		}
	}
	if (rc < 0 && ((err.status != 400 && err.status != 413) || strncmp(err.msg, "line ", 5) != 0 ||
	               strtoull(err.msg + 5, NULL, 10) <= last || strtoull(err.msg + 5, NULL, 10) > lines))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > (1u << 20))
		return 0;
	slice_t body = slice_make(data + 1, size - 1);
	int format = data[0] % 3 == 2 ? INGEST_FOLDED_SNIFF : data[0] % 3;
	check_reader(body, format == FOLDED_LINES ? FOLDED_LINES : FOLDED_GROUPS);

	static const char *units[] = {NULL, "samples", "objects", "bytes", "goroutines", "bad"};
	static const char *rates[] = {NULL, "100", "0", "7", "1000000000", "x"};
	ingest_pprof_push_t pp = {
	    .req = {.project = slice_cstr("p"),
	            .service = slice_cstr("svc"),
	            .max_rows = 100,
	            .now_ns = NOW_NS},
	};
	ingest_folded_push_t fp = {
	    .pprof = &pp,
	    .format = format,
	    .units = units[(data[0] >> 2) % 6],
	    .aggregation = data[0] & 0x80 ? "average" : NULL,
	    .sample_rate = rates[(data[0] >> 4) % 6],
	};
	ingest_push_t p = {.body = body, .ctx = &fp};
	err_t err = {0};
	int rc = ingest_folded_decode(&p, &err);
	if (rc == 0 && (!p.batch || p.batch->n_profiles == 0 ||
	                (format != INGEST_FOLDED_SNIFF &&
	                 (p.batch->n_profiles != 1 || p.batch->profiles[0].samples_count > 100))))
		abort();
	if (rc < 0 && err.status != 400 && err.status != 413)
		abort();
	if (p.batch)
		model_batch_free(p.batch);
	return 0;
}
