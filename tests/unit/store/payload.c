/* Tests of the chunk payload decoder (store/local_chunk.c,
 * local_payload_decode): a table of hand-built payloads, good and bad, each
 * with the exact err_t it gives; and a packed payload read back. The
 * decoder treats a stored file as hostile: every failure is a 500 naming
 * what failed, never a crash. */
#include <zstd.h>

#include "base/buf.h"
#include "store/local.h"
#include "helpers.h"

/* A row of the table: payload bytes, chunk header fields, and either the
 * expected error message or NULL for a payload that decodes. */
typedef struct {
	const char *name;
	const char *bytes; /* hex */
	int64_t t_ns, scale;
	uint32_t n_expect;
	int64_t total;
	const char *msg;
} payload_case;

#define MAX_NODE 5
#define MAX_ATTRSET 3

static int decode(const uint8_t *p, size_t n, const payload_case *c, uint32_t max_node, store_entry_t **e,
                  size_t *cap_e, err_t *err)
{
	ZSTD_DCtx *zd = ZSTD_createDCtx();
	uint8_t *tmp = NULL;
	size_t cap_tmp = 0;
	int rc = local_payload_decode(slice_make(p, n), c->t_ns, c->scale, c->n_expect, c->total, max_node,
	                              MAX_ATTRSET, zd, &tmp, &cap_tmp, e, cap_e, err);
	free(tmp);
	ZSTD_freeDCtx(zd);
	return rc;
}

static void test_payload_table(void **state)
{
	(void)state;
	/* Raw payload: format 00, count, flags (1 attrs, 2 times), node deltas,
	 * [attrsets], zigzag values, [zigzag second offsets]. The good one holds
	 * nodes 1 and 2 with values 1 and 2 (total 3). */
	static const payload_case cases[] = {
	    {"good", "00020001010204", 7, 1, 2, 3, NULL},
	    {"good with attrs and times", "0002030101020302040201", 7, 1, 2, 3, NULL},
	    {"empty", "", 0, 1, 2, 3, "empty payload"},
	    {"scale 0", "00020001010204", 0, 0, 2, 3, "bad value scale"},
	    {"too many entries", "00020001010204", 0, 1, (1u << 24) + 1, 3, "entry count out of range"},
	    {"zstd length cut", "01ff", 0, 1, 2, 3, "bad payload length"},
	    {"zstd length past the bound", "01ff7f28b52ffd", 0, 1, 2, 3, "bad payload length"},
	    {"zstd garbage", "0107000000000000", 0, 1, 2, 3, "payload does not decompress"},
	    {"unknown format", "02", 0, 1, 2, 3, "unknown payload format"},
	    {"no header", "00", 0, 1, 2, 3, "truncated payload header"},
	    {"header cut after count", "0002", 0, 1, 2, 3, "truncated payload header"},
	    {"count differs", "0003000101010204", 0, 1, 2, 3, "entry count differs from the chunk header"},
	    {"unknown flags", "0002040101", 0, 1, 2, 3, "unknown payload flags"},
	    {"node column cut", "00020001", 0, 1, 2, 3, "truncated node column"},
	    {"node id past the table", "00020001050204", 0, 1, 2, 3, "node id out of range"},
	    {"attribute column cut", "0002010101", 0, 1, 2, 3, "truncated attribute column"},
	    {"attribute set past the table", "00020101010400", 0, 1, 2, 3, "attribute set id out of range"},
	    {"value column cut", "000200010102", 0, 1, 2, 3, "truncated value column"},
	    {"value times scale overflows", "00020001010204", 0, INT64_C(1) << 62, 2, 3,
	     "value out of range"},
	    {"time column cut", "00020201010204", 0, 1, 2, 3, "truncated time column"},
	    {"time past int64", "000202010102040202", INT64_MAX, 1, 2, 3, "sample time out of range"},
	    {"trailing byte", "0002000101020400", 0, 1, 2, 3, "trailing bytes in payload"},
	    {"total differs", "00020001010204", 0, 1, 2, 4, "values do not add up to the chunk total"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const payload_case *c = &cases[i];
		uint8_t bytes[64];
		size_t n = hex_bytes(c->bytes, bytes);
		store_entry_t *e = NULL;
		size_t cap_e = 0;
		err_t err = {0};
		int rc = decode(bytes, n, c, MAX_NODE, &e, &cap_e, &err);
		if (c->msg) {
			if (rc != -1 || err.status != 500 || strcmp(err.msg, c->msg) != 0)
				fail_msg("%s: rc %d status %d msg \"%s\", want 500 \"%s\"", c->name, rc,
				         err.status, err.msg, c->msg);
		} else {
			if (rc != 0)
				fail_msg("%s: %s", c->name, err.msg);
			assert_int_equal(e[0].node, 1);
			assert_int_equal(e[1].node, 2);
			assert_int_equal(e[0].value, 1);
			assert_int_equal(e[1].value, 2);
		}
		free(e);
	}
}

/* Decodes a good payload of 2 entries (t_ns 7, scale 1, total 3); the caller frees. */
static store_entry_t *decode_good(const char *hex)
{
	payload_case c = {"", hex, 7, 1, 2, 3, NULL};
	uint8_t bytes[64];
	size_t n = hex_bytes(c.bytes, bytes);
	store_entry_t *e = NULL;
	size_t cap_e = 0;
	err_t err = {0};
	if (decode(bytes, n, &c, MAX_NODE, &e, &cap_e, &err) != 0)
		fail_msg("%s: %s", hex, err.msg);
	return e;
}

/* The second good row above, field by field: attribute sets 2 and 3, times
 * t + 1 s and t - 1 s. */
static void test_payload_attrs_and_times(void **state)
{
	(void)state;
	store_entry_t *e = decode_good("0002030101020302040201");
	assert_int_equal(e[0].attrset, 2);
	assert_int_equal(e[1].attrset, 3);
	assert_int_equal(e[0].t_ns, 7 + 1000000000);
	assert_int_equal(e[1].t_ns, 7 - 1000000000);
	free(e);
}

/* Node 0 is the root: the entry of samples with an empty stack (nodes 0
 * and 1 here, values 1 and 2). Files written before it have none. */
static void test_payload_root_node(void **state)
{
	(void)state;
	store_entry_t *e = decode_good("00020000010204");
	assert_int_equal(e[0].node, 0);
	assert_int_equal(e[0].value, 1);
	assert_int_equal(e[1].node, 1);
	assert_int_equal(e[1].value, 2);
	free(e);
}

/* A payload the writer packs (zstd, as it is smaller) decodes to what went in. */
static void test_packed_payload_roundtrip(void **state)
{
	(void)state;
	enum { N = 500 };
	store_wentry_t w[N];
	for (uint32_t i = 0; i < N; i++)
		w[i] = (store_wentry_t){.node = i + 1, .attrset = 0, .t_off = 0, .value = 1000};
	buf_t raw, packed;
	buf_init(&raw, SIZE_MAX);
	buf_init(&packed, SIZE_MAX);
	int64_t scale, total;
	local_payload_raw(w, N, &raw, &scale, &total);
	ZSTD_CCtx *zc = ZSTD_createCCtx();
	local_payload_pack(&raw, &packed, zc);
	ZSTD_freeCCtx(zc);
	assert_int_equal(packed.p[0], 1); /* zstd */
	payload_case c = {"", "", 7, scale, N, total, NULL};
	store_entry_t *e = NULL;
	size_t cap_e = 0;
	err_t err = {0};
	if (decode(packed.p, packed.n, &c, N, &e, &cap_e, &err) != 0)
		fail_msg("packed: %s", err.msg);
	assert_int_equal(total, 1000 * N);
	for (uint32_t i = 0; i < N; i++) {
		assert_int_equal(e[i].node, i + 1);
		assert_int_equal(e[i].value, 1000);
	}
	/* Cut by one byte: the zstd frame no longer decompresses. */
	memset(&err, 0, sizeof err);
	assert_int_equal(decode(packed.p, packed.n - 1, &c, N, &e, &cap_e, &err), -1);
	assert_string_equal(err.msg, "payload does not decompress");
	free(e);
	buf_free(&raw);
	buf_free(&packed);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_payload_table),
	    cmocka_unit_test(test_payload_attrs_and_times),
	    cmocka_unit_test(test_payload_root_node),
	    cmocka_unit_test(test_packed_payload_roundtrip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
