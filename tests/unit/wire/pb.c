/* Tests of src/wire/pb.c: varint limits, truncation, key validation, bounded
 * lengths, skipping, writer → reader round trips (including nested
 * messages whose length needs more than one byte), and the message layer
 * (field specs, pb_next, checked reads, error paths) through a small
 * two-message decoder written with it. */
#include "testutil.h"

#include "base/buf.h"
#include "base/num.h"
#include "wire/pb.h"

static pb_reader_t reader_of(const uint8_t *p, size_t n)
{
	return pb_reader_make(slice_make(p, n));
}

static void test_varint_edges(void **state)
{
	(void)state;
	struct {
		uint8_t in[12];
		size_t n;
		int rc;
		uint64_t v;
	} cases[] = {
	    {{0x00}, 1, 0, 0},
	    {{0x01}, 1, 0, 1},
	    {{0x7f}, 1, 0, 127},
	    {{0x80, 0x01}, 2, 0, 128},
	    {{0xff, 0xff, 0xff, 0xff, 0x0f}, 5, 0, 0xffffffffu},
	    /* UINT64_MAX: nine 0xff then 0x01 */
	    {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 10, 0, UINT64_MAX},
	    /* 10th byte 2: bit 64 would be set */
	    {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, 10, -1, 0},
	    /* 11 bytes */
	    {{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 11, -1, 0},
	    /* non-minimal but within 10 bytes is accepted */
	    {{0x81, 0x80, 0x00}, 3, 0, 1},
	    /* truncated */
	    {{0x80}, 1, -1, 0},
	    {{0xff, 0xff}, 2, -1, 0},
	    {{0}, 0, -1, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		pb_reader_t r = reader_of(cases[i].in, cases[i].n);
		uint64_t v = 12345;
		int rc = pb_varint(&r, &v);
		assert_int_equal(rc, cases[i].rc);
		if (rc == 0) {
			assert_true(v == cases[i].v);
			assert_true(pb_done(&r));
		}
	}
}

/* The reader with room for a whole varint after it (its 8-byte path): every
 * length from 1 to 10 bytes, values at and around each 7-bit boundary and
 * random ones, then whatever byte follows; and the non-minimal and the
 * too-long ones as the edge cases above. */
static void test_varint_with_room(void **state)
{
	(void)state;
	uint64_t vals[4 * 65 + 1000];
	size_t nv = 0;
	for (unsigned b = 0; b < 64; b++) {
		uint64_t p = (uint64_t)1 << b;
		vals[nv++] = p;
		vals[nv++] = p - 1;
		vals[nv++] = p + 1;
		vals[nv++] = p | (p >> 1) | 0x5555555555555555ull >> (63 - b);
	}
	vals[nv++] = UINT64_MAX;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < 1000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		vals[nv++] = x >> (x % 64);
	}
	for (size_t i = 0; i < nv; i++) {
		for (uint8_t after = 0; after < 2; after++) {
			uint8_t buf[NUM_UVARINT_MAX + 16];
			size_t n = num_uvarint_put(buf, vals[i]);
			memset(buf + n, after ? 0xff : 0x00, sizeof buf - n);
			pb_reader_t r = reader_of(buf, sizeof buf);
			uint64_t v = 12345;
			assert_int_equal(pb_varint(&r, &v), 0);
			assert_true(v == vals[i]);
			assert_int_equal(r.p - buf, (ptrdiff_t)n);
		}
	}
	uint8_t nonmin[16] = {0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0xff};
	pb_reader_t r = reader_of(nonmin, sizeof nonmin);
	uint64_t v;
	assert_int_equal(pb_varint(&r, &v), 0);
	assert_true(v == 1);
	assert_int_equal(r.p - nonmin, 8);
	uint8_t eleven[16] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
	r = reader_of(eleven, sizeof eleven);
	assert_int_equal(pb_varint(&r, &v), -1);
	uint8_t bit64[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
	r = reader_of(bit64, sizeof bit64);
	assert_int_equal(pb_varint(&r, &v), -1);
}

static void test_varint_does_not_read_past_end(void **state)
{
	(void)state;
	/* The byte after the reader's end would complete the varint. */
	uint8_t buf[] = {0x80, 0x01};
	pb_reader_t r = reader_of(buf, 1);
	uint64_t v;
	assert_int_equal(pb_varint(&r, &v), -1);
}

static void test_key(void **state)
{
	(void)state;
	uint32_t f;
	int wt;
	uint8_t ok[] = {0x08}; /* field 1 varint */
	pb_reader_t r = reader_of(ok, 1);
	assert_int_equal(pb_key(&r, &f, &wt), 0);
	assert_int_equal(f, 1);
	assert_int_equal(wt, PB_VARINT);

	uint8_t field0[] = {0x02}; /* field 0 */
	r = reader_of(field0, 1);
	assert_int_equal(pb_key(&r, &f, &wt), -1);
	uint8_t wt6[] = {0x0e}, wt7[] = {0x0f};
	r = reader_of(wt6, 1);
	assert_int_equal(pb_key(&r, &f, &wt), -1);
	r = reader_of(wt7, 1);
	assert_int_equal(pb_key(&r, &f, &wt), -1);

	/* Largest field number 2^29-1 and one past it. */
	buf_t b;
	buf_init(&b, SIZE_MAX);
	pb_put_key(&b, 0x1fffffff, PB_LEN);
	r = pb_reader_make(buf_slice(&b));
	assert_int_equal(pb_key(&r, &f, &wt), 0);
	assert_int_equal(f, 0x1fffffff);
	assert_int_equal(wt, PB_LEN);
	buf_reset(&b);
	pb_put_varint(&b, ((uint64_t)0x20000000 << 3) | PB_VARINT);
	r = pb_reader_make(buf_slice(&b));
	assert_int_equal(pb_key(&r, &f, &wt), -1);
	buf_reset(&b);
	pb_put_varint(&b, UINT64_MAX); /* field number far past 32 bits */
	r = pb_reader_make(buf_slice(&b));
	assert_int_equal(pb_key(&r, &f, &wt), -1);
	buf_free(&b);

	uint8_t trunc[] = {0x88};
	r = reader_of(trunc, 1);
	assert_int_equal(pb_key(&r, &f, &wt), -1);
}

static void test_bytes_bounds(void **state)
{
	(void)state;
	slice_t s;
	uint8_t exact[] = {0x03, 'a', 'b', 'c'};
	pb_reader_t r = reader_of(exact, sizeof exact);
	assert_int_equal(pb_bytes(&r, &s), 0);
	assert_int_equal(s.n, 3);
	assert_memory_equal(s.p, "abc", 3);
	assert_true(pb_done(&r));

	uint8_t past[] = {0x04, 'a', 'b', 'c'};
	r = reader_of(past, sizeof past);
	assert_int_equal(pb_bytes(&r, &s), -1);

	uint8_t empty[] = {0x00};
	r = reader_of(empty, 1);
	assert_int_equal(pb_bytes(&r, &s), 0);
	assert_int_equal(s.n, 0);

	/* Lengths that would overflow pointer arithmetic: 2^64-1 and 2^63. */
	buf_t b;
	buf_init(&b, SIZE_MAX);
	pb_put_varint(&b, UINT64_MAX);
	buf_append(&b, "xx", 2);
	r = pb_reader_make(buf_slice(&b));
	assert_int_equal(pb_bytes(&r, &s), -1);
	buf_reset(&b);
	pb_put_varint(&b, (uint64_t)1 << 63);
	buf_append(&b, "xx", 2);
	r = pb_reader_make(buf_slice(&b));
	assert_int_equal(pb_bytes(&r, &s), -1);
	/* A negative int32 length as protoc would write it (10-byte varint). */
	buf_reset(&b);
	pb_put_varint(&b, (uint64_t)(int64_t)-1);
	r = pb_reader_make(buf_slice(&b));
	assert_int_equal(pb_bytes(&r, &s), -1);
	buf_free(&b);
}

static void test_fixed_and_skip(void **state)
{
	(void)state;
	uint8_t f64[] = {1, 2, 3, 4, 5, 6, 7, 8};
	pb_reader_t r = reader_of(f64, 8);
	uint64_t v;
	assert_int_equal(pb_fixed64(&r, &v), 0);
	assert_true(v == 0x0807060504030201ull);
	r = reader_of(f64, 7);
	assert_int_equal(pb_fixed64(&r, &v), -1);
	uint32_t w;
	r = reader_of(f64, 4);
	assert_int_equal(pb_fixed32(&r, &w), 0);
	assert_true(w == 0x04030201u);
	r = reader_of(f64, 3);
	assert_int_equal(pb_fixed32(&r, &w), -1);

	r = reader_of(f64, 8);
	assert_int_equal(pb_skip(&r, PB_I64), 0);
	assert_true(pb_done(&r));
	r = reader_of(f64, 8);
	assert_int_equal(pb_skip(&r, PB_I32), 0);
	assert_int_equal(r.end - r.p, 4);
	r = reader_of(f64, 8);
	assert_int_equal(pb_skip(&r, PB_SGROUP), -1);
	r = reader_of(f64, 8);
	assert_int_equal(pb_skip(&r, PB_EGROUP), -1);
	r = reader_of(f64, 8);
	assert_int_equal(pb_skip(&r, 6), -1);
	uint8_t lenmsg[] = {0x02, 9, 9, 0x05};
	r = reader_of(lenmsg, sizeof lenmsg);
	assert_int_equal(pb_skip(&r, PB_LEN), 0);
	assert_int_equal(pb_skip(&r, PB_VARINT), 0);
	assert_true(pb_done(&r));
}

static void test_writer_round_trip(void **state)
{
	(void)state;
	buf_t b;
	buf_init(&b, SIZE_MAX);
	pb_put_uint(&b, 1, 0); /* omitted */
	pb_put_uint(&b, 1, 300);
	pb_put_int64(&b, 2, -5);
	pb_put_bytes(&b, 3, slice_cstr("hello"));
	pb_put_bytes(&b, 4, slice_make("", 0)); /* always written */
	pb_put_fixed64(&b, 5, 0x1122334455667788ull);
	uint64_t packed[] = {1, 150, UINT64_MAX};
	pb_put_packed(&b, 6, packed, 3);
	/* A nested message of 300 bytes: the length needs two bytes. */
	size_t m = pb_begin(&b, 7);
	for (int i = 0; i < 100; i++)
		pb_put_uint(&b, 1, 100);
	size_t inner = pb_begin(&b, 2);
	pb_put_uint(&b, 1, 7);
	pb_end(&b, inner);
	pb_end(&b, m);
	pb_put_uint(&b, 8, 1);

	pb_reader_t r = pb_reader_make(buf_slice(&b));
	uint32_t f;
	int wt;
	uint64_t v;
	slice_t s = {NULL, 0};
	assert_int_equal(pb_key(&r, &f, &wt), 0);
	assert_int_equal(f, 1);
	assert_int_equal(pb_varint(&r, &v), 0);
	assert_true(v == 300);
	assert_int_equal(pb_key(&r, &f, &wt), 0);
	assert_int_equal(f, 2);
	assert_int_equal(pb_varint(&r, &v), 0);
	assert_true((int64_t)v == -5);
	assert_int_equal(pb_key(&r, &f, &wt), 0);
	assert_int_equal(pb_bytes(&r, &s), 0);
	assert_true(slice_eq_cstr(s, "hello"));
	assert_int_equal(pb_key(&r, &f, &wt), 0);
	assert_int_equal(f, 4);
	assert_int_equal(pb_bytes(&r, &s), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(pb_key(&r, &f, &wt), 0);
	assert_int_equal(wt, PB_I64);
	assert_int_equal(pb_fixed64(&r, &v), 0);
	assert_true(v == 0x1122334455667788ull);
	assert_int_equal(pb_key(&r, &f, &wt), 0);
	assert_int_equal(f, 6);
	assert_int_equal(pb_bytes(&r, &s), 0);
	pb_reader_t pr = pb_reader_make(s);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(pb_packed_varint_next(&pr, &v), 0);
		assert_true(v == packed[i]);
	}
	assert_true(pb_done(&pr));
	assert_int_equal(pb_key(&r, &f, &wt), 0);
	assert_int_equal(f, 7);
	assert_int_equal(pb_bytes(&r, &s), 0);
	assert_int_equal(s.n, 200 + 4);
	pb_reader_t nr = pb_reader_make(s);
	int n = 0;
	while (!pb_done(&nr)) {
		assert_int_equal(pb_key(&nr, &f, &wt), 0);
		if (f == 2) {
			assert_int_equal(pb_bytes(&nr, &s), 0);
			assert_int_equal(s.n, 2);
		} else {
			assert_int_equal(pb_varint(&nr, &v), 0);
			assert_true(v == 100);
			n++;
		}
	}
	assert_int_equal(n, 100);
	assert_int_equal(pb_key(&r, &f, &wt), 0);
	assert_int_equal(f, 8);
	assert_int_equal(pb_varint(&r, &v), 0);
	assert_true(pb_done(&r));
	buf_free(&b);
}

static void test_nested_length_widths(void **state)
{
	(void)state;
	/* Payload sizes around each varint length boundary. */
	size_t sizes[] = {0, 1, 127, 128, 16383, 16384, 2097152};
	uint8_t *payload = calloc(1, 2097152);
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		buf_t b;
		buf_init(&b, SIZE_MAX);
		buf_putc(&b, 0xaa);
		size_t m = pb_begin(&b, 1);
		buf_append(&b, payload, sizes[i]);
		pb_end(&b, m);
		buf_putc(&b, 0xbb);
		pb_reader_t r = pb_reader_make(slice_make(b.p + 1, b.n - 2));
		uint32_t f;
		int wt;
		slice_t s;
		assert_int_equal(pb_key(&r, &f, &wt), 0);
		assert_int_equal(pb_bytes(&r, &s), 0);
		assert_int_equal(s.n, sizes[i]);
		assert_true(pb_done(&r));
		assert_int_equal(b.p[b.n - 1], 0xbb);
		buf_free(&b);
	}
	free(payload);
}

/* ---- The message layer ----------------------------------------------------- */

PB_SPEC(outer_spec, {1, PB_F_VARINT, "id"}, {2, PB_F_LEN, "inner"}, {3, PB_F_PVARINT, "ids"},
        {4, PB_F_I64, "t"});
PB_SPEC(inner_spec, {1, PB_F_VARINT, "key"}, {2, PB_F_LEN, "name"});
PB_SPEC(gap_spec, {2, PB_F_VARINT, "b"}, {5, PB_F_LEN, "e"}); /* not 1..n: pb_next's slow path */

typedef struct {
	uint64_t id, t, ids[8], keys[4];
	slice_t names[4];
	size_t n_ids, n_inner;
} outer_t;

static int decode_inner(const pb_src_t *src, slice_t msg, const pb_path_t *p, outer_t *o, err_t *err)
{
	pb_reader_t r = pb_reader_make(msg);
	const pb_field_t *f;
	int wt, rc;
	while ((rc = pb_next(src, &r, &inner_spec, p, &f, &wt, err)) == 1) {
		if (f->num == 1) {
			if (pb_read_varint(src, &r, &o->keys[o->n_inner], p, f->name, err) < 0)
				return -1;
		} else if (pb_read_len(src, &r, &o->names[o->n_inner], p, f->name, err) < 0) {
			return -1;
		}
	}
	return rc;
}

/* Outer as a decoder would read it: errors name "profile" when there is
 * nothing else to name, as pprof_decode's do. */
static int decode_outer(slice_t in, outer_t *o, err_t *err)
{
	pb_src_t src = {in.p, "profile"};
	pb_reader_t r = pb_reader_make(in);
	const pb_field_t *f;
	int wt, rc;
	memset(o, 0, sizeof *o);
	while ((rc = pb_next(&src, &r, &outer_spec, NULL, &f, &wt, err)) == 1) {
		switch (f->num) {
		case 1:
			if (pb_read_varint(&src, &r, &o->id, NULL, f->name, err) < 0)
				return -1;
			break;
		case 2: {
			slice_t s;
			pb_path_t p = {NULL, f->name, (uint32_t)o->n_inner};
			if (pb_read_len(&src, &r, &s, &p, NULL, err) < 0 ||
			    decode_inner(&src, s, &p, o, err) < 0)
				return -1;
			o->n_inner++;
			break;
		}
		case 3: {
			pb_reader_t vals;
			uint64_t v;
			int vrc;
			if (pb_read_packable(&src, &r, wt, &vals, NULL, f->name, err) < 0)
				return -1;
			while ((vrc = pb_next_packed(&src, &vals, &v, NULL, f->name, err)) == 1)
				o->ids[o->n_ids++] = v;
			if (vrc < 0)
				return -1;
			break;
		}
		default:
			if (pb_read_fixed64(&src, &r, &o->t, NULL, f->name, err) < 0)
				return -1;
			break;
		}
	}
	return rc;
}

static void test_spec_decodes_and_skips_unknown(void **state)
{
	(void)state;
	static const uint8_t in[] = {
	    0x08, 0x96, 0x01,                                     /* id = 150 */
	    0x48, 0x07,                                           /* unknown 9, varint */
	    0x12, 0x05, 0x08, 0x03, 0x12, 0x01, 'x',              /* inner[0] = {key 3, name "x"} */
	    0x1a, 0x03, 0x01, 0xac, 0x02,                         /* ids packed: 1, 300 */
	    0x18, 0x05,                                           /* ids one by one: 5 */
	    0x52, 0x02, 0xaa, 0xbb,                               /* unknown 10, length-delimited */
	    0x5d, 0x01, 0x02, 0x03, 0x04,                         /* unknown 11, fixed32 */
	    0x21, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* t, fixed64 */
	    0x12, 0x04, 0x08, 0x09, 0x50, 0x01,                   /* inner[1] = {key 9, unknown 10} */
	};
	outer_t o;
	err_t err = {0};
	assert_int_equal(decode_outer(slice_make(in, sizeof in), &o, &err), 0);
	assert_true(o.id == 150);
	assert_int_equal(o.n_inner, 2);
	assert_true(o.keys[0] == 3 && o.keys[1] == 9);
	assert_true(slice_eq_cstr(o.names[0], "x"));
	assert_int_equal(o.names[1].n, 0);
	assert_int_equal(o.n_ids, 3);
	assert_true(o.ids[0] == 1 && o.ids[1] == 300 && o.ids[2] == 5);
	assert_true(o.t == 0x0102030405060708ull);
	assert_int_equal(PB_COUNTOF(in), 43);
	assert_int_equal(outer_spec.n, 4);
	assert_int_equal(PB_COUNTOF(inner_spec_fields), 2);
}

static void test_spec_errors_name_the_path(void **state)
{
	(void)state;
	static const struct {
		uint8_t in[16];
		size_t n;
		const char *msg;
	} cases[] = {
	    {{0x08, 0x80}, 2, "id: truncated or overlong varint at byte 1"},
	    {{0x12, 0x05, 0x08, 0x03},
	     4,
	     "inner[0]: length at byte 1 runs past the end of its message or is malformed"},
	    {{0x0a, 0x00}, 2, "id: wire type 2 (length-delimited), expected varint (field 1 at byte 0)"},
	    {{0x08, 0x01, 0x12, 0x02, 0x08, 0x01, 0x12, 0x05, 0x0d, 0x01, 0x02, 0x03, 0x04},
	     13,
	     "inner[1].key: wire type 5 (fixed32), expected varint (field 1 at byte 8)"},
	    {{0x08, 0x01, 0x00},
	     3,
	     "profile: malformed field key at byte 2 (truncated, field 0 or wire type 6/7)"},
	    {{0x12, 0x01, 0x00},
	     3,
	     "inner[0]: malformed field key at byte 2 (truncated, field 0 or wire type 6/7)"},
	    {{0x48, 0x80}, 2, "profile: unknown field 9 (wire type 0) at byte 0 is truncated or malformed"},
	    {{0x4b}, 1, "profile: unknown field 9 (wire type 3) at byte 0 is truncated or malformed"},
	    {{0x1a, 0x02, 0x01, 0x80}, 4, "ids: malformed packed varint at byte 3"},
	    {{0x18, 0xff}, 2, "ids: truncated or overlong varint at byte 1"},
	    {{0x19, 0, 0, 0, 0, 0, 0, 0, 0},
	     9,
	     "ids: wire type 1 (fixed64), expected varint or packed (field 3 at byte 0)"},
	    {{0x21, 0x01, 0x02}, 3, "t: truncated fixed64"},
	    {{0x12, 0x02, 0x08, 0x80}, 4, "inner[0].key: truncated or overlong varint at byte 3"},
	    {{0x12, 0x02, 0x12, 0x09},
	     4,
	     "inner[0].name: length at byte 3 runs past the end of its message or is malformed"},
	};
	for (size_t i = 0; i < PB_COUNTOF(cases); i++) {
		outer_t o;
		err_t err = {0};
		assert_int_equal(decode_outer(slice_make(cases[i].in, cases[i].n), &o, &err), -1);
		assert_int_equal(err.status, 400);
		assert_string_equal(err.msg, cases[i].msg);
	}
}

static void test_spec_with_gaps(void **state)
{
	(void)state;
	static const uint8_t in[] = {0x10, 0x07, 0x2a, 0x01, 'A', 0x08, 0x01};
	pb_src_t src = {in, NULL};
	pb_reader_t r = pb_reader_make(slice_make(in, sizeof in));
	const pb_field_t *f;
	int wt;
	err_t err = {0};
	assert_int_equal(pb_next(&src, &r, &gap_spec, NULL, &f, &wt, &err), 1);
	assert_string_equal(f->name, "b");
	assert_int_equal(pb_skip(&r, wt), 0);
	assert_int_equal(pb_next(&src, &r, &gap_spec, NULL, &f, &wt, &err), 1);
	assert_string_equal(f->name, "e");
	assert_int_equal(wt, PB_LEN);
	assert_int_equal(pb_skip(&r, wt), 0);
	assert_int_equal(pb_next(&src, &r, &gap_spec, NULL, &f, &wt, &err), 0); /* field 1 is unknown here */
	assert_true(pb_done(&r));
}

static void test_fail_paths(void **state)
{
	(void)state;
	static const char *const names[] = {"e0", "e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8", "e9"};
	pb_path_t chain[PB_COUNTOF(names)];
	for (size_t i = 0; i < PB_COUNTOF(names); i++)
		chain[i] = (pb_path_t){i ? &chain[i - 1] : NULL, names[i], i % 2 ? (uint32_t)i : PB_NOIX};
	pb_src_t bare = {NULL, NULL}, rooted = {NULL, "profile"};
	err_t err = {0};
	/* Ten elements deep: the outermost eight are shown. */
	assert_int_equal(pb_fail(&bare, &err, 413, &chain[9], "f", "too %s", "many"), -1);
	assert_int_equal(err.status, 413);
	assert_string_equal(err.msg, "e0.e1[1].e2.e3[3].e4.e5[5].e6.e7[7].f: too many");
	assert_int_equal(pb_fail(&bare, &err, 400, &chain[1], NULL, "m"), -1);
	assert_string_equal(err.msg, "e0.e1[1]: m");
	assert_int_equal(pb_fail(&bare, &err, 400, NULL, "f", "m"), -1);
	assert_string_equal(err.msg, "f: m");
	assert_int_equal(pb_fail(&bare, &err, 400, NULL, NULL, "m"), -1);
	assert_string_equal(err.msg, "m");
	/* The root is named only when nothing else is. */
	assert_int_equal(pb_fail(&rooted, &err, 400, NULL, NULL, "m"), -1);
	assert_string_equal(err.msg, "profile: m");
	assert_int_equal(pb_fail(&rooted, &err, 400, NULL, "f", "m"), -1);
	assert_string_equal(err.msg, "f: m");
	assert_int_equal(pb_fail(&rooted, &err, 400, &chain[0], NULL, "m"), -1);
	assert_string_equal(err.msg, "e0: m");
	assert_string_equal(pb_kind_name(PB_F_PVARINT), "varint or packed");
	assert_string_equal(pb_kind_name(PB_F_PI64), "fixed64 or packed");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_varint_edges),
	    cmocka_unit_test(test_varint_with_room),
	    cmocka_unit_test(test_varint_does_not_read_past_end),
	    cmocka_unit_test(test_key),
	    cmocka_unit_test(test_bytes_bounds),
	    cmocka_unit_test(test_fixed_and_skip),
	    cmocka_unit_test(test_writer_round_trip),
	    cmocka_unit_test(test_nested_length_widths),
	    cmocka_unit_test(test_spec_decodes_and_skips_unknown),
	    cmocka_unit_test(test_spec_errors_name_the_path),
	    cmocka_unit_test(test_spec_with_gaps),
	    cmocka_unit_test(test_fail_paths),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
