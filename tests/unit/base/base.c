/* Tests of src/base: buffers with ceilings, JSON escaping, the u64 map,
 * time parsing, errors, arena reuse. */
#include "testutil.h"

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/hash.h"
#include "base/timeutil.h"
#include "base/u64map.h"

static void test_buf_ceiling(void **state)
{
	buf_t b;
	buf_init(&b, 10);
	assert_int_equal(buf_append(&b, "0123456789", 10), 0);
	assert_int_equal(buf_putc(&b, 'x'), -1);
	assert_int_equal(b.n, 10);
	assert_true(b.cap <= 10);
	buf_free(&b);
}

static void test_buf_printf_long(void **state)
{
	buf_t b;
	buf_init(&b, SIZE_MAX);
	char big[1000];
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = 0;
	assert_int_equal(buf_printf(&b, "[%s]", big), 0);
	assert_int_equal(b.n, 1001);
	assert_int_equal(b.p[0], '[');
	assert_int_equal(b.p[1000], ']');
	buf_free(&b);
}

static void expect_json(const char *in, size_t n, const char *want)
{
	buf_t b;
	buf_init(&b, SIZE_MAX);
	assert_int_equal(buf_json_str(&b, slice_make(in, n)), 0);
	assert_int_equal(b.n, strlen(want));
	assert_memory_equal(b.p, want, b.n);
	buf_free(&b);
}

static void test_json_escape(void **state)
{
	expect_json("plain", 5, "\"plain\"");
	expect_json("a\"b\\c", 5, "\"a\\\"b\\\\c\"");
	expect_json("\n\x01", 2, "\"\\u000a\\u0001\"");
	expect_json("caf\xc3\xa9", 5, "\"caf\xc3\xa9\"");                           /* valid UTF-8 kept */
	expect_json("\xff", 1, "\"\xef\xbf\xbd\"");                                 /* invalid → U+FFFD */
	expect_json("\xed\xa0\x80", 3, "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""); /* surrogate refused */
}

static void test_u64map(void **state)
{
	u64map_t m;
	u64map_init(&m);
	for (uint32_t i = 1; i <= 100000; i++)
		u64map_put(&m, hash_pair(i, 7), i);
	assert_int_equal(m.len, 100000);
	uint32_t v;
	for (uint32_t i = 1; i <= 100000; i++) {
		assert_true(u64map_get(&m, hash_pair(i, 7), &v));
		assert_int_equal(v, i);
	}
	assert_false(u64map_get(&m, hash_pair(0, 8), &v));
	int ins;
	assert_int_equal(u64map_get_or_put(&m, hash_pair(5, 7), 99, &ins), 5);
	assert_int_equal(ins, 0);
	u64map_clear(&m);
	assert_false(u64map_get(&m, hash_pair(5, 7), &v));
	u64map_free(&m);
	/* Reserved for 1,000 entries (at most 3/4 full): one table of 2,048
	 * slots, kept while they go in; entries already there survive. */
	u64map_put(&m, hash_pair(1, 1), 1);
	u64map_reserve(&m, 1000);
	assert_int_equal(m.cap, 2048);
	for (uint32_t i = 2; i <= 1000; i++)
		u64map_put(&m, hash_pair(i, 1), i);
	assert_int_equal(m.cap, 2048);
	assert_true(u64map_get(&m, hash_pair(1, 1), &v));
	assert_int_equal(v, 1);
	u64map_reserve(&m, 10);
	assert_int_equal(m.cap, 2048);
	u64map_free(&m);
}

static void test_time_parse(void **state)
{
	int64_t now = 1700000000LL * NS_PER_SEC, t;
	assert_int_equal(time_parse("now", now, &t), 0);
	assert_true(t == now);
	assert_int_equal(time_parse("now-1h", now, &t), 0);
	assert_true(t == now - 3600 * NS_PER_SEC);
	assert_int_equal(time_parse("now-1h30m", now, &t), 0);
	assert_true(t == now - 5400 * NS_PER_SEC);
	assert_int_equal(time_parse("1600000000", now, &t), 0);
	assert_true(t == 1600000000LL * NS_PER_SEC);
	assert_int_equal(time_parse("yesterday", now, &t), -1);
	assert_int_equal(time_parse("now+1h", now, &t), -1);
	assert_int_equal(time_parse("-5", now, &t), -1);
	assert_int_equal(time_parse("12x", now, &t), -1);
	assert_int_equal(time_parse("7258118400", now, &t), 0);
	assert_int_equal(time_parse("17210000000", now, &t), -1); /* past int64 ns */
	int64_t d;
	assert_int_equal(time_parse_duration("10s", &d), 0);
	assert_true(d == 10 * NS_PER_SEC);
	assert_int_equal(time_parse_duration("2d", &d), 0);
	assert_true(d == 2 * NS_PER_DAY);
	assert_int_equal(time_parse_duration("99999999999999h", &d), -1);
	char day[11];
	time_day_str(time_day(now), day);
	assert_string_equal(day, "2023-11-14");
	assert_true(time_day(-1) == -1);
}

static void test_err_prefix(void **state)
{
	err_t e;
	assert_int_equal(err_set(&e, 400, "index %d out of range", 9), -1);
	err_prefix(&e, "samples[%d]", 7);
	assert_string_equal(e.msg, "samples[7]: index 9 out of range");
	assert_int_equal(e.status, 400);
}

/* A reset arena keeps one standard block and hands it out again; the big
 * one-off and the other blocks are freed (ASan reports a double free or a
 * leak otherwise), and the count of bytes starts over. */
static void test_arena_reset(void **state)
{
	arena_t *a = arena_new();
	uint8_t *first = arena_alloc(a, 100);
	memset(first, 1, 100);
	for (int i = 0; i < 3; i++) /* a second and third 64 KiB block */
		memset(arena_alloc(a, 40000), 2, 40000);
	uint8_t *big = arena_alloc(a, 1 << 20); /* one-off, beside the head */
	memset(big, 3, 1 << 20);
	assert_true(arena_used(a) >= 100 + 3 * 40000 + (1 << 20));
	arena_reset(a);
	assert_int_equal(arena_used(a), 0);
	uint8_t *again = arena_alloc(a, 16);
	assert_non_null(again);
	memset(again, 4, 16);
	assert_int_equal(arena_used(a), 16);
	arena_reset(a);
	arena_reset(a); /* twice in a row, and on an arena left empty */
	arena_t *empty = arena_new();
	arena_reset(empty);
	assert_int_equal(arena_used(empty), 0);
	assert_non_null(arena_alloc(empty, 8));
	arena_free(empty);
	arena_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_buf_ceiling), cmocka_unit_test(test_buf_printf_long),
	    cmocka_unit_test(test_json_escape), cmocka_unit_test(test_u64map),
	    cmocka_unit_test(test_time_parse),  cmocka_unit_test(test_err_prefix),
	    cmocka_unit_test(test_arena_reset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
