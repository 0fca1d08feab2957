/* Protobuf wire format (pb.h): a bounded reader that never reads past its
 * cursor's end and never allocates, the out-of-line half of the message
 * layer (error paths, unknown and mistyped fields), and a writer appending
 * to a buf_t. Field meanings are the decoders'; groups are refused. */
#include "wire/pb.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/num.h"

/* The reader's inline fast paths are in pb.h; this is the multi-byte case. */
int pb_varint_slow(pb_reader_t *r, uint64_t *v)
{
	const uint8_t *p = r->p;
	uint64_t x = 0;
	if (r->end - p >= 10) { /* room for the longest varint: no bounds checks */
		for (unsigned i = 0; i < 9; i++) {
			uint8_t c = p[i];
			x |= (uint64_t)(c & 0x7f) << (7 * i);
			if (!(c & 0x80)) {
				r->p = p + i + 1;
				*v = x;
				return 0;
			}
		}
		if (p[9] > 1)
			return -1; /* more than 64 bits */
		r->p = p + 10;
		*v = x | (uint64_t)p[9] << 63;
		return 0;
	}
	for (unsigned i = 0; i < 10; i++) {
		if (p >= r->end)
			return -1; /* truncated */
		uint8_t c = *p++;
		if (i == 9 && c > 1)
			return -1; /* more than 64 bits */
		x |= (uint64_t)(c & 0x7f) << (7 * i);
		if (!(c & 0x80)) {
			r->p = p;
			*v = x;
			return 0;
		}
	}
	return -1; /* unreachable: the 10th byte either ends or fails above */
}

/* Kiln fills every buffer it writes protobuf into with a SIZE_MAX ceiling,
 * so a failed append is a broken invariant, not bad input. */
static void put_or_die(buf_t *b, const void *p, size_t n)
{
	if (buf_append(b, p, n) < 0) {
		fprintf(stderr, "pb: append of %zu bytes past the buffer ceiling\n", n);
		abort();
	}
}

void pb_put_varint(buf_t *b, uint64_t v)
{
	uint8_t tmp[NUM_UVARINT_MAX];
	put_or_die(b, tmp, num_uvarint_put(tmp, v));
}

void pb_put_key(buf_t *b, uint32_t field, int wire_type)
{
	pb_put_varint(b, ((uint64_t)field << 3) | (uint64_t)(wire_type & 7));
}

void pb_put_uint(buf_t *b, uint32_t field, uint64_t v)
{
	if (!v)
		return;
	pb_put_key(b, field, PB_VARINT);
	pb_put_varint(b, v);
}

void pb_put_int64(buf_t *b, uint32_t field, int64_t v)
{
	pb_put_uint(b, field, (uint64_t)v); /* int64 is two's complement, 10 bytes when negative */
}

void pb_put_bytes(buf_t *b, uint32_t field, slice_t s)
{
	pb_put_key(b, field, PB_LEN);
	pb_put_varint(b, s.n);
	if (s.n)
		put_or_die(b, s.p, s.n);
}

void pb_put_fixed64(buf_t *b, uint32_t field, uint64_t v)
{
	uint8_t tmp[8];
	for (int i = 0; i < 8; i++)
		tmp[i] = (uint8_t)(v >> (8 * i));
	pb_put_key(b, field, PB_I64);
	put_or_die(b, tmp, 8);
}

void pb_put_packed(buf_t *b, uint32_t field, const uint64_t *v, size_t n)
{
	if (!n)
		return;
	size_t len = 0;
	uint8_t tmp[NUM_UVARINT_MAX];
	for (size_t i = 0; i < n; i++)
		len += num_uvarint_put(tmp, v[i]);
	pb_put_key(b, field, PB_LEN);
	pb_put_varint(b, len);
	for (size_t i = 0; i < n; i++)
		pb_put_varint(b, v[i]);
}

/* Writes the key and one placeholder byte for the length; pb_end widens the
 * length in place when the payload needs more than one byte. */
size_t pb_begin(buf_t *b, uint32_t field)
{
	pb_put_key(b, field, PB_LEN);
	size_t mark = b->n;
	uint8_t zero = 0;
	put_or_die(b, &zero, 1);
	return mark;
}

void pb_end(buf_t *b, size_t mark)
{
	size_t len = b->n - mark - 1;
	uint8_t tmp[NUM_UVARINT_MAX];
	size_t k = num_uvarint_put(tmp, len);
	if (k > 1) {
		if (buf_reserve(b, k - 1) < 0) {
			fprintf(stderr, "pb: nested message length past the buffer ceiling\n");
			abort();
		}
		memmove(b->p + mark + k, b->p + mark + 1, len);
		b->n += k - 1;
	}
	memcpy(b->p + mark, tmp, k);
}

const char *pb_wire_type_name(int wt)
{
	switch (wt) {
	case PB_VARINT:
		return "varint";
	case PB_I64:
		return "fixed64";
	case PB_LEN:
		return "length-delimited";
	case PB_I32:
		return "fixed32";
	default:
		return "group";
	}
}

/* ---- Messages -------------------------------------------------------------- */

/* "a[1].b.c[2]": the outermost PB_PATH_SHOWN elements of p, cut to n bytes. */
static void path_str(const pb_path_t *p, char *out, size_t n)
{
	const pb_path_t *chain[PB_PATH_SHOWN];
	size_t depth = 0, at = 0;
	for (const pb_path_t *e = p; e; e = e->up)
		depth++;
	size_t shown = depth < PB_PATH_SHOWN ? depth : PB_PATH_SHOWN;
	const pb_path_t *e = p;
	for (size_t skip = depth - shown; skip; skip--)
		e = e->up;
	for (size_t i = shown; i; i--, e = e->up)
		chain[i - 1] = e;
	out[0] = 0;
	for (size_t i = 0; i < shown && at < n; i++) {
		int k = chain[i]->ix == PB_NOIX
		            ? snprintf(out + at, n - at, "%s%s", i ? "." : "", chain[i]->name)
		            : snprintf(out + at, n - at, "%s%s[%" PRIu32 "]", i ? "." : "", chain[i]->name,
		                       chain[i]->ix);
		if (k < 0)
			break;
		at += (size_t)k;
	}
}

int pb_fail(const pb_src_t *s, err_t *err, int status, const pb_path_t *p, const char *field, const char *fmt,
            ...)
{
	char where[200], what[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	path_str(p, where, sizeof where);
	if (!where[0] && !field && s->root)
		snprintf(where, sizeof where, "%s", s->root);
	if (where[0] && field)
		return err_set(err, status, "%s.%s: %s", where, field, what);
	if (where[0] || field)
		return err_set(err, status, "%s: %s", where[0] ? where : field, what);
	return err_set(err, status, "%s", what);
}

const char *pb_kind_name(uint8_t kind)
{
	switch (kind) {
	case PB_F_VARINT:
		return "varint";
	case PB_F_LEN:
		return "length-delimited";
	case PB_F_I64:
		return "fixed64";
	case PB_F_PVARINT:
		return "varint or packed";
	case PB_F_PI64:
		return "fixed64 or packed";
	default:
		return "any wire type";
	}
}

int pb_next_slow(const pb_src_t *s, pb_reader_t *r, const pb_spec_t *spec, const pb_path_t *p,
                 const pb_field_t **f, int *wt, err_t *err)
{
	while (!pb_done(r)) {
		const uint8_t *at = r->p;
		uint32_t num;
		int w;
		if (pb_key(r, &num, &w) < 0)
			return pb_fail(
			    s, err, 400, p, NULL,
			    "malformed field key at byte %zu (truncated, field 0 or wire type 6/7)",
			    pb_offset(s, at));
		const pb_field_t *k = NULL;
		for (uint32_t i = 0; i < spec->n && !k; i++)
			if (spec->f[i].num == num)
				k = &spec->f[i];
		if (!k) {
			if (pb_skip(r, w) < 0)
				return pb_fail(s, err, 400, p, NULL,
				               "unknown field %" PRIu32
				               " (wire type %d) at byte %zu is truncated or malformed",
				               num, w, pb_offset(s, at));
			continue;
		}
		if (!pb_kind_ok(k->kind, w))
			return pb_fail(s, err, 400, p, k->name,
			               "wire type %d (%s), expected %s (field %" PRIu32 " at byte %zu)", w,
			               pb_wire_type_name(w), pb_kind_name(k->kind), num, pb_offset(s, at));
		*f = k;
		*wt = w;
		return 1;
	}
	return 0;
}
