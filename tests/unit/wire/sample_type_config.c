/* Tests of src/wire/sample_type_config.c: a table of good configs (the
 * entries as parsed, the Go SDK's own among them) and bad ones (the exact
 * message), its bounds, and a table of profile names (Pyroscope's
 * metricName in pkg/og/convert/pprof/profile.go is the oracle). */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "wire/sample_type_config.h"

/* "type:display:units:agg:c:s|..." of a parse. */
static void render(const pyro_stc_t *c, char *out, size_t cap)
{
	static const char *agg[] = {"-", "sum", "average"};
	size_t o = 0;
	out[0] = 0;
	for (uint32_t i = 0; i < c->n && o < cap; i++) {
		const pyro_stc_entry_t *e = &c->entries[i];
		o += (size_t)snprintf(out + o, cap - o, "%s%s:%s:%s:%s:%d:%d", i ? "|" : "", e->type,
		                      e->display_name, e->units, agg[e->aggregation], e->cumulative,
		                      e->sampled);
	}
}

static const struct {
	const char *json;
	const char *parse; /* NULL: an error */
	const char *msg;
} cases[] = {
    {"{}", "", NULL},
    /* The Go SDK's heap config (sample_types.go), as json.Marshal writes it. */
    {"{\"alloc_objects\":{\"units\":\"objects\"},\"alloc_space\":{\"units\":\"bytes\"},"
     "\"inuse_objects\":{\"units\":\"objects\",\"aggregation\":\"average\"},"
     "\"inuse_space\":{\"units\":\"bytes\",\"aggregation\":\"average\"}}",
     "alloc_objects::objects:-:0:0|alloc_space::bytes:-:0:0|inuse_objects::objects:average:0:0|"
     "inuse_space::bytes:average:0:0",
     NULL},
    {"{\"contentions\":{\"units\":\"lock_samples\",\"display-name\":\"mutex_count\"},"
     "\"delay\":{\"units\":\"lock_nanoseconds\",\"display-name\":\"mutex_duration\"}}",
     "contentions:mutex_count:lock_samples:-:0:0|delay:mutex_duration:lock_nanoseconds:-:0:0", NULL},
    {" {\"alloc_space\": {\"cumulative\": true, \"sampled\": true, \"aggregation\": \"sum\", \"x\": [1]}} ",
     "alloc_space:::sum:1:1", NULL},
    {"{\"a\":{\"units\":null,\"cumulative\":null,\"aggregation\":\"\"}}", "a:::-:0:0", NULL},
    {"{\"a\":{\"display-name\":\"caf\\u00e9\"}}", "a:café::-:0:0", NULL},
    {"", NULL, "sample_type_config: not JSON ('[' or '{' expected near end of file at byte 0)"},
    {"{\"a\":", NULL, "sample_type_config: not JSON (unexpected token near end of file at byte 5)"},
    {"{\"a\":{}} x", NULL, "sample_type_config: not JSON (end of file expected near 'x' at byte 10)"},
    {"{\"a\":{},\"a\":{}}", NULL, "sample_type_config: a duplicate key at byte 11"},
    {"[]", NULL, "sample_type_config: not a JSON object {SAMPLE_TYPE: {...}, ...}"},
    {"{\"a\":1}", NULL, "sample_type_config: \"a\" must be an object"},
    {"{\"a\":null}", NULL, "sample_type_config: \"a\" must be an object"},
    {"{\"\":{}}", NULL, "sample_type_config: an empty sample type"},
    {"{\"a\":{\"units\":5}}", NULL, "sample_type_config: \"a\".units must be a string"},
    {"{\"a\":{\"display-name\":true}}", NULL, "sample_type_config: \"a\".display-name must be a string"},
    {"{\"a\":{\"cumulative\":\"true\"}}", NULL, "sample_type_config: \"a\".cumulative must be true or false"},
    {"{\"a\":{\"sampled\":1}}", NULL, "sample_type_config: \"a\".sampled must be true or false"},
    {"{\"a\":{\"aggregation\":\"avg\"}}", NULL,
     "sample_type_config: \"a\".aggregation must be \"sum\" or \"average\", not \"avg\""},
    {"{\"a\":{\"aggregation\":[]}}", NULL, "sample_type_config: \"a\".aggregation must be a string"},
    {"{\"a\":{\"units\":\"x\\u0000y\"}}", NULL, "sample_type_config: a string with \\u0000 (NUL) at byte 24"},
};

static void test_table(void **state)
{
	(void)state;
	static pyro_stc_t c;
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		err_t err = {0};
		int rc = pyro_stc_parse(slice_cstr(cases[i].json), &c, &err);
		if (cases[i].parse) {
			if (rc != 0)
				fail_msg("%s: %s", cases[i].json, err.msg);
			char got[1024];
			render(&c, got, sizeof got);
			assert_string_equal(got, cases[i].parse);
		} else {
			if (rc == 0)
				fail_msg("%s: parsed", cases[i].json);
			assert_int_equal(err.status, 400);
			assert_string_equal(err.msg, cases[i].msg);
			assert_int_equal(c.n, 0);
		}
	}
	assert_int_equal(pyro_stc_parse(slice_cstr("{\"x\":{\"units\":\"u\"},\"y\":{}}"), &c, NULL), 0);
	assert_non_null(pyro_stc_find(&c, slice_cstr("y")));
	assert_string_equal(pyro_stc_find(&c, slice_cstr("x"))->units, "u");
	assert_null(pyro_stc_find(&c, slice_cstr("z")));
}

static void test_bounds(void **state)
{
	(void)state;
	static pyro_stc_t c;
	static char json[LIMIT_PYRO_STC_BYTES + 64];
	for (uint32_t extra = 0; extra < 2; extra++) {
		size_t o = (size_t)snprintf(json, sizeof json, "{");
		for (uint32_t i = 0; i < LIMIT_SAMPLE_TYPES + extra; i++)
			o += (size_t)snprintf(json + o, sizeof json - o, "%s\"t%u\":{}", i ? "," : "", i);
		snprintf(json + o, sizeof json - o, "}");
		err_t err = {0};
		int rc = pyro_stc_parse(slice_cstr(json), &c, &err);
		assert_int_equal(rc, extra ? -1 : 0);
		if (extra)
			assert_string_equal(err.msg, "sample_type_config: 65 sample types; the limit is 64");
		else
			assert_int_equal(c.n, LIMIT_SAMPLE_TYPES);
	}
	size_t o = (size_t)snprintf(json, sizeof json, "{\"a\":{\"units\":\"");
	memset(json + o, 'u', LIMIT_PYRO_STC_STRING_BYTES + 1);
	snprintf(json + o + LIMIT_PYRO_STC_STRING_BYTES + 1, 8, "\"}}");
	err_t err = {0};
	assert_int_equal(pyro_stc_parse(slice_cstr(json), &c, &err), -1);
	assert_string_equal(err.msg, "sample_type_config: \"a\".units is longer than 256 bytes");
	o = (size_t)snprintf(json, sizeof json, "{\"");
	memset(json + o, 't', LIMIT_PYRO_STC_STRING_BYTES + 1);
	snprintf(json + o + LIMIT_PYRO_STC_STRING_BYTES + 1, 8, "\":{}}");
	assert_int_equal(pyro_stc_parse(slice_cstr(json), &c, &err), -1);
	assert_string_equal(err.msg, "sample_type_config: a sample type longer than 256 bytes");
	memset(json, ' ', LIMIT_PYRO_STC_BYTES + 1);
	assert_int_equal(pyro_stc_parse(slice_make(json, LIMIT_PYRO_STC_BYTES + 1), &c, &err), -1);
	assert_string_equal(err.msg, "sample_type_config: 65537 bytes; the limit is 64 KiB");
}

#define GO_MUTEX                                                                                             \
	"{\"contentions\":{\"units\":\"lock_samples\",\"display-name\":\"mutex_count\"},"                    \
	"\"delay\":{\"units\":\"lock_nanoseconds\",\"display-name\":\"mutex_duration\"}}"
#define GO_BLOCK                                                                                             \
	"{\"contentions\":{\"units\":\"lock_samples\",\"display-name\":\"block_count\"},"                    \
	"\"delay\":{\"units\":\"lock_nanoseconds\",\"display-name\":\"block_duration\"}}"

static const struct {
	const char *config; /* NULL: no sample_type_config (Pyroscope's default one) */
	const char *types;  /* the pprof's sample types, comma-separated */
	const char *name;
} names[] = {
    /* What each Pyroscope SDK sends. */
    {NULL, "samples,cpu", "process_cpu"}, /* Go CPU: no config */
    {"{\"alloc_objects\":{\"units\":\"objects\"},\"alloc_space\":{},\"inuse_objects\":{},"
     "\"inuse_space\":{}}",
     "alloc_objects,alloc_space,inuse_objects,inuse_space", "memory"},
    {GO_MUTEX, "contentions,delay", "mutex"},
    {GO_BLOCK, "contentions,delay", "block"},
    {"{\"goroutine\":{\"display-name\":\"goroutines\",\"units\":\"goroutines\"}}", "goroutine", "goroutines"},
    {NULL, "samples,wall", "wall"},    /* Node wall: wall wins over samples → cpu */
    {NULL, "objects,space", "memory"}, /* Node heap */
    {NULL, "cpu", "process_cpu"},      /* py-spy, rbspy */
    /* The default config's display names. */
    {NULL, "samples", "process_cpu"},
    {NULL, "goroutine", "goroutines"},
    {NULL, "contentions,delay", "mutex"}, /* Pyroscope's guess: a block profile too */
    {NULL, "delay", "mutex"},
    {NULL, "inuse_space", "memory"},
    {NULL, "alloc_in_new_tlab_bytes", "memory"},
    {NULL, "block_count", "block"},
    {NULL, "mutex_duration", "mutex"},
    {NULL, "goroutines", "goroutines"},
    /* A config replaces the default one. */
    {"{}", "samples", "samples"},
    {"{}", "goroutine", "goroutine"},
    {"{}", "contentions", "contentions"},
    {"{\"other\":{}}", "samples,cpu", "process_cpu"},
    {"{\"x\":{\"display-name\":\"my_cpu\"}}", "x", "process_cpu"},
    {"{\"wall\":{\"display-name\":\"cpu\"}}", "samples,wall", "wall"}, /* the type, not the display name */
    {"{\"x\":{\"display-name\":\"wall\"}}", "x", "wall"},              /* by the fallback */
    {"{\"cpu\":{\"display-name\":\"frobs\"}}", "cpu", "frobs"},
    /* The Go SDK's goroutine leak profile. */
    {"{\"goroutineleak\":{\"display-name\":\"goroutine_leak\",\"units\":\"goroutines\",\"aggregation\":"
     "\"average\"}}",
     "goroutineleak", "goroutine_leak"},
    /* The first type that matches decides; the order of the checks. */
    {NULL, "frobs,space", "memory"},
    {NULL, "alloc_cpu", "process_cpu"},
    {NULL, "inuse_block_mutex_", "memory"},
    {NULL, "mutex_block_", "mutex"},
    /* Exact names; nothing matching: the last type's name, when it is a
     * Kiln profile name, else unnamed. */
    {NULL, "spaces", "spaces"},
    {NULL, "objects_x", "objects_x"},
    {NULL, "itimer", "itimer"},
    {NULL, "frobs,itimer", "itimer"},
    {"{\"a\":{\"display-name\":\"x.y-z\"}}", "b,a", "x.y-z"},
    {NULL, "", ""},
    {NULL, "Wall", ""},
    {NULL, "itimer,Wall", ""},
    {NULL, "a b", ""},
    {"{\"a\":{\"display-name\":\"Frobs\"}}", "a", ""},
    {NULL, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", ""}, /* 65 bytes */
};

static void test_names(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		pyro_stc_t *c = NULL;
		err_t err = {0};
		if (names[i].config) {
			c = malloc(sizeof *c);
			if (pyro_stc_parse(slice_cstr(names[i].config), c, &err) < 0)
				fail_msg("case %zu: %s", i, err.msg);
		}
		slice_t types[8];
		uint32_t n = 0;
		const char *t = names[i].types;
		for (const char *q = t;; q++)
			if (!*q || *q == ',') {
				types[n++] = slice_make(t, (size_t)(q - t));
				if (!*q)
					break;
				t = q + 1;
			}
		slice_t got = pyro_stc_profile_name(c, types, n);
		if (!slice_eq_cstr(got, names[i].name))
			fail_msg("case %zu (%s): \"%.*s\", want \"%s\"", i, names[i].types, (int)got.n,
			         got.n ? (const char *)got.p : "", names[i].name);
		free(c);
	}
	assert_int_equal(pyro_stc_profile_name(NULL, NULL, 0).n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_bounds),
	    cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
