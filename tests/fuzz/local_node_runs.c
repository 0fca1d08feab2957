/* libFuzzer target for format 2's stack-node runs (store/local_chunk.c:
 * local_node_run_decode, what a day file's node_runs rows hold). Input:
 * varint first (1..4096), varint count (0..4096), varint max frame, then
 * the run's bytes (the rest). A decode that fails must say what; one that
 * succeeds must give every node a parent below it and a frame in
 * 1..max_frame (walked here, so ASan sees an index out of its arrays), and
 * must be stable: encoded again (local_node_run_add) it decodes to the same
 * nodes. Seeds (tests/fuzz/corpus/local_node_runs/) are hand-made runs. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/num.h"
#include "store/local.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	uint64_t first, n, max_frame;
	if (num_uvarint_get(&p, end, &first) < 0 || num_uvarint_get(&p, end, &n) < 0 ||
	    num_uvarint_get(&p, end, &max_frame) < 0 || first < 1 || first > 4096 || n > 4096 ||
	    max_frame > UINT32_MAX)
		return 0;
	size_t len = (size_t)(first + n);
	uint32_t *parent = xcalloc(len, sizeof *parent), *frame = xcalloc(len, sizeof *frame);
	const char *what = NULL;
	slice_t run = slice_make(p, (size_t)(end - p));
	if (local_node_run_decode(run, (uint32_t)first, (uint32_t)n, (uint32_t)max_frame, parent, frame,
	                          &what) < 0) {
		if (!what || !*what)
			__builtin_trap();
	} else {
		buf_t again;
		buf_init(&again, SIZE_MAX);
		for (uint32_t k = (uint32_t)first; k < len; k++) {
			if (parent[k] >= k || frame[k] < 1 || frame[k] > max_frame)
				__builtin_trap();
			local_node_run_add(&again, k, parent[k], frame[k]);
		}
		uint32_t *parent2 = xcalloc(len, sizeof *parent2), *frame2 = xcalloc(len, sizeof *frame2);
		if (local_node_run_decode(slice_make(again.p, again.n), (uint32_t)first, (uint32_t)n,
		                          (uint32_t)max_frame, parent2, frame2, &what) < 0 ||
		    memcmp(parent, parent2, len * sizeof *parent) ||
		    memcmp(frame, frame2, len * sizeof *frame))
			__builtin_trap();
		free(parent2);
		free(frame2);
		buf_free(&again);
	}
	free(parent);
	free(frame);
	return 0;
}
