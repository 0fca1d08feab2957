/* The selector half of query/selector.h: a hand-written lexer and parser
 * for Prometheus's metric selector (the rules of promql/parser's lexer and
 * strutil.Unquote, which Pyroscope's ParseMetricSelector runs), copying
 * names and values into one buffer the selector owns. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/limits.h"
#include "query/selector.h"

typedef struct {
	const uint8_t *s;
	size_t n, pos;
	uint8_t *out; /* unquoted strings, back to back; never longer than the text */
	size_t o;
	err_t *err;
} lx_t;

static int perr(lx_t *l, size_t at, const char *what)
{
	return err_set(l->err, 400, "selector: at %zu: %s", at, what);
}

static void skip_ws(lx_t *l)
{
	while (l->pos < l->n &&
	       (l->s[l->pos] == ' ' || l->s[l->pos] == '\t' || l->s[l->pos] == '\n' || l->s[l->pos] == '\r'))
		l->pos++;
}

static int is_alpha(uint8_t c)
{
	return c == '_' || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

/* A run of [a-zA-Z0-9_] (and ':' if colon) from l->pos, copied out. */
static slice_t ident(lx_t *l, int colon)
{
	size_t b = l->pos;
	while (l->pos < l->n && (is_alpha(l->s[l->pos]) || (l->s[l->pos] >= '0' && l->s[l->pos] <= '9') ||
	                         (colon && l->s[l->pos] == ':')))
		l->pos++;
	slice_t r = slice_make(l->out + l->o, l->pos - b);
	memcpy(l->out + l->o, l->s + b, r.n);
	l->o += r.n;
	return r;
}

static int hex(uint8_t c)
{
	return c >= '0' && c <= '9'                     ? c - '0'
	       : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10
	                                                : -1;
}

static void put_utf8(lx_t *l, uint32_t r)
{
	uint8_t *o = l->out + l->o;
	if (r < 0x80) {
		o[0] = (uint8_t)r, l->o += 1;
	} else if (r < 0x800) {
		o[0] = (uint8_t)(0xC0 | r >> 6), o[1] = (uint8_t)(0x80 | (r & 0x3F)), l->o += 2;
	} else if (r < 0x10000) {
		o[0] = (uint8_t)(0xE0 | r >> 12), o[1] = (uint8_t)(0x80 | ((r >> 6) & 0x3F));
		o[2] = (uint8_t)(0x80 | (r & 0x3F)), l->o += 3;
	} else {
		o[0] = (uint8_t)(0xF0 | r >> 18), o[1] = (uint8_t)(0x80 | ((r >> 12) & 0x3F));
		o[2] = (uint8_t)(0x80 | ((r >> 6) & 0x3F)), o[3] = (uint8_t)(0x80 | (r & 0x3F)), l->o += 4;
	}
}

/* One escape; l->pos is on the backslash inside a string quoted with q. */
static int unescape(lx_t *l, uint8_t q)
{
	size_t at = l->pos++;
	uint8_t c = l->s[l->pos++];
	static const char simple[] = "a\ab\bf\fn\nr\rt\tv\v\\\\";
	for (const char *e = simple; *e; e += 2)
		if (c == (uint8_t)e[0]) {
			l->out[l->o++] = (uint8_t)e[1];
			return 0;
		}
	if (c == q) {
		l->out[l->o++] = c;
		return 0;
	}
	int digits = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : c >= '0' && c <= '7' ? 3 : 0;
	if (!digits) {
		char what[48];
		if (c >= 0x21 && c < 0x7F)
			snprintf(what, sizeof what, "unknown escape sequence \\%c", c);
		else
			snprintf(what, sizeof what, "unknown escape sequence \\ before byte 0x%02x", c);
		return perr(l, at, what);
	}
	if (digits == 3)
		l->pos--; /* the first octal digit is one of the three */
	uint32_t v = 0;
	for (int i = 0; i < digits; i++, l->pos++) {
		int d = l->pos < l->n ? hex(l->s[l->pos]) : -1;
		if (d < 0 || (digits == 3 && d > 7))
			return perr(l, at, "escape sequence: too few digits");
		v = v * (digits == 3 ? 8 : 16) + (uint32_t)d;
	}
	if (digits <= 3) {
		if (v > 255)
			return perr(l, at, "octal escape sequence past \\377");
		l->out[l->o++] = (uint8_t)v; /* one byte, UTF-8 or not (Go's \x and \ooo) */
		return 0;
	}
	if (v > 0x10FFFF || (v >= 0xD800 && v < 0xE000))
		return perr(l, at, "escape sequence is an invalid Unicode code point");
	put_utf8(l, v);
	return 0;
}

/* A string literal at l->pos ("...", '...' or `...`), unquoted into *out. */
static int string_lit(lx_t *l, slice_t *out)
{
	size_t at = l->pos;
	uint8_t q = l->s[l->pos++];
	size_t b = l->pos, e = b;
	while (e < l->n && l->s[e] != q) {
		if (q != '`' && (l->s[e] == '\n' || (l->s[e] == '\\' && ++e >= l->n)))
			break;
		e++;
	}
	if (e >= l->n || l->s[e] != q)
		return perr(l, at, q == '`' ? "unterminated raw string" : "unterminated quoted string");
	size_t valid = utf8_valid_prefix(slice_make(l->s + b, e - b));
	if (valid < e - b)
		return perr(l, b + valid, "invalid UTF-8");
	out->p = l->out + l->o;
	while (l->pos < e) {
		if (q != '`' && l->s[l->pos] == '\\') {
			if (unescape(l, q) < 0)
				return -1;
		} else {
			l->out[l->o++] = l->s[l->pos++];
		}
	}
	l->pos = e + 1;
	out->n = (size_t)(l->out + l->o - out->p);
	return 0;
}

static int is_quote(lx_t *l)
{
	return l->pos < l->n && (l->s[l->pos] == '"' || l->s[l->pos] == '\'' || l->s[l->pos] == '`');
}

/* One matcher inside the braces at l->pos. */
static int matcher(lx_t *l, sel_matcher_t *m)
{
	size_t at = l->pos;
	int quoted = is_quote(l);
	if (quoted) {
		if (string_lit(l, &m->name) < 0)
			return -1;
	} else if (l->pos < l->n && is_alpha(l->s[l->pos])) {
		m->name = ident(l, 0);
	} else {
		return perr(l, at, "expected a label name, a string or \"}\"");
	}
	skip_ws(l);
	if (quoted && (l->pos >= l->n || l->s[l->pos] == ',' || l->s[l->pos] == '}')) {
		m->value = m->name; /* {"name"} is __name__="name" */
		m->name = slice_cstr("__name__");
		m->op = SEL_EQ;
		return 0;
	}
	const uint8_t *s = l->s + l->pos;
	size_t left = l->n - l->pos;
	if (left >= 2 && s[0] == '=' && s[1] == '~')
		m->op = SEL_RE, l->pos += 2;
	else if (left >= 2 && s[0] == '!' && s[1] == '~')
		m->op = SEL_NRE, l->pos += 2;
	else if (left >= 2 && s[0] == '!' && s[1] == '=')
		m->op = SEL_NE, l->pos += 2;
	else if (left >= 1 && s[0] == '=')
		m->op = SEL_EQ, l->pos += 1;
	else
		return perr(l, l->pos, "expected \"=\", \"!=\", \"=~\" or \"!~\"");
	skip_ws(l);
	if (!is_quote(l))
		return perr(l, l->pos, "expected a string in \"...\", '...' or `...`");
	size_t vat = l->pos;
	if (string_lit(l, &m->value) < 0)
		return -1;
	if (!m->name.n)
		return perr(l, at, "empty label name");
	if (m->op == SEL_RE || m->op == SEL_NRE) {
		if (m->value.n > LIMIT_SELECTOR_REGEX_BYTES) {
			char what[64];
			snprintf(what, sizeof what, "regex longer than %d bytes", LIMIT_SELECTOR_REGEX_BYTES);
			return perr(l, vat, what);
		}
		if (sel_regex_compile(m->value, &m->re, l->err) < 0)
			return err_prefix(l->err, "selector: at %zu", vat);
	}
	return 0;
}

int sel_parse(slice_t text, sel_t *out, err_t *err)
{
	memset(out, 0, sizeof *out);
	if (text.n > LIMIT_SELECTOR_BYTES)
		return err_set(err, 400, "selector: at %d: longer than %d bytes", LIMIT_SELECTOR_BYTES,
		               LIMIT_SELECTOR_BYTES);
	lx_t l = {.s = text.p, .n = text.n, .out = xmalloc(text.n + 1), .err = err};
	out->_text = l.out;
	size_t cap = 0;
	skip_ws(&l);
	if (l.pos < l.n && (is_alpha(l.s[l.pos]) || l.s[l.pos] == ':')) {
		out->metric = ident(&l, 1);
		skip_ws(&l);
	}
	int braces = l.pos < l.n && l.s[l.pos] == '{';
	if (!braces && !out->metric.n)
		goto expected;
	if (braces) {
		l.pos++;
		for (;;) {
			skip_ws(&l);
			if (l.pos < l.n && l.s[l.pos] == '}')
				break;
			if (out->n == LIMIT_SELECTOR_MATCHERS) {
				char what[48];
				snprintf(what, sizeof what, "more than %d matchers", LIMIT_SELECTOR_MATCHERS);
				perr(&l, l.pos, what);
				goto fail;
			}
			out->m = xgrow(out->m, &cap, out->n + 1, sizeof *out->m);
			memset(&out->m[out->n], 0, sizeof *out->m);
			out->n++;
			if (matcher(&l, &out->m[out->n - 1]) < 0)
				goto fail;
			skip_ws(&l);
			if (l.pos < l.n && l.s[l.pos] == '}')
				break;
			if (l.pos >= l.n || l.s[l.pos] != ',') {
				perr(&l, l.pos, "expected \",\" or \"}\"");
				goto fail;
			}
			l.pos++;
		}
		l.pos++;
		skip_ws(&l);
	}
	if (l.pos == l.n)
		return 0;
expected:
	perr(&l, l.pos,
	     braces          ? "expected the end of the selector"
	     : out->metric.n ? "expected \"{\" or the end of the selector"
	                     : "expected a metric name or \"{\"");
fail:
	sel_free(out);
	return -1;
}

void sel_free(sel_t *sel)
{
	if (!sel)
		return;
	for (uint32_t i = 0; i < sel->n; i++)
		sel_regex_free(&sel->m[i].re);
	free(sel->m);
	free(sel->_text);
	memset(sel, 0, sizeof *sel);
}

int sel_match(const sel_matcher_t *m, slice_t value)
{
	switch (m->op) {
	case SEL_EQ:
		return slice_eq(value, m->value);
	case SEL_NE:
		return !slice_eq(value, m->value);
	case SEL_RE:
		return sel_regex_match(&m->re, value, NULL);
	default:
		return !sel_regex_match(&m->re, value, NULL);
	}
}

static slice_t label_value(slice_t name, const slice_t *names, const slice_t *values, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (slice_eq(names[i], name))
			return values[i];
	return slice_make(NULL, 0);
}

int sel_match_labels(const sel_t *sel, const slice_t *names, const slice_t *values, uint32_t n)
{
	for (uint32_t i = 0; i < sel->n; i++)
		if (!sel_match(&sel->m[i], label_value(sel->m[i].name, names, values, n)))
			return 0;
	return 1;
}
