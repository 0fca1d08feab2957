/* A merged call tree (model_tree_t) → an uncompressed pprof that `go tool pprof`
 * reads: one Function + Location (one Line) per frame used, one Mapping per
 * binary, one Sample per node with self value (the root's: no location).
 * No gzip, no line numbers. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/hash.h"
#include "base/u64map.h"
#include "wire/pb.h"
#include "wire/pprof.h"

typedef struct {
	slice_t *strs;
	size_t n, cap;
	u64map_t ix; /* hash → string index; a collision only costs a duplicate entry */
} str_table_t;

static uint32_t str_id(str_table_t *t, slice_t s)
{
	if (s.n == 0)
		return 0;
	uint64_t h = hash_slice(s, 0x6b696c6e);
	uint32_t i;
	if (u64map_get(&t->ix, h, &i) && slice_eq(t->strs[i], s))
		return i;
	if (t->n >= t->cap)
		t->strs = xgrow(t->strs, &t->cap, t->n + 1, sizeof *t->strs);
	i = (uint32_t)t->n++;
	t->strs[i] = s;
	u64map_put(&t->ix, h, i);
	return i;
}

static slice_t basename_of(slice_t path)
{
	size_t i = path.n;
	while (i > 0 && path.p[i - 1] != '/')
		i--;
	return i < path.n ? slice_make(path.p + i, path.n - i) : path;
}

static void put_value_type(buf_t *b, uint32_t field, str_table_t *st, slice_t type, slice_t unit)
{
	size_t m = pb_begin(b, field);
	pb_put_uint(b, 1, str_id(st, type));
	pb_put_uint(b, 2, str_id(st, unit));
	pb_end(b, m);
}

int pprof_encode(const model_tree_t *t, buf_t *out, err_t *err)
{
	buf_t b;
	buf_init(&b, SIZE_MAX);
	str_table_t st = {0};
	u64map_init(&st.ix);
	u64map_t mapping_ix; /* hash(binary, build_id) → mapping id */
	u64map_init(&mapping_ix);
	uint32_t *frame_mapping = NULL; /* per frame: mapping id, 0 = none, UINT32_MAX = frame unused */
	uint64_t *path = NULL;
	size_t cap_path = 0;
	int rc = -1;

	if (t->n_nodes == 0) {
		err_set(err, 500, "pprof export: the call tree has no root node");
		goto out;
	}
	for (uint32_t i = 1; i < t->n_nodes; i++)
		if (t->parent[i] >= i || t->frame[i] >= t->n_frames) {
			err_set(err, 500, "pprof export: call tree node %" PRIu32 " is inconsistent", i);
			goto out;
		}
	st.strs = xgrow(st.strs, &st.cap, 1, sizeof *st.strs);
	st.strs[st.n++] = slice_make("", 0); /* string_table[0] */

	put_value_type(&b, 1, &st, t->sample_type, t->sample_unit);

	/* Which frames are used, and their mappings (ids are 1-based). */
	frame_mapping = xmalloc((t->n_frames ? t->n_frames : 1) * sizeof *frame_mapping);
	for (uint32_t f = 0; f < t->n_frames; f++)
		frame_mapping[f] = UINT32_MAX;
	uint32_t n_mappings = 0;
	for (uint32_t i = 1; i < t->n_nodes; i++) {
		uint32_t f = t->frame[i];
		if (frame_mapping[f] != UINT32_MAX)
			continue;
		const model_frame_t *fr = &t->frames[f];
		frame_mapping[f] = 0;
		if (fr->binary.n == 0)
			continue;
		uint64_t h = hash_pair(hash_slice(fr->binary, 1), hash_slice(fr->build_id, 2));
		int inserted;
		uint32_t id = u64map_get_or_put(&mapping_ix, h, n_mappings + 1, &inserted);
		if (inserted) {
			/* A hash collision would merge two binaries' mappings: names only. */
			n_mappings++;
			size_t m = pb_begin(&b, 3);
			pb_put_uint(&b, 1, id);
			pb_put_uint(&b, 5, str_id(&st, fr->binary));
			pb_put_uint(&b, 6, str_id(&st, fr->build_id));
			pb_put_uint(&b, 7, fr->unsymbolized ? 0 : 1); /* has_functions */
			pb_end(&b, m);
		}
		frame_mapping[f] = id;
	}

	/* One Location and one Function per used frame; both ids = frame index + 1. */
	for (uint32_t f = 0; f < t->n_frames; f++) {
		if (frame_mapping[f] == UINT32_MAX)
			continue;
		const model_frame_t *fr = &t->frames[f];
		slice_t name = fr->name;
		if (name.n == 0)
			name = fr->binary.n ? basename_of(fr->binary) : slice_cstr("unknown");
		size_t m = pb_begin(&b, 5);
		pb_put_uint(&b, 1, (uint64_t)f + 1);
		pb_put_uint(&b, 2, str_id(&st, name));
		pb_put_uint(&b, 3, str_id(&st, name));
		pb_put_uint(&b, 4, str_id(&st, fr->file));
		pb_end(&b, m);

		m = pb_begin(&b, 4);
		pb_put_uint(&b, 1, (uint64_t)f + 1);
		pb_put_uint(&b, 2, frame_mapping[f]);
		size_t l = pb_begin(&b, 4);
		pb_put_uint(&b, 1, (uint64_t)f + 1);
		pb_end(&b, l);
		pb_end(&b, m);
	}

	/* One Sample per node with a self value: its path to the root, leaf
	 * first; the root's self (empty stacks) is a Sample with no location. */
	for (uint32_t i = 0; i < t->n_nodes; i++) {
		if (t->self[i] == 0)
			continue;
		size_t n = 0;
		for (uint32_t k = i; k != 0; k = t->parent[k]) {
			if (n >= cap_path)
				path = xgrow(path, &cap_path, n + 1, sizeof *path);
			path[n++] = (uint64_t)t->frame[k] + 1;
		}
		uint64_t v = (uint64_t)t->self[i];
		size_t m = pb_begin(&b, 2);
		pb_put_packed(&b, 1, path, n); /* nothing for the root */
		pb_put_packed(&b, 2, &v, 1);
		pb_end(&b, m);
	}

	if (t->period_type.n || t->period_unit.n)
		put_value_type(&b, 11, &st, t->period_type, t->period_unit);
	pb_put_int64(&b, 12, t->period);
	pb_put_int64(&b, 9, t->time_ns);
	pb_put_int64(&b, 10, t->duration_ns);
	/* The string table goes last: only now is it complete. Field order does
	 * not matter in protobuf. */
	for (size_t s = 0; s < st.n; s++)
		pb_put_bytes(&b, 6, st.strs[s]);

	if (buf_append(out, b.p, b.n) < 0) {
		err_set(err, 413, "pprof export is %zu bytes; the output limit is %zu bytes", b.n, out->max);
		goto out;
	}
	rc = 0;
out:
	buf_free(&b);
	free(st.strs);
	u64map_free(&st.ix);
	u64map_free(&mapping_ix);
	free(frame_mapping);
	free(path);
	return rc;
}
