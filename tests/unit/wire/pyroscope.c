/* Tests of src/wire/pyroscope.c: a table of good and bad Pyroscope
 * application names with the exact parse or the exact message, the
 * unit-by-length timestamps, and the {"code","message"} error bodies. */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/timeutil.h"
#include "wire/pyroscope.h"

/* "app|k=v|k2=v2" of a parse, for comparing with the table. */
static void render(const pyro_name_t *n, char *out, size_t cap)
{
	size_t o = (size_t)snprintf(out, cap, "%.*s", (int)n->app.n, (const char *)n->app.p);
	for (uint32_t i = 0; i < n->n_labels && o < cap; i++)
		o += (size_t)snprintf(out + o, cap - o, "|%.*s=%.*s", (int)n->labels[i].key.n,
		                      (const char *)n->labels[i].key.p, (int)n->labels[i].value.n,
		                      (const char *)n->labels[i].value.p);
}

static const struct {
	const char *in;
	const char *parse; /* NULL: an error */
	const char *msg;
} cases[] = {
    {"svc", "svc", NULL},
    {"svc{}", "svc", NULL},
    {"svc.cpu{env=prod}", "svc.cpu|env=prod", NULL},
    {"svc-X{env=prod,region=\"eu-1\"}", "svc-X|env=prod|region=eu-1", NULL},
    {" svc { env = prod , region = eu 1 } ", NULL, "name: unexpected bytes after '}' at byte 35"},
    {" svc { env = prod , region = eu 1 }", "svc|env=prod|region=eu 1", NULL},
    {"svc{k=\"a,b}c\"}", "svc|k=a,b}c", NULL},
    {"svc{k=\"say \\\"hi\\\" \\\\ \\n\"}", "svc|k=say \"hi\" \\ \\n", NULL},
    {"svc{k=\"\"}", "svc|k=", NULL},
    {"svc{k=v,}", "svc|k=v", NULL},
    {"svc{__session_id__=abc,service_name=real}", "svc|__session_id__=abc|service_name=real", NULL},
    {"my app{k.with.dots=1}", "my app|k.with.dots=1", NULL},
    {"app{k=", NULL, "name: expected a label value at byte 6"},
    {"app{k", NULL, "name: expected '=' at byte 5"},
    {"app{k v}", NULL, "name: expected '=' at byte 6"},
    {"app{", NULL, "name: missing '}' at byte 4"},
    {"app{k=v", NULL, "name: missing '}' at byte 7"},
    {"app{k=v}}", NULL, "name: unexpected bytes after '}' at byte 8"},
    {"app}", NULL, "name: '}' without '{' at byte 3"},
    {"app{=v}", NULL, "name: empty label key at byte 4"},
    {"app{,}", NULL, "name: empty label key at byte 4"},
    {"{k=v}", NULL, "name: empty application name at byte 0"},
    {"", NULL, "name: empty application name at byte 0"},
    {"  {}", NULL, "name: empty application name at byte 0"},
    {"app{k=\"v}", NULL, "name: unterminated quoted value at byte 6"},
    {"app{k=a{b}", NULL, "name: unexpected '{' in a label value at byte 7"},
    {"app{k=a=b}", NULL, "name: unexpected '=' in a label value at byte 7"},
    {"app{k=\"v\" x}", NULL, "name: expected ',' or '}' at byte 10"},
    {"app{k=1,k=2}", NULL, "name: duplicate label key at byte 8"},
    {"app{k=1}x", NULL, "name: unexpected bytes after '}' at byte 8"},
    {"app{k=\x01}", NULL, "name: control byte 0x01 at byte 6"},
};

static void test_names(void **state)
{
	(void)state;
	static pyro_name_t n;
	char got[512];
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		err_t err = {0};
		int rc = pyro_name_parse(slice_cstr(cases[i].in), &n, &err);
		if (cases[i].parse) {
			if (rc != 0)
				fail_msg("%s: %s", cases[i].in, err.msg);
			render(&n, got, sizeof got);
			if (strcmp(got, cases[i].parse) != 0)
				fail_msg("%s: parsed as %s, want %s", cases[i].in, got, cases[i].parse);
		} else {
			if (rc != -1 || err.status != 400)
				fail_msg("%s: accepted", cases[i].in);
			if (strcmp(err.msg, cases[i].msg) != 0)
				fail_msg("%s: message %s, want %s", cases[i].in, err.msg, cases[i].msg);
		}
	}
}

static void test_bounds(void **state)
{
	(void)state;
	static pyro_name_t n;
	static char text[LIMIT_PYRO_NAME_BYTES + 2];
	err_t err = {0};
	/* LIMIT_LABELS labels parse; one more is refused at the key that passes the limit. */
	size_t o = (size_t)snprintf(text, sizeof text, "app{");
	size_t at = 0;
	for (unsigned i = 0; i <= LIMIT_LABELS; i++) {
		if (i == LIMIT_LABELS)
			at = o;
		o += (size_t)snprintf(text + o, sizeof text - o, "k%u=v,", i);
	}
	text[o - 1] = '}';
	char want[96];
	snprintf(want, sizeof want, "name: more than %u labels at byte %zu", LIMIT_LABELS, at);
	assert_int_equal(pyro_name_parse(slice_cstr(text), &n, &err), -1);
	assert_string_equal(err.msg, want);
	text[at - 1] = '}';
	text[at] = 0;
	assert_int_equal(pyro_name_parse(slice_cstr(text), &n, &err), 0);
	assert_int_equal(n.n_labels, LIMIT_LABELS);
	assert_true(slice_eq_cstr(n.labels[LIMIT_LABELS - 1].key, "k63"));

	/* The longest name parses; one byte more does not. */
	memset(text, 'a', LIMIT_PYRO_NAME_BYTES + 1);
	assert_int_equal(pyro_name_parse(slice_make(text, LIMIT_PYRO_NAME_BYTES), &n, &err), 0);
	assert_int_equal(n.app.n, LIMIT_PYRO_NAME_BYTES);
	assert_int_equal(pyro_name_parse(slice_make(text, LIMIT_PYRO_NAME_BYTES + 1), &n, &err), -1);
	assert_string_equal(err.msg, "name: longer than 4096 bytes at byte 4096");
	/* A quoted value as long as the name: the unescaped copy fits. */
	memcpy(text, "a{k=\"", 5);
	text[LIMIT_PYRO_NAME_BYTES - 2] = '"';
	text[LIMIT_PYRO_NAME_BYTES - 1] = '}';
	assert_int_equal(pyro_name_parse(slice_make(text, LIMIT_PYRO_NAME_BYTES), &n, &err), 0);
	assert_int_equal(n.labels[0].value.n, LIMIT_PYRO_NAME_BYTES - 7);
}

static void test_times(void **state)
{
	(void)state;
	const int64_t now = 1760000000LL * NS_PER_SEC;
	int64_t t = 0;
	assert_int_equal(pyro_time_parse("1759990000", now, &t), 0);
	assert_int_equal(t, 1759990000LL * NS_PER_SEC);
	assert_int_equal(pyro_time_parse("1759990000123", now, &t), 0);
	assert_int_equal(t, 1759990000123000000LL);
	assert_int_equal(pyro_time_parse("1759990000123456", now, &t), 0);
	assert_int_equal(t, 1759990000123456000LL);
	assert_int_equal(pyro_time_parse("1759990000123456789", now, &t), 0);
	assert_int_equal(t, 1759990000123456789LL);
	assert_int_equal(pyro_time_parse("now-1h", now, &t), 0);
	assert_int_equal(t, now - 3600 * NS_PER_SEC);
	assert_int_equal(pyro_time_parse("now", now, &t), 0);
	assert_int_equal(t, now);
	assert_int_equal(pyro_time_parse("9999999999999999999", now, &t), -1); /* past 2200 */
	assert_int_equal(pyro_time_parse("12345678901234", now, &t), -1); /* 14 digits: seconds, past 2200 */
	assert_int_equal(pyro_time_parse("17599900001x", now, &t), -1);
	assert_int_equal(pyro_time_parse("", now, &t), -1);
}

static void test_error_json(void **state)
{
	(void)state;
	buf_t b;
	buf_init(&b, SIZE_MAX);
	pyro_error_json(400, "name: expected '=' at byte 5", &b);
	assert_int_equal(
	    b.n, strlen("{\"code\":\"invalid_argument\",\"message\":\"name: expected '=' at byte 5\"}"));
	assert_memory_equal(
	    b.p, "{\"code\":\"invalid_argument\",\"message\":\"name: expected '=' at byte 5\"}", b.n);
	static const struct {
		int status;
		const char *code;
	} codes[] = {{401, "unauthenticated"}, {403, "permission_denied"},  {413, "resource_exhausted"},
	             {415, "unimplemented"},   {429, "resource_exhausted"}, {503, "unavailable"},
	             {500, "internal"}};
	for (size_t i = 0; i < sizeof codes / sizeof *codes; i++) {
		buf_reset(&b);
		pyro_error_json(codes[i].status, "a \"quoted\" message", &b);
		char want[128];
		snprintf(want, sizeof want, "{\"code\":\"%s\",\"message\":\"a \\\"quoted\\\" message\"}",
		         codes[i].code);
		assert_int_equal(b.n, strlen(want));
		assert_memory_equal(b.p, want, b.n);
	}
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_bounds),
	    cmocka_unit_test(test_times),
	    cmocka_unit_test(test_error_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
