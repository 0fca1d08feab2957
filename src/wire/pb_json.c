/* The proto3 JSON → protobuf transcoder (pb_json.h): one walk over
 * jansson's tree guided by the message's schema table. */
#include "wire/pb_json.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/num.h"
#include "wire/pb.h"

typedef struct {
	buf_t out; /* SIZE_MAX ceiling; checked against limit as it grows */
	size_t limit;
	uint64_t *nums; /* one packed field's values */
	size_t cap_nums;
	const char *root; /* what an error at the top names */
	char path[400];
	size_t path_n;
	err_t *err;
} jctx_t;

/* ---- Paths and errors ------------------------------------------------------ */

static size_t path_push_key(jctx_t *c, const char *key)
{
	size_t old = c->path_n;
	int n = snprintf(c->path + old, sizeof c->path - old, "%s%s", old ? "." : "", key);
	if (n > 0)
		c->path_n = old + (size_t)n < sizeof c->path ? old + (size_t)n : sizeof c->path - 1;
	return old;
}

static size_t path_push_ix(jctx_t *c, size_t ix)
{
	size_t old = c->path_n;
	int n = snprintf(c->path + old, sizeof c->path - old, "[%zu]", ix);
	if (n > 0)
		c->path_n = old + (size_t)n < sizeof c->path ? old + (size_t)n : sizeof c->path - 1;
	return old;
}

static void path_pop(jctx_t *c, size_t old)
{
	c->path_n = old;
	c->path[old] = 0;
}

static int jfail(jctx_t *c, const char *what)
{
	return err_set(c->err, 400, "%s: %s", c->path_n ? c->path : c->root, what);
}

static int check_size(jctx_t *c)
{
	if (c->out.n <= c->limit)
		return 0;
	return err_set(c->err, 413, "the request transcoded from JSON exceeds the %zu-byte limit", c->limit);
}

/* ---- Scalars ---------------------------------------------------------------- */

/* A decimal integer string: optional '-' (when signed), digits only. */
static int parse_dec(const char *s, int is_signed, uint64_t *mag, int *neg)
{
	*neg = 0;
	if (is_signed && *s == '-') {
		*neg = 1;
		s++;
	}
	if (!*s)
		return -1;
	uint64_t v = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		unsigned dgt = (unsigned)(*s - '0');
		if (v > (UINT64_MAX - dgt) / 10)
			return -1;
		v = v * 10 + dgt;
	}
	*mag = v;
	return 0;
}

/* An integer of the given type from a JSON number or decimal string,
 * returned as the 64-bit pattern protobuf writes (sign-extended). */
static int get_int(jctx_t *c, json_t *v, uint8_t type, uint64_t *out)
{
	int is_signed = type == PB_J_I64 || type == PB_J_I32;
	uint64_t mag;
	int neg;
	if (json_is_integer(v)) {
		json_int_t x = json_integer_value(v);
		neg = x < 0;
		mag = neg ? (uint64_t)0 - (uint64_t)x : (uint64_t)x;
	} else if (json_is_real(v)) {
		double x = json_real_value(v);
		if (x != floor(x) || fabs(x) >= 18446744073709551616.0)
			return jfail(c, "expected an integer");
		neg = x < 0;
		mag = (uint64_t)fabs(x);
	} else if (json_is_string(v)) {
		if (parse_dec(json_string_value(v), is_signed, &mag, &neg) < 0)
			return jfail(c, "expected an integer (a number or a decimal string)");
	} else {
		return jfail(c, "expected an integer (a number or a decimal string)");
	}
	if (neg && !is_signed)
		return jfail(c, "expected an unsigned integer");
	uint64_t max_pos = type == PB_J_I32   ? INT32_MAX
	                   : type == PB_J_U32 ? UINT32_MAX
	                   : type == PB_J_I64 ? INT64_MAX
	                                      : UINT64_MAX;
	uint64_t max_neg = type == PB_J_I32 ? (uint64_t)INT32_MAX + 1 : (uint64_t)INT64_MAX + 1;
	if ((!neg && mag > max_pos) || (neg && mag > max_neg))
		return jfail(c, type == PB_J_I32   ? "integer out of range for int32"
		                : type == PB_J_U32 ? "integer out of range for uint32"
		                                   : "integer out of range for 64 bits");
	*out = neg ? (uint64_t)0 - mag : mag;
	return 0;
}

static int get_double(jctx_t *c, json_t *v, double *out)
{
	if (json_is_number(v)) {
		*out = json_number_value(v);
		return 0;
	}
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		if (!strcmp(s, "NaN")) {
			*out = NAN;
			return 0;
		}
		if (!strcmp(s, "Infinity") || !strcmp(s, "-Infinity")) {
			*out = s[0] == '-' ? -INFINITY : INFINITY;
			return 0;
		}
		char *end;
		errno = 0;
		*out = strtod(s, &end);
		if (*s && !*end && errno == 0)
			return 0;
	}
	return jfail(c, "expected a number");
}

static int b64val(int ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+' || ch == '-')
		return 62;
	if (ch == '/' || ch == '_')
		return 63;
	return -1;
}

/* Decodes a hex or base64 (standard or URL alphabet, padding optional)
 * string into a malloc'd buffer. */
static int get_bytes(jctx_t *c, json_t *v, int is_hex, uint8_t **out, size_t *n)
{
	if (!json_is_string(v))
		return jfail(c, is_hex ? "expected a hex string" : "expected a base64 string");
	const char *s = json_string_value(v);
	size_t len = json_string_length(v);
	uint8_t *p = xmalloc(len + 1); /* base64 decodes to 3/4 of its length, hex to 1/2 */
	size_t k = 0;
	if (is_hex) {
		if (len % 2)
			goto bad;
		for (size_t i = 0; i < len; i += 2) {
			int hi = num_hex_digit(s[i]), lo = num_hex_digit(s[i + 1]);
			if (hi < 0 || lo < 0)
				goto bad;
			p[k++] = (uint8_t)(hi << 4 | lo);
		}
	} else {
		while (len && s[len - 1] == '=')
			len--;
		if (len % 4 == 1)
			goto bad;
		uint32_t acc = 0;
		int bits = 0;
		for (size_t i = 0; i < len; i++) {
			int b = b64val(s[i]);
			if (b < 0)
				goto bad;
			acc = acc << 6 | (uint32_t)b;
			bits += 6;
			if (bits >= 8) {
				bits -= 8;
				p[k++] = (uint8_t)(acc >> bits);
				acc &= (1u << bits) - 1;
			}
		}
	}
	*out = p;
	*n = k;
	return 0;
bad:
	free(p);
	return jfail(c, is_hex ? "expected a hex string (an even number of 0-9a-f)"
	                       : "expected a base64 string");
}

/* ---- Messages --------------------------------------------------------------- */

static int enc_msg(jctx_t *c, const pb_json_msg_t *m, json_t *obj, unsigned depth);

static int enc_value(jctx_t *c, const pb_json_field_t *f, json_t *v, unsigned depth)
{
	buf_t *out = &c->out;
	uint64_t x = 0;
	switch (f->type) {
	case PB_J_MSG: {
		size_t mark = pb_begin(out, f->num);
		if (enc_msg(c, f->sub, v, depth + 1) < 0)
			return -1;
		pb_end(out, mark);
		break;
	}
	case PB_J_STRING:
		if (!json_is_string(v))
			return jfail(c, "expected a string");
		if (json_string_length(v) || f->card != PB_J_SINGLE)
			pb_put_bytes(out, f->num, slice_make(json_string_value(v), json_string_length(v)));
		break;
	case PB_J_BYTES:
	case PB_J_HEX: {
		uint8_t *p = NULL;
		size_t n = 0;
		if (get_bytes(c, v, f->type == PB_J_HEX, &p, &n) < 0)
			return -1;
		if (n || f->card != PB_J_SINGLE)
			pb_put_bytes(out, f->num, slice_make(p, n));
		free(p);
		break;
	}
	case PB_J_ENUM:
		if (json_is_string(v)) {
			size_t k = 0;
			while (k < f->sub->n && strcmp(f->sub->f[k].json, json_string_value(v)) != 0)
				k++;
			if (k == f->sub->n)
				return jfail(c, "unknown enum value name");
			x = f->sub->f[k].num;
		} else if (get_int(c, v, PB_J_I32, &x) < 0) {
			return -1;
		}
		if (x || f->card == PB_J_ONEOF) {
			pb_put_key(out, f->num, PB_VARINT);
			pb_put_varint(out, x);
		}
		break;
	case PB_J_BOOL:
		if (!json_is_boolean(v))
			return jfail(c, "expected true or false");
		x = json_is_true(v);
		if (x || f->card == PB_J_ONEOF) {
			pb_put_key(out, f->num, PB_VARINT);
			pb_put_varint(out, x);
		}
		break;
	case PB_J_DOUBLE: {
		double d = 0;
		if (get_double(c, v, &d) < 0)
			return -1;
		memcpy(&x, &d, sizeof x);
		if (x || f->card == PB_J_ONEOF)
			pb_put_fixed64(out, f->num, x);
		break;
	}
	case PB_J_FIXED64:
		if (get_int(c, v, PB_J_U64, &x) < 0)
			return -1;
		if (x || f->card == PB_J_ONEOF)
			pb_put_fixed64(out, f->num, x);
		break;
	default:
		if (get_int(c, v, f->type, &x) < 0)
			return -1;
		if (x || f->card == PB_J_ONEOF) {
			pb_put_key(out, f->num, PB_VARINT);
			pb_put_varint(out, x);
		}
		break;
	}
	return check_size(c);
}

/* A repeated numeric field, packed. */
static int enc_packed(jctx_t *c, const pb_json_field_t *f, json_t *arr)
{
	size_t n = json_array_size(arr);
	if (n > c->cap_nums)
		c->nums = xgrow(c->nums, &c->cap_nums, n, sizeof *c->nums);
	for (size_t i = 0; i < n; i++) {
		size_t old = path_push_ix(c, i);
		if (get_int(c, json_array_get(arr, i), f->type == PB_J_FIXED64 ? PB_J_U64 : f->type,
		            &c->nums[i]) < 0)
			return -1;
		path_pop(c, old);
	}
	if (f->type != PB_J_FIXED64) {
		pb_put_packed(&c->out, f->num, c->nums, n);
	} else if (n) {
		pb_put_key(&c->out, f->num, PB_LEN);
		pb_put_varint(&c->out, 8 * (uint64_t)n);
		for (size_t i = 0; i < n; i++) {
			uint8_t le[8];
			for (int k = 0; k < 8; k++)
				le[k] = (uint8_t)(c->nums[i] >> (8 * k));
			if (buf_append(&c->out, le, 8) < 0)
				return err_set(c->err, 500, "transcoding buffer failed");
		}
	}
	return check_size(c);
}

static int enc_msg(jctx_t *c, const pb_json_msg_t *m, json_t *obj, unsigned depth)
{
	if (!json_is_object(obj))
		return jfail(c, "expected an object");
	(void)depth; /* jansson bounds nesting (JSON_PARSER_MAX_DEPTH) */
	for (size_t i = 0; i < m->n; i++) {
		const pb_json_field_t *f = &m->f[i];
		const char *key = f->json;
		json_t *v = json_object_get(obj, key);
		if (!v) {
			key = f->proto;
			v = json_object_get(obj, key);
		}
		if (!v || json_is_null(v))
			continue;
		size_t old = path_push_key(c, key);
		if (f->card == PB_J_REPEATED) {
			if (!json_is_array(v))
				return jfail(c, "expected an array");
			if (f->type != PB_J_MSG && f->type != PB_J_STRING && f->type != PB_J_BYTES &&
			    f->type != PB_J_HEX) {
				if (enc_packed(c, f, v) < 0)
					return -1;
			} else {
				for (size_t k = 0; k < json_array_size(v); k++) {
					size_t o = path_push_ix(c, k);
					if (enc_value(c, f, json_array_get(v, k), depth) < 0)
						return -1;
					path_pop(c, o);
				}
			}
		} else if (enc_value(c, f, v, depth) < 0) {
			return -1;
		}
		path_pop(c, old);
	}
	return 0;
}

int pb_json_to_pb(slice_t json, const pb_json_msg_t *root, const char *root_name, buf_t *pb, err_t *err)
{
	if (json.n == 0)
		return err_set(err, 400, "malformed JSON: the body is empty");
	json_error_t jerr;
	json_t *tree = json_loadb((const char *)json.p, json.n, JSON_ALLOW_NUL, &jerr);
	if (!tree)
		return err_set(err, 400, "malformed JSON at line %d, column %d: %s", jerr.line, jerr.column,
		               jerr.text);
	jctx_t c = {.err = err, .root = root_name};
	buf_init(&c.out, SIZE_MAX);
	c.limit = pb->max > pb->n ? pb->max - pb->n : 0;
	int rc = enc_msg(&c, root, tree, 0);
	if (rc == 0 && buf_append(pb, c.out.p, c.out.n) < 0)
		rc =
		    err_set(err, 413, "the request transcoded from JSON exceeds the %zu-byte limit", c.limit);
	json_decref(tree);
	buf_free(&c.out);
	free(c.nums);
	return rc;
}
