/* libFuzzer target for the write-ahead log's batch decoder
 * (store/batch_codec.c): arbitrary bytes as a log record's batch. A decode
 * that fails must leave the batch zeroed; one that succeeds must hold only
 * indexes and ranges in bounds (walked here, so ASan sees any that is not),
 * and must be stable: its encoding decodes again and encodes to the same
 * bytes. Seeds (tests/fuzz/corpus/batch_codec/) are the encodings of the
 * tests/data fixtures, written by `build/bench/batch_codec --seeds DIR
 * FILE...`, plus damaged copies from the libFuzzer runs. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "model/model.h"
#include "store/batch_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Touches every element an index or range points at; traps on one out of bounds. */
static uint64_t walk(const model_batch_t *b)
{
	uint64_t h = b->project.n;
	if (b->n_attrsets < 1 || b->attrsets[0].count || b->attrsets[0].id)
		__builtin_trap();
	for (uint32_t i = 0; i < b->n_nodes; i++) {
		const model_node_t *n = &b->nodes[i];
		if (n->frame >= b->n_frames || (n->parent != MODEL_NONE && n->parent >= i))
			__builtin_trap();
		h += b->frames[n->frame].name.n;
	}
	for (uint32_t i = 1; i < b->n_attrsets; i++) {
		const model_attrset_t *a = &b->attrsets[i];
		if ((uint64_t)a->first + a->count > b->n_attr_labels)
			__builtin_trap();
		for (uint32_t k = 0; k < a->count; k++)
			h += b->attr_labels[a->first + k].value.n;
	}
	for (uint32_t i = 0; i < b->n_samples; i++) {
		const model_sample_t *s = &b->samples[i];
		if ((s->node != MODEL_NONE && s->node >= b->n_nodes) || s->attrset >= b->n_attrsets)
			__builtin_trap();
		h += s->node == MODEL_NONE ? 0 : b->nodes[s->node].id;
	}
	for (uint32_t i = 0; i < b->n_profiles; i++) {
		const model_profile_t *p = &b->profiles[i];
		if ((uint64_t)p->labels_first + p->labels_count > b->n_series_labels ||
		    (uint64_t)p->samples_first + p->samples_count > b->n_samples)
			__builtin_trap();
		if (p->labels_count)
			h += b->series_labels[p->labels_first + p->labels_count - 1].key.n;
		if (p->samples_count)
			h += (uint64_t)b->samples[p->samples_first + p->samples_count - 1].value;
	}
	return h;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	arena_t *a = arena_new();
	model_batch_t b;
	err_t err = {0};
	if (batch_codec_decode(slice_make(data, size), a, &b, &err) < 0) {
		if (err.status != 500 || strncmp(err.msg, "batch record: ", 14) != 0 || b.frames ||
		    b.n_samples)
			__builtin_trap();
		arena_free(a);
		return 0;
	}
	volatile uint64_t sink = walk(&b);
	(void)sink;
	buf_t e1, e2;
	buf_init(&e1, SIZE_MAX);
	buf_init(&e2, SIZE_MAX);
	if (batch_codec_encode(&b, &e1) < 0)
		__builtin_trap();
	arena_t *a2 = arena_new();
	model_batch_t b2;
	if (batch_codec_decode(buf_slice(&e1), a2, &b2, &err) < 0 || batch_codec_encode(&b2, &e2) < 0 ||
	    e1.n != e2.n || memcmp(e1.p, e2.p, e1.n) != 0)
		__builtin_trap();
	buf_free(&e1);
	buf_free(&e2);
	arena_free(a2);
	arena_free(a);
	return 0;
}
