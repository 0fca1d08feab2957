/* Tests of src/query/pyro.c (API: Query: querier.v1.QuerierService): the
 * profile name of a series without __name__ (Pyroscope's rule on its sample
 * type) and which series a Pyroscope profile type id selects. */
#include "testutil.h"

#include <string.h>

#include "query/pyro.h"
#include "query/query_int.h"

static store_series_t series(const char *type, const char *pt, const char *pu, const model_label_t *labels,
                             uint32_t n)
{
	return (store_series_t){.type = slice_cstr(type),
	                        .period_type = slice_cstr(pt),
	                        .period_unit = slice_cstr(pu),
	                        .labels = labels,
	                        .n_labels = n};
}

static void expect_name(const char *sample_type, const char *name)
{
	store_series_t s = series("x:y", "", "", NULL, 0);
	slice_t got = query_pyro_name(&s, slice_cstr(sample_type));
	if (!slice_eq_cstr(got, name))
		fail_msg("%s: %.*s, want %s", sample_type, (int)got.n, (const char *)got.p, name);
}

static void test_names(void **state)
{
	(void)state;
	expect_name("cpu", "process_cpu");
	expect_name("samples", "process_cpu");
	expect_name("alloc_space", "memory");
	expect_name("inuse_objects", "memory");
	expect_name("space", "memory");
	expect_name("contentions", "mutex");
	expect_name("delay", "mutex");
	expect_name("goroutine", "goroutines");
	expect_name("wall", "wall");
	expect_name("events", "events");
	expect_name("Weird Type", QUERY_PYRO_UNKNOWN_NAME);
	model_label_t named[] = {{slice_cstr("__name__"), slice_cstr("block")}};
	store_series_t s = series("delay:nanoseconds", "", "", named, 1);
	assert_true(slice_eq_cstr(query_pyro_name(&s, slice_cstr("delay")), "block"));
}

static int is(const store_series_t *s, const char *type, const char *id)
{
	query_type_t t;
	err_t err = {0};
	assert_int_equal(query_type_parse(slice_cstr(type), &t, &err), 0);
	return query_pyro_is(s, &t, slice_cstr(id));
}

static void test_is(void **state)
{
	(void)state;
	store_series_t cpu = series("cpu:nanoseconds", "cpu", "nanoseconds", NULL, 0);
	assert_true(is(&cpu, "cpu:nanoseconds", "process_cpu:cpu:nanoseconds:cpu:nanoseconds"));
	assert_false(is(&cpu, "cpu:nanoseconds", "block:cpu:nanoseconds:cpu:nanoseconds"));
	assert_false(is(&cpu, "cpu:nanoseconds", "process_cpu:cpu:nanoseconds:cpu:nanosecond"));
	assert_false(is(&cpu, "cpu:nanoseconds", "process_cpu:cpu:nanoseconds:cpu:nanosecondss"));
	assert_false(is(&cpu, "cpu:nanoseconds", "process_cpu:cpu:nanoseconds:cpu"));
	/* A cpu_alias series read as cpu:nanoseconds has a CPU period. */
	store_series_t alias = series("samples:count", "cpu", "nanoseconds", NULL, 0);
	assert_true(is(&alias, "cpu:nanoseconds", "process_cpu:cpu:nanoseconds:cpu:nanoseconds"));
	assert_true(is(&alias, "samples:count", "process_cpu:samples:count:cpu:nanoseconds"));
	/* Empty period type (py-spy). */
	store_series_t py = series("samples:count", "", "milliseconds", NULL, 0);
	assert_true(is(&py, "samples:count", "process_cpu:samples:count::milliseconds"));
	assert_false(is(&py, "samples:count", "process_cpu:samples:count:cpu:milliseconds"));
	model_label_t named[] = {{slice_cstr("__name__"), slice_cstr("block")}};
	store_series_t block = series("delay:nanoseconds", "contentions", "count", named, 1);
	assert_true(is(&block, "delay:nanoseconds", "block:delay:nanoseconds:contentions:count"));
	assert_false(is(&block, "delay:nanoseconds", "mutex:delay:nanoseconds:contentions:count"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_is),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
