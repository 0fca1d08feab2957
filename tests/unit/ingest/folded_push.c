/* Tests of src/ingest/folded_push.c, the folded-text decoder of Pyroscope's
 * /ingest: the type each units/aggregationType/sampleRate gives with its
 * values, identical stacks summed, the distinct-stack and frame bounds with
 * their exact 413s, a pprof body without a format going to the pprof
 * decoder (same batch as format=pprof), and the retention window. */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/timeutil.h"
#include "ingest/folded_push.h"
#include "wire/folded.h"

#define NOW_NS (1760000000LL * NS_PER_SEC)

typedef struct {
	ingest_pprof_push_t pp;
	ingest_folded_push_t fp;
	ingest_push_t p;
	err_t err;
} job_t;

static int run(job_t *j, int format, const char *units, const char *agg, const char *rate, slice_t body,
               uint32_t max_rows)
{
	memset(j, 0, sizeof *j);
	j->pp.req = (ingest_pprof_req_t){
	    .project = slice_cstr("p"), .service = slice_cstr("svc"), .max_rows = max_rows, .now_ns = NOW_NS};
	j->fp = (ingest_folded_push_t){&j->pp, format, units, agg, rate};
	j->p.body = body;
	j->p.ctx = &j->fp;
	return ingest_folded_decode(&j->p, &j->err);
}

static void done(job_t *j)
{
	if (j->p.batch)
		model_batch_free(j->p.batch);
}

static int64_t value_of(const model_batch_t *b, const char *leaf)
{
	const model_profile_t *p = &b->profiles[0];
	for (uint32_t i = 0; i < p->samples_count; i++) {
		const model_sample_t *s = &b->samples[p->samples_first + i];
		if (slice_eq_cstr(b->frames[b->nodes[s->node].frame].name, leaf))
			return s->value;
	}
	return -1;
}

static void test_types(void **state)
{
	(void)state;
	static const struct {
		const char *units, *agg, *rate, *type, *ptype;
		int64_t period, leaf;
		int aggregation;
	} cases[] = {
	    {NULL, NULL, NULL, "cpu:nanoseconds", "cpu", 10000000, 60000000, MODEL_WINDOW},
	    {"samples", "sum", "3", "cpu:nanoseconds", "cpu", 333333333, 1999999998, MODEL_WINDOW},
	    {"samples", NULL, "0", "samples:count", "", 0, 6, MODEL_WINDOW},
	    {"objects", NULL, NULL, "alloc_objects:count", "", 0, 6, MODEL_WINDOW},
	    {"objects", "average", NULL, "inuse_objects:count", "", 0, 6, MODEL_SNAPSHOT},
	    {"bytes", "average", NULL, "inuse_space:bytes", "", 0, 6, MODEL_SNAPSHOT},
	    {"bytes", "", NULL, "alloc_space:bytes", "", 0, 6, MODEL_WINDOW},
	    {"goroutines", NULL, NULL, "goroutine:count", "", 0, 6, MODEL_SNAPSHOT},
	    {"goroutines", "sum", NULL, "goroutine:count", "", 0, 6, MODEL_WINDOW},
	    {"lock_samples", NULL, "100", "contentions:count", "", 0, 6, MODEL_WINDOW},
	    {"lock_nanoseconds", NULL, NULL, "delay:nanoseconds", "", 0, 6, MODEL_WINDOW},
	};
	const char *text = "main;work;leaf 5\nmain;work 3\nmain;work;leaf 1\nmain;none 0\n";
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		job_t j;
		if (run(&j, FOLDED_GROUPS, cases[i].units, cases[i].agg, cases[i].rate, slice_cstr(text), 0) <
		    0)
			fail_msg("case %zu: %s", i, j.err.msg);
		const model_batch_t *b = j.p.batch;
		char type[64];
		model_type_name(&b->profiles[0], type, sizeof type);
		assert_int_equal(b->n_profiles, 1);
		assert_string_equal(type, cases[i].type);
		assert_true(slice_eq_cstr(b->profiles[0].period_type, cases[i].ptype));
		assert_int_equal(b->profiles[0].period, cases[i].period);
		assert_int_equal(b->profiles[0].aggregation, cases[i].aggregation);
		assert_int_equal(b->profiles[0].samples_count, 2); /* leaf, work; the 0 dropped */
		assert_int_equal(j.p.samples, 2);
		assert_int_equal(value_of(b, "leaf"), cases[i].leaf);
		assert_int_equal(value_of(b, "work"), cases[i].period ? 3 * cases[i].period : 3);
		assert_int_equal(b->profiles[0].time_ns, NOW_NS);
		done(&j);
	}
	job_t j;
	assert_int_equal(run(&j, FOLDED_GROUPS, "furlongs", NULL, NULL, slice_cstr(text), 0), -1);
	assert_string_equal(j.err.msg, "units=furlongs is not one of samples, objects, bytes, goroutines, "
	                               "lock_samples, lock_nanoseconds");
	assert_int_equal(run(&j, FOLDED_GROUPS, NULL, NULL, "1000000001", slice_cstr(text), 0), -1);
	assert_string_equal(j.err.msg, "sampleRate=1000000001 is not a rate: a whole number of samples "
	                               "per second, 0 to 1000000000");
	assert_int_equal(run(&j, FOLDED_LINES, NULL, "mean", NULL, slice_cstr(text), 0), -1);
	assert_string_equal(j.err.msg, "aggregationType=mean is not sum or average");
	assert_int_equal(
	    run(&j, FOLDED_GROUPS, NULL, NULL, NULL, slice_cstr("a 1\na 9223372036854775807\n"), 0), -1);
	assert_string_equal(j.err.msg, "line 2: count 9223372036854775807 × the sample period 10000000 ns "
	                               "is above 9223372036854775807");
	assert_int_equal(
	    run(&j, FOLDED_GROUPS, NULL, NULL, "0", slice_cstr("a 1\na 9223372036854775807\n"), 0), -1);
	assert_string_equal(j.err.msg, "line 2: the counts of this stack add up past 9223372036854775807");
}

static void test_bounds(void **state)
{
	(void)state;
	job_t j;
	/* lines: identical stacks are one row, however many lines. */
	assert_int_equal(run(&j, FOLDED_LINES, "objects", NULL, NULL, slice_cstr("a;b\na;b\r\n\na;b\n"), 1),
	                 0);
	assert_int_equal(j.p.batch->profiles[0].samples_count, 1);
	assert_int_equal(value_of(j.p.batch, "b"), 3);
	done(&j);
	assert_int_equal(run(&j, FOLDED_GROUPS, NULL, NULL, NULL, slice_cstr("a 1\nb 1\na 2\nc 1\nd 1\n"), 3),
	                 -1);
	assert_int_equal(j.err.status, 413);
	assert_string_equal(j.err.msg,
	                    "line 5: more than 3 distinct stacks; the limit is 3 (maxDecodedSampleRows)");

	/* 245 distinct stacks of 4096 frames write out 1,003,520 frames: the 245th passes 1,000,000. */
	size_t cap = 245u * (LIMIT_STACK_DEPTH * 6 + 16), o = 0;
	char *text = xmalloc(cap);
	for (unsigned s = 1; s <= 245; s++) {
		for (unsigned f = 0; f < LIMIT_STACK_DEPTH; f++)
			o += (size_t)snprintf(text + o, cap - o, "%sf%u", f ? ";" : "", f ? f : s);
		o += (size_t)snprintf(text + o, cap - o, " 1\n");
	}
	assert_int_equal(run(&j, FOLDED_GROUPS, NULL, NULL, NULL, slice_make(text, o), 1000), -1);
	assert_int_equal(j.err.status, 413);
	assert_string_equal(j.err.msg, "line 245: the stacks write out more than 1000000 frames; the limit "
	                               "is 1000000: send fewer or shallower stacks");
	free(text);

	assert_int_equal(run(&j, FOLDED_GROUPS, NULL, NULL, NULL, slice_cstr("\n \n"), 0), -1);
	assert_string_equal(j.err.msg, "no stacks: the folded text has only blank lines");
}

static void test_sniff_and_window(void **state)
{
	(void)state;
	char path[512];
	snprintf(path, sizeof path, "%s/pprof/go-cpu-fib.pb.gz", testdata_dir());
	size_t n;
	unsigned char *raw = read_file_or_fail(path, &n);
	job_t j;
	assert_int_equal(run(&j, INGEST_FOLDED_SNIFF, "furlongs", NULL, NULL, slice_make(raw, n), 0), 0);
	ingest_pprof_req_t req = j.pp.req;
	model_batch_t *want;
	ingest_result_t res;
	err_t err;
	assert_int_equal(ingest_pprof(&req, slice_make(raw, n), &want, &res, &err), 0);
	assert_int_equal(j.p.batch->n_profiles, want->n_profiles);
	assert_int_equal(j.p.samples, res.samples);
	assert_int_equal(j.p.batch->n_samples, want->n_samples);
	model_batch_free(want);
	done(&j);

	/* Folded text without a format is groups. */
	assert_int_equal(run(&j, INGEST_FOLDED_SNIFF, NULL, NULL, NULL, slice_cstr("a;b 2\n"), 0), 0);
	assert_int_equal(value_of(j.p.batch, "b"), 20000000);
	done(&j);

	/* A from older than the retention is refused whole, its rows counted out of window. */
	memset(&j, 0, sizeof j);
	j.pp.req = (ingest_pprof_req_t){.project = slice_cstr("p"),
	                                .service = slice_cstr("svc"),
	                                .from_ns = NOW_NS - 20 * NS_PER_DAY,
	                                .now_ns = NOW_NS};
	j.pp.retention_days = 14;
	j.fp = (ingest_folded_push_t){.pprof = &j.pp, .format = FOLDED_GROUPS};
	j.p.body = slice_cstr("a;b 2\na;c 1\n");
	j.p.ctx = &j.fp;
	assert_int_equal(ingest_folded_decode(&j.p, &j.err), -1);
	assert_int_equal(j.err.status, 400);
	assert_int_equal(j.p.rejected, 2);
	assert_int_equal(j.p.reason, USAGE_OUT_OF_WINDOW);
	done(&j);
	free(raw);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_types),
	    cmocka_unit_test(test_bounds),
	    cmocka_unit_test(test_sniff_and_window),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
