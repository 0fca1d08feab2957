/* The pure rules of the scrape loop (src/scrape/scraper_rules.c) and the
 * heap delta rule (src/scrape/delta.c): masking, schedule spread, settings
 * messages, static targets, .sample_types, deltas with counter resets. */
#include "testutil.h"

#include "base/hash.h"
#include "scrape/delta.h"
#include "scrape/scraper.h"

#define SEC 1000000000LL

static void mask(const char *in, const char *want)
{
	char out[256];
	scrape_mask_url(in, out, sizeof out);
	assert_string_equal(out, want);
}

static void test_mask(void **state)
{
	mask("http://10.0.0.1:6060/debug/pprof/profile?seconds=10", "http://10.0.0.1:6060/debug/pprof/profile?seconds=10");
	mask("http://h:1/x?token=xxx", "http://h:1/x?token=***");
	mask("http://h:1/x?seconds=2&token=abc&debug=1", "http://h:1/x?seconds=2&token=***&debug=***");
	mask("http://h:1/x?flag&empty=&k=v#frag", "http://h:1/x?flag&empty=&k=***");
	mask("https://user:secret@h:1/heap", "https://user:***@h:1/heap");
	mask("http://h:1/heap", "http://h:1/heap");
	char small[8];
	scrape_mask_url("http://h:1/x?token=abc", small, sizeof small);
	assert_string_equal(small, "http://");
}

static void test_schedule(void **state)
{
	int64_t iv = 10 * SEC;
	/* Stable: the same key, the same offset. */
	assert_int_equal(scrape_offset_ns("ns/pod/cpu", iv), scrape_offset_ns("ns/pod/cpu", iv));
	/* Spread: 1,000 keys fill each tenth of the interval about evenly. */
	int buckets[10] = {0};
	for (int i = 0; i < 1000; i++) {
		char key[64];
		snprintf(key, sizeof key, "default/pod-%d/memory", i);
		int64_t off = scrape_offset_ns(key, iv);
		assert_true(off >= 0 && off < iv);
		assert_int_equal(off % 1000000, 0);
		buckets[off * 10 / iv]++;
	}
	for (int b = 0; b < 10; b++)
		assert_true(buckets[b] > 60 && buckets[b] < 140);
	/* The next due time is after now and congruent to the offset. */
	int64_t off = 3 * SEC;
	assert_int_equal(scrape_next_due(100 * SEC, iv, off), 103 * SEC);
	assert_int_equal(scrape_next_due(103 * SEC, iv, off), 113 * SEC);
	assert_int_equal(scrape_next_due(104 * SEC, iv, off), 113 * SEC);
	assert_int_equal(scrape_next_due(1 * SEC, iv, off), 3 * SEC);
}

static void test_settings(void **state)
{
	int ok[SCRAPE_TYPES];
	char invalid[64], reason[256];
	assert_int_equal(scrape_check_settings(5 * SEC, NULL, 0, ok, invalid, sizeof invalid, reason, sizeof reason), -1);
	assert_string_equal(reason, "interval 5s is below the minimum of 10s");
	char *bad[] = {"example.com", "Bad_Prefix", "a/b"};
	assert_int_equal(scrape_check_settings(60 * SEC, bad, 3, ok, invalid, sizeof invalid, reason, sizeof reason), -1);
	assert_non_null(strstr(reason, "extraAnnotationPrefixes[1] 'Bad_Prefix' is not a DNS subdomain"));
	char *good[] = {"example.com", "pyroscope.io"};
	assert_int_equal(scrape_check_settings(10 * SEC, good, 2, ok, invalid, sizeof invalid, reason, sizeof reason), 0);
	assert_string_equal(invalid, "cpu,block,mutex");
	assert_int_equal(ok[SCRAPE_CPU], 0);
	assert_int_equal(ok[SCRAPE_MEMORY], 1);
	assert_int_equal(ok[SCRAPE_GOROUTINE], 1);
	assert_int_equal(scrape_check_settings(20 * SEC, NULL, 0, ok, invalid, sizeof invalid, reason, sizeof reason), 0);
	assert_string_equal(invalid, "block,mutex");
	assert_int_equal(scrape_check_settings(60 * SEC, NULL, 0, ok, invalid, sizeof invalid, reason, sizeof reason), 0);
	assert_string_equal(invalid, "");
}

static void test_static_target(void **state)
{
	scrape_static_options_t c = {0};
	c.name = "billing";
	c.url = "http://10.1.2.3:6060";
	c.namespace_ = "prod";
	scrape_target_t t;
	const char *reason;
	char msg[320];
	assert_int_equal(scrape_static_target(&c, SCRAPE_CPU, &t, &reason, msg, sizeof msg), 0);
	assert_string_equal(t.url, "http://10.1.2.3:6060/debug/pprof/profile?seconds=10");
	assert_int_equal(t.timeout_ns, 20 * SEC);
	assert_int_equal(t.window_ns, 10 * SEC);
	assert_string_equal(t.key, "static/billing/cpu");
	assert_string_equal(t.service, "billing");
	assert_string_equal(t.namespace_, "prod");

	c.types[SCRAPE_CPU].path = "/debug/pprof/profile?seconds=2&x=1";
	assert_int_equal(scrape_static_target(&c, SCRAPE_CPU, &t, &reason, msg, sizeof msg), 0);
	assert_int_equal(t.window_ns, 2 * SEC);
	c.types[SCRAPE_CPU].path = "/debug/pprof/profile?seconds=16";
	assert_int_equal(scrape_static_target(&c, SCRAPE_CPU, &t, &reason, msg, sizeof msg), -1);
	assert_string_equal(reason, "invalid_target");
	assert_non_null(strstr(msg, "seconds must be from 1 to 15"));
	c.types[SCRAPE_BLOCK].path = "/debug/pprof/block?rate=1";
	assert_int_equal(scrape_static_target(&c, SCRAPE_BLOCK, &t, &reason, msg, sizeof msg), 0);
	assert_string_equal(t.url, "http://10.1.2.3:6060/debug/pprof/block?rate=1&seconds=30");
	c.types[SCRAPE_MEMORY].path = "debug/pprof/heap";
	assert_int_equal(scrape_static_target(&c, SCRAPE_MEMORY, &t, &reason, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "must start with /"));

	scrape_static_options_t h = {0};
	h.name = "db";
	h.host = "db.internal";
	h.port = 8443;
	h.service = "postgres-exporter";
	h.types[SCRAPE_GOROUTINE].scheme = "https";
	assert_int_equal(scrape_static_target(&h, SCRAPE_GOROUTINE, &t, &reason, msg, sizeof msg), 0);
	assert_string_equal(t.url, "https://db.internal:8443/debug/pprof/goroutine");
	assert_int_equal(t.https, 1);
	assert_string_equal(t.service, "postgres-exporter");
	h.types[SCRAPE_GOROUTINE].scheme = "ftp";
	assert_int_equal(scrape_static_target(&h, SCRAPE_GOROUTINE, &t, &reason, msg, sizeof msg), -1);

	scrape_static_options_t p = {0};
	p.name = "x";
	p.url = "http://h:99999";
	assert_int_equal(scrape_static_target(&p, SCRAPE_MEMORY, &t, &reason, msg, sizeof msg), -1);
	assert_string_equal(reason, "invalid_port");
}

static void test_result_names(void **state)
{
	assert_string_equal(scrape_result_name(SCRAPE_OK), "ok");
	assert_string_equal(scrape_result_name(SCRAPE_HTTP_3XX), "http_3xx");
	assert_string_equal(scrape_result_name(SCRAPE_TARGET_BUSY), "target_busy");
	assert_string_equal(scrape_result_name(SCRAPE_SKIPPED_CONCURRENCY), "skipped_concurrency");
	assert_string_equal(scrape_result_name(SCRAPE_STORE_BUSY), "store_busy");
	assert_string_equal(scrape_result_name(SCRAPE_RESULTS), "unknown");
}

/* A Go-heap-like batch: 4 profiles (alloc_objects, alloc_space, inuse_objects,
 * inuse_space) over stacks f0..f{n-1}; vals[k] is the k-th stack's value
 * (alloc_space = 100 × alloc_objects; inuse the same). */
static model_batch_t *heap_batch(const int64_t *vals, uint32_t n)
{
	model_batch_t *b = model_batch_new(slice_cstr("default"));
	static const char *types[] = {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"};
	uint32_t nodes[16];
	for (uint32_t k = 0; k < n; k++) {
		char name[16];
		snprintf(name, sizeof name, "f%u", k);
		model_frame_t f = {.name = slice_cstr(name)};
		nodes[k] = model_node_intern(b, MODEL_NONE, model_frame_intern(b, &f));
	}
	for (int t = 0; t < 4; t++) {
		model_profile_t *p = model_profile_add(b);
		model_profile_set_type(b, p, slice_cstr(types[t]), slice_cstr(t % 2 ? "bytes" : "count"), slice_cstr("space"),
		                       slice_cstr("bytes"), 512 * 1024);
		model_profile_set_service(b, p, slice_cstr("svc"));
		for (uint32_t k = 0; k < n; k++)
			model_sample_add(b, p, nodes[k], 0, vals[k] * (t % 2 ? 100 : 1), 0);
		model_profile_finish(b, p);
	}
	return b;
}

static const model_profile_t *find(const model_batch_t *b, const char *type)
{
	for (uint32_t i = 0; i < b->n_profiles; i++)
		if (slice_eq_cstr(b->profiles[i].sample_type, type))
			return &b->profiles[i];
	return NULL;
}

static int64_t value_of(const model_batch_t *b, const model_profile_t *p, const char *frame)
{
	for (uint32_t k = 0; k < p->samples_count; k++) {
		const model_sample_t *s = &b->samples[p->samples_first + k];
		if (slice_eq_cstr(b->frames[b->nodes[s->node].frame].name, frame))
			return s->value;
	}
	return 0;
}

static void test_delta(void **state)
{
	scrape_delta_t *d = scrape_delta_new(1000);
	/* First scrape: inuse only. */
	int64_t v1[] = {10, 20, 5};
	model_batch_t *b = heap_batch(v1, 3);
	assert_int_equal(scrape_delta_apply(d, b), SCRAPE_DELTA_FIRST);
	assert_int_equal(b->n_profiles, 2);
	assert_null(find(b, "alloc_space"));
	assert_non_null(find(b, "inuse_space"));
	assert_int_equal(value_of(b, find(b, "inuse_objects"), "f1"), 20);
	model_batch_free(b);

	/* Second: the growth; f2 did not grow and is dropped; f3 is new. */
	int64_t v2[] = {15, 21, 5, 7};
	b = heap_batch(v2, 4);
	assert_int_equal(scrape_delta_apply(d, b), SCRAPE_DELTA_APPLIED);
	assert_int_equal(b->n_profiles, 4);
	const model_profile_t *ao = find(b, "alloc_objects"), *as = find(b, "alloc_space");
	assert_int_equal(ao->samples_count, 3);
	assert_int_equal(value_of(b, ao, "f0"), 5);
	assert_int_equal(value_of(b, ao, "f1"), 1);
	assert_int_equal(value_of(b, ao, "f2"), 0);
	assert_int_equal(value_of(b, ao, "f3"), 7);
	assert_int_equal(value_of(b, as, "f0"), 500);
	/* inuse untouched (cumulative snapshot values). */
	assert_int_equal(value_of(b, find(b, "inuse_objects"), "f0"), 15);
	model_batch_free(b);

	/* Counter reset (restart): a value went down → no alloc this round. */
	int64_t v3[] = {2, 30, 5, 7};
	b = heap_batch(v3, 4);
	assert_int_equal(scrape_delta_apply(d, b), SCRAPE_DELTA_RESET);
	assert_null(find(b, "alloc_objects"));
	assert_null(find(b, "alloc_space"));
	assert_int_equal(b->n_profiles, 2);
	model_batch_free(b);

	/* After the reset the new values are the baseline. */
	int64_t v4[] = {4, 31, 5, 7};
	b = heap_batch(v4, 4);
	assert_int_equal(scrape_delta_apply(d, b), SCRAPE_DELTA_APPLIED);
	ao = find(b, "alloc_objects");
	assert_int_equal(value_of(b, ao, "f0"), 2);
	assert_int_equal(value_of(b, ao, "f1"), 1);
	for (uint32_t k = 0; k < ao->samples_count; k++)
		assert_true(b->samples[ao->samples_first + k].value > 0);
	model_batch_free(b);
	scrape_delta_free(d);

	/* Too many rows for the bounded map: treated like a reset, then forgotten. */
	d = scrape_delta_new(3);
	b = heap_batch(v2, 4);
	assert_int_equal(scrape_delta_apply(d, b), SCRAPE_DELTA_FIRST);
	assert_null(find(b, "alloc_space"));
	model_batch_free(b);
	b = heap_batch(v2, 4);
	assert_int_equal(scrape_delta_apply(d, b), SCRAPE_DELTA_FIRST);
	model_batch_free(b);
	scrape_delta_free(d);
}

static void test_sample_types(void **state)
{
	int64_t v[] = {1, 2, 3};
	model_batch_t *b = heap_batch(v, 3);
	err_t err;
	assert_int_equal(scrape_filter_sample_types(b, "", &err), 0);
	assert_int_equal(b->n_profiles, 4);
	assert_int_equal(scrape_filter_sample_types(b, " inuse_space , alloc_space", &err), 0);
	assert_int_equal(b->n_profiles, 2);
	assert_non_null(find(b, "inuse_space"));
	assert_non_null(find(b, "alloc_space"));
	assert_int_equal(scrape_filter_sample_types(b, "inuse_space,contentions", &err), -1);
	assert_non_null(strstr(err.msg, "sample type contentions (from .sample_types) is not in the profile"));
	assert_int_equal(b->n_profiles, 2);
	assert_int_equal(scrape_check_rows(b, 3, &err), 0);
	assert_int_equal(scrape_check_rows(b, 2, &err), -1);
	assert_non_null(strstr(err.msg, "has 3 rows; the limit is 2"));
	model_batch_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mask),          cmocka_unit_test(test_schedule),    cmocka_unit_test(test_settings),
	    cmocka_unit_test(test_static_target), cmocka_unit_test(test_result_names), cmocka_unit_test(test_delta),
	    cmocka_unit_test(test_sample_types),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
