/* Tests of src/api/params.c: query-string decoding, labels, time ranges. */
#include "testutil.h"

#include "api/params.h"
#include "base/timeutil.h"

static void test_parse_decode(void **state)
{
	arena_t *a = arena_new();
	params_t p;
	err_t e;
	const char *q = "serviceName=my%20svc&label.k8s.namespace.name=prod&x=a+b&empty=&flag";
	assert_int_equal(params_parse(slice_cstr(q), a, &p, &e), 0);
	assert_string_equal(params_get(&p, "serviceName"), "my svc");
	assert_string_equal(params_get(&p, "x"), "a b");
	assert_string_equal(params_get(&p, "empty"), "");
	assert_string_equal(params_get(&p, "flag"), "");
	assert_null(params_get(&p, "nope"));
	model_label_t *l;
	uint32_t n;
	assert_int_equal(params_labels(&p, a, &l, &n, &e), 0);
	assert_int_equal(n, 1);
	assert_true(slice_eq_cstr(l[0].key, "k8s.namespace.name"));
	assert_true(slice_eq_cstr(l[0].value, "prod"));
	arena_free(a);
}

static void test_bad_escapes(void **state)
{
	static const char *bad[] = {"a=%", "a=%4", "a=%zz", "a=%00"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		arena_t *a = arena_new();
		params_t p;
		err_t e;
		assert_int_equal(params_parse(slice_cstr(bad[i]), a, &p, &e), -1);
		assert_int_equal(e.status, 400);
		assert_non_null(strstr(e.msg, "percent-encoding"));
		arena_free(a);
	}
}

static void test_range(void **state)
{
	arena_t *a = arena_new();
	params_t p;
	err_t e;
	int64_t now = 1700000000LL * NS_PER_SEC, f, u;
	assert_int_equal(params_parse(slice_cstr(""), a, &p, &e), 0);
	assert_int_equal(params_range(&p, now, &f, &u, &e), 0);
	assert_true(u == now && f == now - 3600 * NS_PER_SEC);
	assert_int_equal(params_parse(slice_cstr("from=now-24h&until=now-1h"), a, &p, &e), 0);
	assert_int_equal(params_range(&p, now, &f, &u, &e), 0);
	assert_true(f == now - 24 * 3600 * NS_PER_SEC && u == now - 3600 * NS_PER_SEC);
	assert_int_equal(params_parse(slice_cstr("from=now&until=now-1h"), a, &p, &e), 0);
	assert_int_equal(params_range(&p, now, &f, &u, &e), -1);
	assert_string_equal(e.msg, "from must be before until");
	assert_int_equal(params_parse(slice_cstr("from=tuesday"), a, &p, &e), 0);
	assert_int_equal(params_range(&p, now, &f, &u, &e), -1);
	assert_int_equal(e.status, 400);
	arena_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_decode),
	    cmocka_unit_test(test_bad_escapes),
	    cmocka_unit_test(test_range),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
