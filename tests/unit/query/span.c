/* Tests of src/query/span.c (GET /api/span, API: Span links): exact JSON for a
 * span's CPU samples over two partitions, the choice among types, the
 * fallbacks when a span has no samples (its trace, the hints, the last
 * hour), and bad parameters. */
#include "fixture.h"

#define SPAN_A "00f067aa0ba902b7"
#define SPAN_B "b7ad6b7169203331"
#define SPAN_C "53995c3f42cd8ad8"
#define TRACE "4bf92f3577b34da6a3ce929d0e0e4736"
#define NOW ((T0 + 7000) * NS_PER_SEC)

static int span_json(qfix *f, const char *trace, const char *span, const query_span_opts_t *o, buf_t *b,
                     err_t *err)
{
	buf_init(b, SIZE_MAX);
	query_span_opts_t def = {.now_ns = NOW};
	return query_span(f->s, slice_cstr("p"), slice_cstr(trace), slice_cstr(span), o ? o : &def, b, err);
}

static void expect_span(qfix *f, const char *trace, const char *span, const query_span_opts_t *o,
                        const char *want)
{
	buf_t b;
	err_t err = {0};
	if (span_json(f, trace, span, o, &b, &err) < 0)
		fail_msg("query_span: %d %s", err.status, err.msg);
	assert_string_equal(qfix_str(&b), want);
	buf_free(&b);
}

static void expect_400(qfix *f, const char *trace, const char *span, const query_span_opts_t *o,
                       const char *msg)
{
	buf_t b;
	err_t err = {0};
	assert_int_equal(span_json(f, trace, span, o, &b, &err), -1);
	assert_int_equal(err.status, 400);
	if (!strstr(err.msg, msg))
		fail_msg("message \"%s\" lacks \"%s\"", err.msg, msg);
	buf_free(&b);
}

/* Day 1 (T0 + 6000) has cpu:nanoseconds samples of span A (two attribute
 * sets) next to others; day 2 (T0 + 6500) a cpu_alias samples:count profile
 * (period 1000) whose sample carries span A without a trace (a pprof label). */
static void test_linked_cpu_over_two_partitions(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0 + 6000,
	         "main;f;g 10 span_id=" SPAN_A ",trace_id=" TRACE "\n"
	         "main;h 99\n"
	         "main;f 5 span_id=" SPAN_A ",trace_id=" TRACE ",k=v\n"
	         "main;x 7 span_id=" SPAN_B ",trace_id=" TRACE);
	qprof alias = {"api", "samples:count", NULL, T0 + 6500, 1000, 1};
	qfix_write(f, &alias, "main;f;g 2 span_id=" SPAN_A "\nmain;h 50");
	qfix_put(f, "other", "cpu:nanoseconds", NULL, T0 + 6000, "main;z 1000 span_id=" SPAN_B);
	/* 10 + 5 ns on day 1, 2 samples x 1000 ns on day 2; main;h is not linked. */
	static const char span_a[] =
	    "{\"samples\":3,\"service\":\"api\",\"from\":1700005980,\"until\":1700006520,"
	    "\"type\":\"cpu:nanoseconds\",\"unit\":\"nanoseconds\",\"total\":2015,"
	    "\"types\":[\"cpu:nanoseconds\",\"samples:count\"],"
	    "\"root\":{\"name\":\"total\",\"self\":0,\"total\":2015,\"children\":[{\"name\":\"main\","
	    "\"self\":0,\"total\":2015,\"children\":[{\"name\":\"f\",\"self\":5,\"total\":2015,"
	    "\"children\":[{\"name\":\"g\",\"self\":2010,\"total\":2010,\"children\":[]}]}]}]}}";
	expect_span(f, TRACE, SPAN_A, NULL, span_a);
	/* Without the trace id: the same samples. */
	expect_span(f, "", SPAN_A, NULL, span_a);
	/* Span B has one sample in each of two services: ties go by name, unless hinted. */
	expect_span(f, "", SPAN_B, NULL,
	            "{\"samples\":1,\"service\":\"api\",\"from\":1700005980,\"until\":1700006040,"
	            "\"type\":\"cpu:nanoseconds\",\"unit\":\"nanoseconds\",\"total\":7,"
	            "\"types\":[\"cpu:nanoseconds\"],"
	            "\"root\":{\"name\":\"total\",\"self\":0,\"total\":7,\"children\":[{\"name\":\"main\","
	            "\"self\":0,\"total\":7,\"children\":[{\"name\":\"x\",\"self\":7,\"total\":7,"
	            "\"children\":[]}]}]}}");
	query_span_opts_t o = {.service = slice_cstr("other"), .now_ns = NOW};
	expect_span(f, "", SPAN_B, &o,
	            "{\"samples\":1,\"service\":\"other\",\"from\":1700005980,\"until\":1700006040,"
	            "\"type\":\"cpu:nanoseconds\",\"unit\":\"nanoseconds\",\"total\":1000,"
	            "\"types\":[\"cpu:nanoseconds\"],"
	            "\"root\":{\"name\":\"total\",\"self\":0,\"total\":1000,\"children\":[{\"name\":\"main\","
	            "\"self\":0,\"total\":1000,\"children\":[{\"name\":\"z\",\"self\":1000,\"total\":1000,"
	            "\"children\":[]}]}]}}");
	/* The search covers 14 days back: from a week later the span is still found. */
	o = (query_span_opts_t){.now_ns = NOW + 7 * NS_PER_DAY};
	buf_t b;
	err_t err = {0};
	assert_int_equal(span_json(f, TRACE, SPAN_A, &o, &b, &err), 0);
	assert_non_null(strstr(qfix_str(&b), "\"samples\":3,"));
	buf_free(&b);
	/* But not after the retention. */
	o.now_ns = NOW + 15 * NS_PER_DAY;
	expect_span(f, "", SPAN_A, &o,
	            "{\"samples\":0,\"service\":\"\",\"from\":1701299400,\"until\":1701303000}");
}

/* Without CPU samples the type with most linked samples is shown; the
 * others are listed and can be asked for. */
static void test_two_types(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "contentions:count", NULL, T0,
	         "main;lock 3 span_id=" SPAN_A "\nmain;lock;wait 4 span_id=" SPAN_A ",x=1\nmain;other 9\n"
	         "main;lock;spin 1 span_id=" SPAN_A);
	qfix_put(f, "api", "goroutine:count", NULL, T0 + 30, "main;park 2 span_id=" SPAN_A);
	qfix_put(f, "api", "goroutine:count", NULL, T0 + 40, "main;park 4 span_id=" SPAN_A);
	expect_span(f, TRACE, SPAN_A, NULL,
	            "{\"samples\":3,\"service\":\"api\",\"from\":1699999980,\"until\":1700000040,"
	            "\"type\":\"contentions:count\",\"unit\":\"count\",\"total\":8,"
	            "\"types\":[\"contentions:count\",\"goroutine:count\"],"
	            "\"root\":{\"name\":\"total\",\"self\":0,\"total\":8,\"children\":[{\"name\":\"main\","
	            "\"self\":0,\"total\":8,\"children\":[{\"name\":\"lock\",\"self\":3,\"total\":8,"
	            "\"children\":[{\"name\":\"wait\",\"self\":4,\"total\":4,\"children\":[]},"
	            "{\"name\":\"spin\",\"self\":1,\"total\":1,\"children\":[]}]}]}]}}");
	/* A snapshot type is averaged over the snapshots that hold the span. */
	query_span_opts_t o = {.type = slice_cstr("goroutine:count"), .now_ns = NOW};
	expect_span(f, TRACE, SPAN_A, &o,
	            "{\"samples\":2,\"service\":\"api\",\"from\":1699999980,\"until\":1700000100,"
	            "\"type\":\"goroutine:count\",\"unit\":\"count\",\"total\":3,"
	            "\"types\":[\"contentions:count\",\"goroutine:count\"],"
	            "\"root\":{\"name\":\"total\",\"self\":0,\"total\":3,\"children\":[{\"name\":\"main\","
	            "\"self\":0,\"total\":3,\"children\":[{\"name\":\"park\",\"self\":3,\"total\":3,"
	            "\"children\":[]}]}]}}");
	/* A type the span has no samples of: say so, with the span's own minutes and types. */
	o.type = slice_cstr("cpu:nanoseconds");
	expect_span(f, TRACE, SPAN_A, &o,
	            "{\"samples\":0,\"service\":\"api\",\"from\":1699999980,\"until\":1700000100,"
	            "\"types\":[\"contentions:count\",\"goroutine:count\"]}");
}

/* Block and mutex samples of one span (API: Type ids): listed apart by
 * profile name; the default is the kind with most samples; a named type
 * selects its kind; a plain SAMPLE:UNIT merges both. */
static void test_profile_names(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "delay:nanoseconds", "__name__=block", T0,
	         "main;recv 30 span_id=" SPAN_A "\nmain;recv;park 5 span_id=" SPAN_A);
	qfix_put(f, "api", "delay:nanoseconds", "__name__=mutex", T0, "main;unlock 7 span_id=" SPAN_A);
	const char *types = "\"types\":[\"block:delay:nanoseconds\",\"mutex:delay:nanoseconds\"],";
	char want[1024];
	snprintf(want, sizeof want,
	         "{\"samples\":2,\"service\":\"api\",\"from\":1699999980,\"until\":1700000040,"
	         "\"type\":\"block:delay:nanoseconds\",\"unit\":\"nanoseconds\",\"total\":35,%s"
	         "\"root\":{\"name\":\"total\",\"self\":0,\"total\":35,\"children\":[{\"name\":\"main\","
	         "\"self\":0,\"total\":35,\"children\":[{\"name\":\"recv\",\"self\":30,\"total\":35,"
	         "\"children\":[{\"name\":\"park\",\"self\":5,\"total\":5,\"children\":[]}]}]}]}}",
	         types);
	expect_span(f, TRACE, SPAN_A, NULL, want);
	query_span_opts_t o = {.type = slice_cstr("mutex:delay:nanoseconds"), .now_ns = NOW};
	snprintf(want, sizeof want,
	         "{\"samples\":1,\"service\":\"api\",\"from\":1699999980,\"until\":1700000040,"
	         "\"type\":\"mutex:delay:nanoseconds\",\"unit\":\"nanoseconds\",\"total\":7,%s"
	         "\"root\":{\"name\":\"total\",\"self\":0,\"total\":7,\"children\":[{\"name\":\"main\","
	         "\"self\":0,\"total\":7,\"children\":[{\"name\":\"unlock\",\"self\":7,\"total\":7,"
	         "\"children\":[]}]}]}}",
	         types);
	expect_span(f, TRACE, SPAN_A, &o, want);
	/* An old link: both kinds merged (the sample count is the first kind's). */
	o.type = slice_cstr("delay:nanoseconds");
	buf_t b;
	err_t err = {0};
	assert_int_equal(span_json(f, TRACE, SPAN_A, &o, &b, &err), 0);
	assert_non_null(
	    strstr(qfix_str(&b), "\"type\":\"delay:nanoseconds\",\"unit\":\"nanoseconds\",\"total\":42,"));
	buf_free(&b);
}

/* Span C has no samples; other spans of its trace do: their service (the
 * one with most, or the hinted one) and the minutes around them. */
static void test_no_samples_but_trace_has_some(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0 + 6000,
	         "main;f 10 span_id=" SPAN_A ",trace_id=" TRACE "\nmain;g 5 span_id=" SPAN_B
	         ",trace_id=" TRACE);
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0 + 6100,
	         "main;f 10 span_id=" SPAN_A ",trace_id=" TRACE);
	qfix_put(f, "db", "cpu:nanoseconds", NULL, T0 + 6300, "main;q 10 span_id=" SPAN_B ",trace_id=" TRACE);
	/* Another trace's sample on a span with C's id does not count. */
	qfix_put(f, "web", "cpu:nanoseconds", NULL, T0,
	         "main;w 1 span_id=" SPAN_C ",trace_id=" SPAN_C SPAN_C);
	expect_span(f, TRACE, SPAN_C, NULL,
	            "{\"samples\":0,\"service\":\"api\",\"from\":1700005980,\"until\":1700006160}");
	query_span_opts_t o = {.service = slice_cstr("db"), .from_ns = (T0 + 10) * NS_PER_SEC, .now_ns = NOW};
	expect_span(f, TRACE, SPAN_C, &o,
	            "{\"samples\":0,\"service\":\"db\",\"from\":1700006280,\"until\":1700006340}");
}

/* Nothing linked anywhere: the hints, rounded out to whole minutes; without
 * hints, no service and the last hour. */
static void test_no_samples_at_all(void **state)
{
	qfix *f = *state;
	qfix_put(f, "api", "cpu:nanoseconds", NULL, T0, "main;f 10 span_id=" SPAN_A ",trace_id=" TRACE);
	query_span_opts_t o = {.service = slice_cstr("web"),
	                       .from_ns = (T0 + 10) * NS_PER_SEC,
	                       .until_ns = (T0 + 70) * NS_PER_SEC + 1,
	                       .now_ns = NOW};
	const char *other_trace = "0af7651916cd43dd8448eb211c80319c";
	expect_span(f, other_trace, SPAN_B, &o,
	            "{\"samples\":0,\"service\":\"web\",\"from\":1699999980,\"until\":1700000100}");
	o.until_ns = 0;
	expect_span(f, other_trace, SPAN_B, &o,
	            "{\"samples\":0,\"service\":\"web\",\"from\":1699999980,\"until\":1700000040}");
	expect_span(f, other_trace, SPAN_B, NULL,
	            "{\"samples\":0,\"service\":\"\",\"from\":1700003400,\"until\":1700007000}");
	expect_span(f, "", "no-such-span", NULL,
	            "{\"samples\":0,\"service\":\"\",\"from\":1700003400,\"until\":1700007000}");
	/* A project without data at all is the same answer. */
	buf_t b;
	err_t err = {0};
	buf_init(&b, SIZE_MAX);
	query_span_opts_t def = {.now_ns = NOW};
	assert_int_equal(
	    query_span(f->s, slice_cstr("empty"), slice_cstr(TRACE), slice_cstr(SPAN_A), &def, &b, &err), 0);
	assert_string_equal(qfix_str(&b),
	                    "{\"samples\":0,\"service\":\"\",\"from\":1700003400,\"until\":1700007000}");
	buf_free(&b);
}

static void test_bad_params(void **state)
{
	qfix *f = *state;
	char long_id[80];
	memset(long_id, 'a', 65);
	long_id[65] = 0;
	expect_400(f, TRACE, "", NULL, "span_id is required");
	expect_400(f, TRACE, long_id, NULL, "span_id must be at most 64 bytes");
	expect_400(f, long_id, SPAN_A, NULL, "trace_id must be at most 64 bytes");
	expect_400(f, TRACE, "a\nb", NULL, "span_id must not contain control characters");
	query_span_opts_t o = {.from_ns = 2 * NS_PER_SEC, .until_ns = NS_PER_SEC, .now_ns = NOW};
	expect_400(f, TRACE, SPAN_A, &o, "from must be before until");
	o = (query_span_opts_t){.type = slice_cstr("cpu"), .now_ns = NOW};
	expect_400(f, TRACE, SPAN_A, &o, "type must be SAMPLE_TYPE:UNIT");
	buf_t b;
	err_t err = {0};
	buf_init(&b, SIZE_MAX);
	assert_int_equal(
	    query_span(f->s, slice_cstr(""), slice_cstr(TRACE), slice_cstr(SPAN_A), NULL, &b, &err), -1);
	assert_int_equal(err.status, 400);
	buf_free(&b);
	/* A 64-byte pprof span label is fine. */
	long_id[64] = 0;
	expect_span(f, "", long_id, NULL,
	            "{\"samples\":0,\"service\":\"\",\"from\":1700003400,\"until\":1700007000}");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_linked_cpu_over_two_partitions, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_two_types, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_profile_names, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_no_samples_but_trace_has_some, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_no_samples_at_all, qfix_setup, qfix_teardown),
	    cmocka_unit_test_setup_teardown(test_bad_params, qfix_setup, qfix_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
