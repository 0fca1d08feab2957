/* Tests of src/model/model.c: content-hash identities and profile assembly. */
#include "testutil.h"

#include "base/hash.h"
#include "model/model.h"

static uint32_t frame(model_batch_t *b, const char *name)
{
	model_frame_t f = {.name = slice_cstr(name), .file = slice_cstr("main.go")};
	return model_frame_intern(b, &f);
}

static void test_identities_are_content_hashes(void **state)
{
	model_batch_t *a = model_batch_new(slice_cstr("p")), *b = model_batch_new(slice_cstr("p"));
	/* Different insertion order, same ids. */
	uint32_t a_main = frame(a, "main"), a_f = frame(a, "f");
	uint32_t b_f = frame(b, "f"), b_main = frame(b, "main");
	assert_true(a->frames[a_main].id == b->frames[b_main].id);
	assert_true(a->frames[a_f].id == b->frames[b_f].id);
	assert_int_equal(frame(a, "main"), a_main); /* interned */
	uint32_t an = model_node_intern(a, model_node_intern(a, MODEL_NONE, a_main), a_f);
	uint32_t bn = model_node_intern(b, model_node_intern(b, MODEL_NONE, b_main), b_f);
	assert_true(a->nodes[an].id == b->nodes[bn].id);
	/* f under main differs from f at the root. */
	uint32_t root_f = model_node_intern(a, MODEL_NONE, a_f);
	assert_true(a->nodes[root_f].id != a->nodes[an].id);
	/* Field boundaries matter: ("ab","c") vs ("a","bc"). */
	model_frame_t x = {.name = slice_cstr("ab"), .file = slice_cstr("c")};
	model_frame_t y = {.name = slice_cstr("a"), .file = slice_cstr("bc")};
	assert_true(a->frames[model_frame_intern(a, &x)].id != a->frames[model_frame_intern(a, &y)].id);
	/* The ids are base/hash.h's (model.c inlines XXH3): what is stored. */
	uint64_t h = 0x4652414d45ULL;
	slice_t fields[5] = {slice_cstr("ab"), slice_cstr("c"), {0}, {0}, {0}};
	for (int i = 0; i < 5; i++) {
		h = hash_pair(h, fields[i].n);
		if (fields[i].n)
			h = hash_bytes(fields[i].p, fields[i].n, h);
	}
	h = hash_pair(h, 0);
	assert_true(a->frames[model_frame_intern(a, &x)].id == h);
	assert_true(a->nodes[an].id == hash_pair(hash_pair(0, a->frames[a_main].id), a->frames[a_f].id));
	model_batch_free(a);
	model_batch_free(b);
}

static void test_profile_finish_merges_and_drops_zero(void **state)
{
	model_batch_t *b = model_batch_new(slice_cstr("p"));
	uint32_t n1 = model_node_intern(b, MODEL_NONE, frame(b, "main"));
	uint32_t n2 = model_node_intern(b, n1, frame(b, "f"));
	model_label_t l[2] = {{slice_cstr("span_id"), slice_cstr("s1")}, {slice_cstr("a"), slice_cstr("b")}};
	uint32_t as = model_attrset_intern(b, l, 2);
	assert_int_equal(as, 1);
	assert_true(slice_eq_cstr(b->attr_labels[b->attrsets[as].first].key, "a")); /* sorted */
	model_profile_t *p = model_profile_add(b);
	model_profile_set_type(b, p, slice_cstr("inuse_space"), slice_cstr("bytes"), slice_cstr("space"),
	                       slice_cstr("bytes"), 512);
	model_profile_set_service(b, p, slice_cstr("svc"));
	model_profile_add_label(b, p, slice_cstr("z"), slice_cstr("1"));
	model_profile_add_label(b, p, slice_cstr("a"), slice_cstr("2"));
	model_sample_add(b, p, n2, 0, 10, 0);
	model_sample_add(b, p, n1, 0, 0, 0);
	model_sample_add(b, p, n2, 0, 5, 0);
	model_sample_add(b, p, n2, as, 7, 0);
	model_profile_finish(b, p);
	assert_int_equal(p->aggregation, MODEL_SNAPSHOT);
	assert_int_equal(p->samples_count, 2);
	assert_int_equal(b->n_samples, 2);
	assert_true(b->samples[0].node == n2 && b->samples[0].attrset == 0 && b->samples[0].value == 15);
	assert_true(b->samples[1].attrset == as && b->samples[1].value == 7);
	assert_true(slice_eq_cstr(b->series_labels[p->labels_first].key, "a"));
	assert_true(p->series_id != 0);
	char name[64];
	model_type_name(p, name, sizeof name);
	assert_string_equal(name, "inuse_space:bytes");
	assert_int_equal(model_aggregation_of(slice_cstr("cpu")), MODEL_WINDOW);
	assert_int_equal(model_aggregation_of(slice_cstr("goroutine")), MODEL_SNAPSHOT);
	model_batch_free(b);
}

/* A stable insertion sort by (node, attrset, time): the reference order. */
static int ref_before(const model_sample_t *x, const model_sample_t *y)
{
	if (x->node != y->node)
		return x->node < y->node;
	if (x->attrset != y->attrset)
		return x->attrset < y->attrset;
	return x->time_ns < y->time_ns;
}

static void test_samples_order_is_stable(void **state)
{
	(void)state;
	uint64_t seed = 12345;
	const uint32_t sizes[] = {0, 1, 2, 31, 33, 1000, 5000, 200, 511, 300};
	for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
		uint32_t n = sizes[t];
		model_sample_t *s = calloc(n + 1, sizeof *s);
		uint32_t *perm = calloc(n + 1, sizeof *perm), *ref = calloc(n + 1, sizeof *ref);
		for (uint32_t i = 0; i < n; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			uint64_t r = seed >> 11;
			/* few distinct keys, so many ties; big and negative times */
			s[i].node = (uint32_t)(r % 50) * (t == 5 || t == 8 ? 70000u : 1u);
			s[i].attrset = (uint32_t)(r >> 8) % 3;
			s[i].time_ns = t == 6 ? 0 : ((int64_t)((r >> 16) % 5) - 2) * INT64_C(1000000000000000);
			s[i].value = (int64_t)i;
			if (t == 9) { /* OTLP-like: ascending runs of 20 points per stack */
				s[i].node = (i / 20) % 7;
				s[i].attrset = 0;
				s[i].time_ns = (int64_t)(i % 20) * 1000 + (int64_t)(i / 140);
			}
		}
		for (uint32_t i = 0; i < n; i++) {
			uint32_t j = i;
			while (j > 0 && ref_before(&s[i], &s[ref[j - 1]])) {
				ref[j] = ref[j - 1];
				j--;
			}
			ref[j] = i;
		}
		model_samples_order(s, n, perm);
		for (uint32_t i = 0; i < n; i++)
			assert_int_equal(perm[i], ref[i]);
		free(s);
		free(perm);
		free(ref);
	}
}

/* Equal keys merge in the order they were added: with saturation the order
 * shows (MAX + 1 saturates, then - 1), whether or not the input is sorted. */
static void test_finish_merges_in_added_order(void **state)
{
	(void)state;
	for (int presorted = 0; presorted < 2; presorted++) {
		model_batch_t *b = model_batch_new(slice_cstr("p"));
		uint32_t n1 = model_node_intern(b, MODEL_NONE, frame(b, "a"));
		uint32_t n2 = model_node_intern(b, n1, frame(b, "b"));
		model_profile_t *p = model_profile_add(b);
		if (!presorted)
			model_sample_add(b, p, n2, 0, 7, 0);
		for (int i = 0; i < 40; i++) { /* past the insertion-sort size */
			model_sample_add(b, p, n1, 0, INT64_MAX, 0);
			model_sample_add(b, p, n1, 0, 1, 0);
			model_sample_add(b, p, n1, 0, -1, 0);
		}
		if (presorted)
			model_sample_add(b, p, n2, 0, 7, 0);
		model_profile_finish(b, p);
		assert_int_equal(p->samples_count, 2);
		assert_true(b->samples[p->samples_first].node == n1);
		/* MAX, +1 -> MAX, -1 -> MAX-1, +MAX -> MAX, ... ends at MAX - 1 */
		assert_true(b->samples[p->samples_first].value == INT64_MAX - 1);
		assert_true(b->samples[p->samples_first + 1].value == 7);
		model_batch_free(b);
	}
}

/* Sealing keeps every element and id, and drops the maps and spare capacity. */
static void test_seal_keeps_content(void **state)
{
	(void)state;
	model_batch_t *b = model_batch_new(slice_cstr("p"));
	uint32_t node = MODEL_NONE;
	char name[16];
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof name, "f%d", i);
		node = model_node_intern(b, node, frame(b, name));
	}
	model_profile_t *p = model_profile_add(b);
	model_profile_set_type(b, p, slice_cstr("cpu"), slice_cstr("nanoseconds"), slice_cstr("cpu"),
	                       slice_cstr("nanoseconds"), 10);
	model_sample_add(b, p, node, 0, 7, 0);
	model_profile_finish(b, p);
	uint64_t last_node = b->nodes[node].id, last_frame = b->frames[39].id;
	assert_true(b->cap_frames > b->n_frames && b->_frame_ix.cap > 0);
	model_batch_seal(b);
	assert_int_equal(b->n_frames, 40);
	assert_int_equal(b->n_nodes, 40);
	assert_int_equal(b->cap_frames, 40);
	assert_int_equal(b->cap_nodes, 40);
	assert_int_equal(b->_frame_ix.cap, 0);
	assert_int_equal(b->_node_ix.cap, 0);
	assert_true(b->nodes[node].id == last_node && b->frames[39].id == last_frame);
	assert_true(slice_eq_cstr(b->frames[39].name, "f39"));
	assert_int_equal(b->n_samples, 1);
	assert_int_equal(b->samples[0].value, 7);
	model_batch_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_identities_are_content_hashes),
	    cmocka_unit_test(test_profile_finish_merges_and_drops_zero),
	    cmocka_unit_test(test_samples_order_is_stable),
	    cmocka_unit_test(test_finish_merges_in_added_order),
	    cmocka_unit_test(test_seal_keeps_content),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
