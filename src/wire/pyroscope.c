/* Pyroscope's push protocol, the text parts (wire/pyroscope.h): the
 * application name with labels, the unit-by-length timestamps and the error
 * body. Bounded by LIMIT_PYRO_NAME_BYTES and LIMIT_LABELS; no allocation. */
#include "wire/pyroscope.h"

#include <stdlib.h>
#include <string.h>

#include "base/timeutil.h"

static int fail(err_t *err, size_t pos, const char *what)
{
	return err_set(err, 400, "name: %s at byte %zu", what, pos);
}

static int is_space(uint8_t c)
{
	return c == ' ' || c == '\t';
}

static int is_key_byte(uint8_t c)
{
	return !is_space(c) && c != '=' && c != ',' && c != '{' && c != '}' && c != '"';
}

static size_t skip_spaces(const uint8_t *s, size_t n, size_t i)
{
	while (i < n && is_space(s[i]))
		i++;
	return i;
}

/* s[start, end) without surrounding spaces. */
static slice_t trimmed(const uint8_t *s, size_t start, size_t end)
{
	start = skip_spaces(s, end, start);
	while (end > start && is_space(s[end - 1]))
		end--;
	return slice_make(s + start, end - start);
}

/* A value at s[*i] (past the spaces after '='): quoted into text (at *used),
 * or unquoted (a slice of s). */
static int parse_value(const uint8_t *s, size_t n, size_t *i, pyro_name_t *out, size_t *used, slice_t *value,
                       err_t *err)
{
	size_t p = *i;
	if (p < n && s[p] == '"') {
		size_t quote = p++;
		char *o = out->_text + *used;
		size_t vn = 0;
		for (;;) {
			if (p == n)
				return fail(err, quote, "unterminated quoted value");
			if (s[p] == '"')
				break;
			if (s[p] == '\\' && p + 1 < n && (s[p + 1] == '"' || s[p + 1] == '\\'))
				p++;
			o[vn++] = (char)s[p++];
		}
		*used += vn;
		*value = slice_make(o, vn);
		*i = p + 1;
		return 0;
	}
	size_t start = p;
	for (; p < n && s[p] != ',' && s[p] != '}'; p++)
		if (s[p] == '{' || s[p] == '"' || s[p] == '=')
			return err_set(err, 400, "name: unexpected '%c' in a label value at byte %zu", s[p],
			               p);
	*value = trimmed(s, start, p);
	if (!value->n)
		return fail(err, p, "expected a label value");
	*i = p;
	return 0;
}

int pyro_name_parse(slice_t name, pyro_name_t *out, err_t *err)
{
	const uint8_t *s = name.p;
	size_t n = name.n, i = 0, used = 0;
	out->app = slice_make(NULL, 0);
	out->n_labels = 0;
	if (n > LIMIT_PYRO_NAME_BYTES)
		return err_set(err, 400, "name: longer than %u bytes at byte %u", LIMIT_PYRO_NAME_BYTES,
		               LIMIT_PYRO_NAME_BYTES);
	for (size_t k = 0; k < n; k++)
		if (s[k] < 0x20 || s[k] == 0x7f)
			return err_set(err, 400, "name: control byte 0x%02x at byte %zu", s[k], k);
	for (; i < n && s[i] != '{'; i++)
		if (s[i] == '}')
			return fail(err, i, "'}' without '{'");
	out->app = trimmed(s, 0, i);
	if (!out->app.n)
		return fail(err, 0, "empty application name");
	if (i == n)
		return 0;
	i++;
	for (;;) {
		i = skip_spaces(s, n, i);
		if (i < n && s[i] == '}')
			break; /* `{}`, or after a trailing ',' */
		size_t key_at = i;
		while (i < n && is_key_byte(s[i]))
			i++;
		if (i == key_at)
			return i == n ? fail(err, i, "missing '}'") : fail(err, i, "empty label key");
		slice_t key = slice_make(s + key_at, i - key_at), value;
		i = skip_spaces(s, n, i);
		if (i == n || s[i] != '=')
			return fail(err, i, "expected '='");
		i = skip_spaces(s, n, i + 1);
		if (parse_value(s, n, &i, out, &used, &value, err) < 0)
			return -1;
		for (uint32_t k = 0; k < out->n_labels; k++)
			if (slice_eq(out->labels[k].key, key))
				return fail(err, key_at, "duplicate label key");
		if (out->n_labels == LIMIT_LABELS)
			return err_set(err, 400, "name: more than %u labels at byte %zu", LIMIT_LABELS,
			               key_at);
		out->labels[out->n_labels++] = (pyro_label_t){key, value};
		i = skip_spaces(s, n, i);
		if (i == n)
			return fail(err, i, "missing '}'");
		if (s[i] == '}')
			break;
		if (s[i] != ',')
			return fail(err, i, "expected ',' or '}'");
		i++;
	}
	if (i + 1 != n)
		return fail(err, i + 1, "unexpected bytes after '}'");
	return 0;
}

int pyro_time_parse(const char *s, int64_t now_ns, int64_t *out_ns)
{
	size_t len = s ? strspn(s, "0123456789") : 0;
	if (len && !s[len] && (len == 13 || len == 16 || len == 19)) {
		uint64_t v = strtoull(s, NULL, 10); /* 19 digits fit in 64 bits */
		uint64_t per_s = len == 13 ? 1000u : len == 16 ? 1000000u : 1000000000u;
		if (v / per_s > (uint64_t)TIME_PARSE_MAX_SECONDS)
			return -1;
		*out_ns = (int64_t)(v * (NS_PER_SEC / per_s));
		return 0;
	}
	return time_parse(s, now_ns, out_ns);
}

void pyro_error_json(int status, const char *msg, buf_t *out)
{
	const char *code;
	switch (status) {
	case 400:
		code = "invalid_argument";
		break;
	case 401:
		code = "unauthenticated";
		break;
	case 403:
		code = "permission_denied";
		break;
	case 404:
		code = "not_found";
		break;
	case 405:
	case 415:
		code = "unimplemented";
		break;
	case 413:
	case 429:
		code = "resource_exhausted";
		break;
	case 503:
		code = "unavailable";
		break;
	case 504:
		code = "deadline_exceeded";
		break;
	default:
		code = "internal";
		break;
	}
	buf_printf(out, "{\"code\":\"%s\",\"message\":", code);
	buf_json_str(out, slice_cstr(msg));
	buf_puts(out, "}");
}
