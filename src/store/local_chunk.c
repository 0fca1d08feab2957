/* store/local encodings: chunk payloads (sorted entries, column-wise
 * delta/varint/zigzag, then zstd when smaller), label blobs and project
 * directory names. Pure functions over memory: no SQLite, no files. Decoders
 * treat their input as hostile and check every length and id. Also the
 * stored form of span and trace ids (the spans index). */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "base/alloc.h"
#include "base/arena.h"
#include "base/hash.h"
#include "base/num.h"
#include "store/local.h"

enum { PAYLOAD_RAW = 0, PAYLOAD_ZSTD = 1 };
enum { PF_ATTRS = 1, PF_TIMES = 2 };
#define ZSTD_LEVEL 9

static uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

int local_project_dir(slice_t project, char out[3 * LIMIT_NAME_BYTES + 2])
{
	static const char hex[] = "0123456789abcdef";
	if (project.n == 0 || project.n > LIMIT_NAME_BYTES)
		return -1;
	size_t o = 0;
	for (size_t i = 0; i < project.n; i++) {
		uint8_t c = project.p[i];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-') {
			out[o++] = (char)c;
		} else if (c == '_') {
			out[o++] = '_';
			out[o++] = '_';
		} else {
			out[o++] = '_';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = 0;
	return 0;
}

int local_project_name(const char *dir, char out[LIMIT_NAME_BYTES], size_t *n)
{
	size_t o = 0;
	for (const char *c = dir; *c; c++) {
		if (o == LIMIT_NAME_BYTES)
			return -1;
		uint8_t ch = (uint8_t)*c;
		if (ch != '_') {
			out[o++] = (char)ch;
			continue;
		}
		if (c[1] == '_') {
			out[o++] = '_';
			c++;
			continue;
		}
		int hi = c[1] ? num_hex_digit((uint8_t)c[1]) : -1,
		    lo = hi >= 0 && c[2] ? num_hex_digit((uint8_t)c[2]) : -1;
		if (lo < 0)
			return -1;
		out[o++] = (char)(hi << 4 | lo);
		c += 2;
	}
	/* Canonical only: "_41" (an escaped letter) or "_2F" would name the same project twice. */
	char again[3 * LIMIT_NAME_BYTES + 2];
	if (local_project_dir(slice_make(out, o), again) < 0 || strcmp(again, dir) != 0)
		return -1;
	*n = o;
	return 0;
}

void local_payload_raw(const store_wentry_t *e, uint32_t n, buf_t *raw, int64_t *scale, int64_t *total)
{
	uint64_t g = 0;
	int64_t sum = 0;
	unsigned flags = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t v = (uint64_t)e[i].value;
		sum = num_sat_add(sum, e[i].value);
		g = gcd_u64(g, e[i].value < 0 ? -v : v);
		if (e[i].attrset)
			flags |= PF_ATTRS;
		if (e[i].t_off)
			flags |= PF_TIMES;
	}
	/* INT64_MIN alone gives g = 2^63, which does not divide as int64: keep 1. */
	if (g == 0 || g > (uint64_t)INT64_MAX)
		g = 1;
	*scale = (int64_t)g;
	*total = sum;

	buf_reset(raw);
	buf_put_uvarint(raw, n);
	buf_put_uvarint(raw, flags);
	uint32_t prev = 0;
	for (uint32_t i = 0; i < n; i++) {
		buf_put_uvarint(raw, e[i].node - prev);
		prev = e[i].node;
	}
	if (flags & PF_ATTRS)
		for (uint32_t i = 0; i < n; i++)
			buf_put_uvarint(raw, e[i].attrset);
	for (uint32_t i = 0; i < n; i++)
		buf_put_uvarint(raw, zigzag(e[i].value / (int64_t)g));
	if (flags & PF_TIMES)
		for (uint32_t i = 0; i < n; i++)
			buf_put_uvarint(raw, zigzag(e[i].t_off));
}

void local_payload_pack(const buf_t *raw, buf_t *out, void *zc)
{
	buf_reset(out);
	size_t bound = ZSTD_compressBound(raw->n);
	if (raw->n >= 64 && buf_reserve(out, 12 + bound) == 0) {
		buf_putc(out, PAYLOAD_ZSTD);
		buf_put_uvarint(out, raw->n);
		size_t z =
		    ZSTD_compressCCtx(zc, out->p + out->n, out->cap - out->n, raw->p, raw->n, ZSTD_LEVEL);
		if (!ZSTD_isError(z) && out->n + z < raw->n + 1) {
			out->n += z;
			return;
		}
		buf_reset(out);
	}
	buf_putc(out, PAYLOAD_RAW);
	buf_append(out, raw->p, raw->n);
}

/* A payload that fails a check: damage, so a server-side error (500). */
static int bad(err_t *err, const char *what)
{
	return err_set(err, 500, "%s", what);
}

/* The raw bytes [*p, *end) of a stored form (local_payload_pack), raw or
 * decompressed into *tmp; a raw size above max_raw is damage. */
static int payload_unpack(slice_t data, uint64_t max_raw, void *zd, uint8_t **tmp, size_t *cap_tmp,
                          const uint8_t **p, const uint8_t **end, err_t *err)
{
	if (data.n < 1)
		return bad(err, "empty payload");
	if (data.p[0] == PAYLOAD_RAW) {
		*p = data.p + 1;
		*end = data.p + data.n;
		return 0;
	}
	if (data.p[0] != PAYLOAD_ZSTD)
		return bad(err, "unknown payload format");
	const uint8_t *q = data.p + 1, *qend = data.p + data.n;
	uint64_t raw_n;
	if (num_uvarint_get(&q, qend, &raw_n) < 0 || raw_n > max_raw)
		return bad(err, "bad payload length");
	if (*cap_tmp < raw_n) {
		*tmp = xrealloc(*tmp, (size_t)raw_n);
		*cap_tmp = (size_t)raw_n;
	}
	size_t got = ZSTD_decompressDCtx(zd, *tmp, (size_t)raw_n, q, (size_t)(qend - q));
	if (ZSTD_isError(got) || got != raw_n)
		return bad(err, "payload does not decompress");
	*p = *tmp;
	*end = *tmp + raw_n;
	return 0;
}

int local_payload_decode(slice_t data, int64_t t_ns, int64_t scale, uint32_t n_expect, int64_t total_expect,
                         uint32_t max_node, uint32_t max_attrset, void *zd, uint8_t **tmp, size_t *cap_tmp,
                         store_entry_t **out, size_t *cap_out, err_t *err)
{
	const uint8_t *p, *end;
	if (scale < 1)
		return bad(err, "bad value scale");
	if (n_expect > LIMIT_CHUNK_ENTRIES)
		return bad(err, "entry count out of range");
	/* At most 2 + 4 varints of <= 10 bytes per entry. */
	if (payload_unpack(data, 24 + (uint64_t)n_expect * 40, zd, tmp, cap_tmp, &p, &end, err) < 0)
		return -1;

	uint64_t n, flags;
	if (num_uvarint_get(&p, end, &n) < 0 || num_uvarint_get(&p, end, &flags) < 0)
		return bad(err, "truncated payload header");
	if (n != n_expect)
		return bad(err, "entry count differs from the chunk header");
	if (flags & ~(uint64_t)(PF_ATTRS | PF_TIMES))
		return bad(err, "unknown payload flags");
	if (*cap_out < n) {
		*out = xrealloc(*out, (size_t)(n ? n : 1) * sizeof **out);
		*cap_out = (size_t)n;
	}
	store_entry_t *e = *out;
	uint64_t node = 0, v;
	for (uint32_t i = 0; i < n; i++) {
		if (num_uvarint_get(&p, end, &v) < 0)
			return bad(err, "truncated node column");
		node += v;
		if (node > max_node || v > max_node) /* 0: the root (empty stacks) */
			return bad(err, "node id out of range");
		e[i].node = (uint32_t)node;
		e[i].attrset = 0;
		e[i].t_ns = t_ns;
	}
	if (flags & PF_ATTRS)
		for (uint32_t i = 0; i < n; i++) {
			if (num_uvarint_get(&p, end, &v) < 0)
				return bad(err, "truncated attribute column");
			if (v > max_attrset)
				return bad(err, "attribute set id out of range");
			e[i].attrset = (uint32_t)v;
		}
	uint64_t wrapped = 0; /* the total of files written before totals saturated */
	int64_t sum = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (num_uvarint_get(&p, end, &v) < 0)
			return bad(err, "truncated value column");
		int64_t x;
		if (__builtin_mul_overflow(unzigzag(v), scale, &x))
			return bad(err, "value out of range");
		e[i].value = x;
		sum = num_sat_add(sum, x);
		wrapped += (uint64_t)x;
	}
	if (flags & PF_TIMES)
		for (uint32_t i = 0; i < n; i++) {
			int64_t off;
			if (num_uvarint_get(&p, end, &v) < 0)
				return bad(err, "truncated time column");
			if (__builtin_mul_overflow(unzigzag(v), (int64_t)1000000000, &off) ||
			    __builtin_add_overflow(t_ns, off, &e[i].t_ns))
				return bad(err, "sample time out of range");
		}
	if (p != end)
		return bad(err, "trailing bytes in payload");
	if (sum != total_expect && (int64_t)wrapped != total_expect)
		return bad(err, "values do not add up to the chunk total");
	return 0;
}

void local_labels_encode(const model_label_t *l, uint32_t n, buf_t *out)
{
	buf_reset(out);
	buf_put_uvarint(out, n);
	for (uint32_t i = 0; i < n; i++) {
		buf_put_uvarint(out, l[i].key.n);
		buf_append(out, l[i].key.p, l[i].key.n);
		buf_put_uvarint(out, l[i].value.n);
		buf_append(out, l[i].value.p, l[i].value.n);
	}
}

void local_node_run_add(buf_t *run, uint32_t local, uint32_t parent, uint32_t frame)
{
	buf_put_uvarint(run, local - parent);
	buf_put_uvarint(run, frame);
}

int local_node_run_decode(slice_t data, uint32_t first, uint32_t n, uint32_t max_frame, uint32_t *parent,
                          uint32_t *frame, const char **what)
{
	const uint8_t *p = data.p, *end = data.n ? data.p + data.n : data.p; /* an empty blob's p is NULL */
	for (uint32_t k = 0; k < n; k++) {
		uint32_t local = first + k;
		uint64_t back, f;
		if (num_uvarint_get(&p, end, &back) < 0 || num_uvarint_get(&p, end, &f) < 0)
			return *what = "node run truncated", -1;
		if (back < 1 || back > local)
			return *what = "node parent out of range", -1;
		if (f < 1 || f > max_frame)
			return *what = "node frame out of range", -1;
		parent[local] = local - (uint32_t)back;
		frame[local] = (uint32_t)f;
	}
	if (p != end)
		return *what = "node run longer than its count", -1;
	return 0;
}

void local_node_ids(const uint32_t *parent, const uint32_t *frame, const uint64_t *frame_id, uint32_t from,
                    uint32_t to, uint64_t *id)
{
	id[0] = 0;
	for (uint32_t k = from; k <= to; k++)
		id[k] = hash_pair(id[parent[k]], frame_id[frame[k]]);
}

static int get_bytes(const uint8_t **p, const uint8_t *end, arena_t *a, slice_t *out)
{
	uint64_t len;
	if (num_uvarint_get(p, end, &len) < 0 || len > (uint64_t)(end - *p))
		return -1;
	*out = arena_slice(a, slice_make(*p, (size_t)len));
	*p += len;
	return 0;
}

int local_labels_decode(slice_t blob, arena_t *a, model_label_t **out, uint32_t *n)
{
	const uint8_t *p = blob.p, *end = blob.p + blob.n;
	uint64_t count;
	*out = NULL;
	*n = 0;
	if (blob.n == 0)
		return 0;
	/* Each label takes at least two bytes, which bounds count by the blob size. */
	if (num_uvarint_get(&p, end, &count) < 0 || count > (uint64_t)(end - p) / 2)
		return -1;
	model_label_t *l = count ? arena_alloc(a, (size_t)count * sizeof *l) : NULL;
	for (uint64_t i = 0; i < count; i++)
		if (get_bytes(&p, end, a, &l[i].key) < 0 || get_bytes(&p, end, a, &l[i].value) < 0)
			return -1;
	if (p != end)
		return -1;
	*out = l;
	*n = (uint32_t)count;
	return 0;
}

int local_span_key(slice_t v, uint8_t out[LIMIT_SPAN_ID_BYTES / 2], size_t *n)
{
	*n = 0;
	if (v.n == 0 || v.n > LIMIT_SPAN_ID_BYTES)
		return LOCAL_SPAN_NONE;
	if (v.n % 2)
		return LOCAL_SPAN_TEXT;
	for (size_t i = 0; i < v.n; i += 2) {
		int hi = num_hex_digit(v.p[i]), lo = num_hex_digit(v.p[i + 1]);
		if (hi < 0 || lo < 0)
			return LOCAL_SPAN_TEXT;
		out[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	*n = v.n / 2;
	return LOCAL_SPAN_HEX;
}

/* ---- merged hours: the sums of one (series, hour) ---- */

void local_sums_encode(const local_hsum_t *r, uint32_t n, buf_t *out)
{
	buf_reset(out);
	buf_put_uvarint(out, n);
	uint32_t prev = 0;
	for (uint32_t i = 0; i < n; i++) {
		buf_put_uvarint(out, r[i].node - prev);
		buf_put_uvarint(out, r[i].attrset);
		buf_put_uvarint(out, zigzag(r[i].value));
		prev = r[i].node;
	}
}

int local_sums_decode(slice_t blob, uint32_t max_node, uint32_t max_attrset, void *zd, uint8_t **tmp,
                      size_t *cap_tmp, local_hsum_t **out, size_t *cap, uint32_t *n)
{
	const uint8_t *p, *end;
	uint64_t count, v[3];
	err_t err;
	*n = 0;
	if (payload_unpack(blob, LIMIT_STORE_SUMS_BYTES, zd, tmp, cap_tmp, &p, &end, &err) < 0)
		return -1;
	/* Each row takes at least 3 bytes: a count beyond that is a lie. */
	if (num_uvarint_get(&p, end, &count) < 0 || count > (uint64_t)(end - p) / 3)
		return -1;
	*out = xgrow(*out, cap, (size_t)count + 1, sizeof **out);
	uint64_t node = 0, prev_attr = 0;
	for (uint64_t i = 0; i < count; i++) {
		for (int k = 0; k < 3; k++)
			if (num_uvarint_get(&p, end, &v[k]) < 0)
				return -1;
		/* Strictly increasing (node, attrset), every id in range. */
		if (v[0] > max_node || (node += v[0]) > max_node || v[1] > max_attrset ||
		    (i && v[0] == 0 && v[1] <= prev_attr))
			return -1;
		prev_attr = v[1];
		(*out)[i] = (local_hsum_t){(uint32_t)node, (uint32_t)v[1], unzigzag(v[2])};
	}
	if (p != end)
		return -1;
	*n = (uint32_t)count;
	return 0;
}
