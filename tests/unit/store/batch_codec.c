/* Tests of store/batch_codec.c: every tests/data fixture decoded as the
 * ingest path decodes it (pprof, OTLP protobuf, OTLP/JSON) survives
 * encode → decode field by field, and re-encodes to the same bytes; a small
 * hand-built batch encodes to the bytes of the layout in docs/STORE.md
 * (written out here by hand: the oracle), and every damage to it — cut at
 * each byte offset, each count bumped, an index out of range, a bad flag,
 * a wrong version — gives the exact error; the encoder honours its buffer's
 * ceiling at every size. */
#include "testutil.h"

#include <inttypes.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/limits.h"
#include "model/model.h"
#include "store/batch_codec.h"
#include "wire/compress.h"
#include "wire/otlp.h"
#include "wire/pprof.h"

/* ---- equality, field by field ---- */

static void eq_slice(slice_t a, slice_t b, const char *what, uint32_t i)
{
	if (!slice_eq(a, b))
		fail_msg("%s[%u]: \"%.*s\" != \"%.*s\"", what, i, (int)a.n, (const char *)a.p, (int)b.n,
		         (const char *)b.p);
}

static void eq_labels(const model_label_t *a, const model_label_t *b, uint32_t n, const char *what)
{
	for (uint32_t i = 0; i < n; i++) {
		eq_slice(a[i].key, b[i].key, what, i);
		eq_slice(a[i].value, b[i].value, what, i);
	}
}

static void batch_equal(const model_batch_t *a, const model_batch_t *b)
{
	eq_slice(a->project, b->project, "project", 0);
	assert_int_equal(a->frames_written, b->frames_written);
	assert_int_equal(a->n_frames, b->n_frames);
	assert_int_equal(a->n_nodes, b->n_nodes);
	assert_int_equal(a->n_attr_labels, b->n_attr_labels);
	assert_int_equal(a->n_attrsets, b->n_attrsets);
	assert_int_equal(a->n_series_labels, b->n_series_labels);
	assert_int_equal(a->n_samples, b->n_samples);
	assert_int_equal(a->n_profiles, b->n_profiles);
	for (uint32_t i = 0; i < a->n_frames; i++) {
		const model_frame_t *x = &a->frames[i], *y = &b->frames[i];
		assert_int_equal(x->id, y->id);
		eq_slice(x->name, y->name, "frames.name", i);
		eq_slice(x->file, y->file, "frames.file", i);
		eq_slice(x->binary, y->binary, "frames.binary", i);
		eq_slice(x->build_id, y->build_id, "frames.build_id", i);
		eq_slice(x->kind, y->kind, "frames.kind", i);
		assert_int_equal(x->unsymbolized, y->unsymbolized);
	}
	for (uint32_t i = 0; i < a->n_nodes; i++) {
		assert_int_equal(a->nodes[i].id, b->nodes[i].id);
		assert_int_equal(a->nodes[i].parent, b->nodes[i].parent);
		assert_int_equal(a->nodes[i].frame, b->nodes[i].frame);
	}
	eq_labels(a->attr_labels, b->attr_labels, a->n_attr_labels, "attr_labels");
	for (uint32_t i = 0; i < a->n_attrsets; i++) {
		assert_int_equal(a->attrsets[i].id, b->attrsets[i].id);
		assert_int_equal(a->attrsets[i].first, b->attrsets[i].first);
		assert_int_equal(a->attrsets[i].count, b->attrsets[i].count);
	}
	eq_labels(a->series_labels, b->series_labels, a->n_series_labels, "series_labels");
	for (uint32_t i = 0; i < a->n_samples; i++) {
		const model_sample_t *x = &a->samples[i], *y = &b->samples[i];
		if (x->node != y->node || x->attrset != y->attrset || x->value != y->value ||
		    x->time_ns != y->time_ns)
			fail_msg("samples[%u]: (%u %u %" PRId64 " %" PRId64 ") != (%u %u %" PRId64 " %" PRId64
			         ")",
			         i, x->node, x->attrset, x->value, x->time_ns, y->node, y->attrset, y->value,
			         y->time_ns);
	}
	for (uint32_t i = 0; i < a->n_profiles; i++) {
		const model_profile_t *x = &a->profiles[i], *y = &b->profiles[i];
		eq_slice(x->service, y->service, "profiles.service", i);
		eq_slice(x->sample_type, y->sample_type, "profiles.sample_type", i);
		eq_slice(x->sample_unit, y->sample_unit, "profiles.sample_unit", i);
		eq_slice(x->period_type, y->period_type, "profiles.period_type", i);
		eq_slice(x->period_unit, y->period_unit, "profiles.period_unit", i);
		assert_int_equal(x->period, y->period);
		assert_int_equal(x->aggregation, y->aggregation);
		assert_int_equal(x->cpu_alias, y->cpu_alias);
		assert_int_equal(x->time_ns, y->time_ns);
		assert_int_equal(x->duration_ns, y->duration_ns);
		assert_int_equal(x->labels_first, y->labels_first);
		assert_int_equal(x->labels_count, y->labels_count);
		assert_int_equal(x->samples_first, y->samples_first);
		assert_int_equal(x->samples_count, y->samples_count);
		assert_int_equal(x->series_id, y->series_id);
	}
}

/* encode → decode → equal; encode again → the same bytes. The first
 * encoding is wiped before the comparison: the decoded batch borrows none of it. */
static void round_trip(const model_batch_t *b, const char *what)
{
	buf_t enc, again;
	buf_init(&enc, SIZE_MAX);
	buf_init(&again, SIZE_MAX);
	buf_putc(&enc, 'x'); /* an encoding appends: what was there stays */
	assert_int_equal(batch_codec_encode(b, &enc), 0);
	assert_int_equal(enc.p[0], 'x');
	assert_int_equal(enc.p[1], BATCH_CODEC_VERSION);
	arena_t *a = arena_new();
	model_batch_t d;
	err_t err = {0};
	if (batch_codec_decode(slice_make(enc.p + 1, enc.n - 1), a, &d, &err) < 0)
		fail_msg("%s: %s", what, err.msg);
	assert_ptr_equal(d.arena, a);
	assert_int_equal(batch_codec_encode(&d, &again), 0);
	assert_int_equal(again.n, enc.n - 1);
	assert_memory_equal(again.p, enc.p + 1, again.n);
	memset(enc.p, 0xa5, enc.n);
	batch_equal(b, &d);
	arena_free(a);
	buf_free(&enc);
	buf_free(&again);
}

/* ---- every fixture, through the real decoders ---- */

static slice_t load(const char *rel, unsigned char **raw)
{
	char path[512];
	size_t n;
	snprintf(path, sizeof path, "%s/%s", testdata_dir(), rel);
	*raw = read_file_or_fail(path, &n);
	return slice_make(*raw, n);
}

/* Decodes a pprof fixture into b as api/upload does (gunzip, then pprof_decode). */
static void pprof_into(model_batch_t *b, const char *rel, const pprof_decode_opts_t *o)
{
	unsigned char *raw;
	slice_t in = load(rel, &raw);
	buf_t plain;
	buf_init(&plain, LIMIT_DECODED_BYTES);
	err_t err = {0};
	if (gz_is_gzip(in)) {
		if (gz_inflate(in, &plain, &err) < 0)
			fail_msg("%s: %s", rel, err.msg);
		in = buf_slice(&plain);
	}
	if (pprof_decode(in, o, b, &err) < 0)
		fail_msg("%s: %s", rel, err.msg);
	buf_free(&plain);
	free(raw);
}

static const char *const pprof_fixtures[] = {
    "pprof/go-cpu-fib.pb.gz",    "pprof/go-cpu-span-labels.pb.gz", "pprof/go-cpu-two-stacks.pb.gz",
    "pprof/go-heap-delta.pb.gz", "pprof/nodejs-wall.pb.gz",        "pprof/python-pyspy-not-gzipped.pb",
};

static void test_pprof_fixtures(void **state)
{
	(void)state;
	model_label_t labels[] = {{slice_cstr("namespace"), slice_cstr("prod")},
	                          {slice_cstr("pod"), slice_cstr("api-7d9f")}};
	pprof_decode_opts_t o = {.service = slice_cstr("checkout"),
	                         .labels = labels,
	                         .n_labels = 2,
	                         .now_ns = 1760000000000000000,
	                         .max_rows = LIMIT_SAMPLE_ROWS};
	size_t n_fix = sizeof pprof_fixtures / sizeof *pprof_fixtures;
	for (size_t i = 0; i < n_fix; i++) {
		model_batch_t *b = model_batch_new(slice_cstr("team-a"));
		pprof_into(b, pprof_fixtures[i], &o);
		assert_true(b->n_profiles > 0 && b->n_samples > 0 && b->n_nodes > 0);
		round_trip(b, pprof_fixtures[i]);
		model_batch_free(b);
	}
	/* A Pyroscope push: every fixture into one batch. */
	model_batch_t *all = model_batch_new(slice_cstr("team-b"));
	for (size_t i = 0; i < n_fix; i++)
		pprof_into(all, pprof_fixtures[i], &o);
	round_trip(all, "all pprof fixtures in one batch");
	model_batch_free(all);
}

static void test_otlp_fixtures(void **state)
{
	(void)state;
	otlp_decode_opts_t o = {.now_ns = 1760000000000000000};
	unsigned char *raw;
	/* protobuf, as api/otlp_grpc and api/otlp_http (protobuf) decode it */
	slice_t pb = load("otlp/ebpf-profiler-v1.10.pb", &raw);
	model_batch_t *b = model_batch_new(slice_cstr("team-a"));
	otlp_result_t r;
	err_t err = {0};
	if (otlp_decode(pb, &o, b, &r, &err) < 0)
		fail_msg("%s", err.msg);
	assert_true(b->n_profiles > 0 && b->n_attrsets > 1);
	round_trip(b, "ebpf-profiler-v1.10.pb");
	model_batch_free(b);
	free(raw);
	/* OTLP/JSON, as api/otlp_http (application/json) decodes it */
	slice_t json = load("otlp/ebpf-profiler-v1.10.json", &raw);
	buf_t tpb;
	buf_init(&tpb, LIMIT_DECODED_BYTES);
	if (otlp_json_to_pb(json, &tpb, &err) < 0)
		fail_msg("%s", err.msg);
	b = model_batch_new(slice_cstr("team-a"));
	if (otlp_decode(buf_slice(&tpb), &o, b, &r, &err) < 0)
		fail_msg("%s", err.msg);
	round_trip(b, "ebpf-profiler-v1.10.json");
	model_batch_free(b);
	buf_free(&tpb);
	free(raw);
}

/* ---- a small batch, built by hand, and its bytes ---- */

static model_frame_t small_frames[] = {
    {0x11, {(const uint8_t *)"main", 4}, {(const uint8_t *)"m.go", 4}, {0}, {0}, {0}, 0},
    {0x12, {0}, {0}, {(const uint8_t *)"libc.so", 7}, {0}, {(const uint8_t *)"native", 6}, 1},
};
static model_node_t small_nodes[] = {{0x21, MODEL_NONE, 0}, {0x22, 0, 1}};
static model_label_t small_attr_labels[] = {{{(const uint8_t *)"span_id", 7}, {(const uint8_t *)"ab", 2}}};
static model_attrset_t small_attrsets[] = {{0, 0, 0}, {0x31, 0, 1}};
static model_label_t small_series_labels[] = {{{(const uint8_t *)"env", 3}, {(const uint8_t *)"prod", 4}}};
static model_sample_t small_samples[] = {{1, 1, 5, 0}, {MODEL_NONE, 0, -2, 1000}};
static model_profile_t small_profiles[] = {{
    .service = {(const uint8_t *)"svc", 3},
    .sample_type = {(const uint8_t *)"cpu", 3},
    .sample_unit = {(const uint8_t *)"ns", 2},
    .period_type = {(const uint8_t *)"cpu", 3},
    .period_unit = {(const uint8_t *)"ns", 2},
    .period = 10,
    .aggregation = MODEL_WINDOW,
    .cpu_alias = 1,
    .time_ns = 7,
    .duration_ns = 3,
    .labels_first = 0,
    .labels_count = 1,
    .samples_first = 0,
    .samples_count = 2,
    .series_id = 0x41,
}};

static model_batch_t small_batch(void)
{
	model_batch_t b = {0};
	b.project = slice_cstr("p");
	b.frames_written = 3;
	b.frames = small_frames, b.n_frames = 2;
	b.nodes = small_nodes, b.n_nodes = 2;
	b.attr_labels = small_attr_labels, b.n_attr_labels = 1;
	b.attrsets = small_attrsets, b.n_attrsets = 2;
	b.series_labels = small_series_labels, b.n_series_labels = 1;
	b.samples = small_samples, b.n_samples = 2;
	b.profiles = small_profiles, b.n_profiles = 1;
	return b;
}

/* The layout of docs/STORE.md (The batch encoding), byte by byte, with the
 * field that starts at each offset: the oracle for the encoder and for the
 * truncation messages. */
static const struct {
	unsigned at;
	const char *field, *hex;
} small_layout[] = {
    {0, "version", "01"},
    {1, "string_bytes", "33000000"}, /* 51 */
    {5, "project", "0170"},
    {7, "frames_written", "03"},
    {8, "n_frames", "02"},
    {9, "n_nodes", "02"},
    {10, "n_attr_labels", "01"},
    {11, "n_attrsets", "01"}, /* the sets after the empty set 0 */
    {12, "n_series_labels", "01"},
    {13, "n_samples", "02"},
    {14, "n_profiles", "01"},
    {15, "frames[0].id", "1100000000000000"},
    {23, "frames[0].unsymbolized", "00"},
    {24, "frames[0].name", "046d61696e"},
    {29, "frames[0].file", "046d2e676f"},
    {34, "frames[0].binary", "00"},
    {35, "frames[0].build_id", "00"},
    {36, "frames[0].kind", "00"},
    {37, "frames[1].id", "1200000000000000"},
    {45, "frames[1].unsymbolized", "01"},
    {46, "frames[1].name", "00"},
    {47, "frames[1].file", "00"},
    {48, "frames[1].binary", "076c6962632e736f"},
    {56, "frames[1].build_id", "00"},
    {57, "frames[1].kind", "066e6174697665"},
    {64, "nodes[0].id", "2100000000000000"},
    {72, "nodes[0].parent", "00"}, /* none */
    {73, "nodes[0].frame", "00"},
    {74, "nodes[1].id", "2200000000000000"},
    {82, "nodes[1].parent", "01"}, /* one node back */
    {83, "nodes[1].frame", "01"},
    {84, "attr_labels[0].key", "077370616e5f6964"},
    {92, "attr_labels[0].value", "026162"},
    {95, "attrsets[1].id", "3100000000000000"},
    {103, "attrsets[1].first", "00"},
    {104, "attrsets[1].count", "01"},
    {105, "series_labels[0].key", "03656e76"},
    {109, "series_labels[0].value", "0470726f64"},
    {114, "samples[0].node", "02"}, /* node + 1 */
    {115, "samples[0].attrset", "01"},
    {116, "samples[0].value", "0a"}, /* zigzag 5 */
    {117, "samples[0].time_ns", "00"},
    {118, "samples[1].node", "00"}, /* the empty stack */
    {119, "samples[1].attrset", "00"},
    {120, "samples[1].value", "03"},     /* zigzag -2 */
    {121, "samples[1].time_ns", "d00f"}, /* zigzag 1000 = 2000 */
    {123, "profiles[0].service", "03737663"},
    {127, "profiles[0].sample_type", "03637075"},
    {131, "profiles[0].sample_unit", "026e73"},
    {134, "profiles[0].period_type", "03637075"},
    {138, "profiles[0].period_unit", "026e73"},
    {141, "profiles[0].period", "14"},
    {142, "profiles[0].aggregation", "00"},
    {143, "profiles[0].cpu_alias", "01"},
    {144, "profiles[0].time_ns", "0e"},
    {145, "profiles[0].duration_ns", "06"},
    {146, "profiles[0].labels_first", "00"},
    {147, "profiles[0].labels_count", "01"},
    {148, "profiles[0].samples_first", "00"},
    {149, "profiles[0].samples_count", "02"},
    {150, "profiles[0].series_id", "4100000000000000"},
};
#define SMALL_LEN 158

/* Writes the bytes of hex string h at out; returns their count. */
static size_t hex_put(const char *h, uint8_t *out)
{
	size_t n = 0;
	for (; h[0] && h[1]; h += 2) {
		unsigned v;
		assert_int_equal(sscanf(h, "%2x", &v), 1);
		out[n++] = (uint8_t)v;
	}
	return n;
}

static size_t small_bytes(uint8_t *out)
{
	size_t n = 0;
	for (size_t i = 0; i < sizeof small_layout / sizeof *small_layout; i++) {
		assert_int_equal(n, small_layout[i].at);
		n += hex_put(small_layout[i].hex, out + n);
	}
	assert_int_equal(n, SMALL_LEN);
	return n;
}

static void test_small_layout(void **state)
{
	(void)state;
	uint8_t want[SMALL_LEN];
	small_bytes(want);
	model_batch_t b = small_batch();
	buf_t out;
	buf_init(&out, SIZE_MAX);
	assert_int_equal(batch_codec_encode_version(&b, &out, 1), 0);
	assert_int_equal(out.n, SMALL_LEN);
	assert_memory_equal(out.p, want, SMALL_LEN);
	round_trip(&b, "small");
	buf_free(&out);
}

/* The encoder at every ceiling, in both versions: below the encoding's end
 * it fails and leaves the buffer as it was; at or above it, the same bytes. */
static void test_ceiling(void **state)
{
	(void)state;
	model_batch_t b = small_batch();
	for (int v = 1; v <= BATCH_CODEC_VERSION; v++) {
		buf_t full;
		buf_init(&full, SIZE_MAX);
		assert_int_equal(batch_codec_encode_version(&b, &full, v), 0);
		if (v == 1) {
			uint8_t want[SMALL_LEN];
			small_bytes(want);
			assert_int_equal(full.n, SMALL_LEN);
			assert_memory_equal(full.p, want, SMALL_LEN);
		}
		for (size_t max = 3; max <= 3 + full.n + 40; max++) {
			buf_t out;
			buf_init(&out, max);
			assert_int_equal(buf_append(&out, "abc", 3), 0);
			int rc = batch_codec_encode_version(&b, &out, v);
			if (max < 3 + full.n) {
				assert_int_equal(rc, -1);
				assert_int_equal(out.n, 3);
			} else {
				assert_int_equal(rc, 0);
				assert_int_equal(out.n, 3 + full.n);
				assert_memory_equal(out.p + 3, full.p, full.n);
			}
			assert_memory_equal(out.p, "abc", 3);
			buf_free(&out);
		}
		buf_free(&full);
	}
}

static int decode_msg(const uint8_t *p, size_t n, char *msg, size_t cap);

/* Version 2: a string written before is its number. Two frames share a file
 * and a kind (as every frame of one binary does); the bytes are worked out
 * by hand from docs/STORE.md (The batch encoding). */
/* Decodes out into d (strings in a), which must equal b. */
static void decode_equal(const buf_t *out, arena_t *a, const model_batch_t *b, model_batch_t *d)
{
	err_t err = {0};
	if (batch_codec_decode(slice_make(out->p, out->n), a, d, &err) < 0)
		fail_msg("%s", err.msg);
	batch_equal(b, d);
}

static void test_v2_shared_strings(void **state)
{
	(void)state;
	static const char main_s[] = "main", file_s[] = "m.go", kind_s[] = "go", f_s[] = "f";
	model_frame_t frames[2] = {
	    {.id = 0x11, .name = slice_cstr(main_s), .file = slice_cstr(file_s), .kind = slice_cstr(kind_s)},
	    {.id = 0x12, .name = slice_cstr(f_s), .file = slice_cstr(file_s), .kind = slice_cstr(kind_s)},
	};
	model_attrset_t empty = {0};
	model_batch_t b = {0};
	b.project = slice_cstr("p");
	b.frames = frames, b.n_frames = 2;
	b.attrsets = &empty, b.n_attrsets = 1;
	static const char want_hex[] = "02"
	                               "0c000000"       /* 12 string bytes: p main m.go go f */
	                               "0170"           /* project, whole as in version 1 */
	                               "00"             /* frames_written */
	                               "02000000000000" /* the counts */
	                               "1100000000000000"
	                               "00"
	                               "086d61696e" /* frames[0]: id, flag, name = string 0 */
	                               "086d2e676f"
	                               "00"
	                               "00"
	                               "04676f" /* file = 1, binary, build_id, kind = 2 */
	                               "1200000000000000"
	                               "00"
	                               "0266" /* frames[1]: name "f" = string 3 */
	                               "03"
	                               "00"
	                               "00"
	                               "05"; /* file: string 1, kind: string 2 */
	uint8_t want[64];
	size_t n = hex_put(want_hex, want);
	buf_t out;
	buf_init(&out, SIZE_MAX);
	assert_int_equal(batch_codec_encode(&b, &out), 0);
	assert_int_equal(out.n, n);
	assert_memory_equal(out.p, want, n);
	arena_t *a = arena_new();
	model_batch_t d;
	decode_equal(&out, a, &b, &d);
	assert_ptr_equal(d.frames[0].file.p, d.frames[1].file.p); /* one copy, as the input had */
	arena_free(a);
	round_trip(&b, "shared strings");
	/* A number not yet written: frames[1].file at byte 50 names string 4 of 4. */
	char got[480];
	want[50] = 0x09;
	assert_int_equal(decode_msg(want, n, got, sizeof got), -1);
	assert_string_equal(got,
	                    "batch record: frames[1].file at byte 50: string 4 is not among the 4 before it");
	buf_free(&out);
}

/* Strings of one length with the same first and last 8 bytes all start
 * their search at one slot of the dedup table: the first 16 are found
 * (each frame's file, equal to its name, is written as the name's number),
 * the later ones are given up after 16 slots and written whole; every
 * string decodes as it was. */
static void test_v2_colliding_strings(void **state)
{
	(void)state;
	enum { N = 200 };
	static char names[N][25], files[N][25];
	static model_frame_t frames[N];
	for (int i = 0; i < N; i++) {
		memcpy(names[i], "AAAAAAAA00000000ZZZZZZZZ", 25); /* the middle: i in 8 digits */
		for (int k = 15, v = i; v; k--, v /= 10)
			names[i][k] = (char)('0' + v % 10);
		memcpy(files[i], names[i], sizeof files[i]); /* equal bytes, another copy */
		frames[i] = (model_frame_t){
		    .id = 0x100 + (uint64_t)i, .name = slice_cstr(names[i]), .file = slice_cstr(files[i])};
	}
	model_attrset_t empty = {0};
	model_batch_t b = {0};
	b.project = slice_cstr("p");
	b.frames = frames, b.n_frames = N;
	b.attrsets = &empty, b.n_attrsets = 1;
	buf_t out;
	buf_init(&out, SIZE_MAX);
	assert_int_equal(batch_codec_encode(&b, &out), 0);
	arena_t *a = arena_new();
	model_batch_t d;
	decode_equal(&out, a, &b, &d);
	for (int i = 0; i < N; i++)
		if ((d.frames[i].file.p == d.frames[i].name.p) != (i < 16))
			fail_msg("frame %d: file %s the name's copy", i, i < 16 ? "is not" : "is");
	arena_free(a);
	buf_free(&out);
	round_trip(&b, "colliding strings");
}

static int decode_msg(const uint8_t *p, size_t n, char *msg, size_t cap)
{
	arena_t *a = arena_new();
	model_batch_t d;
	err_t err = {0};
	int rc = batch_codec_decode(slice_make(p, n), a, &d, &err);
	if (rc < 0) {
		assert_int_equal(err.status, 500);
		snprintf(msg, cap, "%s", err.msg);
		assert_null(d.frames);
		assert_int_equal(d.n_samples, 0);
	}
	arena_free(a);
	return rc;
}

/* The small encoding cut at every length 0 .. SMALL_LEN - 1. What each
 * length must give, worked out from the layout: up to the counts, the field
 * the cut falls in; then the counts are checked against what is left (each
 * element's least size, 14 per frame, 10 per node, 2 per label, 10 per set,
 * 4 per sample, 22 per profile, plus the 50 string bytes after the project:
 * 142 bytes, and 143 follow the counts); the last byte's cut is in the last
 * field. */
static void test_truncated_everywhere(void **state)
{
	(void)state;
	uint8_t good[SMALL_LEN];
	small_bytes(good);
	for (size_t k = 0; k < SMALL_LEN; k++) {
		char want[480], got[480];
		if (k == 0)
			snprintf(want, sizeof want, "batch record: version at byte 0: the record is empty");
		else if (k < 15) {
			size_t f = 0; /* the field holding byte k, the first one missing */
			while (small_layout[f + 1].at <= k)
				f++;
			if (k == 6) /* the project's length is there, its byte is not */
				snprintf(want, sizeof want,
				         "batch record: project at byte 5: length 1 is truncated (the record "
				         "ends at byte 6)");
			else
				snprintf(
				    want, sizeof want,
				    "batch record: %s at byte %u: truncated (the record ends at byte %zu)",
				    small_layout[f].field, small_layout[f].at, k);
		} else if (k < 17)
			snprintf(want, sizeof want,
			         "batch record: n_frames at byte 8: 2 cannot fit the %zu bytes left", k - 15);
		else if (k < SMALL_LEN - 1)
			snprintf(want, sizeof want,
			         "batch record: counts at byte 8: need at least 142 bytes, %zu are left",
			         k - 15);
		else
			snprintf(want, sizeof want,
			         "batch record: profiles[0].series_id at byte 150: truncated (the record "
			         "ends at byte 157)");
		if (decode_msg(good, k, got, sizeof got) == 0)
			fail_msg("cut at %zu decoded", k);
		if (strcmp(got, want) != 0)
			fail_msg("cut at %zu:\n got  %s\n want %s", k, got, want);
	}
}

/* Damage to the small encoding: at byte `at`, `del` bytes replaced by `hex`. */
typedef struct {
	const char *name;
	unsigned at, del;
	const char *hex;
	const char *msg;
} damage_case;

static void test_damaged(void **state)
{
	(void)state;
	static const damage_case cases[] = {
	    {"version 3", 0, 1, "03", "version at byte 0: 3; this Kiln reads 1 to 2"},
	    {"version 0", 0, 1, "00", "version at byte 0: 0; this Kiln reads 1 to 2"},
	    /* each count bumped: one more element's least size than the 143 bytes after the counts */
	    {"n_frames + 1", 8, 1, "03", "counts at byte 8: need at least 156 bytes, 143 are left"},
	    {"n_nodes + 1", 9, 1, "03", "counts at byte 8: need at least 152 bytes, 143 are left"},
	    {"n_attr_labels + 1", 10, 1, "02", "counts at byte 8: need at least 144 bytes, 143 are left"},
	    {"n_attrsets + 1", 11, 1, "02", "counts at byte 8: need at least 152 bytes, 143 are left"},
	    {"n_series_labels + 1", 12, 1, "02", "counts at byte 8: need at least 144 bytes, 143 are left"},
	    {"n_samples + 1", 13, 1, "03", "counts at byte 8: need at least 146 bytes, 143 are left"},
	    {"n_profiles + 1", 14, 1, "02", "counts at byte 8: need at least 164 bytes, 143 are left"},
	    {"n_samples huge", 13, 1, "ffffffff0f",
	     "n_samples at byte 13: 4294967295 cannot fit the 143 bytes left"},
	    {"string_bytes + 1", 1, 1, "34", "string_bytes at byte 1: 52 declared, 51 used"},
	    {"string_bytes - 1", 1, 1, "32",
	     "profiles[0].period_unit at byte 138: length 2 passes the 1 string bytes left"},
	    {"project longer than the strings", 5, 1, "40",
	     "project at byte 5: length 64 passes the 51 string bytes left"},
	    {"frame name past the end", 24, 1, "ff01",
	     "frames[0].name at byte 24: length 255 is truncated (the record ends at byte 159)"},
	    {"frames_written past 64 bits", 7, 1, "ffffffffffffffffff7f",
	     "frames_written at byte 7: varint longer than 64 bits"},
	    /* indexes out of range */
	    {"node frame", 83, 1, "02", "nodes[1].frame at byte 83: 2 is not below the 2 frames"},
	    {"root node with a parent", 72, 1, "01",
	     "nodes[0].parent at byte 72: 1 nodes back is before node 0"},
	    {"node parent too far back", 82, 1, "02",
	     "nodes[1].parent at byte 82: 2 nodes back is before node 0"},
	    {"attrset first", 103, 1, "02", "attrsets[1].first at byte 103: 2 passes the 1 attribute labels"},
	    {"attrset labels", 104, 1, "02",
	     "attrsets[1].count at byte 104: labels 0..2 pass the 1 attribute labels"},
	    {"attrset over LIMIT_LABELS", 104, 1, "41",
	     "attrsets[1].count at byte 104: 65 labels; the limit is 64"},
	    {"sample node", 114, 1, "03", "samples[0].node at byte 114: 2 is not below the 2 nodes"},
	    {"sample attrset", 115, 1, "02",
	     "samples[0].attrset at byte 115: 2 is not below the 2 attribute sets"},
	    {"profile labels_first", 146, 1, "02",
	     "profiles[0].labels_first at byte 146: 2 passes the 1 series labels"},
	    {"profile labels", 147, 1, "02",
	     "profiles[0].labels_count at byte 147: 0 + 2 pass the 1 series labels"},
	    {"profile samples_first", 148, 1, "03",
	     "profiles[0].samples_first at byte 148: 3 passes the 2 samples"},
	    {"profile samples", 149, 1, "03",
	     "profiles[0].samples_count at byte 149: 0 + 3 pass the 2 samples"},
	    /* flags */
	    {"unsymbolized 2", 45, 1, "02", "frames[1].unsymbolized at byte 45: 2 is not 0 or 1"},
	    {"aggregation 2", 142, 1, "02", "profiles[0].aggregation at byte 142: 2 is not 0 or 1"},
	    {"cpu_alias 255", 143, 1, "ff", "profiles[0].cpu_alias at byte 143: 255 is not 0 or 1"},
	    /* the end */
	    {"a trailing byte", SMALL_LEN, 0, "00", "end at byte 158: 1 bytes after the batch"},
	};
	uint8_t good[SMALL_LEN];
	small_bytes(good);
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const damage_case *c = &cases[i];
		uint8_t bad[SMALL_LEN + 32];
		size_t n = c->at;
		memcpy(bad, good, c->at);
		n += hex_put(c->hex, bad + n);
		memcpy(bad + n, good + c->at + c->del, SMALL_LEN - c->at - c->del);
		n += SMALL_LEN - c->at - c->del;
		char got[480], want[480];
		snprintf(want, sizeof want, "batch record: %s", c->msg);
		if (decode_msg(bad, n, got, sizeof got) == 0)
			fail_msg("%s: decoded", c->name);
		if (strcmp(got, want) != 0)
			fail_msg("%s:\n got  %s\n want %s", c->name, got, want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pprof_fixtures),       cmocka_unit_test(test_otlp_fixtures),
	    cmocka_unit_test(test_small_layout),         cmocka_unit_test(test_ceiling),
	    cmocka_unit_test(test_truncated_everywhere), cmocka_unit_test(test_damaged),
	    cmocka_unit_test(test_v2_shared_strings),    cmocka_unit_test(test_v2_colliding_strings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
