/* Tests of src/net/http1_parse.c on plain bytes: head scanning across calls,
 * request-line and header rules, body framing, and the chunked decoder. */
#include "testutil.h"

#include "net/http1_parse.h"

static int parse(const char *s, http_head_t *h, int *status, const char **msg)
{
	static char copy[4096];
	size_t n = strlen(s);
	memcpy(copy, s, n);
	return http_parse_head((uint8_t *)copy, n, h, status, msg);
}

static void test_scan_across_calls(void **state)
{
	const char *req = "GET / HTTP/1.1\r\nA: b\r\n\r\nBODY";
	for (size_t split = 0; split < 24; split++) {
		http_scan_t s = {0};
		size_t end = http_scan_head(&s, (const uint8_t *)req, split);
		if (!end)
			end = http_scan_head(&s, (const uint8_t *)req + split, strlen(req) - split);
		assert_int_equal(end, 24);
	}
	http_scan_t s = {0};
	assert_int_equal(http_scan_head(&s, (const uint8_t *)"GET / HTTP/1.1\nA: b\n\nX", 22), 21);
}

static void test_parse_head(void **state)
{
	http_head_t h;
	int st;
	const char *msg;
	assert_int_equal(
	    parse("PUT /a?b HTTP/1.0\r\nContent-TYPE:  text/x \t\r\nX-E:\r\n\r\n", &h, &st, &msg), 0);
	assert_true(slice_eq_cstr(h.method, "PUT"));
	assert_true(slice_eq_cstr(h.target, "/a?b"));
	assert_int_equal(h.minor, 0);
	assert_int_equal(h.n, 2);
	assert_true(slice_eq_cstr(h.names[0], "content-type"));
	assert_true(slice_eq_cstr(h.values[0], "text/x"));
	assert_true(slice_eq_cstr(h.names[1], "x-e"));
	assert_int_equal(h.values[1].n, 0);
	free(h.names);

	assert_int_equal(parse("GET / HTTP/1.1\r\nA : b\r\n\r\n", &h, &st, &msg), -1);
	assert_int_equal(st, 400);
	assert_int_equal(parse("GET / HTTP/1.1\r\nA: b\rc\r\n\r\n", &h, &st, &msg), -1);
	assert_int_equal(parse("GET / HTTP/1.1\r\nA: b\x01\r\n\r\n", &h, &st, &msg), -1);
	assert_int_equal(parse("GET /\x80 HTTP/1.1\r\n\r\n", &h, &st, &msg), -1);
	assert_int_equal(parse("GET / HTTP/3.0\r\n\r\n", &h, &st, &msg), -1);
	assert_int_equal(st, 505);
	assert_int_equal(parse("GET / HTTP/1.1 \r\n\r\n", &h, &st, &msg), -1);
	assert_int_equal(st, 400);
	assert_int_equal(parse("G(T / HTTP/1.1\r\n\r\n", &h, &st, &msg), -1);
}

static int framing(const char *s, http_framing_t *f, int *st)
{
	http_head_t h;
	const char *msg;
	assert_int_equal(parse(s, &h, st, &msg), 0);
	int rc = http_framing_of(&h, f, st, &msg);
	free(h.names);
	return rc;
}

static void test_framing(void **state)
{
	http_framing_t f;
	int st;
	assert_int_equal(framing("GET / HTTP/1.1\r\n\r\n", &f, &st), 0);
	assert_true(f.keep_alive);
	assert_int_equal(framing("GET / HTTP/1.1\r\nConnection: foo, Close\r\n\r\n", &f, &st), 0);
	assert_false(f.keep_alive);
	assert_int_equal(framing("GET / HTTP/1.0\r\n\r\n", &f, &st), 0);
	assert_false(f.keep_alive);
	assert_int_equal(framing("GET / HTTP/1.0\r\nConnection: keep-alive\r\nExpect: x\r\n\r\n", &f, &st),
	                 0);
	assert_true(f.keep_alive);
	assert_int_equal(
	    framing("POST / HTTP/1.1\r\nContent-Length: 5\r\ncontent-length: 5\r\n\r\n", &f, &st), 0);
	assert_int_equal(f.content_length, 5);
	assert_int_equal(
	    framing("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", &f, &st), -1);
	assert_int_equal(framing("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", &f, &st),
	                 -1);
	assert_int_equal(framing("POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\n", &f, &st), -1);
	assert_int_equal(
	    framing("POST / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\nExpect: 100-Continue\r\n\r\n", &f, &st),
	    0);
	assert_true(f.chunked);
	assert_true(f.expect_continue);
	assert_int_equal(
	    framing("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", &f,
	            &st),
	    -1);
	assert_int_equal(st, 501);
	assert_int_equal(framing("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", &f, &st), -1);
	assert_int_equal(st, 400);
}

static void test_split_target(void **state)
{
	slice_t p, q;
	http_split_target(slice_cstr("/a/b?x=1?y"), &p, &q);
	assert_true(slice_eq_cstr(p, "/a/b"));
	assert_true(slice_eq_cstr(q, "x=1?y"));
	http_split_target(slice_cstr("http://host:80/p?q"), &p, &q);
	assert_true(slice_eq_cstr(p, "/p"));
	assert_true(slice_eq_cstr(q, "q"));
	http_split_target(slice_cstr("http://host"), &p, &q);
	assert_true(slice_eq_cstr(p, "/"));
	assert_int_equal(q.n, 0);
}

/* Feeds s in pieces of `step` bytes; returns the last result. */
static int chunked(const char *s, size_t step, buf_t *body, size_t max, size_t *total_used, const char **msg)
{
	http_chunked_t c = {0};
	size_t n = strlen(s), off = 0;
	int rc = HTTP_MORE;
	while (off < n && rc == HTTP_MORE) {
		size_t k = n - off < step ? n - off : step, used;
		rc = http_chunked_feed(&c, (const uint8_t *)s + off, k, body, max, &used, msg);
		off += used;
	}
	*total_used = off;
	return rc;
}

static void test_chunked(void **state)
{
	const char *ok = "4\r\nWiki\r\n5 ; a=b\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nT: 1\r\n\r\nNEXT";
	for (size_t step = 1; step < 8; step++) {
		buf_t b;
		buf_init(&b, 1000);
		size_t used;
		const char *msg;
		assert_int_equal(chunked(ok, step, &b, 1000, &used, &msg), HTTP_DONE);
		assert_int_equal(used, strlen(ok) - 4);
		assert_int_equal(b.n, 23);
		assert_memory_equal(b.p, "Wikipedia in\r\n\r\nchunks.", 23);
		buf_free(&b);
	}
	const char *bad[] = {"x\r\n",   "\r\n",       "4\nWiki\r\n", "4\r\nWikiX",
	                     "4 x\r\n", "4;\x01\r\n", "0\r\nT\n",    "0\r\n\rx"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		buf_t b;
		buf_init(&b, 1000);
		size_t used;
		const char *msg = NULL;
		assert_int_equal(chunked(bad[i], 3, &b, 1000, &used, &msg), HTTP_BAD);
		assert_non_null(msg);
		buf_free(&b);
	}
	char longline[2000];
	memset(longline, '0', sizeof longline - 1);
	longline[sizeof longline - 1] = 0;
	buf_t b;
	buf_init(&b, 10);
	size_t used;
	const char *msg;
	assert_int_equal(chunked(longline, 100, &b, 10, &used, &msg), HTTP_BAD);
	assert_int_equal(chunked("6\r\n123456\r\n5\r\n", 100, &b, 10, &used, &msg), HTTP_TOO_BIG);
	assert_int_equal(b.n, 6);
	buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_scan_across_calls), cmocka_unit_test(test_parse_head),
	    cmocka_unit_test(test_framing),           cmocka_unit_test(test_split_target),
	    cmocka_unit_test(test_chunked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
