/* Tests of store/local_block.c, the blocks of format-2 partitions: a small
 * block encodes to the bytes of the layout written out here by hand (the
 * oracle); blocks built from every
 * tests/data pprof fixture, and from gen_profiles-like variations of them
 * (samples dropped, values scaled and negated, leaves renamed, attribute
 * sets, second offsets), decode to exactly the entries that went in, field
 * by field; every cut of a head or data blob, stored or raw, is an error;
 * a table of damaged blobs gives each exact message; the encoder refuses
 * what a decoder would. */
#include <zstd.h>

#include "base/buf.h"
#include "base/limits.h"
#include "base/num.h"
#include "store/local.h"
#include "store/local_block.h"
#include "wire/compress.h"
#include "wire/pprof.h"
#include "helpers.h"

#define NS INT64_C(1000000000)

/* What a test holds: the ZSTD contexts and the scratch, as the compactor and a view would. */
typedef struct {
	ZSTD_CCtx *zc;
	ZSTD_DCtx *zd;
	local_block_scratch_t s;
	buf_t head, data;
	local_block_t b;
} fix_t;

static fix_t *fix_new(void)
{
	fix_t *f = calloc(1, sizeof *f);
	f->zc = ZSTD_createCCtx();
	f->zd = ZSTD_createDCtx();
	local_block_scratch_init(&f->s);
	buf_init(&f->head, SIZE_MAX);
	buf_init(&f->data, SIZE_MAX);
	return f;
}

static void fix_free(fix_t *f)
{
	ZSTD_freeCCtx(f->zc);
	ZSTD_freeDCtx(f->zd);
	local_block_scratch_free(&f->s);
	buf_free(&f->head);
	buf_free(&f->data);
	local_block_free(&f->b);
	free(f);
}

static void to_hex(const buf_t *b, char *out)
{
	for (size_t i = 0; i < b->n; i++)
		sprintf(out + 2 * i, "%02x", b->p[i]);
	out[2 * b->n] = 0;
}

/* ---- the hand-written oracle ---- */

/* Chunk 5 (t 1000, scale 3): node 1 = 6, node 3 in set 2 at +1 s = 9;
 * chunk 7 (t 900, scale 4): node 1 = 8, node 2 = 4. */
static const store_wentry_t small_e0[] = {{1, 0, 0, 6}, {3, 2, 1, 9}};
static const store_wentry_t small_e1[] = {{1, 0, 0, 8}, {2, 0, 0, 4}};
static const local_block_in_t small_in[] = {
    {{.id = 5, .t_ns = 1000, .duration_ns = 10, .n_entries = 2, .total = 15, .scale = 3}, small_e0},
    {{.id = 7, .t_ns = 900, .duration_ns = 10, .n_entries = 2, .total = 12, .scale = 4}, small_e1},
};
/* raw (00): n 2 | ids 5, +2 | times zz(1000), zz(-100) | durations zz(10) ×2 |
 * counts 2, 2 | totals zz(15), zz(12) | scales 3, 4 */
#define SMALL_HEAD                                                                                           \
	"00"                                                                                                 \
	"02"                                                                                                 \
	"0502"                                                                                               \
	"d00fc701"                                                                                           \
	"1414"                                                                                               \
	"0202"                                                                                               \
	"1e18"                                                                                               \
	"0304"
/* raw: flags 3 (attrs, times) | count 4 | nodes 1 +2 | 1 +1 | sets 0 2 0 0 |
 * values zz(2) zz(3) zz(2) zz(1) | offsets zz(0) zz(1) zz(0) zz(0) */
#define SMALL_DATA                                                                                           \
	"00"                                                                                                 \
	"03"                                                                                                 \
	"04"                                                                                                 \
	"01020101"                                                                                           \
	"00020000"                                                                                           \
	"04060402"                                                                                           \
	"00020000"

static void test_small_block_bytes(void **state)
{
	(void)state;
	fix_t *f = fix_new();
	err_t err = {0};
	char hex[256];
	assert_int_equal(local_block_encode(small_in, 2, f->zc, &f->s, &f->head, &f->data, &err), 0);
	to_hex(&f->head, hex);
	assert_string_equal(hex, SMALL_HEAD);
	to_hex(&f->data, hex);
	assert_string_equal(hex, SMALL_DATA);

	/* Read back, field by field. */
	{
		uint8_t hb[64], db[64];
		size_t hn = hex_bytes(SMALL_HEAD, hb), dn = hex_bytes(SMALL_DATA, db);
		assert_int_equal(local_block_decode_head(slice_make(hb, hn), f->zd, &f->s, &f->b, &err), 0);
		assert_int_equal(f->b.n, 2);
		assert_int_equal(f->b.n_entries, 0);
		const local_block_chunk_t *c = f->b.chunks;
		assert_int_equal(c[0].id, 5);
		assert_int_equal(c[1].id, 7);
		assert_int_equal(c[0].t_ns, 1000);
		assert_int_equal(c[1].t_ns, 900);
		assert_int_equal(c[1].duration_ns, 10);
		assert_int_equal(c[1].first, 2);
		assert_int_equal(c[0].total, 15);
		assert_int_equal(c[1].scale, 4);
		assert_int_equal(local_block_decode_data(slice_make(db, dn), 3, 2, f->zd, &f->s, &f->b, &err),
		                 0);
		assert_int_equal(f->b.n_entries, 4);
		const store_entry_t *e = f->b.entries;
		assert_int_equal(e[1].node, 3);
		assert_int_equal(e[1].attrset, 2);
		assert_int_equal(e[1].value, 9);
		assert_int_equal(e[1].t_ns, 1000 + NS);
		assert_int_equal(e[2].node, 1);
		assert_int_equal(e[2].value, 8);
		assert_int_equal(e[2].t_ns, 900);
		assert_int_equal(e[3].node, 2);
		assert_int_equal(e[3].value, 4);
	}
	fix_free(f);
}

/* ---- blocks from the fixtures ---- */

static uint64_t rng_state;
static uint64_t rng(void) /* splitmix64: base/num.h's finalizer over a Weyl sequence */
{
	return num_mix64(rng_state += 0x9e3779b97f4a7c15ULL);
}

/* One series' chunks as the writer would make them: entries merged, header from local_payload_raw. */
typedef struct {
	local_block_in_t *in;
	store_wentry_t **e;
	uint32_t n;
	uint32_t max_node, max_attrset;
} series_t;

static void series_free(series_t *s)
{
	for (uint32_t k = 0; k < s->n; k++)
		free(s->e[k]);
	free(s->e);
	free(s->in);
}

/* Chunk k of profile pr: k = 0 the profile as stored; else a variation in
 * the manner of bench/gen_profiles (30 % of the samples dropped, values
 * scaled by 1..15, a few negated, a third of the leaves renamed to one of 50
 * variants), with attribute sets on every fourth chunk and second offsets
 * on every third. */
static void make_chunk(series_t *s, const model_batch_t *b, const model_profile_t *pr, uint32_t k, buf_t *raw)
{
	store_wentry_t *e = calloc((size_t)pr->samples_count + 1, sizeof *e);
	uint32_t n = 0;
	for (uint32_t i = 0; i < pr->samples_count; i++) {
		const model_sample_t *smp = &b->samples[pr->samples_first + i];
		store_wentry_t w = {.node = smp->node == MODEL_NONE ? 0 : smp->node + 1,
		                    .attrset = smp->attrset,
		                    .t_off = store_second_offset(smp->time_ns, pr->time_ns),
		                    .value = smp->value};
		if (k > 0) {
			if (rng() % 10 < 3)
				continue;
			w.value *= (int64_t)(1 + rng() % 15);
			if (rng() % 20 == 0)
				w.value = -w.value;
			if (rng() % 3 == 0)
				w.node = b->n_nodes + 1 + (uint32_t)(rng() % 50 * (rng() % 50) / 49);
			if (k % 4 == 2)
				w.attrset = 1 + (uint32_t)(rng() % 3);
			if (k % 3 == 1)
				w.t_off = (int64_t)(rng() % 12) - 2;
		}
		e[n++] = w;
	}
	n = store_entries_merge(e, n);
	local_block_in_t *c = &s->in[k];
	c->e = e;
	s->e[k] = e;
	c->head =
	    (local_block_chunk_t){.id = 1 + 3 * (int64_t)k,
	                          .t_ns = pr->time_ns + (int64_t)k * 10 * NS - (k % 5 == 3 ? 7 * NS : 0),
	                          .duration_ns = pr->duration_ns,
	                          .n_entries = n};
	local_payload_raw(e, n, raw, &c->head.scale, &c->head.total);
}

static void make_series(series_t *s, const model_batch_t *b, uint32_t p, uint32_t n)
{
	s->in = calloc(n, sizeof *s->in);
	s->e = calloc(n, sizeof *s->e);
	s->n = n;
	s->max_node = b->n_nodes + 50;
	s->max_attrset = b->n_attrsets > 4 ? b->n_attrsets - 1 : 3;
	buf_t raw;
	buf_init(&raw, SIZE_MAX);
	for (uint32_t k = 0; k < n; k++)
		make_chunk(s, b, &b->profiles[p], k, &raw);
	buf_free(&raw);
}

/* Decodes f->head / f->data and compares with in[0..n), field by field. */
static void expect_block(fix_t *f, const local_block_in_t *in, uint32_t n, uint32_t max_node,
                         uint32_t max_attrset, const char *what)
{
	err_t err = {0};
	if (local_block_decode_head(buf_slice(&f->head), f->zd, &f->s, &f->b, &err) < 0 ||
	    local_block_decode_data(buf_slice(&f->data), max_node, max_attrset, f->zd, &f->s, &f->b, &err) <
	        0)
		fail_msg("%s: %s", what, err.msg);
	assert_int_equal(f->b.n, n);
	size_t first = 0;
	for (uint32_t k = 0; k < n; k++) {
		const local_block_chunk_t *h = &in[k].head, *c = &f->b.chunks[k];
		if (c->id != h->id || c->t_ns != h->t_ns || c->duration_ns != h->duration_ns ||
		    c->n_entries != h->n_entries || c->total != h->total || c->scale != h->scale ||
		    c->first != first)
			fail_msg("%s: chunk %u: header differs", what, k);
		for (uint32_t i = 0; i < h->n_entries; i++) {
			const store_wentry_t *w = &in[k].e[i];
			const store_entry_t *e = &f->b.entries[first + i];
			if (e->node != w->node || e->attrset != w->attrset || e->value != w->value ||
			    e->t_ns != h->t_ns + w->t_off * NS)
				fail_msg("%s: chunk %u entry %u: (%u %u %ld %ld) != (%u %u %ld %ld)", what, k,
				         i, e->node, e->attrset, (long)e->value, (long)e->t_ns, w->node,
				         w->attrset, (long)w->value, (long)(h->t_ns + w->t_off * NS));
		}
		first += h->n_entries;
	}
	assert_int_equal(f->b.n_entries, first);
}

static model_batch_t *load_fixture(const char *rel)
{
	char path[512];
	size_t n;
	snprintf(path, sizeof path, "%s/%s", testdata_dir(), rel);
	unsigned char *raw = read_file_or_fail(path, &n);
	slice_t in = slice_make(raw, n);
	buf_t plain;
	buf_init(&plain, LIMIT_DECODED_BYTES);
	err_t err = {0};
	if (gz_is_gzip(in) && gz_inflate(in, &plain, &err) < 0)
		fail_msg("%s: %s", rel, err.msg);
	model_batch_t *b = model_batch_new(slice_cstr("p"));
	pprof_decode_opts_t o = {
	    .service = slice_cstr("svc"), .now_ns = 1760000000000000000, .max_rows = LIMIT_SAMPLE_ROWS};
	if (pprof_decode(gz_is_gzip(in) ? buf_slice(&plain) : in, &o, b, &err) < 0)
		fail_msg("%s: %s", rel, err.msg);
	buf_free(&plain);
	free(raw);
	return b;
}

static const char *const fixtures[] = {
    "pprof/go-cpu-fib.pb.gz",    "pprof/go-cpu-span-labels.pb.gz", "pprof/go-cpu-two-stacks.pb.gz",
    "pprof/go-heap-delta.pb.gz", "pprof/nodejs-wall.pb.gz",        "pprof/python-pyspy-not-gzipped.pb",
};

/* Every profile of every fixture, as one chunk and as series of 1, 16 and
 * 61 chunks, both value forms. */
static void test_fixture_roundtrip(void **state)
{
	(void)state;
	fix_t *f = fix_new();
	rng_state = 1;
	for (size_t fx = 0; fx < sizeof fixtures / sizeof *fixtures; fx++) {
		model_batch_t *b = load_fixture(fixtures[fx]);
		assert_true(b->n_profiles > 0);
		for (uint32_t p = 0; p < b->n_profiles; p++) {
			series_t s;
			make_series(&s, b, p, 61);
			static const uint32_t sizes[] = {1, 16, 61};
			for (size_t z = 0; z < 3; z++) {
				char what[300];
				snprintf(what, sizeof what, "%s profile %u, %u chunks", fixtures[fx], p,
				         sizes[z]);
				err_t err = {0};
				if (local_block_encode(s.in, sizes[z], f->zc, &f->s, &f->head, &f->data,
				                       &err) < 0)
					fail_msg("%s: %s", what, err.msg);
				expect_block(f, s.in, sizes[z], s.max_node, s.max_attrset, what);
			}
			series_free(&s);
		}
		model_batch_free(b);
	}
	fix_free(f);
}

/* The most chunks a block holds, and one more. */
static void test_chunk_count_bounds(void **state)
{
	(void)state;
	fix_t *f = fix_new();
	local_block_in_t *in = calloc(LOCAL_BLOCK_MAX_CHUNKS + 1, sizeof *in);
	store_wentry_t e = {.node = 7, .value = 3};
	for (uint32_t k = 0; k <= LOCAL_BLOCK_MAX_CHUNKS; k++)
		in[k] = (local_block_in_t){
		    {.id = 100 + k, .t_ns = 1700000000 * NS + k * NS, .n_entries = 1, .total = 3, .scale = 3},
		    &e};
	err_t err = {0};
	assert_int_equal(
	    local_block_encode(in, LOCAL_BLOCK_MAX_CHUNKS, f->zc, &f->s, &f->head, &f->data, &err), 0);
	expect_block(f, in, LOCAL_BLOCK_MAX_CHUNKS, 7, 0, "1024 chunks");
	assert_int_equal(
	    local_block_encode(in, LOCAL_BLOCK_MAX_CHUNKS + 1, f->zc, &f->s, &f->head, &f->data, &err), -1);
	assert_string_equal(err.msg, "block: chunk count 1025 out of range");
	free(in);
	fix_free(f);
}

/* ---- every cut is an error ---- */

/* The raw form of a stored blob (format 0 + raw bytes), whatever it was stored as. */
static void raw_form(const buf_t *stored, buf_t *out)
{
	buf_reset(out);
	buf_putc(out, 0);
	if (stored->p[0] == 0) {
		buf_append(out, stored->p + 1, stored->n - 1);
		return;
	}
	const uint8_t *p = stored->p + 1;
	uint64_t n = 0;
	assert_int_equal(num_uvarint_get(&p, stored->p + stored->n, &n), 0);
	buf_reserve(out, (size_t)n);
	size_t got = ZSTD_decompress(out->p + 1, (size_t)n, p, (size_t)(stored->p + stored->n - p));
	assert_int_equal(got, n);
	out->n += (size_t)n;
}

static void expect_cuts_fail(fix_t *f, const buf_t *head, const buf_t *data, uint32_t max_node,
                             uint32_t max_attrset, const char *form)
{
	err_t err = {0};
	local_block_t b = {0};
	for (size_t cut = 0; cut < head->n; cut++) {
		err = (err_t){0};
		if (local_block_decode_head(slice_make(head->p, cut), f->zd, &f->s, &b, &err) != -1 ||
		    err.status != 500 || strncmp(err.msg, "block head: ", 12) != 0)
			fail_msg("%s head cut at %zu of %zu: \"%s\"", form, cut, head->n, err.msg);
	}
	if (local_block_decode_head(buf_slice(head), f->zd, &f->s, &b, &err) < 0)
		fail_msg("%s head: %s", form, err.msg);
	for (size_t cut = 0; cut < data->n; cut++) {
		err = (err_t){0};
		if (local_block_decode_data(slice_make(data->p, cut), max_node, max_attrset, f->zd, &f->s, &b,
		                            &err) != -1 ||
		    err.status != 500 || strncmp(err.msg, "block data: ", 12) != 0 || b.n_entries != 0)
			fail_msg("%s data cut at %zu of %zu: \"%s\"", form, cut, data->n, err.msg);
	}
	assert_int_equal(
	    local_block_decode_data(buf_slice(data), max_node, max_attrset, f->zd, &f->s, &b, &err), 0);
	local_block_free(&b);
}

static void test_truncation(void **state)
{
	(void)state;
	fix_t *f = fix_new();
	rng_state = 7;
	model_batch_t *b = load_fixture("pprof/go-cpu-span-labels.pb.gz");
	series_t s;
	make_series(&s, b, 0, 16);
	buf_t rh, rd;
	buf_init(&rh, SIZE_MAX);
	buf_init(&rd, SIZE_MAX);
	{
		err_t err = {0};
		assert_int_equal(local_block_encode(s.in, s.n, f->zc, &f->s, &f->head, &f->data, &err), 0);
		assert_int_equal(f->head.p[0], 1); /* both stored as zstd: the cuts go through the frame */
		assert_int_equal(f->data.p[0], 1);
		expect_cuts_fail(f, &f->head, &f->data, s.max_node, s.max_attrset, "stored");
		raw_form(&f->head, &rh);
		raw_form(&f->data, &rd);
		expect_cuts_fail(f, &rh, &rd, s.max_node, s.max_attrset, "raw");
	}
	buf_free(&rh);
	buf_free(&rd);
	series_free(&s);
	model_batch_free(b);
	fix_free(f);
}

/* ---- damaged blobs ---- */

typedef struct {
	const char *name;
	const char *head, *data; /* hex; data NULL: a head case */
	uint32_t max_node;
	const char *msg;
} damage_case;

static void test_damage_table(void **state)
{
	(void)state;
	static const damage_case cases[] = {
	    {"head empty", "", NULL, 0, "block head: empty"},
	    {"head unknown format", "02", NULL, 0, "block head: unknown format"},
	    {"head zstd length cut", "01ff", NULL, 0, "block head: raw length out of range"},
	    {"head zstd length past the bound", "018be003", NULL, 0, "block head: raw length out of range"},
	    {"head zstd garbage", "010a00000000", NULL, 0, "block head: does not decompress"},
	    {"head no count", "00", NULL, 0, "block head: chunk count out of range"},
	    {"head no chunk", "0000", NULL, 0, "block head: chunk count out of range"},
	    {"head 1025 chunks", "008108", NULL, 0, "block head: chunk count out of range"},
	    {"head id column cut", "000205", NULL, 0, "block head: chunk 1: truncated id column"},
	    {"head id repeated", "00020500", NULL, 0, "block head: chunk 1: chunk id out of range"},
	    {"head id first 0", "000100", NULL, 0, "block head: chunk 0: chunk id out of range"},
	    {"head id past int64", "0002ffffffffffffffff7f01", NULL, 0,
	     "block head: chunk 1: chunk id out of range"},
	    {"head time column cut", "00020502d00f", NULL, 0, "block head: chunk 1: truncated time column"},
	    {"head duration column cut", "00020502d00fc70114", NULL, 0,
	     "block head: chunk 1: truncated duration column"},
	    {"head count column cut", "00020502d00fc701141402", NULL, 0,
	     "block head: chunk 1: truncated entry count column"},
	    {"head count past a chunk", "0001010000818080080000", NULL, 0,
	     "block head: chunk 0: entry count out of range"},
	    {"head count past a block", "0001010000818080040000", NULL, 0,
	     "block head: chunk 0: entry count out of range"},
	    {"head total column cut",
	     "00020502d00fc70114140202"
	     "1e",
	     NULL, 0, "block head: chunk 1: truncated total column"},
	    {"head scale column cut",
	     "00020502d00fc70114140202"
	     "1e1803",
	     NULL, 0, "block head: chunk 1: truncated scale column"},
	    {"head scale 0",
	     "00020502d00fc70114140202"
	     "1e180300",
	     NULL, 0, "block head: chunk 1: bad value scale"},
	    {"head scale past int64",
	     "00020502d00fc70114140202"
	     "1e1803ffffffffffffffffff01",
	     NULL, 0, "block head: chunk 1: bad value scale"},
	    {"head trailing byte", SMALL_HEAD "00", NULL, 0, "block head: trailing bytes"},

	    {"good", SMALL_HEAD, SMALL_DATA, 3, NULL},
	    {"data empty", SMALL_HEAD, "", 3, "block data: empty"},
	    {"data unknown format", SMALL_HEAD, "05", 3, "block data: unknown format"},
	    {"data zstd length cut", SMALL_HEAD, "01ff", 3, "block data: raw length out of range"},
	    {"data zstd length past the bound", SMALL_HEAD, "01b501", 3,
	     "block data: raw length out of range"},
	    {"data zstd garbage", SMALL_HEAD, "016400000000", 3, "block data: does not decompress"},
	    {"data no header", SMALL_HEAD, "00", 3, "block data: truncated header"},
	    {"data header cut", SMALL_HEAD, "0003", 3, "block data: truncated header"},
	    {"data unknown flags", SMALL_HEAD, "000804", 3, "block data: unknown flags"},
	    {"data count differs", SMALL_HEAD,
	     "000305"
	     "01020101"
	     "00020000"
	     "04060402"
	     "00020000",
	     3, "block data: entry count differs from the head"},
	    {"data shorter than its count", SMALL_HEAD, "0003040102", 3,
	     "block data: shorter than its entry count"},
	    {"data node column cut", SMALL_HEAD, "0000048080808080808080", 3,
	     "block data: chunk 0: truncated node column"},
	    {"data node past the table", SMALL_HEAD,
	     "000304"
	     "01030101"
	     "00020000"
	     "04060402"
	     "00020000",
	     3, "block data: chunk 0: node id out of range"},
	    {"data node delta past the table", SMALL_HEAD,
	     "000004"
	     "01020104"
	     "04060402",
	     3, "block data: chunk 1: node id out of range"},
	    {"data attribute column cut", SMALL_HEAD,
	     "000104"
	     "e80700e807"
	     "00"
	     "000000",
	     1000, "block data: chunk 1: truncated attribute column"},
	    {"data attribute set past the table", SMALL_HEAD,
	     "000304"
	     "01020101"
	     "00030000"
	     "04060402"
	     "00020000",
	     3, "block data: chunk 0: attribute set id out of range"},
	    {"data value column cut", SMALL_HEAD,
	     "000004"
	     "e80700e80700"
	     "040604",
	     1000, "block data: chunk 1: truncated value column"},
	    {"data value times scale overflows", SMALL_HEAD,
	     "000004"
	     "01020101"
	     "80808080808080808001"
	     "060402",
	     3, "block data: chunk 0: value out of range"},
	    {"data total differs", SMALL_HEAD,
	     "000304"
	     "01020101"
	     "00020000"
	     "04060404"
	     "00020000",
	     3, "block data: chunk 1: values do not add up to the chunk total"},
	    {"data flag 4 (value deltas, measured and not kept)", SMALL_HEAD, "000704", 3,
	     "block data: unknown flags"},
	    {"data time column cut", SMALL_HEAD,
	     "000204"
	     "01020101"
	     "04060402"
	     "00",
	     3, "block data: chunk 0: truncated time column"},
	    {"data time past int64", SMALL_HEAD,
	     "000204"
	     "01020101"
	     "04060402"
	     "00feffffffffffffffff01"
	     "0000",
	     3, "block data: chunk 0: sample time out of range"},
	    {"data trailing byte", SMALL_HEAD, SMALL_DATA "00", 3, "block data: trailing bytes"},
	};
	fix_t *f = fix_new();
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const damage_case *c = &cases[i];
		uint8_t hb[64], db[64];
		size_t hn = hex_bytes(c->head, hb);
		err_t err = {0};
		int rc = local_block_decode_head(slice_make(hb, hn), f->zd, &f->s, &f->b, &err);
		if (c->data && rc < 0)
			fail_msg("%s: head: %s", c->name, err.msg);
		if (c->data) {
			size_t dn = hex_bytes(c->data, db);
			rc = local_block_decode_data(slice_make(db, dn), c->max_node, 2, f->zd, &f->s, &f->b,
			                             &err);
		}
		if (!c->msg) {
			if (rc != 0)
				fail_msg("%s: %s", c->name, err.msg);
			continue;
		}
		if (rc != -1 || err.status != 500 || strcmp(err.msg, c->msg) != 0)
			fail_msg("%s: rc %d status %d msg \"%s\", want 500 \"%s\"", c->name, rc, err.status,
			         err.msg, c->msg);
	}
	/* Data without a decoded head. */
	local_block_t none = {0};
	err_t err = {0};
	uint8_t db[64];
	size_t dn = hex_bytes(SMALL_DATA, db);
	assert_int_equal(local_block_decode_data(slice_make(db, dn), 3, 2, f->zd, &f->s, &none, &err), -1);
	assert_string_equal(err.msg, "block data: no head");
	fix_free(f);
}

/* ---- what the encoder refuses ---- */

static void test_encoder_refusals(void **state)
{
	(void)state;
	fix_t *f = fix_new();
	enum { F_ID, F_SCALE, F_COUNT, F_TOTAL, F_TIME, F_ENTRY };
	typedef struct {
		const char *name;
		uint32_t chunk; /* whose header field is set to v (F_ENTRY: chunk 0's second entry is e1) */
		int field;
		int64_t v;
		store_wentry_t e1;
		const char *msg;
	} enc_case;
	static const enc_case cases[] = {
	    {"id 0", 0, F_ID, 0, {0}, "block: chunk 0: chunk ids not increasing"},
	    {"ids equal", 1, F_ID, 5, {0}, "block: chunk 1: chunk ids not increasing"},
	    {"scale 0", 1, F_SCALE, 0, {0}, "block: chunk 1: bad value scale"},
	    {"too many entries",
	     1,
	     F_COUNT,
	     LIMIT_CHUNK_ENTRIES + 1,
	     {0},
	     "block: chunk 1: entry count out of range"},
	    {"scale does not divide", 0, F_SCALE, 2, {0}, "block: chunk 0: scale does not divide a value"},
	    {"unsorted", 0, F_ENTRY, 0, {0, 0, 0, 9}, "block: chunk 0: entries not sorted by node"},
	    {"total", 0, F_TOTAL, 16, {0}, "block: chunk 0: values do not add up to the chunk total"},
	    {"time", 0, F_TIME, INT64_MAX, {0}, "block: chunk 0: sample time out of range"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const enc_case *c = &cases[i];
		store_wentry_t ce[2] = {small_e0[0], c->field == F_ENTRY ? c->e1 : small_e0[1]};
		local_block_in_t in[2] = {{small_in[0].head, ce}, {small_in[1].head, small_e1}};
		local_block_chunk_t *h = &in[c->chunk].head;
		switch (c->field) {
		case F_ID:
			h->id = c->v;
			break;
		case F_SCALE:
			h->scale = c->v;
			break;
		case F_COUNT:
			h->n_entries = (uint32_t)c->v;
			break;
		case F_TOTAL:
			h->total = c->v;
			break;
		case F_TIME:
			h->t_ns = c->v;
			break;
		default:
			break;
		}
		err_t err = {0};
		int rc = local_block_encode(in, 2, f->zc, &f->s, &f->head, &f->data, &err);
		if (rc != -1 || err.status != 500 || strcmp(err.msg, c->msg) != 0)
			fail_msg("%s: rc %d msg \"%s\", want \"%s\"", c->name, rc, err.msg, c->msg);
	}
	err_t err = {0};
	assert_int_equal(local_block_encode(small_in, 0, f->zc, &f->s, &f->head, &f->data, &err), -1);
	assert_string_equal(err.msg, "block: chunk count 0 out of range");

	/* Raw data past LIMIT_STORE_BLOCK_BYTES: 900,000 entries of 20 bytes (node 1, set 5, value 9, offset
	 * 5). */
	enum { N = 900000 };
	store_wentry_t *big = calloc(N, sizeof *big);
	int64_t sum = 0;
	for (uint32_t i = 0; i < N; i++) {
		big[i] = (store_wentry_t){.node = 1,
		                          .attrset = 1u << 30,
		                          .t_off = INT64_C(1) << 32,
		                          .value = (INT64_C(1) << 60) + i};
		sum = num_sat_add(sum, big[i].value);
	}
	local_block_in_t in = {{.id = 1, .n_entries = N, .total = sum, .scale = 1}, big};
	assert_int_equal(local_block_encode(&in, 1, f->zc, &f->s, &f->head, &f->data, &err), -1);
	assert_string_equal(err.msg, "block: larger than 16777216 bytes");
	free(big);
	fix_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_small_block_bytes),  cmocka_unit_test(test_fixture_roundtrip),
	    cmocka_unit_test(test_chunk_count_bounds), cmocka_unit_test(test_truncation),
	    cmocka_unit_test(test_damage_table),       cmocka_unit_test(test_encoder_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
