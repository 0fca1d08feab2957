/* Tests of src/wire/pyroscope_push.c and src/wire/connect.c: PushRequests
 * built with the protobuf writer and decoded back, a table of bad inputs
 * with the exact message and status, the JSON form (Connect's JSON codec)
 * through pb_json, the label mapping shared with /ingest, and the Connect
 * error codes and bodies. */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/limits.h"
#include "wire/connect.h"
#include "wire/pb.h"
#include "wire/pyroscope_push.h"
#include "wire/rpc_status.h"

/* The bytes of b equal the string want. */
static void assert_buf_is(const buf_t *b, const char *want)
{
	assert_int_equal(b->n, strlen(want));
	assert_memory_equal(b->p, want, b->n);
}

/* "k=v,k2=v2:3,0|..." of a decode: each series' labels and its raw profiles' sizes. */
static void render(const pyro_push_t *p, char *out, size_t cap)
{
	size_t o = 0;
	out[0] = 0;
	for (uint32_t i = 0; i < p->n_series && o < cap; i++) {
		const pyro_series_t *s = &p->series[i];
		o += (size_t)snprintf(out + o, cap - o, "%s", i ? "|" : "");
		for (uint32_t k = 0; k < s->n_labels && o < cap; k++)
			o += (size_t)snprintf(out + o, cap - o, "%s%.*s=%.*s", k ? "," : "",
			                      (int)s->labels[k].key.n, (const char *)s->labels[k].key.p,
			                      (int)s->labels[k].value.n, (const char *)s->labels[k].value.p);
		o += (size_t)snprintf(out + o, cap - o, ":");
		for (uint32_t k = 0; k < s->n_profiles && o < cap; k++)
			o += (size_t)snprintf(out + o, cap - o, "%s%zu", k ? "," : "", s->profiles[k].n);
	}
}

static void put_label(buf_t *b, const char *name, const char *value)
{
	size_t m = pb_begin(b, 1);
	pb_put_bytes(b, 1, slice_cstr(name));
	pb_put_bytes(b, 2, slice_cstr(value));
	pb_end(b, m);
}

static void put_sample(buf_t *b, size_t n, const char *id)
{
	static uint8_t bytes[256];
	size_t m = pb_begin(b, 2);
	pb_put_bytes(b, 1, slice_make(bytes, n));
	pb_put_bytes(b, 2, slice_cstr(id));
	pb_end(b, m);
}

static void test_decode_good(void **state)
{
	(void)state;
	buf_t b;
	buf_init(&b, SIZE_MAX);
	size_t s = pb_begin(&b, 1);
	put_label(&b, "service_name", "api");
	put_label(&b, "__name__", "process_cpu");
	put_sample(&b, 3, "a");
	put_label(&b, "env", "prod"); /* labels and samples may interleave */
	put_sample(&b, 0, "b");
	pb_put_bytes(&b, 3, slice_cstr("\x0a\x01k")); /* annotations: ignored */
	pb_end(&b, s);
	s = pb_begin(&b, 1); /* a series with no labels and no samples */
	pb_end(&b, s);
	s = pb_begin(&b, 1);
	put_label(&b, "k", "");
	for (int i = 0; i < 40; i++) /* many profiles: the arrays grow while earlier series point into them */
		put_sample(&b, (size_t)i, "");
	pb_end(&b, s);
	pb_put_uint(&b, 7, 42); /* an unknown field */

	pyro_push_t p;
	err_t err = {0};
	assert_int_equal(pyro_push_decode(buf_slice(&b), &p, &err), 0);
	char got[1024], want[1024];
	render(&p, got, sizeof got);
	size_t o =
	    (size_t)snprintf(want, sizeof want, "service_name=api,__name__=process_cpu,env=prod:3,0|:|k=:");
	for (int i = 0; i < 40; i++)
		o += (size_t)snprintf(want + o, sizeof want - o, "%s%d", i ? "," : "", i);
	assert_string_equal(got, want);
	assert_int_equal(p.n_profiles, 42);
	pyro_push_free(&p);
	assert_int_equal(pyro_push_decode(slice_make("", 0), &p, &err), 0);
	assert_int_equal(p.n_series, 0);
	pyro_push_free(&p);
	buf_free(&b);
}

/* A PushRequest with one series of n labels named by fmt (a %d for the index). */
static void labels_request(buf_t *b, int n, const char *fmt)
{
	size_t s = pb_begin(b, 1);
	for (int i = 0; i < n; i++) {
		char name[32];
		snprintf(name, sizeof name, fmt, i);
		put_label(b, name, "v");
	}
	pb_end(b, s);
}

static void test_decode_bad(void **state)
{
	(void)state;
	static const struct {
		const char *what;
		const char *in;
		size_t n;
		int status;
		const char *msg;
	} cases[] = {
	    {"truncated series", "\x0a\x05\x12", 3, 400,
	     "series: length at byte 1 runs past the end of its message or is malformed"},
	    {"series as a varint", "\x08\x01", 2, 400,
	     "series: wire type 0 (varint), expected length-delimited (field 1 at byte 0)"},
	    {"field 0", "\x00\x01", 2, 400,
	     "PushRequest: malformed field key at byte 0 (truncated, field 0 or wire type 6/7)"},
	    {"truncated label", "\x0a\x04\x0a\x05\x0a\x01", 6, 400,
	     "series[0].labels: length at byte 3 runs past the end of its message or is malformed"},
	    {"empty label name", "\x0a\x05\x0a\x03\x12\x01v", 7, 400,
	     "series[0].labels[0].name: empty label name"},
	    {"label name as varint", "\x0a\x04\x0a\x02\x08\x01", 6, 400,
	     "series[0].labels[0].name: wire type 0 (varint), expected length-delimited (field 1 at byte 4)"},
	    {"duplicate label", "\x0a\x0a\x0a\x03\x0a\x01k\x0a\x03\x0a\x01k", 12, 400,
	     "series[0].labels[1].name: duplicate label name \"k\""},
	    {"truncated raw_profile", "\x0a\x04\x12\x02\x0a\x09", 6, 400,
	     "series[0].samples[0].raw_profile: length at byte 5 runs past the end of its message or is "
	     "malformed"},
	    {"sample ID as fixed64", "\x0a\x0b\x12\x09\x11\x01\x02\x03\x04\x05\x06\x07\x08", 13, 400,
	     "series[0].samples[0].ID: wire type 1 (fixed64), expected length-delimited (field 2 at byte 4)"},
	    {"second series bad", "\x0a\x00\x0a\x02\x12\x05", 6, 400,
	     "series[1].samples: length at byte 5 runs past the end of its message or is malformed"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		pyro_push_t p;
		err_t err = {0};
		int rc = pyro_push_decode(slice_make(cases[i].in, cases[i].n), &p, &err);
		if (rc == 0 || err.status != cases[i].status || strcmp(err.msg, cases[i].msg) != 0)
			fail_msg("%s: rc %d status %d \"%s\"", cases[i].what, rc, err.status, err.msg);
		pyro_push_free(&p);
	}
}

static void test_decode_bounds(void **state)
{
	(void)state;
	buf_t b;
	pyro_push_t p;
	err_t err = {0};

	buf_init(&b, SIZE_MAX);
	labels_request(&b, LIMIT_LABELS, "l%d");
	assert_int_equal(pyro_push_decode(buf_slice(&b), &p, &err), 0);
	assert_int_equal(p.series[0].n_labels, LIMIT_LABELS);
	pyro_push_free(&p);
	buf_free(&b);

	buf_init(&b, SIZE_MAX);
	labels_request(&b, LIMIT_LABELS + 1, "l%d");
	assert_int_equal(pyro_push_decode(buf_slice(&b), &p, &err), -1);
	assert_int_equal(err.status, 400);
	assert_string_equal(err.msg, "series[0].labels: more than 64 labels");
	pyro_push_free(&p);
	buf_free(&b);

	static char longname[LIMIT_STRING_BYTES + 2];
	memset(longname, 'n', LIMIT_STRING_BYTES + 1);
	buf_init(&b, SIZE_MAX);
	size_t s = pb_begin(&b, 1);
	put_label(&b, "ok", "v");
	put_label(&b, longname, "v");
	pb_end(&b, s);
	assert_int_equal(pyro_push_decode(buf_slice(&b), &p, &err), -1);
	assert_string_equal(err.msg, "series[0].labels[1].name: 4097 bytes; the limit is 4096");
	pyro_push_free(&p);
	buf_free(&b);

	/* LIMIT_PUSH_PROFILES raw profiles over several series pass; one more is a 413. */
	for (int extra = 0; extra <= 1; extra++) {
		buf_init(&b, SIZE_MAX);
		for (int k = 0; k < 4; k++) {
			s = pb_begin(&b, 1);
			for (uint32_t i = 0; i < LIMIT_PUSH_PROFILES / 4 + (k == 3 ? (uint32_t)extra : 0);
			     i++)
				put_sample(&b, 1, "");
			pb_end(&b, s);
		}
		int rc = pyro_push_decode(buf_slice(&b), &p, &err);
		if (!extra) {
			assert_int_equal(rc, 0);
			assert_int_equal(p.n_profiles, LIMIT_PUSH_PROFILES);
		} else {
			assert_int_equal(rc, -1);
			assert_int_equal(err.status, 413);
			assert_string_equal(
			    err.msg, "series[3].samples[256]: more than 1024 raw profiles in one request");
		}
		pyro_push_free(&p);
		buf_free(&b);
	}
}

static void test_json(void **state)
{
	(void)state;
	/* 48 bytes 0..47 in base64: longer than half its text (pb_json once allocated len/2). */
	uint8_t bytes[48];
	for (int i = 0; i < 48; i++)
		bytes[i] = (uint8_t)i;
	const char *b64 = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4v";
	char json[512];
	snprintf(json, sizeof json,
	         "{\"series\":[{\"labels\":[{\"name\":\"service_name\",\"value\":\"api\"}],"
	         "\"samples\":[{\"rawProfile\":\"%s\",\"ID\":\"x\"},{\"raw_profile\":\"AQI=\"}]},{}]}",
	         b64);
	buf_t pb;
	buf_init(&pb, SIZE_MAX);
	err_t err = {0};
	assert_int_equal(pyro_push_json_to_pb(slice_cstr(json), &pb, &err), 0);
	pyro_push_t p;
	assert_int_equal(pyro_push_decode(buf_slice(&pb), &p, &err), 0);
	char got[256];
	render(&p, got, sizeof got);
	assert_string_equal(got, "service_name=api:48,2|:");
	assert_memory_equal(p.series[0].profiles[0].p, bytes, 48);
	pyro_push_free(&p);
	buf_free(&pb);

	static const struct {
		const char *in, *msg;
	} bad[] = {
	    {"[]", "PushRequest: expected an object"},
	    {"{\"series\":5}", "series: expected an array"},
	    {"{\"series\":[{\"samples\":[{\"rawProfile\":5}]}]}",
	     "series[0].samples[0].rawProfile: expected a base64 string"},
	    {"{\"series\":[{\"labels\":[{\"name\":1}]}]}", "series[0].labels[0].name: expected a string"},
	    {"{", "malformed JSON at line 1, column 1: string or '}' expected near end of file"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		buf_init(&pb, SIZE_MAX);
		err = (err_t){0};
		int rc = pyro_push_json_to_pb(slice_cstr(bad[i].in), &pb, &err);
		if (rc == 0 || err.status != 400 || strcmp(err.msg, bad[i].msg) != 0)
			fail_msg("%s: rc %d status %d \"%s\"", bad[i].in, rc, err.status, err.msg);
		buf_free(&pb);
	}
}

static void test_labels_to_series(void **state)
{
	(void)state;
	const pyro_label_t in[] = {
	    {slice_cstr("env"), slice_cstr("prod")},        {slice_cstr("service_name"), slice_cstr("api")},
	    {slice_cstr("__name__"), slice_cstr("memory")}, {slice_cstr("__session_id__"), slice_cstr("x")},
	    {slice_cstr("empty"), slice_cstr("")},          {slice_cstr("region"), slice_cstr("eu")},
	};
	model_label_t out[6];
	slice_t service = slice_cstr("app"), name = {NULL, 0};
	uint32_t n = pyro_labels_to_series(in, 6, &service, &name, out);
	assert_int_equal(n, 2);
	assert_true(slice_eq_cstr(out[0].key, "env") && slice_eq_cstr(out[0].value, "prod"));
	assert_true(slice_eq_cstr(out[1].key, "region") && slice_eq_cstr(out[1].value, "eu"));
	assert_true(slice_eq_cstr(service, "api"));
	assert_true(slice_eq_cstr(name, "memory"));
	/* /ingest's use: no profile name wanted, __name__ dropped like any __ label; no service_name keeps
	 * the app. */
	service = slice_cstr("app");
	n = pyro_labels_to_series(in + 2, 4, &service, NULL, out);
	assert_int_equal(n, 1);
	assert_true(slice_eq_cstr(service, "app"));
}

static void test_connect_errors(void **state)
{
	(void)state;
	static const struct {
		int status;
		const char *code;
		int http;
	} cases[] = {
	    {400, "invalid_argument", 400},  {401, "unauthenticated", 401},
	    {403, "permission_denied", 403}, {404, "unimplemented", 404},
	    {405, "unimplemented", 404},     {413, "resource_exhausted", 429},
	    {415, "invalid_argument", 400},  {429, "resource_exhausted", 429},
	    {500, "internal", 500},          {501, "unimplemented", 404},
	    {503, "unavailable", 503},       {504, "deadline_exceeded", 504},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int code = connect_code_of_status(cases[i].status);
		if (strcmp(connect_code_name(code), cases[i].code) != 0 ||
		    connect_http_status(code) != cases[i].http)
			fail_msg("%d: %s %d", cases[i].status, connect_code_name(code),
			         connect_http_status(code));
	}
	assert_string_equal(connect_code_name(GRPC_CANCELLED), "canceled");
	assert_string_equal(connect_code_name(99), "unknown");
	assert_int_equal(connect_http_status(GRPC_ABORTED), 409);
	buf_t b;
	buf_init(&b, SIZE_MAX);
	connect_error_json(GRPC_INVALID_ARGUMENT, "series[1].samples[0]: \"bad\"", &b);
	assert_buf_is(&b,
	              "{\"code\":\"invalid_argument\",\"message\":\"series[1].samples[0]: \\\"bad\\\"\"}");
	buf_free(&b);
	buf_init(&b, SIZE_MAX);
	connect_error_json(GRPC_INTERNAL, NULL, &b);
	assert_buf_is(&b, "{\"code\":\"internal\"}");
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_decode_good),      cmocka_unit_test(test_decode_bad),
	    cmocka_unit_test(test_decode_bounds),    cmocka_unit_test(test_json),
	    cmocka_unit_test(test_labels_to_series), cmocka_unit_test(test_connect_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
