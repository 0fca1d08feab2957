/* Tests of src/wire/rpc_status.c: the protobuf Status reads back field by
 * field with our pb reader (code, message, RetryInfo detail with its
 * Duration), the JSON form is exact, and HTTP statuses map to gRPC codes. */
#include "testutil.h"

#include "base/buf.h"
#include "wire/pb.h"
#include "wire/rpc_status.h"

static void test_pb_round_trip(void **state)
{
	(void)state;
	buf_t out;
	buf_init(&out, SIZE_MAX);
	rpc_status_pb(GRPC_RESOURCE_EXHAUSTED, "over 20000 samples/s", 5, &out);
	pb_reader_t r = pb_reader_make(buf_slice(&out));
	uint32_t f;
	int wt;
	uint64_t v;
	slice_t s = {0}, any = {0};
	int seen = 0;
	while (!pb_done(&r)) {
		assert_int_equal(pb_key(&r, &f, &wt), 0);
		if (f == 1) {
			assert_int_equal(pb_varint(&r, &v), 0);
			assert_int_equal(v, 8);
			seen |= 1;
		} else if (f == 2) {
			assert_int_equal(pb_bytes(&r, &s), 0);
			assert_true(slice_eq_cstr(s, "over 20000 samples/s"));
			seen |= 2;
		} else {
			assert_int_equal(f, 3);
			assert_int_equal(pb_bytes(&r, &any), 0);
			seen |= 4;
		}
	}
	assert_int_equal(seen, 7);
	/* Any{1 type_url, 2 value = RetryInfo{1 retry_delay = Duration{1 seconds}}} */
	pb_reader_t a = pb_reader_make(any);
	assert_int_equal(pb_key(&a, &f, &wt), 0);
	assert_int_equal(f, 1);
	assert_int_equal(pb_bytes(&a, &s), 0);
	assert_true(slice_eq_cstr(s, "type.googleapis.com/google.rpc.RetryInfo"));
	assert_int_equal(pb_key(&a, &f, &wt), 0);
	assert_int_equal(f, 2);
	assert_int_equal(pb_bytes(&a, &s), 0);
	pb_reader_t info = pb_reader_make(s);
	assert_int_equal(pb_key(&info, &f, &wt), 0);
	assert_int_equal(f, 1);
	assert_int_equal(pb_bytes(&info, &s), 0);
	pb_reader_t dur = pb_reader_make(s);
	assert_int_equal(pb_key(&dur, &f, &wt), 0);
	assert_int_equal(f, 1);
	assert_int_equal(pb_varint(&dur, &v), 0);
	assert_int_equal(v, 5);
	assert_true(pb_done(&dur) && pb_done(&info) && pb_done(&a));

	/* Without RetryInfo: code and message only. */
	buf_reset(&out);
	rpc_status_pb(GRPC_INVALID_ARGUMENT, "bad", 0, &out);
	assert_int_equal(out.n, 7);
	assert_memory_equal(out.p,
	                    "\x08\x03\x12\x03"
	                    "bad",
	                    7);
	buf_free(&out);
}

static void test_json(void **state)
{
	(void)state;
	buf_t out;
	buf_init(&out, SIZE_MAX);
	rpc_status_json(8, "rate \"limited\"", 5, &out);
	const char *want = "{\"code\":8,\"message\":\"rate \\\"limited\\\"\",\"details\":[{\"@type\":"
	                   "\"type.googleapis.com/google.rpc.RetryInfo\",\"retryDelay\":\"5s\"}]}";
	assert_int_equal(out.n, strlen(want));
	assert_memory_equal(out.p, want, out.n);
	buf_reset(&out);
	rpc_status_json(3, "bad", 0, &out);
	assert_int_equal(out.n, strlen("{\"code\":3,\"message\":\"bad\"}"));
	assert_memory_equal(out.p, "{\"code\":3,\"message\":\"bad\"}", out.n);
	buf_free(&out);
}

static void test_codes(void **state)
{
	(void)state;
	assert_int_equal(grpc_code_of_http(400), 3);
	assert_int_equal(grpc_code_of_http(401), 16);
	assert_int_equal(grpc_code_of_http(413), 8);
	assert_int_equal(grpc_code_of_http(429), 8);
	assert_int_equal(grpc_code_of_http(503), 14);
	assert_int_equal(grpc_code_of_http(404), 12);
	assert_int_equal(grpc_code_of_http(500), 13);
	assert_int_equal(grpc_code_of_http(200), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pb_round_trip),
	    cmocka_unit_test(test_json),
	    cmocka_unit_test(test_codes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
