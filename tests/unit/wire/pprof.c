/* Tests of src/wire/pprof_decode.c and pprof_encode.c: every real profile in
 * the shared testdata decodes to the totals `go tool pprof -raw` reports, a
 * table of hostile inputs built with the pb writer gets the exact status and
 * message, and an encoded call tree decodes back to the same totals. */
#include "testutil.h"

#include <pthread.h>

#include "base/buf.h"
#include "base/limits.h"
#include "model/model.h"
#include "store/batch_codec.h"
#include "wire/compress.h"
#include "wire/pb.h"
#include "wire/pprof.h"

/* ---- Helpers ------------------------------------------------------------- */

static model_batch_t *decode_ok(slice_t data, const pprof_decode_opts_t *o)
{
	model_batch_t *b = model_batch_new(slice_cstr("test"));
	err_t err = {0};
	if (pprof_decode(data, o, b, &err) < 0)
		fail_msg("decode failed: %d %s", err.status, err.msg);
	return b;
}

static const pprof_decode_opts_t default_opts = {.now_ns = 42, .max_rows = LIMIT_SAMPLE_ROWS};

static int64_t profile_total(const model_batch_t *b, const model_profile_t *p)
{
	int64_t t = 0;
	for (uint32_t s = 0; s < p->samples_count; s++)
		t += b->samples[p->samples_first + s].value;
	return t;
}

/* Reads a testdata file, inflating it when gzip. Caller frees *raw and out. */
static slice_t load_profile(const char *name, unsigned char **raw, buf_t *out)
{
	char path[512];
	snprintf(path, sizeof path, "%s/pprof/%s", testdata_dir(), name);
	size_t n;
	*raw = read_file_or_fail(path, &n);
	buf_init(out, LIMIT_DECODED_BYTES);
	slice_t in = slice_make(*raw, n);
	if (!gz_is_gzip(in))
		return in;
	err_t err = {0};
	if (gz_inflate(in, out, &err) < 0)
		fail_msg("%s: %s", name, err.msg);
	return buf_slice(out);
}

static slice_t frame_name(const model_batch_t *b, uint32_t node)
{
	return b->frames[b->nodes[node].frame].name;
}

/* ---- Real profiles ------------------------------------------------------- */

struct expected_type {
	const char *type;
	int64_t total;
};

/* Totals per sample type as `go tool pprof -raw FILE` prints them (the sum
 * of each value column over the Samples section; Go 1.19, Debian golang-go):
 *   go tool pprof -raw $KILN_TESTDATA/pprof/<file>
 * -top agrees for window types; for inuse_* it sums absolute values. */
static const struct {
	const char *file;
	uint32_t n_types;
	struct expected_type types[4];
	uint32_t cpu_alias; /* bit per type */
} fixtures[] = {
    {"go-cpu-fib.pb.gz", 2, {{"samples:count", 2974}, {"cpu:nanoseconds", 29740000000}}, 0},
    {"go-cpu-span-labels.pb.gz", 2, {{"samples:count", 873}, {"cpu:nanoseconds", 8730000000}}, 0},
    {"go-cpu-two-stacks.pb.gz", 1, {{"cpu:nanoseconds", 368421046}}, 0},
    {"go-heap-delta.pb.gz",
     4,
     {{"alloc_objects:count", 153434653},
      {"alloc_space:bytes", 80453753612},
      {"inuse_objects:count", 535448},
      {"inuse_space:bytes", 666938665}},
     0},
    {"nodejs-wall.pb.gz", 2, {{"samples:count", 898}, {"wall:microseconds", 8980000}}, 0},
    {"python-pyspy-not-gzipped.pb", 1, {{"samples:count", 781}}, 0},
};

static void test_testdata_totals(void **state)
{
	(void)state;
	for (size_t f = 0; f < sizeof fixtures / sizeof fixtures[0]; f++) {
		unsigned char *raw;
		buf_t out;
		slice_t data = load_profile(fixtures[f].file, &raw, &out);
		pprof_decode_opts_t o = default_opts;
		o.service = slice_cstr("svc");
		model_batch_t *b = decode_ok(data, &o);
		assert_int_equal(b->n_profiles, fixtures[f].n_types);
		/* pprof_sample_types: the same names, in order, before decoding. */
		slice_t types[LIMIT_SAMPLE_TYPES];
		assert_int_equal(pprof_sample_types(data, types, LIMIT_SAMPLE_TYPES), fixtures[f].n_types);
		assert_int_equal(pprof_sample_types(data, types, 1), 1);
		for (uint32_t t = 0; t < fixtures[f].n_types; t++) {
			const char *want = fixtures[f].types[t].type;
			size_t n = (size_t)(strchr(want, ':') - want);
			if (!slice_eq(types[t], slice_make(want, n)))
				fail_msg("%s: sample type %u is %.*s", fixtures[f].file, t, (int)types[t].n,
				         (const char *)types[t].p);
		}
		for (uint32_t t = 0; t < b->n_profiles; t++) {
			char name[128];
			model_type_name(&b->profiles[t], name, sizeof name);
			if (strcmp(name, fixtures[f].types[t].type) != 0)
				fail_msg("%s: type %u is %s, want %s", fixtures[f].file, t, name,
				         fixtures[f].types[t].type);
			int64_t total = profile_total(b, &b->profiles[t]);
			if (total != fixtures[f].types[t].total)
				fail_msg("%s %s: total %lld, want %lld", fixtures[f].file, name,
				         (long long)total, (long long)fixtures[f].types[t].total);
			assert_int_equal(b->profiles[t].cpu_alias, (fixtures[f].cpu_alias >> t) & 1);
			assert_true(slice_eq_cstr(b->profiles[t].service, "svc"));
			assert_true(b->profiles[t].time_ns != 0);
		}
		model_batch_free(b);
		buf_free(&out);
		free(raw);
	}
}

static void test_testdata_details(void **state)
{
	(void)state;
	unsigned char *raw;
	buf_t out;
	/* Heap: inuse_* are snapshots, alloc_* windows; time and period from the file. */
	slice_t data = load_profile("go-heap-delta.pb.gz", &raw, &out);
	model_batch_t *b = decode_ok(data, &default_opts);
	assert_int_equal(b->profiles[0].aggregation, MODEL_WINDOW);
	assert_int_equal(b->profiles[3].aggregation, MODEL_SNAPSHOT);
	assert_true(slice_eq_cstr(b->profiles[0].period_type, "space"));
	assert_true(slice_eq_cstr(b->profiles[0].period_unit, "bytes"));
	assert_int_equal(b->profiles[0].period, 524288);
	/* `go tool pprof -raw` prints Time: 2022-04-20 15:54:45.555167 UTC */
	assert_true(b->profiles[0].time_ns == 1650470085555167000ll);
	/* Every sample of the heap profile has one numeric label (bytes). */
	assert_true(b->n_attrsets > 1);
	int found = 0;
	for (uint32_t i = 0; i < b->n_attr_labels; i++)
		if (slice_eq_cstr(b->attr_labels[i].key, "bytes") &&
		    slice_eq_cstr(b->attr_labels[i].value, "576"))
			found = 1;
	assert_true(found);
	model_batch_free(b);
	buf_free(&out);
	free(raw);

	/* Span labels become sample attributes. */
	data = load_profile("go-cpu-span-labels.pb.gz", &raw, &out);
	b = decode_ok(data, &default_opts);
	found = 0;
	for (uint32_t i = 0; i < b->n_attr_labels; i++)
		if (slice_eq_cstr(b->attr_labels[i].key, "profile_id") &&
		    slice_eq_cstr(b->attr_labels[i].value, "c717c11b87121639"))
			found = 1;
	assert_true(found);
	model_batch_free(b);
	buf_free(&out);
	free(raw);

	/* Node.js has no mappings: symbolized frames without a binary. */
	data = load_profile("nodejs-wall.pb.gz", &raw, &out);
	b = decode_ok(data, &default_opts);
	for (uint32_t f = 0; f < b->n_frames; f++) {
		assert_int_equal(b->frames[f].binary.n, 0);
		assert_int_equal(b->frames[f].unsymbolized, 0);
	}
	model_batch_free(b);
	buf_free(&out);
	free(raw);
}

/* ---- Hand-made profiles -------------------------------------------------- */

/* Strings of the base profile. */
enum { S_EMPTY, S_CPU, S_NS, S_MAIN, S_FOO, S_APP, S_SAMPLES, S_COUNT, S_BAR, S_KEY, S_VAL, N_STRINGS };
static const char *base_strings[N_STRINGS] = {"",        "cpu",   "nanoseconds", "main", "foo", "/bin/app",
                                              "samples", "count", "bar",         "key",  "val"};

static void put_strings(buf_t *b, const char *const *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		pb_put_bytes(b, 6, slice_cstr(s[i]));
}

static void put_value_type(buf_t *b, uint32_t field, uint64_t type, uint64_t unit)
{
	size_t m = pb_begin(b, field);
	pb_put_uint(b, 1, type);
	pb_put_uint(b, 2, unit);
	pb_end(b, m);
}

static void put_function(buf_t *b, uint64_t id, uint64_t name)
{
	size_t m = pb_begin(b, 5);
	pb_put_uint(b, 1, id);
	pb_put_uint(b, 2, name);
	pb_end(b, m);
}

/* A location with one line per entry of fns (fns[0] innermost). */
static void put_location(buf_t *b, uint64_t id, uint64_t mapping, const uint64_t *fns, size_t n)
{
	size_t m = pb_begin(b, 4);
	pb_put_uint(b, 1, id);
	pb_put_uint(b, 2, mapping);
	for (size_t i = 0; i < n; i++) {
		size_t l = pb_begin(b, 4);
		pb_put_uint(b, 1, fns[i]);
		pb_put_uint(b, 2, 10 + i);
		pb_end(b, l);
	}
	pb_end(b, m);
}

static void put_sample(buf_t *b, const uint64_t *locs, size_t n_locs, const int64_t *vals, size_t n_vals)
{
	size_t m = pb_begin(b, 2);
	pb_put_packed(b, 1, locs, n_locs);
	pb_put_packed(b, 2, (const uint64_t *)vals, n_vals);
	pb_end(b, m);
}

static void put_mapping(buf_t *b, uint64_t id, uint64_t file)
{
	size_t m = pb_begin(b, 3);
	pb_put_uint(b, 1, id);
	pb_put_uint(b, 5, file);
	pb_end(b, m);
}

/* Mapping 1 (/bin/app) and functions 1 main, 2 foo, 3 bar. */
static void put_symbols(buf_t *b)
{
	put_mapping(b, 1, S_APP);
	put_function(b, 1, S_MAIN);
	put_function(b, 2, S_FOO);
	put_function(b, 3, S_BAR);
}

/* cpu:nanoseconds, put_symbols, locations 1 (main) / 2 (foo), one sample
 * foo←main of 10. Field order is free in protobuf, so cases append to it. */
static void base_profile(buf_t *b)
{
	buf_init(b, SIZE_MAX);
	put_value_type(b, 1, S_CPU, S_NS);
	put_symbols(b);
	uint64_t f1 = 1, f2 = 2;
	put_location(b, 1, 1, &f1, 1);
	put_location(b, 2, 1, &f2, 1);
	uint64_t locs[] = {2, 1};
	int64_t v = 10;
	put_sample(b, locs, 2, &v, 1);
	put_strings(b, base_strings, N_STRINGS);
	pb_put_uint(b, 9, 1000);
	pb_put_uint(b, 10, 2000);
}

static void test_base_profile(void **state)
{
	(void)state;
	buf_t b;
	base_profile(&b);
	model_batch_t *mb = decode_ok(buf_slice(&b), &default_opts);
	assert_int_equal(mb->n_profiles, 1);
	model_profile_t *p = &mb->profiles[0];
	assert_int_equal(p->samples_count, 1);
	assert_true(p->time_ns == 1000);
	assert_true(p->duration_ns == 2000);
	model_sample_t *s = &mb->samples[p->samples_first];
	assert_true(s->value == 10);
	/* Leaf foo under root main. */
	assert_true(slice_eq_cstr(frame_name(mb, s->node), "foo"));
	uint32_t parent = mb->nodes[s->node].parent;
	assert_true(slice_eq_cstr(frame_name(mb, parent), "main"));
	assert_int_equal(mb->nodes[parent].parent, MODEL_NONE);
	const model_frame_t *f = &mb->frames[mb->nodes[s->node].frame];
	assert_true(slice_eq_cstr(f->binary, "/bin/app"));
	assert_int_equal(f->kind.n, 0);
	assert_int_equal(f->unsymbolized, 0);
	assert_true(mb->frames_written == 2);
	model_batch_free(mb);

	/* Options override the pprof's time; now when neither is given. */
	pprof_decode_opts_t o = default_opts;
	o.time_ns = 7;
	o.duration_ns = 8;
	model_label_t lab = {slice_cstr("namespace"), slice_cstr("prod")};
	o.labels = &lab;
	o.n_labels = 1;
	mb = decode_ok(buf_slice(&b), &o);
	assert_true(mb->profiles[0].time_ns == 7);
	assert_true(mb->profiles[0].duration_ns == 8);
	assert_int_equal(mb->profiles[0].labels_count, 1);
	assert_true(slice_eq_cstr(mb->series_labels[mb->profiles[0].labels_first].value, "prod"));
	model_batch_free(mb);
	buf_free(&b);

	buf_init(&b, SIZE_MAX);
	put_value_type(&b, 1, 1, 2);
	put_strings(&b, base_strings, N_STRINGS);
	mb = decode_ok(buf_slice(&b), &default_opts);
	assert_true(mb->profiles[0].time_ns == 42);
	assert_int_equal(mb->profiles[0].samples_count, 0);
	model_batch_free(mb);
	buf_free(&b);
}

/* Locations of one function share its frame only under the same mapping:
 * a frame is (function, binary), whatever the decoder remembers between
 * locations. Same stacks, merged into one sample. */
static void test_shared_function_frames(void **state)
{
	(void)state;
	buf_t b;
	buf_init(&b, SIZE_MAX);
	put_value_type(&b, 1, S_CPU, S_NS);
	put_symbols(&b);           /* mapping 1: /bin/app */
	put_mapping(&b, 2, S_BAR); /* mapping 2: "bar" */
	uint64_t main_fn = 1, foo_fn = 2;
	put_location(&b, 1, 1, &main_fn, 1);
	put_location(&b, 2, 1, &foo_fn, 1);
	put_location(&b, 3, 1, &foo_fn, 1);  /* another address of foo in /bin/app */
	put_location(&b, 4, 2, &foo_fn, 1);  /* foo in "bar" */
	put_location(&b, 5, 0, &main_fn, 1); /* main without a mapping */
	put_location(&b, 6, 1, &foo_fn, 1);  /* foo in /bin/app again, after "bar" */
	const uint64_t stacks[5][2] = {{2, 1}, {3, 1}, {4, 1}, {2, 5}, {6, 1}};
	const int64_t vals[5] = {10, 20, 40, 5, 7};
	for (int i = 0; i < 5; i++)
		put_sample(&b, stacks[i], 2, &vals[i], 1);
	put_strings(&b, base_strings, N_STRINGS);
	model_batch_t *mb = decode_ok(buf_slice(&b), &default_opts);
	assert_int_equal(mb->n_frames, 4); /* main@app, foo@app, foo@bar, main */
	model_profile_t *p = &mb->profiles[0];
	assert_int_equal(p->samples_count, 3);
	int seen = 0;
	for (uint32_t i = 0; i < p->samples_count; i++) {
		const model_sample_t *s = &mb->samples[p->samples_first + i];
		const model_frame_t *leaf = &mb->frames[mb->nodes[s->node].frame];
		const model_frame_t *root = &mb->frames[mb->nodes[mb->nodes[s->node].parent].frame];
		assert_true(slice_eq_cstr(leaf->name, "foo"));
		assert_true(slice_eq_cstr(root->name, "main"));
		if (slice_eq_cstr(leaf->binary, "bar")) {
			assert_true(s->value == 40 && slice_eq_cstr(root->binary, "/bin/app"));
			seen |= 1;
		} else if (root->binary.n == 0) {
			assert_true(s->value == 5 && slice_eq_cstr(leaf->binary, "/bin/app"));
			seen |= 2;
		} else {
			assert_true(s->value == 37 && slice_eq_cstr(leaf->binary, "/bin/app"));
			seen |= 4;
		}
	}
	assert_int_equal(seen, 7);
	model_batch_free(mb);
	buf_free(&b);
}

static void test_inline_order(void **state)
{
	(void)state;
	buf_t b;
	buf_init(&b, SIZE_MAX);
	put_value_type(&b, 1, S_SAMPLES, S_COUNT);
	put_value_type(&b, 11, S_CPU, S_NS); /* period cpu:nanoseconds, no cpu sibling → cpu_alias */
	put_symbols(&b);
	uint64_t inl[] = {3, 2}; /* line[0] bar (leaf) inlined into foo */
	put_location(&b, 10, 1, inl, 2);
	uint64_t f1 = 1;
	put_location(&b, 11, 0, &f1, 1);
	put_location(&b, 12, 1, NULL, 0); /* no lines: unsymbolized */
	uint64_t locs[] = {12, 10, 11};
	int64_t v = 3;
	put_sample(&b, locs, 3, &v, 1);
	put_strings(&b, base_strings, N_STRINGS);

	model_batch_t *mb = decode_ok(buf_slice(&b), &default_opts);
	model_profile_t *p = &mb->profiles[0];
	assert_int_equal(p->cpu_alias, 1);
	assert_int_equal(p->samples_count, 1);
	uint32_t n = mb->samples[p->samples_first].node;
	const char *want[] = {"", "bar", "foo", "main"}; /* leaf to root */
	for (int i = 0; i < 4; i++) {
		assert_true(n != MODEL_NONE);
		assert_true(slice_eq_cstr(frame_name(mb, n), want[i]));
		n = mb->nodes[n].parent;
	}
	assert_int_equal(n, MODEL_NONE);
	assert_true(mb->frames_written == 4);
	const model_frame_t *leaf = &mb->frames[mb->nodes[mb->samples[p->samples_first].node].frame];
	assert_int_equal(leaf->unsymbolized, 1);
	assert_true(slice_eq_cstr(leaf->kind, "native"));
	assert_true(slice_eq_cstr(leaf->binary, "/bin/app"));
	model_batch_free(mb);
	buf_free(&b);
}

/* Samples with no location (Go's goroutine profile has one) are kept with
 * node MODEL_NONE, the empty stack, and their labels: go tool pprof counts
 * them in the total. They write out no frame. */
static void test_empty_stack_samples(void **state)
{
	(void)state;
	buf_t b;
	base_profile(&b);
	int64_t v = 3;
	size_t m = pb_begin(&b, 2);
	pb_put_packed(&b, 2, (const uint64_t *)&v, 1);
	size_t l = pb_begin(&b, 3);
	pb_put_uint(&b, 1, S_KEY);
	pb_put_uint(&b, 2, S_VAL);
	pb_end(&b, l);
	pb_end(&b, m);
	v = 4;
	put_sample(&b, NULL, 0, &v, 1);
	model_batch_t *mb = decode_ok(buf_slice(&b), &default_opts);
	const model_profile_t *p = &mb->profiles[0];
	assert_int_equal(p->samples_count, 3);
	assert_true(profile_total(mb, p) == 17);
	assert_true(mb->frames_written == 2);
	uint32_t with_labels = 0, without = 0;
	for (uint32_t i = 0; i < p->samples_count; i++) {
		const model_sample_t *s = &mb->samples[p->samples_first + i];
		if (s->node != MODEL_NONE)
			continue;
		if (s->attrset) {
			assert_true(s->value == 3);
			assert_int_equal(mb->attrsets[s->attrset].count, 1);
			assert_true(
			    slice_eq_cstr(mb->attr_labels[mb->attrsets[s->attrset].first].value, "val"));
			with_labels++;
		} else {
			assert_true(s->value == 4);
			without++;
		}
	}
	assert_int_equal(with_labels, 1);
	assert_int_equal(without, 1);
	model_batch_free(mb);
	buf_free(&b);
}

static void test_function_id_zero_and_duplicates(void **state)
{
	(void)state;
	buf_t b;
	buf_init(&b, SIZE_MAX);
	put_value_type(&b, 1, S_CPU, S_NS);
	put_value_type(&b, 1, S_SAMPLES, S_COUNT);
	put_mapping(&b, 1, S_APP);
	put_function(&b, 1, S_FOO);
	put_function(&b, 1, S_MAIN); /* same id again: the last wins */
	uint64_t zero = 0, f1 = 1;
	put_location(&b, 5, 1, &zero, 1); /* only function_id 0: unsymbolized */
	put_location(&b, 6, 0, &f1, 1);
	/* Unpacked location ids and values, and a string and a numeric label. */
	size_t m = pb_begin(&b, 2);
	pb_put_uint(&b, 1, 5);
	pb_put_int64(&b, 2, -4);
	pb_put_uint(&b, 1, 6);
	pb_put_int64(&b, 2, 1);
	size_t l = pb_begin(&b, 3);
	pb_put_uint(&b, 1, S_KEY);
	pb_put_uint(&b, 2, S_VAL);
	pb_end(&b, l);
	l = pb_begin(&b, 3);
	pb_put_uint(&b, 1, S_BAR);
	pb_put_int64(&b, 3, -576);
	pb_end(&b, l);
	pb_end(&b, m);
	put_strings(&b, base_strings, N_STRINGS);

	model_batch_t *mb = decode_ok(buf_slice(&b), &default_opts);
	assert_int_equal(mb->n_profiles, 2);
	model_sample_t *s = &mb->samples[mb->profiles[0].samples_first];
	assert_true(s->value == -4);
	assert_true(mb->samples[mb->profiles[1].samples_first].value == 1);
	const model_frame_t *leaf = &mb->frames[mb->nodes[s->node].frame];
	assert_int_equal(leaf->unsymbolized, 1);
	assert_true(slice_eq_cstr(frame_name(mb, mb->nodes[s->node].parent), "main"));
	const model_attrset_t *as = &mb->attrsets[s->attrset];
	assert_int_equal(as->count, 2);
	/* sorted by key: bar=-576, key=val */
	assert_true(slice_eq_cstr(mb->attr_labels[as->first].key, "bar"));
	assert_true(slice_eq_cstr(mb->attr_labels[as->first].value, "-576"));
	assert_true(slice_eq_cstr(mb->attr_labels[as->first + 1].value, "val"));
	assert_int_equal(mb->profiles[1].cpu_alias, 0); /* no cpu period */
	model_batch_free(mb);
	buf_free(&b);
}

/* Ids far past the table sizes (addresses, as some producers use) go
 * through the id map instead of the dense arrays: same results, the last
 * duplicate wins, a missing id is named. Numeric labels at the int64 ends. */
static void test_sparse_ids(void **state)
{
	(void)state;
	const uint64_t big = 0x7f3a12345000ull;
	for (int missing = 0; missing < 2; missing++) {
		buf_t b;
		buf_init(&b, SIZE_MAX);
		put_value_type(&b, 1, S_CPU, S_NS);
		put_mapping(&b, big, S_APP);
		put_function(&b, big + 1, S_FOO);
		put_function(&b, UINT64_MAX, S_BAR);
		put_function(&b, big + 1, S_MAIN); /* same id again: the last wins */
		uint64_t f_main = big + 1, f_bar = UINT64_MAX;
		put_location(&b, big * 2, big, &f_bar, 1);
		put_location(&b, 3, 0, &f_main, 1);
		uint64_t locs[] = {big * 2, missing ? 4 : 3};
		size_t m = pb_begin(&b, 2);
		pb_put_packed(&b, 1, locs, 2);
		pb_put_uint(&b, 2, 5);
		size_t l = pb_begin(&b, 3);
		pb_put_uint(&b, 1, S_KEY);
		pb_put_int64(&b, 3, INT64_MIN);
		pb_end(&b, l);
		l = pb_begin(&b, 3);
		pb_put_uint(&b, 1, S_BAR);
		pb_put_uint(&b, 4, S_NS); /* num 0 with a unit */
		pb_end(&b, l);
		l = pb_begin(&b, 3);
		pb_put_uint(&b, 1, S_FOO);
		pb_put_int64(&b, 3, INT64_MAX);
		pb_end(&b, l);
		pb_end(&b, m);
		put_strings(&b, base_strings, N_STRINGS);
		if (missing) {
			model_batch_t *mb = model_batch_new(slice_cstr("p"));
			err_t err = {0};
			assert_int_equal(pprof_decode(buf_slice(&b), &default_opts, mb, &err), -1);
			assert_int_equal(err.status, 400);
			assert_string_equal(err.msg,
			                    "sample[0].location_id[1]: location id 4 not found (profile "
			                    "has 2 locations)");
			model_batch_free(mb);
			buf_free(&b);
			continue;
		}
		model_batch_t *mb = decode_ok(buf_slice(&b), &default_opts);
		model_sample_t *s = &mb->samples[mb->profiles[0].samples_first];
		assert_true(slice_eq_cstr(frame_name(mb, s->node), "bar"));
		assert_true(slice_eq_cstr(mb->frames[mb->nodes[s->node].frame].binary, "/bin/app"));
		assert_true(slice_eq_cstr(frame_name(mb, mb->nodes[s->node].parent), "main"));
		const model_attrset_t *as = &mb->attrsets[s->attrset];
		assert_int_equal(as->count, 3);
		/* sorted by key: bar=0, foo=INT64_MAX, key=INT64_MIN */
		assert_true(slice_eq_cstr(mb->attr_labels[as->first].value, "0"));
		assert_true(slice_eq_cstr(mb->attr_labels[as->first + 1].value, "9223372036854775807"));
		assert_true(slice_eq_cstr(mb->attr_labels[as->first + 2].value, "-9223372036854775808"));
		model_batch_free(mb);
		buf_free(&b);
	}
}

static void test_stack_depth_limit(void **state)
{
	(void)state;
	buf_t b;
	buf_init(&b, SIZE_MAX);
	put_value_type(&b, 1, S_CPU, S_NS);
	put_symbols(&b);
	uint64_t f1 = 1, f2 = 2;
	put_location(&b, 1, 0, &f1, 1);
	put_location(&b, 2, 0, &f2, 1);
	/* foo (leaf), then 5000 x main */
	size_t n = 5001;
	uint64_t *locs = calloc(n, sizeof *locs);
	locs[0] = 2;
	for (size_t i = 1; i < n; i++)
		locs[i] = 1;
	int64_t v = 1;
	put_sample(&b, locs, n, &v, 1);
	put_strings(&b, base_strings, N_STRINGS);
	model_batch_t *mb = decode_ok(buf_slice(&b), &default_opts);
	assert_true(mb->frames_written == LIMIT_STACK_DEPTH);
	uint32_t node = mb->samples[0].node;
	assert_true(slice_eq_cstr(frame_name(mb, node), "foo")); /* the leaf side is kept */
	uint32_t depth = 0;
	for (; node != MODEL_NONE; node = mb->nodes[node].parent)
		depth++;
	assert_int_equal(depth, LIMIT_STACK_DEPTH);
	model_batch_free(mb);
	free(locs);
	buf_free(&b);
}

/* ---- Hostile input ------------------------------------------------------- */

/* Each case appends to (or replaces) the base profile. */
static void sample_msg(buf_t *b, void (*body)(buf_t *b))
{
	size_t m = pb_begin(b, 2);
	body(b);
	pb_end(b, m);
}

static void m_truncated(buf_t *b)
{
	b->n -= 1; /* inside duration_nanos' two-byte varint */
}
static void m_varint_overflow(buf_t *b)
{
	pb_put_key(b, 9, PB_VARINT);
	for (int i = 0; i < 9; i++)
		buf_putc(b, 0xff);
	buf_putc(b, 0x02);
}
static void m_varint_11_bytes(buf_t *b)
{
	pb_put_key(b, 12, PB_VARINT);
	for (int i = 0; i < 10; i++)
		buf_putc(b, 0x80);
	buf_putc(b, 0x00);
}
static void m_field_zero(buf_t *b)
{
	buf_putc(b, 0x00);
}
static void m_wire_type_7(buf_t *b)
{
	buf_putc(b, 0x0f);
}
static void m_group(buf_t *b)
{
	pb_put_key(b, 20, PB_SGROUP);
}
static void m_sample_as_varint(buf_t *b)
{
	pb_put_uint(b, 2, 1);
}
static void m_time_as_bytes(buf_t *b)
{
	pb_put_bytes(b, 9, slice_cstr("x"));
}
static void body_loc_fixed32(buf_t *b)
{
	pb_put_key(b, 1, PB_I32);
	buf_append(b, "\1\0\0\0", 4);
	pb_put_uint(b, 2, 1);
}
static void m_location_id_fixed32(buf_t *b)
{
	sample_msg(b, body_loc_fixed32);
}
static void m_oversized_length(buf_t *b)
{
	pb_put_key(b, 2, PB_LEN);
	pb_put_varint(b, 1000);
	buf_append(b, "ab", 2);
}
static void m_negative_length(buf_t *b)
{
	pb_put_key(b, 2, PB_LEN);
	pb_put_varint(b, UINT64_MAX);
	buf_append(b, "ab", 2);
}
static void m_location_missing(buf_t *b)
{
	uint64_t loc = 99;
	int64_t v = 1;
	put_sample(b, &loc, 1, &v, 1);
}
static void body_location_zero(buf_t *b)
{
	pb_put_key(b, 1, PB_VARINT);
	pb_put_varint(b, 0);
	pb_put_uint(b, 2, 1);
}
static void m_location_zero(buf_t *b)
{
	sample_msg(b, body_location_zero);
}
static void m_function_name_range(buf_t *b)
{
	put_function(b, 4, 99);
}
static void m_function_name_negative(buf_t *b)
{
	put_function(b, 4, UINT64_MAX);
}
static void m_mapping_missing(buf_t *b)
{
	uint64_t f = 1;
	put_location(b, 3, 7, &f, 1);
}
static void m_line_function_missing(buf_t *b)
{
	uint64_t f = 42;
	put_location(b, 3, 1, &f, 1);
}
static void m_65_types(buf_t *b)
{
	for (int i = 0; i < 64; i++)
		put_value_type(b, 1, S_CPU, S_NS);
}
static void m_10001_rows(buf_t *b)
{
	uint64_t loc = 1;
	int64_t v = 1;
	for (int i = 0; i < 10000; i++)
		put_sample(b, &loc, 1, &v, 1);
}
static void m_two_values(buf_t *b)
{
	uint64_t loc = 1;
	int64_t v[2] = {1, 2};
	put_sample(b, &loc, 1, v, 2);
}
static void m_no_values(buf_t *b)
{
	uint64_t loc = 1;
	put_sample(b, &loc, 1, NULL, 0);
}
static void m_first_string_not_empty(buf_t *b)
{
	buf_reset(b);
	const char *s[] = {"x", "cpu", "ns"};
	put_value_type(b, 1, 1, 2);
	put_strings(b, s, 3);
}
static void m_no_strings(buf_t *b)
{
	buf_reset(b);
	put_value_type(b, 1, 0, 0);
}
static void m_no_sample_type(buf_t *b)
{
	buf_reset(b);
	put_strings(b, base_strings, N_STRINGS);
}
static void m_mapping_id_zero(buf_t *b)
{
	put_mapping(b, 0, S_APP);
}
static void m_location_id_zero(buf_t *b)
{
	put_location(b, 0, 1, NULL, 0);
}
static void m_unit_range(buf_t *b)
{
	put_value_type(b, 1, S_CPU, 500);
}
static void m_period_type_range(buf_t *b)
{
	put_value_type(b, 11, 77, S_NS);
}
static void body_label_key_range(buf_t *b)
{
	pb_put_uint(b, 2, 1);
	size_t l = pb_begin(b, 3);
	pb_put_uint(b, 1, 99);
	pb_put_uint(b, 2, S_VAL);
	pb_end(b, l);
}
static void m_label_key_range(buf_t *b)
{
	sample_msg(b, body_label_key_range);
}
static void body_packed_malformed(buf_t *b)
{
	pb_put_bytes(b, 1, slice_make("\x01\x80", 2));
	pb_put_uint(b, 2, 1);
}
static void m_packed_malformed(buf_t *b)
{
	sample_msg(b, body_packed_malformed);
}
static void body_65_labels(buf_t *b)
{
	pb_put_uint(b, 1, 1);
	pb_put_uint(b, 2, 1);
	for (int i = 0; i < 65; i++) {
		size_t l = pb_begin(b, 3);
		pb_put_uint(b, 1, S_KEY);
		pb_put_uint(b, 3, (uint64_t)i + 1);
		pb_end(b, l);
	}
}
static void m_65_labels(buf_t *b)
{
	sample_msg(b, body_65_labels);
}
static void m_drop_frames_range(buf_t *b)
{
	pb_put_uint(b, 7, 50);
}
static void m_comment_range(buf_t *b)
{
	uint64_t c[] = {1, 60};
	pb_put_packed(b, 13, c, 2);
}
static void m_line_wire_type(buf_t *b)
{
	size_t m = pb_begin(b, 4);
	pb_put_uint(b, 1, 3);
	size_t l = pb_begin(b, 4);
	pb_put_bytes(b, 1, slice_cstr("f"));
	pb_end(b, l);
	pb_end(b, m);
}
static void body_label_truncated(buf_t *b)
{
	pb_put_uint(b, 1, 1);
	pb_put_uint(b, 2, 1);
	pb_put_key(b, 3, PB_LEN);
	pb_put_varint(b, 5);
	buf_putc(b, 0x08);
}
static void m_label_truncated(buf_t *b)
{
	sample_msg(b, body_label_truncated);
}
static void m_unknown_field_truncated(buf_t *b)
{
	pb_put_key(b, 100, PB_I64);
	buf_append(b, "\1\2\3", 3);
}
static void m_nothing(buf_t *b)
{
	(void)b;
}

static const struct {
	const char *name;
	void (*mutate)(buf_t *b);
	uint64_t preset_frames; /* b->frames_written before the decode */
	int status;
	const char *msg; /* substring */
} bad_cases[] = {
    {"truncated", m_truncated, 0, 400, "duration_nanos: truncated or overlong varint at byte"},
    {"varint 10th byte > 1", m_varint_overflow, 0, 400, "time_nanos: truncated or overlong varint"},
    {"11-byte varint", m_varint_11_bytes, 0, 400, "period: truncated or overlong varint"},
    {"field 0", m_field_zero, 0, 400, "profile: malformed field key at byte"},
    {"wire type 7", m_wire_type_7, 0, 400, "profile: malformed field key"},
    {"group", m_group, 0, 400, "profile: unknown field 20 (wire type 3) at byte"},
    {"sample as varint", m_sample_as_varint, 0, 400,
     "sample: wire type 0 (varint), expected length-delimited (field 2"},
    {"time_nanos as bytes", m_time_as_bytes, 0, 400,
     "time_nanos: wire type 2 (length-delimited), expected varint"},
    {"location_id as fixed32", m_location_id_fixed32, 0, 400,
     "sample[1].location_id: wire type 5 (fixed32), expected varint or packed"},
    {"length past the end", m_oversized_length, 0, 400, "sample[1]: length at byte"},
    {"negative length", m_negative_length, 0, 400, "sample[1]: length at byte"},
    {"location id missing", m_location_missing, 0, 400,
     "sample[1].location_id[0]: location id 99 not found (profile has 2 locations)"},
    {"location id 0", m_location_zero, 0, 400, "sample[1].location_id[0]: location id 0 not found"},
    {"string index out of range", m_function_name_range, 0, 400,
     "function[3].name: string index 99 out of range (string_table has 11 entries)"},
    {"negative string index", m_function_name_negative, 0, 400,
     "function[3].name: string index -1 out of range (string_table has 11 entries)"},
    {"mapping id missing", m_mapping_missing, 0, 400,
     "location[2].mapping_id: mapping id 7 not found (profile has 1 mappings)"},
    {"function id missing", m_line_function_missing, 0, 400,
     "location[2].line[0].function_id: function id 42 not found (profile has 3 functions)"},
    {"65 sample types", m_65_types, 0, 413, "profile has 65 sample types; the limit is 64"},
    {"10001 rows", m_10001_rows, 0, 413,
     "profile has 10001 sample rows; the limit is 10000 (maxDecodedSampleRows)"},
    {"two values for one type", m_two_values, 0, 400,
     "sample[1].value: 2 values but the profile has 1 sample types"},
    {"no values", m_no_values, 0, 400, "sample[1].value: 0 values but the profile has 1 sample types"},
    {"string_table[0] not empty", m_first_string_not_empty, 0, 400,
     "string_table[0]: must be the empty string"},
    {"no string table", m_no_strings, 0, 400, "string_table is empty"},
    {"no sample type", m_no_sample_type, 0, 400, "profile has no sample_type"},
    {"mapping id 0", m_mapping_id_zero, 0, 400, "mapping[1].id: mapping id 0 is reserved"},
    {"location id 0 defined", m_location_id_zero, 0, 400, "location[2].id: location id 0 is reserved"},
    {"unit out of range", m_unit_range, 0, 400, "sample_type[1].unit: string index 500 out of range"},
    {"period_type out of range", m_period_type_range, 0, 400,
     "period_type.type: string index 77 out of range"},
    {"label key out of range", m_label_key_range, 0, 400,
     "sample[1].label[0].key: string index 99 out of range"},
    {"malformed packed varint", m_packed_malformed, 0, 400, "sample[1].location_id: malformed packed varint"},
    {"65 labels", m_65_labels, 0, 413, "sample[1].label: sample has 65 labels; the limit is 64"},
    {"drop_frames out of range", m_drop_frames_range, 0, 400, "drop_frames: string index 50 out of range"},
    {"comment out of range", m_comment_range, 0, 400, "comment[1]: string index 60 out of range"},
    {"line field wire type", m_line_wire_type, 0, 400,
     "location[2].line[0].function_id: wire type 2 (length-delimited), expected varint"},
    {"label length past the end", m_label_truncated, 0, 400, "sample[1].label: length at byte"},
    {"unknown field truncated", m_unknown_field_truncated, 0, 400,
     "profile: unknown field 100 (wire type 1)"},
    {"request frames", m_nothing, LIMIT_REQUEST_FRAMES - 1, 413,
     "request writes out 1000001 frames; the limit is 1000000: lower the batch size"},
};

static void test_bad_inputs(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
		buf_t b;
		base_profile(&b);
		bad_cases[i].mutate(&b);
		model_batch_t *mb = model_batch_new(slice_cstr("test"));
		mb->frames_written = bad_cases[i].preset_frames;
		err_t err = {0};
		int rc = pprof_decode(buf_slice(&b), &default_opts, mb, &err);
		if (rc != -1 || err.status != bad_cases[i].status || !strstr(err.msg, bad_cases[i].msg))
			fail_msg("case %zu (%s): rc %d status %d msg \"%s\"; want %d \"%s\"", i,
			         bad_cases[i].name, rc, err.status, err.msg, bad_cases[i].status,
			         bad_cases[i].msg);
		model_batch_free(mb);
		buf_free(&b);
	}
}

/* A caller's smaller row limit is the one named. */
static void test_max_rows_option(void **state)
{
	(void)state;
	buf_t b;
	base_profile(&b);
	m_two_values(&b); /* never reached: the count is checked first */
	pprof_decode_opts_t o = default_opts;
	o.max_rows = 1;
	model_batch_t *mb = model_batch_new(slice_cstr("test"));
	err_t err = {0};
	assert_int_equal(pprof_decode(buf_slice(&b), &o, mb, &err), -1);
	assert_int_equal(err.status, 413);
	assert_non_null(strstr(err.msg, "profile has 2 sample rows; the limit is 1"));
	model_batch_free(mb);
	buf_free(&b);
}

/* Every prefix of a valid profile either decodes or fails cleanly. */
static void test_every_truncation(void **state)
{
	(void)state;
	buf_t b;
	base_profile(&b);
	for (size_t n = 0; n < b.n; n++) {
		uint8_t *copy = malloc(n ? n : 1);
		memcpy(copy, b.p, n);
		model_batch_t *mb = model_batch_new(slice_cstr("test"));
		err_t err = {0};
		if (pprof_decode(slice_make(copy, n), &default_opts, mb, &err) < 0)
			assert_int_equal(err.status, 400);
		model_batch_free(mb);
		free(copy);
	}
	buf_free(&b);
}

/* ---- Encoder ------------------------------------------------------------- */

/* Builds the call tree of profile p: tree node i+1 = batch node i. */
static model_tree_t tree_of(const model_batch_t *b, const model_profile_t *p)
{
	model_tree_t t = {0};
	t.n_nodes = b->n_nodes + 1;
	t.parent = calloc(t.n_nodes, sizeof *t.parent);
	t.frame = calloc(t.n_nodes, sizeof *t.frame);
	t.self = calloc(t.n_nodes, sizeof *t.self);
	t.total = calloc(t.n_nodes, sizeof *t.total);
	for (uint32_t i = 0; i < b->n_nodes; i++) {
		uint32_t parent = b->nodes[i].parent;
		assert_true(parent == MODEL_NONE || parent < i);
		t.parent[i + 1] = parent == MODEL_NONE ? 0 : parent + 1;
		t.frame[i + 1] = b->nodes[i].frame;
	}
	for (uint32_t s = 0; s < p->samples_count; s++) {
		const model_sample_t *sm = &b->samples[p->samples_first + s];
		t.self[sm->node == MODEL_NONE ? 0 : sm->node + 1] += sm->value; /* the empty stack: root */
	}
	t.frames = b->frames;
	t.n_frames = b->n_frames;
	t.sample_type = p->sample_type;
	t.sample_unit = p->sample_unit;
	t.period_type = p->period_type;
	t.period_unit = p->period_unit;
	t.period = p->period;
	t.time_ns = p->time_ns;
	t.duration_ns = p->duration_ns;
	return t;
}

static void tree_free(model_tree_t *t)
{
	free(t->parent);
	free(t->frame);
	free(t->self);
	free(t->total);
}

static void test_encode_round_trip(void **state)
{
	(void)state;
	for (size_t f = 0; f < sizeof fixtures / sizeof fixtures[0]; f++) {
		unsigned char *raw;
		buf_t in;
		slice_t data = load_profile(fixtures[f].file, &raw, &in);
		model_batch_t *b = decode_ok(data, &default_opts);
		for (uint32_t t = 0; t < b->n_profiles; t++) {
			model_tree_t tree = tree_of(b, &b->profiles[t]);
			buf_t out;
			buf_init(&out, SIZE_MAX);
			err_t err = {0};
			assert_int_equal(pprof_encode(&tree, &out, &err), 0);
			model_batch_t *again = decode_ok(buf_slice(&out), &default_opts);
			assert_int_equal(again->n_profiles, 1);
			const model_profile_t *p = &again->profiles[0];
			assert_true(profile_total(again, p) == fixtures[f].types[t].total);
			assert_true(slice_eq(p->sample_type, b->profiles[t].sample_type));
			assert_true(slice_eq(p->period_unit, b->profiles[t].period_unit));
			assert_true(p->period == b->profiles[t].period);
			assert_true(p->time_ns == b->profiles[t].time_ns);
			assert_true(p->duration_ns == b->profiles[t].duration_ns);
			/* Same stacks: each re-decoded frame keeps name/file/binary. */
			assert_int_equal(p->samples_count > 0, b->profiles[t].samples_count > 0);
			for (uint32_t i = 0; i < again->n_frames; i++)
				if (!again->frames[i].unsymbolized)
					assert_true(again->frames[i].name.n > 0 ||
					            again->frames[i].binary.n == 0);
			model_batch_free(again);
			buf_free(&out);
			tree_free(&tree);
		}
		model_batch_free(b);
		buf_free(&in);
		free(raw);
	}
}

/* The root's self (empty stacks) is written as a Sample with no location:
 * decoded again, the same total, at node MODEL_NONE. */
static void test_encode_root_self(void **state)
{
	(void)state;
	model_frame_t frames[1] = {{.name = slice_cstr("main")}};
	uint32_t parent[] = {0, 0}, frame[] = {0, 0};
	int64_t self[] = {3, 5}, total[] = {8, 5};
	model_tree_t t = {.n_nodes = 2,
	                  .parent = parent,
	                  .frame = frame,
	                  .self = self,
	                  .total = total,
	                  .frames = frames,
	                  .n_frames = 1,
	                  .sample_type = slice_cstr("goroutine"),
	                  .sample_unit = slice_cstr("count")};
	buf_t out;
	buf_init(&out, SIZE_MAX);
	err_t err = {0};
	assert_int_equal(pprof_encode(&t, &out, &err), 0);
	model_batch_t *b = decode_ok(buf_slice(&out), &default_opts);
	const model_profile_t *p = &b->profiles[0];
	assert_int_equal(p->samples_count, 2);
	assert_true(profile_total(b, p) == 8);
	/* Sorted by node: main's sample first, the empty stack (MODEL_NONE) last. */
	assert_true(b->samples[p->samples_first + 1].node == MODEL_NONE);
	assert_true(b->samples[p->samples_first + 1].value == 3);
	model_batch_free(b);
	buf_free(&out);
}

static void test_encode_unsymbolized_and_limit(void **state)
{
	(void)state;
	model_frame_t frames[2] = {
	    {.name = slice_cstr("main"), .file = slice_cstr("main.go"), .binary = slice_cstr("/usr/bin/app")},
	    {.binary = slice_cstr("/usr/lib/libc.so.6"), .build_id = slice_cstr("abc"), .unsymbolized = 1},
	};
	uint32_t parent[] = {0, 0, 1}, frame[] = {0, 0, 1};
	int64_t self[] = {0, 5, 7}, total[] = {12, 12, 7};
	model_tree_t t = {.n_nodes = 3,
	                  .parent = parent,
	                  .frame = frame,
	                  .self = self,
	                  .total = total,
	                  .frames = frames,
	                  .n_frames = 2,
	                  .sample_type = slice_cstr("cpu"),
	                  .sample_unit = slice_cstr("nanoseconds"),
	                  .period_type = slice_cstr("cpu"),
	                  .period_unit = slice_cstr("nanoseconds"),
	                  .period = 10,
	                  .time_ns = 5,
	                  .duration_ns = 6};
	buf_t out;
	buf_init(&out, SIZE_MAX);
	err_t err = {0};
	assert_int_equal(pprof_encode(&t, &out, &err), 0);
	model_batch_t *b = decode_ok(buf_slice(&out), &default_opts);
	assert_true(profile_total(b, &b->profiles[0]) == 12);
	int seen = 0;
	for (uint32_t i = 0; i < b->n_frames; i++)
		if (slice_eq_cstr(b->frames[i].name, "libc.so.6")) {
			assert_true(slice_eq_cstr(b->frames[i].binary, "/usr/lib/libc.so.6"));
			assert_true(slice_eq_cstr(b->frames[i].build_id, "abc"));
			seen = 1;
		}
	assert_true(seen);
	model_batch_free(b);

	/* An output ceiling too small for the profile: 413, out unchanged. */
	buf_t small;
	buf_init(&small, 16);
	assert_int_equal(pprof_encode(&t, &small, &err), -1);
	assert_int_equal(err.status, 413);
	assert_int_equal(small.n, 0);
	buf_free(&small);

	/* An inconsistent tree is a bug, reported as 500. */
	parent[2] = 2;
	assert_int_equal(pprof_encode(&t, &out, &err), -1);
	assert_int_equal(err.status, 500);
	buf_free(&out);
}

/* ---- Scratch kept between decodes --------------------------------------- */

/* One decode's outcome as bytes: the batch's log encoding, or the status and
 * message of its error. -1 when out could not hold it. No cmocka asserts:
 * it also runs on a thread of its own. */
static int decode_outcome(slice_t data, buf_t *out)
{
	model_batch_t *b = model_batch_new(slice_cstr("test"));
	err_t err = {0};
	buf_init(out, SIZE_MAX);
	int rc = pprof_decode(data, &default_opts, b, &err) < 0
	             ? buf_printf(out, "error %d %s", err.status, err.msg)
	             : batch_codec_encode(b, out);
	model_batch_free(b);
	return rc;
}

typedef struct {
	slice_t data;
	buf_t out;
	int rc;
} fresh_job_t;

static void *fresh_main(void *arg)
{
	fresh_job_t *j = arg;
	j->rc = decode_outcome(j->data, &j->out);
	return NULL;
}

/* A thread keeps its decoder scratch (arena, tables, stacks) between
 * decodes. Decoding large, small, failing and repeated profiles one after
 * the other on this thread gives, for each, exactly what a thread that
 * never decoded before gives. */
static void test_scratch_reuse_between_decodes(void **state)
{
	(void)state;
	enum { N_FILES = sizeof fixtures / sizeof fixtures[0] };
	unsigned char *raw[N_FILES];
	buf_t plain[N_FILES];
	slice_t data[N_FILES];
	for (size_t f = 0; f < N_FILES; f++)
		data[f] = load_profile(fixtures[f].file, &raw[f], &plain[f]);
	/* Heap (largest) first, then smaller; a cut profile fails half way
	 * through its tables; every fixture again in the other order. */
	slice_t seq[2 * N_FILES + 3];
	size_t n = 0;
	seq[n++] = data[3];
	seq[n++] = data[2];
	seq[n++] = slice_make(data[0].p, data[0].n / 2);
	for (size_t f = 0; f < N_FILES; f++)
		seq[n++] = data[f];
	for (size_t f = N_FILES; f-- > 0;)
		seq[n++] = data[f];
	for (size_t i = 0; i < n; i++) {
		buf_t here;
		assert_int_equal(decode_outcome(seq[i], &here), 0);
		fresh_job_t j = {seq[i], {0}, -1};
		pthread_t t;
		assert_int_equal(pthread_create(&t, NULL, fresh_main, &j), 0);
		assert_int_equal(pthread_join(t, NULL), 0);
		assert_int_equal(j.rc, 0);
		if (here.n != j.out.n || memcmp(here.p, j.out.p, here.n) != 0)
			fail_msg(
			    "decode %zu of the sequence differs from a fresh thread's (%zu vs %zu bytes)", i,
			    here.n, j.out.n);
		buf_free(&here);
		buf_free(&j.out);
	}
	for (size_t f = 0; f < N_FILES; f++) {
		free(raw[f]);
		buf_free(&plain[f]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_testdata_totals),
	    cmocka_unit_test(test_testdata_details),
	    cmocka_unit_test(test_base_profile),
	    cmocka_unit_test(test_inline_order),
	    cmocka_unit_test(test_shared_function_frames),
	    cmocka_unit_test(test_empty_stack_samples),
	    cmocka_unit_test(test_function_id_zero_and_duplicates),
	    cmocka_unit_test(test_sparse_ids),
	    cmocka_unit_test(test_stack_depth_limit),
	    cmocka_unit_test(test_bad_inputs),
	    cmocka_unit_test(test_max_rows_option),
	    cmocka_unit_test(test_every_truncation),
	    cmocka_unit_test(test_encode_round_trip),
	    cmocka_unit_test(test_encode_root_self),
	    cmocka_unit_test(test_encode_unsymbolized_and_limit),
	    cmocka_unit_test(test_scratch_reuse_between_decodes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
