/* Tests of base/num.h, the number codings every module shares: saturating
 * add and multiply at the int64 edges, LEB128 varints byte for byte (the
 * protobuf spec's encoding) and their refusals, hex digits of every byte. */
#include "testutil.h"

#include "base/buf.h"
#include "base/num.h"

static void test_sat_add(void **state)
{
	(void)state;
	assert_true(num_sat_add(2, 3) == 5);
	assert_true(num_sat_add(-2, 3) == 1);
	assert_true(num_sat_add(INT64_MAX, 0) == INT64_MAX);
	assert_true(num_sat_add(INT64_MAX - 1, 1) == INT64_MAX);
	assert_true(num_sat_add(INT64_MAX, 1) == INT64_MAX);
	assert_true(num_sat_add(1, INT64_MAX) == INT64_MAX);
	assert_true(num_sat_add(INT64_MAX, INT64_MAX) == INT64_MAX);
	assert_true(num_sat_add(INT64_MIN + 1, -1) == INT64_MIN);
	assert_true(num_sat_add(INT64_MIN, -1) == INT64_MIN);
	assert_true(num_sat_add(-1, INT64_MIN) == INT64_MIN);
	assert_true(num_sat_add(INT64_MIN, INT64_MIN) == INT64_MIN);
	assert_true(num_sat_add(INT64_MAX, INT64_MIN) == -1); /* opposite signs never overflow */
	assert_true(num_sat_add(INT64_MIN, INT64_MAX) == -1);
}

static void test_sat_mul(void **state)
{
	(void)state;
	assert_true(num_sat_mul(6, 7) == 42);
	assert_true(num_sat_mul(-6, 7) == -42);
	assert_true(num_sat_mul(INT64_MAX, 1) == INT64_MAX);
	assert_true(num_sat_mul(INT64_MAX, 2) == INT64_MAX);
	assert_true(num_sat_mul(INT64_MAX, -2) == INT64_MIN);
	assert_true(num_sat_mul(INT64_MIN, -1) == INT64_MAX); /* -INT64_MIN does not fit */
	assert_true(num_sat_mul(INT64_MIN, 1) == INT64_MIN);
	assert_true(num_sat_mul(INT64_MIN, 2) == INT64_MIN);
	assert_true(num_sat_mul(-3, INT64_MIN) == INT64_MAX);
	assert_true(num_sat_mul((int64_t)1 << 32, (int64_t)1 << 31) == INT64_MAX); /* 2^63 */
	assert_true(num_sat_mul((int64_t)1 << 32, (int64_t)1 << 30) == (int64_t)1 << 62);
	assert_true(num_sat_mul((int64_t)1 << 32, -((int64_t)1 << 31)) == INT64_MIN); /* exactly -2^63 */
}

/* One varint: its bytes as the protobuf spec writes them, read back whole,
 * and every proper prefix refused without moving the cursor. */
static void varint_case(uint64_t v, const char *bytes, size_t n)
{
	uint8_t out[NUM_UVARINT_MAX];
	assert_int_equal(num_uvarint_put(out, v), n);
	assert_memory_equal(out, bytes, n);

	buf_t b;
	buf_init(&b, SIZE_MAX);
	assert_int_equal(buf_put_uvarint(&b, v), 0);
	assert_int_equal(b.n, n);
	assert_memory_equal(b.p, bytes, n);
	buf_free(&b);

	const uint8_t *p = out, *q;
	uint64_t got = 12345;
	assert_int_equal(num_uvarint_get(&p, out + n, &got), 0);
	assert_true(got == v);
	assert_ptr_equal(p, out + n);
	for (size_t k = 0; k < n; k++) {
		q = out;
		assert_int_equal(num_uvarint_get(&q, out + k, &got), -1);
		assert_ptr_equal(q, out);
	}
}

static void test_varint_edges(void **state)
{
	(void)state;
	varint_case(0, "\x00", 1);
	varint_case(1, "\x01", 1);
	varint_case(127, "\x7f", 1);
	varint_case(128, "\x80\x01", 2);
	varint_case(300, "\xac\x02", 2);
	varint_case(16383, "\xff\x7f", 2);
	varint_case(16384, "\x80\x80\x01", 3);
	varint_case((uint64_t)INT64_MAX, "\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 9);
	varint_case((uint64_t)1 << 63, "\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 10);
	varint_case(UINT64_MAX, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10);
}

static void test_varint_refused(void **state)
{
	(void)state;
	uint64_t v = 7;
	/* A 10th byte above 1 would carry bits past 64. */
	const uint8_t big[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
	const uint8_t *p = big;
	assert_int_equal(num_uvarint_get(&p, big + sizeof big, &v), -1);
	assert_ptr_equal(p, big);
	/* Eleven bytes: the 10th still says "more". */
	const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x81, 0x00};
	p = eleven;
	assert_int_equal(num_uvarint_get(&p, eleven + sizeof eleven, &v), -1);
	assert_ptr_equal(p, eleven);
	/* Nothing to read. */
	p = big;
	assert_int_equal(num_uvarint_get(&p, big, &v), -1);
	assert_true(v == 7);
	/* A non-minimal zero is read (protobuf accepts it), two bytes long. */
	const uint8_t zero2[] = {0x80, 0x00, 0x05};
	p = zero2;
	assert_int_equal(num_uvarint_get(&p, zero2 + sizeof zero2, &v), 0);
	assert_true(v == 0);
	assert_ptr_equal(p, zero2 + 2);
	/* Two in a row. */
	const uint8_t two[] = {0xac, 0x02, 0x7f};
	p = two;
	assert_int_equal(num_uvarint_get(&p, two + 3, &v), 0);
	assert_true(v == 300);
	assert_int_equal(num_uvarint_get(&p, two + 3, &v), 0);
	assert_true(v == 127);
	assert_ptr_equal(p, two + 3);
}

static void test_hex_digit(void **state)
{
	(void)state;
	const char *lower = "0123456789abcdef", *upper = "0123456789ABCDEF";
	for (int i = 0; i < 16; i++) {
		assert_int_equal(num_hex_digit((uint8_t)lower[i]), i);
		assert_int_equal(num_hex_digit((uint8_t)upper[i]), i);
	}
	/* Every byte against a table: the 22 digit characters, and -1 for the rest. */
	const char *digits = "0123456789abcdefABCDEF";
	int valid = 0;
	for (int c = 1; c < 256; c++) {
		const char *at = strchr(digits, c);
		int want = at ? (int)(at - digits) : -1;
		if (want >= 16)
			want -= 6;
		valid += want >= 0;
		assert_int_equal(num_hex_digit((uint8_t)c), want);
	}
	assert_int_equal(valid, 22);
	assert_int_equal(num_hex_digit('/'), -1);
	assert_int_equal(num_hex_digit(':'), -1);
	assert_int_equal(num_hex_digit('@'), -1);
	assert_int_equal(num_hex_digit('G'), -1);
	assert_int_equal(num_hex_digit('`'), -1);
	assert_int_equal(num_hex_digit('g'), -1);
	assert_int_equal(num_hex_digit(0), -1);
	assert_int_equal(num_hex_digit(0xff), -1);
	assert_int_equal(num_hex_digit((uint8_t)('a' | 0x80)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sat_add),      cmocka_unit_test(test_sat_mul),
	    cmocka_unit_test(test_varint_edges), cmocka_unit_test(test_varint_refused),
	    cmocka_unit_test(test_hex_digit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
