/* Tests of store/clickhouse's encodings (no server: the engine itself is
 * tested against a real ClickHouse by the black-box suites): RowBinary
 * both ways, reads of truncated or hostile answers that stay in bounds,
 * SQL string literals that cannot break out of their quotes, the span-index
 * key form, and store_open's refusals of a bad configuration. */
#include "testutil.h"

#include "helpers.h"
#include "store/clickhouse.h"

static ch_rd_t reader(const buf_t *b)
{
	ch_rd_t r;
	ch_rd_init(&r, b->p, b->n);
	return r;
}

static void test_rowbinary_round_trip(void **state)
{
	(void)state;
	buf_t b;
	buf_init(&b, SIZE_MAX);
	ch_put_u8(&b, 7);
	ch_put_u32(&b, 20424);
	ch_put_u64(&b, 0x0123456789abcdefULL);
	ch_put_i64(&b, -5);
	ch_put_str(&b, slice_cstr("checkout"));
	char big[300];
	memset(big, 'x', sizeof big);
	ch_put_str(&b, slice_make(big, sizeof big)); /* a two-byte varint length */
	buf_put_uvarint(&b, UINT64_MAX);
	/* Exact bytes of the fixed-width values: little-endian, as ClickHouse reads them. */
	assert_int_equal(b.p[0], 7);
	assert_memory_equal(b.p + 1, "\xc8\x4f\x00\x00", 4);
	assert_memory_equal(b.p + 5, "\xef\xcd\xab\x89\x67\x45\x23\x01", 8);
	assert_memory_equal(b.p + 21,
	                    "\x08"
	                    "checkout",
	                    9);
	assert_memory_equal(b.p + 30, "\xac\x02", 2);
	ch_rd_t r = reader(&b);
	assert_int_equal(ch_rd_u8(&r), 7);
	assert_int_equal(ch_rd_u32(&r), 20424);
	assert_true(ch_rd_u64(&r) == 0x0123456789abcdefULL);
	assert_true(ch_rd_i64(&r) == -5);
	slice_t s = ch_rd_str(&r);
	assert_int_equal(s.n, 8);
	assert_memory_equal(s.p, "checkout", 8);
	s = ch_rd_str(&r);
	assert_int_equal(s.n, 300);
	assert_true(ch_rd_varint(&r) == UINT64_MAX);
	assert_false(ch_rd_bad(&r));
	assert_false(ch_rd_more(&r));
	buf_free(&b);
}

/* Every prefix of a valid answer reads without overrun and is flagged bad. */
static void test_truncated_answers(void **state)
{
	(void)state;
	buf_t b;
	buf_init(&b, SIZE_MAX);
	ch_put_u64(&b, 42);
	ch_put_str(&b, slice_cstr("span"));
	ch_put_u32(&b, 9);
	for (size_t n = 0; n < b.n; n++) {
		uint8_t *copy = malloc(n ? n : 1); /* exactly n bytes: ASan catches any overrun */
		memcpy(copy, b.p, n);
		ch_rd_t r;
		ch_rd_init(&r, copy, n);
		ch_rd_u64(&r);
		slice_t s = ch_rd_str(&r);
		ch_rd_u32(&r);
		assert_true(ch_rd_bad(&r));
		assert_true(s.n == 0 || s.n == 4);
		free(copy);
	}
	/* A string claiming more bytes than the answer has. */
	uint8_t lie[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 'a'};
	ch_rd_t r;
	ch_rd_init(&r, lie, sizeof lie);
	slice_t s = ch_rd_str(&r);
	assert_true(ch_rd_bad(&r));
	assert_int_equal(s.n, 0);
	/* A varint that never ends. */
	uint8_t endless[12];
	memset(endless, 0x80, sizeof endless);
	ch_rd_init(&r, endless, sizeof endless);
	ch_rd_varint(&r);
	assert_true(ch_rd_bad(&r));
	buf_free(&b);
}

/* Puts the pair ClickHouse answers for CH_SUM_SQL over vals[0..n): the
 * Int64 sum wrapping as ClickHouse's does, and the Float64 sum. */
static void put_sum(buf_t *b, const int64_t *vals, size_t n)
{
	uint64_t wrapped = 0;
	double f = 0;
	for (size_t i = 0; i < n; i++) {
		wrapped += (uint64_t)vals[i];
		f += (double)vals[i];
	}
	uint64_t bits;
	memcpy(&bits, &f, sizeof bits);
	ch_put_u64(b, wrapped);
	ch_put_u64(b, bits);
}

/* The same pairs read as exact 128-bit sums (summed rows and entries are
 * added in 128 bits, then clamped once): every wrap is counted back. */
static void test_sums_exact(void **state)
{
	(void)state;
	const int64_t q = INT64_C(1) << 62;
	const __int128 Q = (__int128)q;
	struct {
		int64_t vals[4];
		size_t n;
		__int128 want;
	} cases[] = {
	    {{q, q, q}, 3, 3 * Q},
	    {{INT64_MAX, INT64_MAX, INT64_MAX, 5}, 4, 3 * (__int128)INT64_MAX + 5},
	    {{-q, -q, -q, -q}, 4, -4 * Q},
	    {{INT64_MIN, INT64_MIN, INT64_MIN}, 3, 3 * (__int128)INT64_MIN},
	    {{INT64_MAX, 1, -2}, 3, (__int128)INT64_MAX - 1},
	    {{1234567890123, -3, 10}, 3, 1234567890130},
	    {{0}, 1, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		buf_t b;
		buf_init(&b, SIZE_MAX);
		put_sum(&b, cases[i].vals, cases[i].n);
		ch_rd_t r = reader(&b);
		__int128 got = ch_rd_sum128(&r);
		if (got != cases[i].want)
			fail_msg("case %zu: %lld:%llu, want %lld:%llu", i, (long long)(got >> 64),
			         (unsigned long long)got, (long long)(cases[i].want >> 64),
			         (unsigned long long)cases[i].want);
		assert_false(ch_rd_bad(&r));
		buf_free(&b);
	}
}

/* Sums saturate as the embedded engine's do; exact sums stay exact. */
static void test_sums_saturate(void **state)
{
	(void)state;
	const int64_t q = INT64_C(1) << 62;
	struct {
		int64_t vals[4];
		size_t n;
		int64_t want;
	} cases[] = {
	    {{q, q, q}, 3, INT64_MAX},                            /* wraps to negative */
	    {{INT64_MAX, INT64_MAX, INT64_MAX, 5}, 4, INT64_MAX}, /* wraps past 2^64 */
	    {{-q, -q, -q}, 3, INT64_MIN},
	    {{INT64_MAX, 1, -2}, 3, INT64_MAX - 1}, /* a wrap and back: exact */
	    {{INT64_MAX - 7, 7}, 2, INT64_MAX},     /* exactly the largest */
	    {{INT64_MAX, -INT64_MAX}, 2, 0},
	    {{1234567890123, -3, 10}, 3, 1234567890130},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		buf_t b;
		buf_init(&b, SIZE_MAX);
		put_sum(&b, cases[i].vals, cases[i].n);
		ch_rd_t r = reader(&b);
		int64_t got = ch_rd_sum(&r);
		if (got != cases[i].want)
			fail_msg("case %zu: %lld, want %lld", i, (long long)got, (long long)cases[i].want);
		assert_false(ch_rd_bad(&r));
		assert_false(ch_rd_more(&r));
		buf_free(&b);
	}
	/* A NaN or a truncated pair does not invent a saturation. */
	buf_t b;
	buf_init(&b, SIZE_MAX);
	ch_put_i64(&b, 42);
	ch_put_u64(&b, 0x7ff8000000000000ULL);
	ch_rd_t r = reader(&b);
	assert_true(ch_rd_sum(&r) == 42);
	ch_rd_init(&r, b.p, 12);
	assert_true(ch_rd_sum(&r) == 42);
	assert_true(ch_rd_bad(&r));
	buf_free(&b);
}

/* Reads rows of the columns in cols ('b' UInt8, 'i' UInt32, 'l' 64-bit,
 * 's' String, 'd' a UInt32 day that must be below 100) from hex until the
 * answer ends or fails, then ch_rd_end: 0 and *rows, or -1 with err. */
static int read_rows(const char *cols, const char *hex, const char *what, int status, unsigned *rows,
                     err_t *err)
{
	size_t len = strlen(hex) / 2;
	uint8_t *p = malloc(len ? len : 1); /* exactly the answer: ASan catches an overrun */
	size_t n = hex_bytes(hex, p);
	ch_rd_t r;
	ch_rd_init(&r, n ? p : NULL, n);
	*rows = 0;
	while (ch_rd_more(&r)) {
		for (const char *c = cols; *c; c++)
			switch (*c) {
			case 'b':
				ch_rd_u8(&r);
				break;
			case 'i':
				ch_rd_u32(&r);
				break;
			case 'l':
				ch_rd_u64(&r);
				break;
			case 's':
				ch_rd_str(&r);
				break;
			case 'd':
				if (ch_rd_u32(&r) >= 100 && !ch_rd_bad(&r))
					ch_rd_fail(&r, "a day outside the view or out of order");
				break;
			}
		if (!ch_rd_bad(&r))
			(*rows)++;
	}
	int rc = ch_rd_end(&r, err, status, what);
	/* Once failed, a reader stays failed and reads zeros. */
	if (rc < 0) {
		assert_false(ch_rd_more(&r));
		assert_int_equal(ch_rd_u64(&r), 0);
		assert_int_equal(ch_rd_str(&r).n, 0);
	}
	free(p);
	return rc;
}

/* A table of answers, well-formed and malformed, and the exact error each
 * gives: an answer must parse exactly to its end. */
static void test_malformed_answers(void **state)
{
	(void)state;
	static const struct {
		const char *cols, *hex, *what;
		int status;
		unsigned rows;   /* rows read before the failure (or all of them) */
		const char *msg; /* NULL: the answer parses */
	} cases[] = {
	    {"is", "", "usage row", 500, 0, NULL},
	    {"is", "0100000003616263", "usage row", 500, 1, NULL},
	    {"is", "01000000036162630200000000", "usage row", 500, 2, NULL},
	    {"is", "0100", "usage row", 500, 0,
	     "store: ClickHouse sent a malformed usage row: a UInt32 cut short at byte 0 of 2"},
	    {"is", "01000000", "usage row", 500, 0,
	     "store: ClickHouse sent a malformed usage row: a length cut short at byte 4 of 4"},
	    {"is", "0100000080", "usage row", 500, 0,
	     "store: ClickHouse sent a malformed usage row: a length cut short at byte 4 of 5"},
	    {"is", "01000000ffffffffffffffffffff01", "key row", 500, 0,
	     "store: ClickHouse sent a malformed key row: a malformed length at byte 4 of 15"},
	    {"is", "010000000a616263", "key row", 500, 0,
	     "store: ClickHouse sent a malformed key row: a String of 10 bytes cut short at byte 5 of 8"},
	    {"is", "0100000003616263020000", "usage row", 500, 1,
	     "store: ClickHouse sent a malformed usage row: a UInt32 cut short at byte 8 of 11"},
	    {"l", "2a00000000000000", "count", 503, 1, NULL},
	    {"l", "2a000000000000", "count", 503, 0,
	     "store: ClickHouse sent a malformed count: a 64-bit value cut short at byte 0 of 7"},
	    {"b", "", "flag", 503, 0, NULL},
	    {"d", "0500000006000000", "day list", 503, 2, NULL},
	    {"d", "0500000041414141", "day list", 503, 1,
	     "store: ClickHouse sent a malformed day list: a day outside the view or out of order at byte 8 "
	     "of 8"},
	    /* Garbage read as days: the first "day" is out of range, not zero rows. */
	    {"d", "4141414141414141414141414141414141414141", "day list", 503, 0,
	     "store: ClickHouse sent a malformed day list: a day outside the view or out of order at byte 4 "
	     "of 20"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		err_t err = {0};
		unsigned rows;
		int rc = read_rows(cases[i].cols, cases[i].hex, cases[i].what, cases[i].status, &rows, &err);
		if (rows != cases[i].rows)
			fail_msg("case %zu: %u rows, want %u", i, rows, cases[i].rows);
		if (!cases[i].msg) {
			if (rc != 0)
				fail_msg("case %zu: %s", i, err.msg);
			continue;
		}
		if (rc != -1 || err.status != cases[i].status || strcmp(err.msg, cases[i].msg) != 0)
			fail_msg("case %zu: rc %d status %d \"%s\"\n want %d \"%s\"", i, rc, err.status,
			         err.msg, cases[i].status, cases[i].msg);
	}
	/* Bytes left over after a single-value answer (a count): read without a
	 * ch_rd_more loop, the end check still finds them. */
	uint8_t extra[11] = {42};
	ch_rd_t r;
	ch_rd_init(&r, extra, sizeof extra);
	assert_int_equal(ch_rd_u64(&r), 42);
	err_t err = {0};
	assert_int_equal(ch_rd_end(&r, &err, 503, "count"), -1);
	assert_int_equal(err.status, 503);
	assert_string_equal(
	    err.msg, "store: ClickHouse sent a malformed count: 3 bytes after the last row at byte 8 of 11");
	/* The first error stands: a later ch_rd_fail does not replace it. */
	ch_rd_fail(&r, "something else");
	assert_int_equal(ch_rd_end(&r, &err, 503, "count"), -1);
	assert_string_equal(
	    err.msg, "store: ClickHouse sent a malformed count: 3 bytes after the last row at byte 8 of 11");
}

static void test_sql_strings(void **state)
{
	(void)state;
	buf_t b;
	buf_init(&b, SIZE_MAX);
	ch_sql_str(&b, slice_cstr("a'b\\c"));
	ch_sql_str(&b, slice_make("x\ny\0z", 5));
	ch_sql_str(&b, slice_cstr("' OR 1=1 --"));
	buf_putc(&b, 0);
	assert_string_equal((const char *)b.p, "'a\\'b\\\\c''x\\x0ay\\x00z''\\' OR 1=1 --'");
	buf_free(&b);
}

static void test_span_keys(void **state)
{
	(void)state;
	char out[LIMIT_SPAN_ID_BYTES];
	slice_t k = ch_span_key(slice_cstr("00F067AA0BA902B7"), out);
	assert_int_equal(k.n, 16);
	assert_memory_equal(k.p, "00f067aa0ba902b7", 16); /* hex in either case matches */
	k = ch_span_key(slice_cstr("span-7"), out);
	assert_int_equal(k.n, 6);
	assert_memory_equal(k.p, "span-7", 6); /* text stays as it is */
	k = ch_span_key(slice_cstr("ABC"), out);
	assert_memory_equal(k.p, "ABC", 3); /* odd length: text, case kept */
	char longer[LIMIT_SPAN_ID_BYTES + 2];
	memset(longer, 'a', sizeof longer - 1);
	longer[sizeof longer - 1] = 0;
	assert_int_equal(ch_span_key(slice_cstr(longer), out).n, 0); /* not indexed */
	assert_int_equal(ch_span_key(slice_cstr(""), out).n, 0);
}

static void test_bad_configurations(void **state)
{
	(void)state;
	err_t err = {0};
	store_config_t c = {.engine = STORE_ENGINE_CLICKHOUSE};
	assert_null(store_open(&c, &err));
	assert_int_equal(err.status, 400);
	assert_string_equal(err.msg,
	                    "store.url: the ClickHouse HTTP interface URL is required (http://host:8123)");
	c.ch_url = "http://127.0.0.1:1";
	c.ch_database = "kiln; DROP TABLE x";
	assert_null(store_open(&c, &err));
	assert_string_equal(err.msg, "store: database and cluster names must be [A-Za-z_][A-Za-z0-9_]{0,63}");
	c.ch_database = "kiln";
	c.ch_url = "http://default:sekrit@127.0.0.1:1";
	assert_null(store_open(&c, &err));
	assert_string_equal(err.msg,
	                    "store.url must not carry credentials: set store.user and store.password(File)");
	c.ch_url = "http://127.0.0.1:1";
	c.ch_cluster = "c1 ON";
	assert_null(store_open(&c, &err));
	assert_int_equal(err.status, 400);
}

/* The write callback of every request: it keeps what fits under the
 * answer's ceiling and refuses the chunk that would pass it (libcurl then
 * stops the transfer), so an answer never holds more than the ceiling. */
static void test_answer_ceiling(void **state)
{
	(void)state;
	ch_conn_t c = {0};
	buf_init(&c.resp, 10);
	char data[16] = "0123456789abcdef";
	assert_int_equal(ch_on_answer(data, 1, 4, &c), 4);
	assert_int_equal(ch_on_answer(data + 4, 2, 3, &c), 6); /* size * n bytes: exactly at the ceiling */
	assert_int_equal(c.resp.n, 10);
	assert_false(c.over);
	assert_int_equal(ch_on_answer(data + 10, 1, 1, &c), 0); /* one byte past it */
	assert_true(c.over);
	assert_int_equal(c.resp.n, 10);
	assert_memory_equal(c.resp.p, "0123456789", 10);
	assert_true(c.resp.cap <= 10);
	buf_free(&c.resp);

	/* One chunk larger than the whole ceiling is refused at once, nothing kept. */
	ch_conn_t d = {0};
	buf_init(&d.resp, 10);
	assert_int_equal(ch_on_answer(data, 1, 11, &d), 0);
	assert_true(d.over);
	assert_int_equal(d.resp.n, 0);
	buf_free(&d.resp);

	/* store.maxAnswerMiB sets it. */
	err_t err = {0};
	store_config_t cfg = {
	    .engine = STORE_ENGINE_CLICKHOUSE, .ch_url = "http://127.0.0.1:1", .ch_max_answer_mib = 3};
	store_t *st = store_open(&cfg, &err);
	assert_non_null(st);
	assert_int_equal(((ch_store_t *)st)->answer_max, 3u << 20);
	assert_int_equal(((ch_store_t *)st)->answer_mib, 3);
	store_close(st);
}

/* Unreachable ClickHouse: the store opens (the listeners must come up), a
 * write is refused with 503 + Retry-After and nothing is acknowledged. */
static void test_unreachable_refuses_writes(void **state)
{
	(void)state;
	err_t err = {0};
	store_config_t c = {.engine = STORE_ENGINE_CLICKHOUSE, .ch_url = "http://127.0.0.1:1"};
	store_t *s = store_open(&c, &err);
	assert_non_null(s);
	assert_string_equal(store_engine_name(s), "clickhouse");
	/* No store.maxAnswerMiB: the ceiling is LIMIT_CH_ANSWER_BYTES, 256 MiB. */
	assert_int_equal(((ch_store_t *)s)->answer_max, 256u << 20);
	assert_int_equal(((ch_store_t *)s)->answer_mib, 256);
	model_batch_t *b = model_batch_new(slice_cstr("default"));
	model_profile_t *p = model_profile_add(b);
	model_profile_set_type(b, p, slice_cstr("cpu"), slice_cstr("nanoseconds"), slice_cstr("cpu"),
	                       slice_cstr("nanoseconds"), 10000000);
	model_profile_set_service(b, p, slice_cstr("svc"));
	p->time_ns = 1764633600LL * 1000000000LL;
	model_frame_t f = {.name = slice_cstr("main")};
	uint32_t node = model_node_intern(b, MODEL_NONE, model_frame_intern(b, &f));
	model_sample_add(b, p, node, 0, 5, 0);
	model_profile_finish(b, p);
	assert_int_equal(store_write_sync(s, b, &err), -1);
	assert_int_equal(err.status, 503);
	assert_int_equal(err.retry_after, 5);
	/* Clients learn it is ClickHouse, not where it is (the log has that). */
	assert_string_equal(err.msg, "store: ClickHouse is unreachable; retry later");
	store_view_t *v = NULL;
	assert_int_equal(store_view_open(s, slice_cstr("default"), 0, INT64_MAX, &v, &err), -1);
	assert_int_equal(err.status, 503);
	/* Keys and usage too: 503s, and a key poll that failed waits a second
	 * before asking again (an unreachable ClickHouse is not asked 4 times a second). */
	store_usage_row_t u = {
	    .day = 20000, .project = slice_cstr("p"), .key = slice_cstr("k"), .counts = {1}};
	err.status = 0;
	assert_int_equal(store_usage_write(s, &u, 1, &err), -1);
	assert_int_equal(err.status, 503);
	int64_t stamp = 0;
	err.status = 0;
	assert_int_equal(store_keys_poll(s, &stamp, NULL, NULL, &err), -1);
	assert_int_equal(err.status, 503);
	assert_true(stamp != 0);
	assert_int_equal(store_keys_poll(s, &stamp, NULL, NULL, &err), 0);
	err.status = 0;
	assert_int_equal(store_keys_revoke(s, slice_cstr("k"), 1, &err), -1);
	assert_int_equal(err.status, 503);
	store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rowbinary_round_trip),
	    cmocka_unit_test(test_truncated_answers),
	    cmocka_unit_test(test_malformed_answers),
	    cmocka_unit_test(test_sql_strings),
	    cmocka_unit_test(test_sums_saturate),
	    cmocka_unit_test(test_sums_exact),
	    cmocka_unit_test(test_span_keys),
	    cmocka_unit_test(test_bad_configurations),
	    cmocka_unit_test(test_unreachable_refuses_writes),
	    cmocka_unit_test(test_answer_ceiling),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
