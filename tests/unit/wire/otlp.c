/* Tests of src/wire/otlp_decode.c, otlp_dict.c and otlp_json.c: the real
 * eBPF-profiler request decodes to independently computed totals, its
 * OTLP/JSON twin gives the identical batch, older formats are refused with
 * the right hint, and a table of hostile inputs built with the pb writer
 * gets the exact status and message. */
#include "testutil.h"

#include <inttypes.h>

#include "base/buf.h"
#include "base/limits.h"
#include "model/model.h"
#include "wire/otlp.h"
#include "wire/pb.h"

static const otlp_decode_opts_t default_opts = {.now_ns = 42};

static slice_t load(const char *name, unsigned char **raw)
{
	char path[512];
	size_t n;
	snprintf(path, sizeof path, "%s/otlp/%s", testdata_dir(), name);
	*raw = read_file_or_fail(path, &n);
	return slice_make(*raw, n);
}

static int decode(slice_t pb, const otlp_decode_opts_t *o, model_batch_t **b, otlp_result_t *r, err_t *err)
{
	*b = model_batch_new(slice_cstr("test"));
	return otlp_decode(pb, o, *b, r, err);
}

static int64_t profile_total(const model_batch_t *b, const model_profile_t *p)
{
	int64_t t = 0;
	for (uint32_t s = 0; s < p->samples_count; s++)
		t += b->samples[p->samples_first + s].value;
	return t;
}

/* ---- The real request ------------------------------------------------------ */

/* Totals of ebpf-profiler-v1.10.json computed without Kiln, by a Python
 * script walking the JSON (and, to confirm the field numbers, a raw
 * protobuf walk of the .pb gave the same figures):
 *   for each resourceProfiles[].scopeProfiles[].profiles[]:
 *     type = stringTable[sampleType.typeStrindex]:stringTable[.unitStrindex]
 *     for each samples[]: v = values (or 1 per timestamp when no values);
 *       points += len(v); total[type] += sum(v)
 * giving 82 profiles (77 off_cpu:nanoseconds, 5 samples:count), 317 OTLP
 * Samples, 5321 points (5311 + 10), off_cpu 267302249331 ns, samples 10. */
static void test_testdata_totals(void **state)
{
	(void)state;
	unsigned char *raw;
	slice_t pb = load("ebpf-profiler-v1.10.pb", &raw);
	model_batch_t *b;
	otlp_result_t r;
	err_t err = {0};
	if (decode(pb, &default_opts, &b, &r, &err) < 0)
		fail_msg("%d %s", err.status, err.msg);
	assert_int_equal(r.profiles, 82);
	assert_int_equal(b->n_profiles, 82);
	assert_int_equal(r.samples, 5321);
	assert_int_equal(r.rejected_profiles, 0);
	assert_int_equal(r.rejected_samples, 0);
	assert_string_equal(r.message, "");
	int64_t off_cpu = 0, samples = 0;
	uint32_t n_off = 0, n_samples = 0, n_alias = 0, n_unknown_exe = 0;
	for (uint32_t i = 0; i < b->n_profiles; i++) {
		const model_profile_t *p = &b->profiles[i];
		char type[64];
		model_type_name(p, type, sizeof type);
		if (!strcmp(type, "off_cpu:nanoseconds")) {
			off_cpu += profile_total(b, p);
			n_off++;
		} else if (!strcmp(type, "samples:count")) {
			samples += profile_total(b, p);
			n_samples++;
			assert_true(slice_eq_cstr(p->period_type, "cpu"));
			assert_int_equal(p->period, 50000000);
		} else {
			fail_msg("unexpected type %s", type);
		}
		n_alias += p->cpu_alias;
		/* No service.name: unknown_service, or unknown_service:<exe>. */
		if (p->service.n > 16 && !memcmp(p->service.p, "unknown_service:", 16))
			n_unknown_exe++;
		else
			assert_true(slice_eq_cstr(p->service, "unknown_service"));
		/* process.pid is a series label. */
		int has_pid = 0;
		for (uint32_t l = 0; l < p->labels_count; l++)
			has_pid |= slice_eq_cstr(b->series_labels[p->labels_first + l].key, "process.pid");
		assert_true(has_pid);
		assert_int_equal(p->time_ns, 1774910497545532978);
	}
	assert_int_equal(n_off, 77);
	assert_int_equal(n_samples, 5);
	assert_int_equal(off_cpu, 267302249331);
	assert_int_equal(samples, 10);
	assert_int_equal(n_alias, 5);
	assert_true(n_unknown_exe >= 3);
	/* Frames: kernel, go and native kinds; unsymbolized native frames name their binary. */
	uint32_t kinds[3] = {0}, unsym = 0;
	for (uint32_t f = 0; f < b->n_frames; f++) {
		const model_frame_t *fr = &b->frames[f];
		kinds[0] += slice_eq_cstr(fr->kind, "kernel");
		kinds[1] += slice_eq_cstr(fr->kind, "go");
		kinds[2] += slice_eq_cstr(fr->kind, "native");
		if (fr->unsymbolized) {
			unsym++;
			assert_int_equal(fr->name.n, 0);
		}
	}
	assert_true(kinds[0] > 0 && kinds[1] > 0 && kinds[2] > 0);
	assert_true(unsym > 0);
	/* Every sample keeps its own timestamp. */
	for (uint32_t s = 0; s < b->n_samples; s++)
		assert_true(b->samples[s].time_ns >= 1774910497545532978);
	model_batch_free(b);
	free(raw);
}

typedef struct {
	uint64_t series, node, attrset;
	int64_t time, value;
} flat_row;

static int row_cmp(const void *a, const void *b)
{
	const flat_row *x = a, *y = b;
	if (x->series != y->series)
		return x->series < y->series ? -1 : 1;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->attrset != y->attrset)
		return x->attrset < y->attrset ? -1 : 1;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->value < y->value ? -1 : x->value > y->value;
}

static flat_row *flatten(const model_batch_t *b)
{
	flat_row *rows = calloc(b->n_samples + 1, sizeof *rows);
	uint32_t k = 0;
	for (uint32_t i = 0; i < b->n_profiles; i++) {
		const model_profile_t *p = &b->profiles[i];
		for (uint32_t s = 0; s < p->samples_count; s++) {
			const model_sample_t *m = &b->samples[p->samples_first + s];
			rows[k++] = (flat_row){p->series_id, b->nodes[m->node].id, b->attrsets[m->attrset].id,
			                       m->time_ns, m->value};
		}
	}
	qsort(rows, k, sizeof *rows, row_cmp);
	return rows;
}

static void test_json_twin_identical(void **state)
{
	(void)state;
	unsigned char *raw_pb, *raw_json;
	slice_t pb = load("ebpf-profiler-v1.10.pb", &raw_pb);
	slice_t json = load("ebpf-profiler-v1.10.json", &raw_json);
	buf_t from_json;
	buf_init(&from_json, LIMIT_DECODED_BYTES);
	err_t err = {0};
	if (otlp_json_to_pb(json, &from_json, &err) < 0)
		fail_msg("%d %s", err.status, err.msg);
	model_batch_t *a, *b;
	otlp_result_t ra, rb;
	assert_int_equal(decode(pb, &default_opts, &a, &ra, &err), 0);
	assert_int_equal(decode(buf_slice(&from_json), &default_opts, &b, &rb, &err), 0);
	assert_int_equal(ra.profiles, rb.profiles);
	assert_int_equal(ra.samples, rb.samples);
	assert_int_equal(a->n_profiles, b->n_profiles);
	assert_int_equal(a->n_samples, b->n_samples);
	assert_int_equal(a->n_frames, b->n_frames);
	assert_int_equal(a->n_nodes, b->n_nodes);
	assert_int_equal(a->n_attrsets, b->n_attrsets);
	for (uint32_t i = 0; i < a->n_nodes; i++)
		assert_true(a->nodes[i].id == b->nodes[i].id);
	for (uint32_t i = 0; i < a->n_profiles; i++) {
		assert_true(a->profiles[i].series_id == b->profiles[i].series_id);
		assert_true(a->profiles[i].time_ns == b->profiles[i].time_ns);
		assert_true(a->profiles[i].duration_ns == b->profiles[i].duration_ns);
	}
	flat_row *fa = flatten(a), *fb = flatten(b);
	assert_memory_equal(fa, fb, a->n_samples * sizeof *fa);
	free(fa);
	free(fb);
	model_batch_free(a);
	model_batch_free(b);
	buf_free(&from_json);
	free(raw_pb);
	free(raw_json);
}

static void expect_refused(const char *file, const char *msg)
{
	unsigned char *raw;
	slice_t pb = load(file, &raw);
	model_batch_t *b;
	otlp_result_t r;
	err_t err = {0};
	assert_int_equal(decode(pb, &default_opts, &b, &r, &err), -1);
	assert_int_equal(err.status, 400);
	assert_string_equal(err.msg, msg);
	model_batch_free(b);
	free(raw);
}

static void test_old_formats(void **state)
{
	(void)state;
	expect_refused(
	    "old-formats/ebpf-profiler-v1.5.pb",
	    "the request has no dictionary: the sender speaks an OTLP profiles format older than "
	    "opentelemetry-proto v1.7; Kiln supports the v1.10 wire format (Collector \xe2\x89\xa5 0.148)");
	expect_refused(
	    "old-formats/ebpf-profiler-v1.7.pb",
	    "dictionary.stack_table is empty but the request has 37 samples: the sender speaks the "
	    "OTLP profiles format of opentelemetry-proto v1.7 (Collector 0.128-0.135), which had no "
	    "stack_table; Kiln supports the v1.10 wire format (Collector \xe2\x89\xa5 0.148)");
	expect_refused(
	    "old-formats/ebpf-profiler-v1.8.pb",
	    "resource_profiles[0].scope_profiles[0].profiles[0].samples[0].link_index: wire type 2 "
	    "(length-delimited), expected varint: a length-delimited Sample field 3 is the "
	    "attribute_indices of opentelemetry-proto v1.8/v1.9 (Collector 0.136-0.147): the "
	    "sender's OTLP version differs from the one supported; Kiln supports the v1.10 wire "
	    "format (Collector \xe2\x89\xa5 0.148)");
	expect_refused(
	    "old-formats/ebpf-profiler-v1.8-corrupted.pb",
	    "resource_profiles[0].scope_profiles[0].profiles[0].samples[0].stack_index: index "
	    "1000000000 out of range for stack_table (25 entries); the sender's format version may "
	    "differ from the one supported (v1.10 wire format, Collector \xe2\x89\xa5 0.148)");
}

/* ---- Built requests ---------------------------------------------------------- */

/* One knob of the base request changed per case (K_NONE: the valid base). */
enum {
	K_NONE,
	K_STACK_INDEX,
	K_LINK_INDEX,
	K_SAMPLE_ATTR,
	K_LOC_INDEX,
	K_MAPPING_INDEX,
	K_FUNCTION_INDEX,
	K_FN_NAME,
	K_FN_SYSNAME,
	K_FN_FILE,
	K_MAP_FILE,
	K_MAP_ATTR,
	K_LOC_ATTR,
	K_PROFILE_ATTR,
	K_TYPE_STR,
	K_PERIOD_UNIT_STR,
	K_ATTR_KEY,
	K_ATTR_UNIT,
	K_ATTR_VALUE_STR,
	K_RES_KEY_STR,
	K_RES_VALUE_STR,
	K_N_VALUES,
	K_N_STAMPS,
	K_PROFILE_ID_LEN,
	K_TRACE_ID_LEN,
	K_SPAN_ID_LEN,
	K_LINK0_TRACE_LEN,
	K_EMPTY_TABLE, /* value: ProfilesDictionary field number */
	K_STRING0,
	K_WIRE, /* value: which field gets a wrong wire type */
	K_STAMPS_BYTES,
	K_NESTING,
	K_SAMPLE_ATTRS,
	K_SAMPLES,    /* value: number of samples (rows) */
	K_DEEP_STACK, /* value: samples of a 4096-frame stack */
	K_TRUNCATE,   /* value: bytes cut off the end */
	K_NEITHER,    /* a sample with no values and no timestamps */
};

#define T0 1700000000000000000LL

static int64_t knob(int which, int64_t value, int k, int64_t def)
{
	return which == k ? value : def;
}

static void put_index(buf_t *b, uint32_t field, int64_t v)
{
	pb_put_int64(b, field, v);
}

static void put_anyvalue_str(buf_t *b, uint32_t field, const char *s)
{
	size_t m = pb_begin(b, field);
	pb_put_bytes(b, 1, slice_cstr(s));
	pb_end(b, m);
}

static void put_filled(buf_t *b, uint32_t field, size_t n, uint8_t byte)
{
	uint8_t tmp[64];
	memset(tmp, byte, sizeof tmp);
	pb_put_bytes(b, field, slice_make(tmp, n));
}

static void build(buf_t *b, int w, int64_t v)
{
	static const char *const strings[] = {"",       "samples",      "count",
	                                      "cpu",    "nanoseconds",  "main",
	                                      "app.go", "/usr/bin/app", "profile.frame.type",
	                                      "go",     "thread.name",  "worker"};
	size_t n_strings = sizeof strings / sizeof strings[0];
	int wire = w == K_WIRE ? (int)v : 0;
	int empty = w == K_EMPTY_TABLE ? (int)v : 0;
	size_t m, m2, m3;

	/* resource_profiles[0] */
	size_t rp = pb_begin(b, 1);
	m = pb_begin(b, 1); /* resource */
	m2 = pb_begin(b, 1);
	pb_put_bytes(b, 1, slice_cstr("service.name"));
	put_anyvalue_str(b, 2, "svc");
	pb_end(b, m2);
	m2 = pb_begin(b, 1);
	pb_put_bytes(b, 1, slice_cstr("host.name"));
	if (w == K_RES_VALUE_STR) {
		m3 = pb_begin(b, 2);
		put_index(b, 8, v);
		pb_end(b, m3);
	} else {
		put_anyvalue_str(b, 2, "h1");
	}
	if (w == K_RES_KEY_STR)
		put_index(b, 3, v);
	pb_end(b, m2);
	if (w == K_NESTING) {
		m2 = pb_begin(b, 1);
		pb_put_bytes(b, 1, slice_cstr("deep"));
		size_t marks[128];
		int depth = (int)v;
		for (int i = 0; i < depth; i++) {
			marks[2 * i] =
			    pb_begin(b, i ? 1 : 2);        /* AnyValue (ArrayValue.values after the first) */
			marks[2 * i + 1] = pb_begin(b, 5); /* array_value */
		}
		for (int i = 2 * depth - 1; i >= 0; i--)
			pb_end(b, marks[i]);
		pb_end(b, m2);
	}
	pb_end(b, m);
	size_t sp = pb_begin(b, 2); /* scope_profiles[0] */
	size_t prof = pb_begin(b, 2);
	m = pb_begin(b, 1); /* sample_type */
	if (wire == 4) {
		pb_end(b, m);
		b->n -= 2;
		pb_put_uint(b, 1, 7);
	} else {
		put_index(b, 1, knob(w, v, K_TYPE_STR, 1));
		put_index(b, 2, 2);
		pb_end(b, m);
	}
	if (wire == 3)
		pb_put_uint(b, 3, T0);
	else
		pb_put_fixed64(b, 3, (uint64_t)T0);
	pb_put_uint(b, 4, 10000000000ull);
	m = pb_begin(b, 5);
	put_index(b, 1, 3);
	put_index(b, 2, knob(w, v, K_PERIOD_UNIT_STR, 4));
	pb_end(b, m);
	pb_put_uint(b, 6, 50000000);
	put_filled(b, 7, (size_t)knob(w, v, K_PROFILE_ID_LEN, 16), 0xab);
	if (w == K_PROFILE_ATTR) {
		uint64_t a = (uint64_t)v;
		pb_put_packed(b, 11, &a, 1);
	}
	int64_t n_samples = knob(w, v, K_SAMPLES, w == K_DEEP_STACK ? v : 1);
	for (int64_t s = 0; s < n_samples; s++) {
		size_t sm = pb_begin(b, 2);
		if (wire == 1) {
			pb_put_bytes(b, 1, slice_make("\x01", 1));
		} else {
			put_index(b, 1, knob(w, v, K_STACK_INDEX, w == K_DEEP_STACK ? 2 : 1));
		}
		uint64_t attrs[80];
		size_t n_attrs = w == K_SAMPLE_ATTRS ? (size_t)v : 1;
		for (size_t i = 0; i < n_attrs; i++)
			attrs[i] = w == K_SAMPLE_ATTR ? (uint64_t)v : 2;
		pb_put_packed(b, 2, attrs, n_attrs);
		if (wire == 2)
			pb_put_bytes(b, 3, slice_make("\x01\x02", 2));
		else
			put_index(b, 3, knob(w, v, K_LINK_INDEX, 1));
		int64_t nv = knob(w, v, K_N_VALUES, 2), nt = knob(w, v, K_N_STAMPS, 2);
		if (w == K_NEITHER)
			nv = nt = 0;
		uint64_t vals[4] = {3, 4, 5, 6};
		pb_put_packed(b, 4, vals, (size_t)nv);
		if (wire == 8) {
			pb_put_uint(b, 5, T0);
		} else if (w == K_STAMPS_BYTES) {
			put_filled(b, 5, (size_t)v, 1);
		} else if (nt) {
			pb_put_key(b, 5, PB_LEN);
			pb_put_varint(b, 8 * (uint64_t)nt);
			for (int64_t i = 0; i < nt; i++) {
				uint64_t t = (uint64_t)T0 + 1000 * (uint64_t)(i + 1);
				for (int k = 0; k < 8; k++)
					buf_putc(b, (uint8_t)(t >> (8 * k)));
			}
		}
		pb_end(b, sm);
	}
	pb_end(b, prof);
	pb_end(b, sp);
	pb_end(b, rp);

	/* dictionary */
	if (wire == 5) {
		pb_put_uint(b, 2, 1);
		return;
	}
	size_t dict = pb_begin(b, 2);
	if (empty != 1) {
		pb_put_bytes(b, 1, slice_make(NULL, 0)); /* mapping_table[0] */
		m = pb_begin(b, 1);
		put_index(b, 4, knob(w, v, K_MAP_FILE, 7));
		uint64_t a = (uint64_t)knob(w, v, K_MAP_ATTR, 1);
		pb_put_packed(b, 5, &a, 1);
		pb_end(b, m);
	}
	if (empty != 2) {
		pb_put_bytes(b, 2, slice_make(NULL, 0));
		m = pb_begin(b, 2);
		put_index(b, 1, knob(w, v, K_MAPPING_INDEX, 1));
		pb_put_uint(b, 2, 0x1000);
		m2 = pb_begin(b, 3);
		if (wire == 7)
			pb_put_bytes(b, 1, slice_make("\x01", 1));
		else
			put_index(b, 1, knob(w, v, K_FUNCTION_INDEX, 1));
		pb_put_uint(b, 2, 10);
		pb_end(b, m2);
		uint64_t a = (uint64_t)knob(w, v, K_LOC_ATTR, 1);
		pb_put_packed(b, 4, &a, 1);
		pb_end(b, m);
	}
	if (empty != 3) {
		pb_put_bytes(b, 3, slice_make(NULL, 0));
		m = pb_begin(b, 3);
		put_index(b, 1, knob(w, v, K_FN_NAME, 5));
		put_index(b, 2, knob(w, v, K_FN_SYSNAME, 0));
		put_index(b, 3, knob(w, v, K_FN_FILE, 6));
		pb_end(b, m);
	}
	if (empty != 4) {
		m = pb_begin(b, 4);
		if (w == K_LINK0_TRACE_LEN)
			put_filled(b, 1, (size_t)v, 1);
		pb_end(b, m);
		m = pb_begin(b, 4);
		put_filled(b, 1, (size_t)knob(w, v, K_TRACE_ID_LEN, 16), 0x11);
		put_filled(b, 2, (size_t)knob(w, v, K_SPAN_ID_LEN, 8), 0x22);
		pb_end(b, m);
	}
	if (empty != 5)
		for (size_t i = 0; i < n_strings; i++) {
			if (i == 1 && wire == 6) {
				pb_put_uint(b, 5, 1);
				continue;
			}
			pb_put_bytes(b, 5, slice_cstr(i == 0 && w == K_STRING0 ? "x" : strings[i]));
		}
	if (empty != 6) {
		m = pb_begin(b, 6);
		m2 = pb_begin(b, 2);
		pb_end(b, m2);
		pb_end(b, m);
		m = pb_begin(b, 6); /* [1] profile.frame.type = go */
		put_index(b, 1, knob(w, v, K_ATTR_KEY, 8));
		m2 = pb_begin(b, 2);
		put_index(b, 8, knob(w, v, K_ATTR_VALUE_STR, 9));
		pb_end(b, m2);
		put_index(b, 3, knob(w, v, K_ATTR_UNIT, 0));
		pb_end(b, m);
		m = pb_begin(b, 6); /* [2] thread.name = worker */
		put_index(b, 1, 10);
		put_anyvalue_str(b, 2, "worker");
		pb_end(b, m);
	}
	if (empty != 7) {
		pb_put_bytes(b, 7, slice_make(NULL, 0));
		m = pb_begin(b, 7);
		uint64_t l = (uint64_t)knob(w, v, K_LOC_INDEX, 1);
		pb_put_packed(b, 1, &l, 1);
		pb_end(b, m);
		if (w == K_DEEP_STACK) { /* stack_table[2]: 4096 frames */
			static uint64_t locs[LIMIT_STACK_DEPTH];
			for (size_t i = 0; i < LIMIT_STACK_DEPTH; i++)
				locs[i] = 1;
			m = pb_begin(b, 7);
			pb_put_packed(b, 1, locs, LIMIT_STACK_DEPTH);
			pb_end(b, m);
		}
	}
	pb_end(b, dict);
	if (w == K_TRUNCATE)
		b->n -= (size_t)v;
}

static void test_base_request(void **state)
{
	(void)state;
	buf_t pb;
	buf_init(&pb, SIZE_MAX);
	build(&pb, K_NONE, 0);
	model_batch_t *b;
	otlp_result_t r;
	err_t err = {0};
	if (decode(buf_slice(&pb), &default_opts, &b, &r, &err) < 0)
		fail_msg("%d %s", err.status, err.msg);
	assert_int_equal(r.profiles, 1);
	assert_int_equal(r.samples, 2);
	const model_profile_t *p = &b->profiles[0];
	assert_true(slice_eq_cstr(p->service, "svc"));
	assert_true(slice_eq_cstr(p->sample_type, "samples"));
	assert_true(slice_eq_cstr(p->period_type, "cpu"));
	assert_int_equal(p->cpu_alias, 1);
	assert_int_equal(p->time_ns, T0);
	assert_int_equal(p->duration_ns, 10000000000LL);
	assert_int_equal(p->labels_count, 1); /* host.name; service.name is the service */
	assert_true(slice_eq_cstr(b->series_labels[p->labels_first].key, "host.name"));
	assert_int_equal(p->samples_count, 2);
	const model_sample_t *s = &b->samples[p->samples_first];
	assert_int_equal(s[0].value, 3);
	assert_int_equal(s[0].time_ns, T0 + 1000);
	assert_int_equal(s[1].value, 4);
	assert_int_equal(s[1].time_ns, T0 + 2000);
	const model_frame_t *fr = &b->frames[b->nodes[s[0].node].frame];
	assert_true(slice_eq_cstr(fr->name, "main"));
	assert_true(slice_eq_cstr(fr->file, "app.go"));
	assert_true(slice_eq_cstr(fr->binary, "/usr/bin/app"));
	assert_true(slice_eq_cstr(fr->kind, "go"));
	const model_attrset_t *as = &b->attrsets[s[0].attrset];
	assert_int_equal(as->count, 3);
	const model_label_t *l = &b->attr_labels[as->first]; /* sorted by key */
	assert_true(slice_eq_cstr(l[0].key, "span_id") && slice_eq_cstr(l[0].value, "2222222222222222"));
	assert_true(slice_eq_cstr(l[1].key, "thread.name") && slice_eq_cstr(l[1].value, "worker"));
	assert_true(slice_eq_cstr(l[2].key, "trace_id") &&
	            slice_eq_cstr(l[2].value, "11111111111111111111111111111111"));
	model_batch_free(b);

	/* Every truncation of a valid request is refused or decodes; never crashes. */
	for (size_t cut = 1; cut < pb.n; cut++) {
		model_batch_t *t;
		decode(slice_make(pb.p, pb.n - cut), &default_opts, &t, &r, &err);
		model_batch_free(t);
	}
	buf_free(&pb);
}

#define P "resource_profiles[0].scope_profiles[0].profiles[0]"
#define S P ".samples[0]"
#define HINT                                                                                                 \
	"; the sender's format version may differ from the one supported (v1.10 wire format, Collector "     \
	"\xe2\x89\xa5 0.148)"

static const struct {
	int knob;
	int64_t value;
	int status;
	const char *msg;
} bad[] = {
    {K_STACK_INDEX, 1000000000, 400,
     S ".stack_index: index 1000000000 out of range for stack_table (2 entries)" HINT},
    {K_STACK_INDEX, -1, 400, S ".stack_index: index -1 out of range for stack_table (2 entries)" HINT},
    {K_LINK_INDEX, 2, 400, S ".link_index: index 2 out of range for link_table (2 entries)" HINT},
    {K_LINK_INDEX, -5, 400, S ".link_index: index -5 out of range for link_table (2 entries)" HINT},
    {K_SAMPLE_ATTR, 3, 400,
     S ".attribute_indices: index 3 out of range for attribute_table (3 entries)" HINT},
    {K_SAMPLE_ATTR, -1, 400,
     S ".attribute_indices: index -1 out of range for attribute_table (3 entries)" HINT},
    {K_LOC_INDEX, 2, 400,
     "dictionary.stack_table[1].location_indices: index 2 out of range for location_table (2 entries)" HINT},
    {K_LOC_INDEX, -2, 400,
     "dictionary.stack_table[1].location_indices: index -2 out of range for location_table (2 entries)" HINT},
    {K_MAPPING_INDEX, 9, 400,
     "dictionary.location_table[1].mapping_index: index 9 out of range for mapping_table (2 entries)" HINT},
    {K_MAPPING_INDEX, -1, 400,
     "dictionary.location_table[1].mapping_index: index -1 out of range for mapping_table (2 entries)" HINT},
    {K_FUNCTION_INDEX, 2, 400,
     "dictionary.location_table[1].lines[0].function_index: index 2 out of range for function_table (2 "
     "entries)" HINT},
    {K_FUNCTION_INDEX, -3, 400,
     "dictionary.location_table[1].lines[0].function_index: index -3 out of range for function_table (2 "
     "entries)" HINT},
    {K_FN_NAME, 12, 400,
     "dictionary.function_table[1].name_strindex: index 12 out of range for string_table (12 entries)" HINT},
    {K_FN_SYSNAME, -1, 400,
     "dictionary.function_table[1].system_name_strindex: index -1 out of range for string_table (12 "
     "entries)" HINT},
    {K_FN_FILE, 100, 400,
     "dictionary.function_table[1].filename_strindex: index 100 out of range for string_table (12 "
     "entries)" HINT},
    {K_MAP_FILE, 12, 400,
     "dictionary.mapping_table[1].filename_strindex: index 12 out of range for string_table (12 "
     "entries)" HINT},
    {K_MAP_ATTR, 7, 400,
     "dictionary.mapping_table[1].attribute_indices: index 7 out of range for attribute_table (3 "
     "entries)" HINT},
    {K_LOC_ATTR, 3, 400,
     "dictionary.location_table[1].attribute_indices: index 3 out of range for attribute_table (3 "
     "entries)" HINT},
    {K_PROFILE_ATTR, 3, 400,
     P ".attribute_indices: index 3 out of range for attribute_table (3 entries)" HINT},
    {K_TYPE_STR, 12, 400,
     P ".sample_type.type_strindex: index 12 out of range for string_table (12 entries)" HINT},
    {K_PERIOD_UNIT_STR, -7, 400,
     P ".period_type.unit_strindex: index -7 out of range for string_table (12 entries)" HINT},
    {K_ATTR_KEY, 40, 400,
     "dictionary.attribute_table[1].key_strindex: index 40 out of range for string_table (12 entries)" HINT},
    {K_ATTR_UNIT, 12, 400,
     "dictionary.attribute_table[1].unit_strindex: index 12 out of range for string_table (12 entries)" HINT},
    {K_ATTR_VALUE_STR, 13, 400,
     "dictionary.attribute_table[1].value.string_value_strindex: index 13 out of range for string_table (12 "
     "entries)" HINT},
    {K_RES_KEY_STR, 99, 400,
     "resource_profiles[0].resource.attributes[1].key_strindex: index 99 out of range for string_table (12 "
     "entries)" HINT},
    {K_RES_VALUE_STR, -1, 400,
     "resource_profiles[0].resource.attributes[1].value.string_value_strindex: index -1 out of range for "
     "string_table (12 entries)" HINT},
    {K_EMPTY_TABLE, 2, 400,
     "dictionary.stack_table[1].location_indices: index 1 out of range for location_table (0 entries)" HINT},
    {K_EMPTY_TABLE, 3, 400,
     "dictionary.location_table[1].lines[0].function_index: index 1 out of range for function_table (0 "
     "entries)" HINT},
    {K_EMPTY_TABLE, 5, 400,
     "dictionary.attribute_table[1].key_strindex: index 8 out of range for string_table (0 entries)" HINT},
    {K_EMPTY_TABLE, 6, 400,
     "dictionary.mapping_table[1].attribute_indices: index 1 out of range for attribute_table (0 "
     "entries)" HINT},
    {K_EMPTY_TABLE, 7, 400,
     "dictionary.stack_table is empty but the request has 1 samples: the sender speaks the OTLP profiles "
     "format of opentelemetry-proto v1.7 (Collector 0.128-0.135), which had no stack_table; Kiln supports "
     "the v1.10 wire format (Collector \xe2\x89\xa5 0.148)"},
    {K_STRING0, 0, 400, "dictionary.string_table[0]: must be the empty string (is 1 bytes)"},
    {K_WIRE, 1, 400, S ".stack_index: wire type 2 (length-delimited), expected varint (field 1 at byte 103)"},
    {K_WIRE, 2, 400,
     S ".link_index: wire type 2 (length-delimited), expected varint: a length-delimited Sample field 3 is "
       "the attribute_indices of opentelemetry-proto v1.8/v1.9 (Collector 0.136-0.147): the sender's OTLP "
       "version differs from the one supported; Kiln supports the v1.10 wire format (Collector "
       "\xe2\x89\xa5 0.148)"},
    {K_WIRE, 3, 400, P ".time_unix_nano: wire type 0 (varint), expected fixed64 (field 3 at byte 57)"},
    {K_WIRE, 4, 400, P ".sample_type: wire type 0 (varint), expected length-delimited (field 1 at byte 50)"},
    {K_WIRE, 5, 400, "dictionary: wire type 0 (varint), expected length-delimited (field 2 at byte 132)"},
    {K_WIRE, 6, 400,
     "dictionary.string_table: wire type 0 (varint), expected length-delimited (field 5 at byte 204)"},
    {K_WIRE, 7, 400,
     "dictionary.location_table[1].lines[0].function_index: wire type 2 (length-delimited), expected "
     "varint (field 1 at byte 155)"},
    {K_WIRE, 8, 400,
     S ".timestamps_unix_nano: wire type 0 (varint), expected fixed64 or packed (field 5 at byte 113)"},
    {K_N_VALUES, 0, 0, NULL}, /* timestamps only: value 1 each (checked below) */
    {K_N_STAMPS, 0, 0, NULL}, /* values only: the profile's time */
    {K_NEITHER, 0, 400, S ": no values and no timestamps (a sample needs at least one)"},
    {K_N_VALUES, 3, 400, S ": 3 values but 2 timestamps (the lengths must be equal)"},
    {K_N_STAMPS, 1, 400, S ": 2 values but 1 timestamps (the lengths must be equal)"},
    {K_STAMPS_BYTES, 12, 400, S ".timestamps_unix_nano: packed fixed64 of 12 bytes is not a multiple of 8"},
    {K_PROFILE_ID_LEN, 5, 400, P ".profile_id: 5 bytes; a profile id has 16 (or none)"},
    {K_TRACE_ID_LEN, 15, 400, "dictionary.link_table[1].trace_id: 15 bytes; a trace id has 16"},
    {K_SPAN_ID_LEN, 0, 400, "dictionary.link_table[1].span_id: 0 bytes; a span id has 8"},
    {K_LINK0_TRACE_LEN, 5, 400, "dictionary.link_table[0].trace_id: 5 bytes; a trace id has 16"},
    {K_NESTING, 40, 400,
     "resource_profiles[0].resource.attributes[2].value.array_value.values[0].array_value.values[0]: "
     "values nested deeper than 32 levels" /* the path keeps 8 elements */},
    {K_SAMPLE_ATTRS, 65, 413, S ".attribute_indices: sample has more than 64 attributes; the limit is 64"},
    {K_SAMPLES, 10001, 413,
     P ": 10001 samples; the limit is 10000 sample rows per profile (maxDecodedSampleRows)"},
    {K_DEEP_STACK, 245, 413,
     "request writes out 1003520 frames; the limit is 1000000: lower the batch size (send_batch_size) of "
     "the sender"},
    {K_TRUNCATE, 3, 400, "dictionary: length at byte 133 runs past the end of its message or is malformed"},
};

static void test_bad_inputs(void **state)
{
	(void)state;
	assert_true(sizeof bad / sizeof bad[0] >= 40);
	int failed = 0;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		buf_t pb;
		buf_init(&pb, SIZE_MAX);
		build(&pb, bad[i].knob, bad[i].value);
		model_batch_t *b;
		otlp_result_t r;
		err_t err = {0};
		int rc = decode(buf_slice(&pb), &default_opts, &b, &r, &err);
		if (!bad[i].msg) {
			if (rc < 0)
				fail_msg("case %zu: %d %s", i, err.status, err.msg);
		} else {
			if (rc == 0)
				fail_msg("case %zu (knob %d = %" PRId64 ") decoded", i, bad[i].knob,
				         bad[i].value);
			if (err.status != bad[i].status || strcmp(err.msg, bad[i].msg)) {
				print_error("case %zu (knob %d = %" PRId64 "):\n got  %d %s\n want %d %s\n",
				            i, bad[i].knob, bad[i].value, err.status, err.msg, bad[i].status,
				            bad[i].msg);
				failed++;
			}
		}
		model_batch_free(b);
		buf_free(&pb);
	}
	assert_int_equal(failed, 0);
}

static void test_sample_shapes(void **state)
{
	(void)state;
	buf_t pb;
	model_batch_t *b;
	otlp_result_t r;
	err_t err = {0};
	/* Timestamps only: value 1 per timestamp. */
	buf_init(&pb, SIZE_MAX);
	build(&pb, K_N_VALUES, 0);
	assert_int_equal(decode(buf_slice(&pb), &default_opts, &b, &r, &err), 0);
	assert_int_equal(b->n_samples, 2);
	assert_int_equal(b->samples[0].value + b->samples[1].value, 2);
	model_batch_free(b);
	buf_free(&pb);
	/* Values only: one point each at the profile's time (time_ns 0). */
	buf_init(&pb, SIZE_MAX);
	build(&pb, K_N_STAMPS, 0);
	assert_int_equal(decode(buf_slice(&pb), &default_opts, &b, &r, &err), 0);
	assert_int_equal(b->n_samples, 1); /* merged: same node, attrset and time */
	assert_int_equal(b->samples[0].value, 7);
	assert_int_equal(b->samples[0].time_ns, 0);
	model_batch_free(b);
	buf_free(&pb);
	/* On stack_table[0], the empty stack: kept at node MODEL_NONE (the root)
	 * with its values, times and attributes. */
	buf_init(&pb, SIZE_MAX);
	build(&pb, K_STACK_INDEX, 0);
	assert_int_equal(decode(buf_slice(&pb), &default_opts, &b, &r, &err), 0);
	assert_int_equal(r.samples, 2);
	assert_int_equal(b->n_samples, 2);
	assert_int_equal(b->samples[0].node, MODEL_NONE);
	assert_int_equal(b->samples[1].node, MODEL_NONE);
	assert_int_equal(b->samples[0].value + b->samples[1].value, 7);
	assert_int_equal(b->samples[0].time_ns, T0 + 1000);
	assert_int_equal(b->attrsets[b->samples[0].attrset].count, 3);
	assert_true(b->frames_written == 0);
	model_batch_free(b);
	buf_free(&pb);
}

static void test_time_window(void **state)
{
	(void)state;
	buf_t pb;
	buf_init(&pb, SIZE_MAX);
	build(&pb, K_NONE, 0);
	model_batch_t *b;
	otlp_result_t r;
	err_t err = {0};
	/* One of the two points is past max_time_ns. */
	otlp_decode_opts_t o = {
	    .now_ns = 42, .min_time_ns = T0, .max_time_ns = T0 + 1500, .retention_days = 14};
	assert_int_equal(decode(buf_slice(&pb), &o, &b, &r, &err), 0);
	assert_int_equal(r.profiles, 1);
	assert_int_equal(r.samples, 1);
	assert_int_equal(r.rejected_samples, 1);
	assert_int_equal(r.rejected_profiles, 0);
	assert_string_equal(
	    r.message, "1 sample refused: samples older than the 14-day retention or more than 10 minutes in "
	               "the future");
	model_batch_free(b);
	/* Both: the profile is not stored. */
	o.min_time_ns = T0 + 5000;
	o.max_time_ns = 0;
	assert_int_equal(decode(buf_slice(&pb), &o, &b, &r, &err), 0);
	assert_int_equal(r.profiles, 0);
	assert_int_equal(b->n_profiles, 0);
	assert_int_equal(r.rejected_profiles, 1);
	assert_int_equal(r.rejected_samples, 2);
	assert_string_equal(r.message,
	                    "1 profile refused (2 samples): samples older than the 14-day retention "
	                    "or more than 10 minutes in the future");
	buf_t resp;
	buf_init(&resp, SIZE_MAX);
	otlp_response_json(&r, &resp);
	assert_true(resp.n > 0);
	assert_memory_equal(
	    resp.p, "{\"partialSuccess\":{\"rejectedProfiles\":\"1\",\"errorMessage\":\"1 profile", 60);
	buf_reset(&resp);
	otlp_response_pb(&r, &resp);
	/* 0a LEN { 08 01, 12 LEN message } */
	assert_int_equal(resp.p[0], 0x0a);
	assert_int_equal(resp.p[2], 0x08);
	assert_int_equal(resp.p[3], 0x01);
	assert_int_equal(resp.p[4], 0x12);
	assert_int_equal(resp.p[5], strlen(r.message));
	buf_reset(&resp);
	otlp_result_t ok = {0};
	otlp_response_pb(&ok, &resp);
	assert_int_equal(resp.n, 0);
	otlp_response_json(&ok, &resp);
	assert_int_equal(resp.n, 2);
	assert_memory_equal(resp.p, "{}", 2);
	buf_free(&resp);
	model_batch_free(b);
	buf_free(&pb);
}

static void test_empty_and_max_rows(void **state)
{
	(void)state;
	model_batch_t *b;
	otlp_result_t r;
	err_t err = {0};
	assert_int_equal(decode(slice_make(NULL, 0), &default_opts, &b, &r, &err), 0);
	assert_int_equal(b->n_profiles, 0);
	model_batch_free(b);
	buf_t pb;
	buf_init(&pb, SIZE_MAX);
	build(&pb, K_SAMPLES, 3);
	otlp_decode_opts_t o = {.now_ns = 42, .max_rows = 2};
	assert_int_equal(decode(buf_slice(&pb), &o, &b, &r, &err), -1);
	assert_int_equal(err.status, 413);
	assert_string_equal(err.msg,
	                    P ": 3 samples; the limit is 2 sample rows per profile (maxDecodedSampleRows)");
	model_batch_free(b);
	buf_free(&pb);
}

/* ---- JSON ---------------------------------------------------------------------- */

static void test_json(void **state)
{
	(void)state;
	static const char ok[] =
	    "{\"resource_profiles\":[{\"resource\":{\"attributes\":[{\"key\":\"service.name\",\"value\":"
	    "{\"stringValue\":\"svc\"}},{\"key\":\"n\",\"value\":{\"intValue\":\"-7\"}},{\"key\":\"d\","
	    "\"value\":{\"doubleValue\":1.5}},{\"key\":\"b\",\"value\":{\"boolValue\":false}}]},"
	    "\"scopeProfiles\":[{\"profiles\":[{\"sampleType\":{\"typeStrindex\":1,\"unitStrindex\":2},"
	    "\"timeUnixNano\":1700000000000000000,\"profileId\":\"0102030405060708090A0b0c0d0e0f10\","
	    "\"samples\":[{\"stackIndex\":1,\"linkIndex\":1,\"values\":[5,\"6\"],\"timestamps_unix_nano\":"
	    "[\"1700000000000000001\",1700000000000000002]}]}]}]}],\"dictionary\":{\"mappingTable\":[{}],"
	    "\"locationTable\":[{},{\"lines\":[{\"functionIndex\":1}]}],\"functionTable\":[{},{"
	    "\"nameStrindex\":3}],"
	    "\"linkTable\":[{},{\"traceId\":\"0af7651916cd43dd8448eb211c80319c\",\"spanId\":"
	    "\"b7ad6b7169203331\"}],"
	    "\"stringTable\":[\"\",\"cpu\",\"nanoseconds\",\"main\"],\"attributeTable\":[{\"value\":{}}],"
	    "\"stackTable\":[{},{\"locationIndices\":[1]}]}}";
	buf_t pb;
	buf_init(&pb, SIZE_MAX);
	err_t err = {0};
	if (otlp_json_to_pb(slice_cstr(ok), &pb, &err) < 0)
		fail_msg("%s", err.msg);
	model_batch_t *b;
	otlp_result_t r;
	if (decode(buf_slice(&pb), &default_opts, &b, &r, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(r.samples, 2);
	const model_profile_t *p = &b->profiles[0];
	assert_true(slice_eq_cstr(p->service, "svc"));
	assert_int_equal(p->labels_count, 3); /* b=false, d=1.5, n=-7 (sorted) */
	const model_label_t *l = &b->series_labels[p->labels_first];
	assert_true(slice_eq_cstr(l[0].value, "false"));
	assert_true(slice_eq_cstr(l[1].value, "1.5"));
	assert_true(slice_eq_cstr(l[2].value, "-7"));
	const model_attrset_t *as = &b->attrsets[b->samples[0].attrset];
	assert_int_equal(as->count, 2);
	assert_true(slice_eq_cstr(b->attr_labels[as->first].value, "b7ad6b7169203331"));
	assert_true(slice_eq_cstr(b->attr_labels[as->first + 1].value, "0af7651916cd43dd8448eb211c80319c"));
	model_batch_free(b);
	buf_free(&pb);

	static const struct {
		const char *json;
		int status;
		const char *msg;
	} bad_json[] = {
	    {"", 400, "malformed JSON: the body is empty"},
	    {"{", 400, "malformed JSON at line 1, column 1: string or '}' expected near end of file"},
	    {"[]", 400, "request: expected an object"},
	    {"{\"resourceProfiles\":{}}", 400, "resourceProfiles: expected an array"},
	    {"{\"resourceProfiles\":[{\"scopeProfiles\":[{\"profiles\":[{\"samples\":[{\"values\":[1,\"x\"]}]"
	     "}]}]}]}",
	     400,
	     "resourceProfiles[0].scopeProfiles[0].profiles[0].samples[0].values[1]: expected an integer (a "
	     "number "
	     "or a decimal string)"},
	    {"{\"dictionary\":{\"stackTable\":[{\"locationIndices\":[3000000000]}]}}", 400,
	     "dictionary.stackTable[0].locationIndices[0]: integer out of range for int32"},
	    {"{\"dictionary\":{\"linkTable\":[{\"traceId\":\"abc\"}]}}", 400,
	     "dictionary.linkTable[0].traceId: expected a hex string (an even number of 0-9a-f)"},
	    {"{\"dictionary\":{\"stringTable\":[1]}}", 400, "dictionary.stringTable[0]: expected a string"},
	    {"{\"resourceProfiles\":[{\"scopeProfiles\":[{\"profiles\":[{\"durationNano\":\"-1\"}]}]}]}", 400,
	     "resourceProfiles[0].scopeProfiles[0].profiles[0].durationNano: expected an integer (a number "
	     "or a "
	     "decimal string)"},
	    {"{\"resourceProfiles\":[{\"scopeProfiles\":[{\"profiles\":[{\"originalPayload\":\"@@\"}]}]}]}",
	     400,
	     "resourceProfiles[0].scopeProfiles[0].profiles[0].originalPayload: expected a base64 string"},
	};
	for (size_t i = 0; i < sizeof bad_json / sizeof bad_json[0]; i++) {
		buf_init(&pb, SIZE_MAX);
		assert_int_equal(otlp_json_to_pb(slice_cstr(bad_json[i].json), &pb, &err), -1);
		if (err.status != bad_json[i].status || strcmp(err.msg, bad_json[i].msg))
			fail_msg("json case %zu: got %d %s", i, err.status, err.msg);
		buf_free(&pb);
	}
	/* The output ceiling: 413. */
	buf_init(&pb, 16);
	assert_int_equal(otlp_json_to_pb(slice_cstr(ok), &pb, &err), -1);
	assert_int_equal(err.status, 413);
	buf_free(&pb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_testdata_totals),
	    cmocka_unit_test(test_json_twin_identical),
	    cmocka_unit_test(test_old_formats),
	    cmocka_unit_test(test_base_request),
	    cmocka_unit_test(test_bad_inputs),
	    cmocka_unit_test(test_sample_shapes),
	    cmocka_unit_test(test_time_window),
	    cmocka_unit_test(test_empty_and_max_rows),
	    cmocka_unit_test(test_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
