/* The regex half of query/selector.h: an RE2-subset parser into a small
 * tree, a compiler into a Pike VM program (repetitions expanded, so the
 * program's size is known before it is built) and the VM, which runs every
 * thread of the NFA in step over the input once and never backtracks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "query/selector.h"

#define MAX_RUNE 0x10FFFFu
#define REPEAT_MAX 1000 /* RE2's bound on m and n of {m,n} */

enum { I_RUNE, I_CLASS, I_ANY, I_BOL, I_EOL, I_SPLIT, I_JMP, I_MATCH };
enum { N_EMPTY, N_LIT, N_CLASS, N_BOL, N_EOL, N_CAT, N_ALT, N_REP };

typedef struct {
	uint8_t kind;
	int32_t min, max;           /* N_REP; max -1: unbounded */
	uint32_t rune;              /* N_LIT */
	uint32_t r0, nr;            /* N_CLASS: ranges[2*r0 ..] */
	uint32_t first, last, next; /* children (N_CAT, N_ALT, N_REP), next sibling; 0: none */
	uint32_t size;              /* instructions it compiles to (saturating) */
} node_t;

typedef struct {
	const uint8_t *s;
	size_t n, pos;
	int fold;
	unsigned depth;
	node_t *nodes; /* nodes[0] unused: 0 is "none" */
	size_t n_nodes, cap_nodes;
	uint32_t *ranges;
	size_t n_ranges, cap_ranges; /* in pairs */
	sel_inst_t *insts;
	uint32_t n_insts;
	err_t *err;
} rx_t;

static int fail(rx_t *p, size_t at, const char *what)
{
	return err_set(p->err, 400, "regex: at %zu: %s", at, what);
}

/* Go's UTF-8 decoding: a byte that starts no valid sequence is U+FFFD, width 1. */
static uint32_t utf8_decode(const uint8_t *s, size_t n, size_t *w)
{
	uint8_t c = s[0];
	*w = 1;
	if (c < 0x80)
		return c;
	uint32_t r, min;
	size_t len;
	if (c >= 0xC2 && c <= 0xDF)
		r = c & 0x1F, len = 2, min = 0x80;
	else if (c >= 0xE0 && c <= 0xEF)
		r = c & 0x0F, len = 3, min = 0x800;
	else if (c >= 0xF0 && c <= 0xF4)
		r = c & 0x07, len = 4, min = 0x10000;
	else
		return 0xFFFD;
	if (n < len)
		return 0xFFFD;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0xFFFD;
		r = r << 6 | (s[i] & 0x3F);
	}
	if (r < min || r > MAX_RUNE || (r >= 0xD800 && r <= 0xDFFF))
		return 0xFFFD;
	*w = len;
	return r;
}

static uint32_t sat_add(uint32_t a, uint32_t b)
{
	return a > UINT32_MAX - b ? UINT32_MAX : a + b;
}

static uint32_t sat_mul(uint32_t a, uint32_t b)
{
	return b && a > UINT32_MAX / b ? UINT32_MAX : a * b;
}

static uint32_t node_new(rx_t *p, int kind)
{
	p->nodes = xgrow(p->nodes, &p->cap_nodes, p->n_nodes + 1, sizeof *p->nodes);
	node_t *nd = &p->nodes[p->n_nodes];
	memset(nd, 0, sizeof *nd);
	nd->kind = (uint8_t)kind;
	nd->size = kind == N_EMPTY || kind >= N_CAT ? 0 : 1;
	return (uint32_t)p->n_nodes++;
}

static void node_add(rx_t *p, uint32_t parent, uint32_t child)
{
	node_t *pa = &p->nodes[parent];
	if (pa->last)
		p->nodes[pa->last].next = child;
	else
		pa->first = child;
	pa->last = child;
}

/* ---- character classes: sorted, merged rune ranges ---- */

static void range_add(rx_t *p, uint32_t lo, uint32_t hi)
{
	p->ranges = xgrow(p->ranges, &p->cap_ranges, 2 * (p->n_ranges + 1), sizeof *p->ranges);
	p->ranges[2 * p->n_ranges] = lo;
	p->ranges[2 * p->n_ranges + 1] = hi;
	p->n_ranges++;
}

/* Adds lo-hi and, under (?i), the other case of the ASCII letters in it. */
static void range_add_fold(rx_t *p, uint32_t lo, uint32_t hi)
{
	range_add(p, lo, hi);
	if (!p->fold)
		return;
	uint32_t a = lo > 'a' ? lo : 'a', b = hi < 'z' ? hi : 'z';
	if (a <= b)
		range_add(p, a - 32, b - 32);
	a = lo > 'A' ? lo : 'A', b = hi < 'Z' ? hi : 'Z';
	if (a <= b)
		range_add(p, a + 32, b + 32);
}

static int range_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Sorts and merges the ranges from pair r0 on; complements them if negate. */
static void ranges_finish(rx_t *p, size_t r0, int negate)
{
	uint32_t *r = p->ranges + 2 * r0;
	size_t n = p->n_ranges - r0, m = 0;
	qsort(r, n, 2 * sizeof *r, range_cmp);
	for (size_t i = 0; i < n; i++) {
		if (m && r[2 * i] <= r[2 * m - 1] + 1) {
			if (r[2 * i + 1] > r[2 * m - 1])
				r[2 * m - 1] = r[2 * i + 1];
		} else {
			r[2 * m] = r[2 * i], r[2 * m + 1] = r[2 * i + 1];
			m++;
		}
	}
	p->n_ranges = r0 + m;
	if (!negate)
		return;
	uint32_t *tmp = xmalloc(2 * m * sizeof *tmp + 1);
	memcpy(tmp, r, 2 * m * sizeof *tmp);
	p->n_ranges = r0;
	uint32_t next = 0;
	for (size_t i = 0; i < m; i++) {
		if (tmp[2 * i] > next)
			range_add(p, next, tmp[2 * i] - 1);
		next = tmp[2 * i + 1] + 1;
	}
	if (next <= MAX_RUNE)
		range_add(p, next, MAX_RUNE);
	free(tmp);
}

/* \d \s \w and their negations, into the class being built. */
static void perl_class(rx_t *p, uint8_t c)
{
	static const uint32_t d[] = {'0', '9'}, s[] = {'\t', '\n', '\f', '\r', ' ', ' '},
	                      w[] = {'0', '9', 'A', 'Z', '_', '_', 'a', 'z'};
	const uint32_t *t;
	size_t n;
	switch (c | 0x20) {
	case 'd':
		t = d, n = 1;
		break;
	case 's':
		t = s, n = 3;
		break;
	case 'w':
		t = w, n = 4;
		break;
	default:
		return;
	}
	size_t r0 = p->n_ranges;
	for (size_t i = 0; i < n; i++)
		range_add(p, t[2 * i], t[2 * i + 1]);
	if (c >= 'A' && c <= 'Z') /* \D \S \W: complement these, then keep them with the class */
		ranges_finish(p, r0, 1);
}

static int hexval(uint8_t c)
{
	return c >= '0' && c <= '9'                     ? c - '0'
	       : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10
	                                                : -1;
}

/* An escape after '\' at p->pos - 1: 1 and *rune for a single rune, 2 when it
 * added a Perl class to the ranges (only where classes may be), -1 on error. */
static int escape(rx_t *p, uint32_t *rune, int class_ok)
{
	size_t at = p->pos - 1;
	if (p->pos >= p->n)
		return fail(p, at, "trailing backslash at end of expression");
	uint8_t c = p->s[p->pos++];
	switch (c) {
	case 'a':
		return *rune = 7, 1;
	case 'f':
		return *rune = '\f', 1;
	case 'n':
		return *rune = '\n', 1;
	case 'r':
		return *rune = '\r', 1;
	case 't':
		return *rune = '\t', 1;
	case 'v':
		return *rune = '\v', 1;
	case 'd':
	case 'D':
	case 's':
	case 'S':
	case 'w':
	case 'W':
		if (!class_ok)
			return fail(p, at, "a class escape cannot end a range");
		perl_class(p, c);
		return 2;
	case 'x': {
		uint32_t v = 0;
		if (p->pos < p->n && p->s[p->pos] == '{') {
			size_t i = p->pos + 1, digits = 0;
			for (; i < p->n && hexval(p->s[i]) >= 0; i++, digits++) {
				v = v * 16 + (uint32_t)hexval(p->s[i]);
				if (v > MAX_RUNE)
					return fail(p, at, "invalid escape sequence: \\x{...} past U+10FFFF");
			}
			if (!digits || i >= p->n || p->s[i] != '}')
				return fail(p, at, "invalid escape sequence: \\x{ without hex digits and }");
			p->pos = i + 1;
			return *rune = v, 1;
		}
		if (p->pos + 2 > p->n || hexval(p->s[p->pos]) < 0 || hexval(p->s[p->pos + 1]) < 0)
			return fail(p, at, "invalid escape sequence: \\x without two hex digits");
		v = (uint32_t)(hexval(p->s[p->pos]) * 16 + hexval(p->s[p->pos + 1]));
		p->pos += 2;
		return *rune = v, 1;
	}
	default:
		break;
	}
	if (c >= '0' && c <= '7' &&
	    (c == '0' || (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '7'))) {
		uint32_t v = c - '0';
		for (int k = 0; k < 2 && p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '7'; k++)
			v = v * 8 + (p->s[p->pos++] - '0');
		return *rune = v, 1;
	}
	if (c < 0x80 && !(c >= '0' && c <= '9') && !((c | 0x20) >= 'a' && (c | 0x20) <= 'z'))
		return *rune = c, 1; /* any other ASCII byte stands for itself, as in RE2 */
	char what[64];
	if (c >= 0x80)
		return fail(p, at, "invalid escape sequence: \\ before a non-ASCII character");
	snprintf(what, sizeof what, "\\%c is not supported", c);
	return fail(p, at, what);
}

/* [...] at p->pos (on '['); the class node. */
static int parse_class(rx_t *p, uint32_t *out)
{
	size_t at = p->pos++, r0 = p->n_ranges;
	int negate = p->pos < p->n && p->s[p->pos] == '^';
	p->pos += (size_t)negate;
	for (int first = 1;; first = 0) {
		if (p->pos >= p->n)
			return fail(p, at, "missing closing ]");
		uint8_t c = p->s[p->pos];
		if (c == ']' && !first)
			break;
		if (c == '[' && p->pos + 1 < p->n && p->s[p->pos + 1] == ':') {
			size_t e = p->pos + 2;
			while (e < p->n && p->s[e] >= 'a' && p->s[e] <= 'z')
				e++;
			if (e + 1 < p->n && p->s[e] == ':' && p->s[e + 1] == ']') {
				char what[64];
				snprintf(what, sizeof what, "[%.*s] is not supported", (int)(e + 2 - p->pos),
				         (const char *)p->s + p->pos);
				return fail(p, p->pos, what);
			}
		}
		size_t item = p->pos, w;
		uint32_t lo, hi;
		if (c == '\\') {
			p->pos++;
			int k = escape(p, &lo, 1);
			if (k < 0)
				return -1;
			if (k == 2) /* \d \s \w and negations: closed under ASCII case */
				continue;
		} else {
			lo = utf8_decode(p->s + p->pos, p->n - p->pos, &w);
			p->pos += w;
		}
		hi = lo;
		if (p->pos + 1 < p->n && p->s[p->pos] == '-' && p->s[p->pos + 1] != ']') {
			p->pos++;
			if (p->s[p->pos] == '\\') {
				p->pos++;
				if (escape(p, &hi, 0) < 0)
					return -1;
			} else {
				hi = utf8_decode(p->s + p->pos, p->n - p->pos, &w);
				p->pos += w;
			}
			if (hi < lo) {
				char what[80];
				snprintf(what, sizeof what, "invalid character class range: %.*s",
				         (int)(p->pos - item), (const char *)p->s + item);
				return fail(p, item, what);
			}
		}
		range_add_fold(p, lo, hi);
	}
	p->pos++;
	ranges_finish(p, r0, negate);
	uint32_t nd = node_new(p, N_CLASS);
	p->nodes[nd].r0 = (uint32_t)r0;
	p->nodes[nd].nr = (uint32_t)(p->n_ranges - r0);
	*out = nd;
	return 0;
}

static uint32_t lit_node(rx_t *p, uint32_t r)
{
	if (p->fold && ((r | 0x20) >= 'a' && (r | 0x20) <= 'z')) {
		size_t r0 = p->n_ranges;
		range_add_fold(p, r, r);
		ranges_finish(p, r0, 0);
		uint32_t nd = node_new(p, N_CLASS);
		p->nodes[nd].r0 = (uint32_t)r0;
		p->nodes[nd].nr = (uint32_t)(p->n_ranges - r0);
		return nd;
	}
	uint32_t nd = node_new(p, N_LIT);
	p->nodes[nd].rune = r;
	return nd;
}

/* {m}, {m,} or {m,n} at p->pos: 1 with *min, *max and p->pos past it, 0 when
 * the text is no repeat (then '{' is a literal, as in RE2), -1 on error. */
static int parse_repeat(rx_t *p, int32_t *min, int32_t *max)
{
	size_t i = p->pos + 1;
	int32_t v[2] = {-1, -1};
	int k = 0;
	for (;; i++) {
		if (i >= p->n)
			return 0;
		uint8_t c = p->s[i];
		if (c >= '0' && c <= '9') {
			v[k] = (v[k] < 0 ? 0 : v[k]) * 10 + (c - '0');
			if (v[k] > 100000)
				v[k] = 100000;
		} else if (c == ',' && k == 0 && v[0] >= 0) {
			k = 1;
		} else if (c == '}' && v[0] >= 0) {
			break;
		} else {
			return 0;
		}
	}
	*min = v[0];
	*max = k == 0 ? v[0] : v[1]; /* {m,} leaves -1 */
	if (*min > REPEAT_MAX || *max > REPEAT_MAX || (*max >= 0 && *max < *min)) {
		char what[80];
		snprintf(what, sizeof what, "invalid repeat count: %.*s", (int)(i + 1 - p->pos),
		         (const char *)p->s + p->pos);
		return fail(p, p->pos, what);
	}
	p->pos = i + 1;
	return 1;
}

static int parse_alt(rx_t *p, uint32_t *out);

/* (...) at p->pos (on '('): flags change p->fold and give *out 0. */
static int parse_group(rx_t *p, uint32_t *out)
{
	size_t at = p->pos++;
	int saved = p->fold;
	if (p->pos < p->n && p->s[p->pos] == '?') {
		p->pos++;
		if (p->pos < p->n && (p->s[p->pos] == 'P' || p->s[p->pos] == '<')) {
			p->pos += p->s[p->pos] == 'P';
			if (p->pos >= p->n || p->s[p->pos] != '<')
				return fail(p, at, "invalid named capture");
			size_t e = ++p->pos;
			while (e < p->n && (p->s[e] == '_' || (p->s[e] >= '0' && p->s[e] <= '9') ||
			                    ((p->s[e] | 0x20) >= 'a' && (p->s[e] | 0x20) <= 'z')))
				e++;
			if (e == p->pos || e >= p->n || p->s[e] != '>')
				return fail(p, at, "invalid named capture");
			p->pos = e + 1;
		} else {
			int on = 1, fold = p->fold, any = 0;
			for (size_t start = p->pos;; p->pos++) {
				if (p->pos >= p->n)
					return fail(p, at, "missing closing )");
				uint8_t c = p->s[p->pos];
				if (c == 'i')
					fold = on, any = 1;
				else if (c == 's' && on)
					any = 1; /* '.' matches a newline already (Prometheus's ^(?s:re)$) */
				else if (c == 's')
					return fail(p, p->pos, "flag -s is not supported");
				else if (c == '-' && on)
					on = 0, any = 0;
				else if ((c == ')' && any) || (c == ':' && (any || p->pos == start)))
					break;
				else if (c == 'm' || c == 'U') {
					char what[48];
					snprintf(what, sizeof what, "flag %c is not supported", c);
					return fail(p, p->pos, what);
				} else
					return fail(p, at, "invalid or unsupported group flags");
			}
			p->fold = fold;
			if (p->s[p->pos++] == ')') { /* (?i): for the rest of the enclosing group */
				*out = 0;
				return 0;
			}
		}
	}
	if (++p->depth > LIMIT_SELECTOR_REGEX_DEPTH) {
		char what[64];
		snprintf(what, sizeof what, "nested deeper than %d", LIMIT_SELECTOR_REGEX_DEPTH);
		return fail(p, at, what);
	}
	if (parse_alt(p, out) < 0)
		return -1;
	p->depth--;
	if (p->pos >= p->n || p->s[p->pos] != ')')
		return fail(p, at, "missing closing )");
	p->pos++;
	p->fold = saved;
	return 0;
}

static uint32_t rep_size(uint32_t s, int32_t min, int32_t max)
{
	if (!s)
		return 0;
	if (max < 0)
		return min == 0 ? sat_add(s, 2) : sat_add(sat_mul(s, (uint32_t)min), 1);
	return sat_add(sat_mul(s, (uint32_t)min), sat_mul(sat_add(s, 1), (uint32_t)(max - min)));
}

static int too_big(rx_t *p, uint32_t size, size_t at)
{
	if (size < LIMIT_SELECTOR_REGEX_INSTS)
		return 0;
	char what[96];
	snprintf(what, sizeof what, "too large: more than %d instructions with repetitions expanded",
	         LIMIT_SELECTOR_REGEX_INSTS);
	return fail(p, at, what);
}

/* A concatenation up to '|', ')' or the end; *out a N_CAT node. */
static int parse_cat(rx_t *p, uint32_t *out)
{
	uint32_t cat = node_new(p, N_CAT);
	while (p->pos < p->n && p->s[p->pos] != '|' && p->s[p->pos] != ')') {
		size_t at = p->pos;
		uint8_t c = p->s[at];
		uint32_t atom = 0, r = 0;
		int32_t min = 0, max = 0;
		switch (c) {
		case '(':
			if (parse_group(p, &atom) < 0)
				return -1;
			if (!atom)
				continue;
			break;
		case '[':
			if (parse_class(p, &atom) < 0)
				return -1;
			break;
		case '.':
			p->pos++;
			atom = node_new(p, N_CLASS);
			p->nodes[atom].r0 = (uint32_t)p->n_ranges;
			p->nodes[atom].nr = 1;
			range_add(p, 0, MAX_RUNE);
			break;
		case '^':
		case '$':
			p->pos++;
			atom = node_new(p, c == '^' ? N_BOL : N_EOL);
			break;
		case '\\': {
			p->pos++;
			size_t r0 = p->n_ranges;
			int k = escape(p, &r, 1);
			if (k < 0)
				return -1;
			if (k == 2) {
				ranges_finish(p, r0, 0);
				atom = node_new(p, N_CLASS);
				p->nodes[atom].r0 = (uint32_t)r0;
				p->nodes[atom].nr = (uint32_t)(p->n_ranges - r0);
			} else {
				atom = lit_node(p, r);
			}
			break;
		}
		case '*':
		case '+':
		case '?': {
			char what[64];
			snprintf(what, sizeof what, "missing argument to repetition operator: %c", c);
			return fail(p, at, what);
		}
		default: {
			if (c == '{') {
				int k = parse_repeat(p, &min, &max);
				if (k < 0)
					return -1;
				if (k > 0)
					return fail(p, at, "missing argument to repetition operator: {");
			}
			size_t w;
			r = utf8_decode(p->s + at, p->n - at, &w);
			if (r == 0xFFFD && w == 1 && p->s[at] >= 0x80)
				return fail(p, at, "invalid UTF-8");
			p->pos += w;
			atom = lit_node(p, r);
		}
		}
		/* Postfix repetitions: one, optionally lazy (the same strings match). */
		for (int reps = 0; p->pos < p->n; reps++) {
			size_t op = p->pos;
			c = p->s[op];
			if (c == '*' || c == '+' || c == '?') {
				min = c == '+', max = c == '?' ? 1 : -1;
				p->pos++;
			} else if (c == '{') {
				int k = parse_repeat(p, &min, &max);
				if (k < 0)
					return -1;
				if (k == 0)
					break;
			} else {
				break;
			}
			if (reps) {
				char what[80];
				snprintf(what, sizeof what, "invalid nested repetition operator: %.*s",
				         (int)(p->pos - op), (const char *)p->s + op);
				return fail(p, op, what);
			}
			if (p->pos < p->n && p->s[p->pos] == '?')
				p->pos++;
			uint32_t rep = node_new(p, N_REP);
			p->nodes[rep].min = min;
			p->nodes[rep].max = max;
			p->nodes[rep].size = rep_size(p->nodes[atom].size, min, max);
			node_add(p, rep, atom);
			atom = rep;
			if (too_big(p, p->nodes[rep].size, op))
				return -1;
		}
		p->nodes[cat].size = sat_add(p->nodes[cat].size, p->nodes[atom].size);
		node_add(p, cat, atom);
	}
	*out = cat;
	return 0;
}

static int parse_alt(rx_t *p, uint32_t *out)
{
	uint32_t alt = node_new(p, N_ALT), cat;
	for (int k = 0;; k++) {
		if (parse_cat(p, &cat) < 0)
			return -1;
		p->nodes[alt].size = sat_add(p->nodes[alt].size, sat_add(p->nodes[cat].size, k ? 2 : 0));
		node_add(p, alt, cat);
		if (p->pos >= p->n || p->s[p->pos] != '|')
			break;
		p->pos++;
	}
	*out = alt;
	return 0;
}

/* ---- compiling ---- */

static uint32_t emit(rx_t *p, int op, uint32_t x, uint32_t y)
{
	p->insts[p->n_insts] = (sel_inst_t){.op = (uint8_t)op, .x = x, .y = y};
	return p->n_insts++;
}

static void compile(rx_t *p, uint32_t id)
{
	const node_t *nd = &p->nodes[id];
	uint32_t c, l;
	switch (nd->kind) {
	case N_LIT:
		emit(p, I_RUNE, nd->rune, 0);
		break;
	case N_CLASS:
		if (nd->nr == 1 && p->ranges[2 * nd->r0] == 0 && p->ranges[2 * nd->r0 + 1] == MAX_RUNE)
			emit(p, I_ANY, 0, 0);
		else
			emit(p, I_CLASS, nd->r0, nd->nr);
		break;
	case N_BOL:
	case N_EOL:
		emit(p, nd->kind == N_BOL ? I_BOL : I_EOL, 0, 0);
		break;
	case N_CAT:
		for (c = nd->first; c; c = p->nodes[c].next)
			compile(p, c);
		break;
	case N_ALT: { /* SPLIT next-child, after-it; child; JMP end; ... last child */
		uint32_t end = p->n_insts + nd->size;
		for (c = nd->first; p->nodes[c].next; c = p->nodes[c].next) {
			emit(p, I_SPLIT, p->n_insts + 1, p->n_insts + 1 + p->nodes[c].size + 1);
			compile(p, c);
			emit(p, I_JMP, end, 0);
		}
		compile(p, c);
		break;
	}
	case N_REP: {
		uint32_t s = p->nodes[nd->first].size, end = p->n_insts + nd->size;
		if (!s)
			break; /* a repetition of nothing is nothing */
		int32_t min = nd->min, max = nd->max, copies = max < 0 && min > 0 ? min - 1 : min;
		for (int32_t i = 0; i < copies; i++)
			compile(p, nd->first);
		if (max < 0 && min == 0) { /* L: SPLIT body, end; body; JMP L */
			l = emit(p, I_SPLIT, p->n_insts + 1, end);
			compile(p, nd->first);
			emit(p, I_JMP, l, 0);
		} else if (max < 0) { /* L: body; SPLIT L, end */
			l = p->n_insts;
			compile(p, nd->first);
			emit(p, I_SPLIT, l, end);
		} else { /* (body (body ...)?)?: each optional copy's SPLIT skips to the end */
			for (int32_t i = min; i < max; i++) {
				emit(p, I_SPLIT, p->n_insts + 1, end);
				compile(p, nd->first);
			}
		}
		break;
	}
	default:
		break;
	}
}

int sel_regex_compile(slice_t pattern, sel_regex_t *out, err_t *err)
{
	memset(out, 0, sizeof *out);
	if (pattern.n > LIMIT_SELECTOR_REGEX_BYTES)
		return err_set(err, 400, "regex: at %d: longer than %d bytes", LIMIT_SELECTOR_REGEX_BYTES,
		               LIMIT_SELECTOR_REGEX_BYTES);
	rx_t p = {.s = pattern.p, .n = pattern.n, .err = err};
	node_new(&p, N_EMPTY); /* index 0: none */
	uint32_t root;
	int rc = parse_alt(&p, &root);
	if (rc == 0 && p.pos < p.n)
		rc = fail(&p, p.pos, "unexpected )");
	if (rc == 0 && too_big(&p, p.nodes[root].size, 0))
		rc = -1;
	if (rc == 0) {
		p.insts = xmalloc(((size_t)p.nodes[root].size + 1) * sizeof *p.insts);
		compile(&p, root);
		emit(&p, I_MATCH, 0, 0);
		out->insts = p.insts;
		out->n_insts = p.n_insts;
		out->ranges = p.ranges;
		out->n_ranges = (uint32_t)p.n_ranges;
		p.ranges = NULL;
	}
	free(p.nodes);
	free(p.ranges);
	return rc;
}

void sel_regex_free(sel_regex_t *re)
{
	if (!re)
		return;
	free(re->insts);
	free(re->ranges);
	memset(re, 0, sizeof *re);
}

/* ---- the VM ---- */

static int class_has(const sel_regex_t *re, const sel_inst_t *in, uint32_t r)
{
	const uint32_t *g = re->ranges + 2 * in->x;
	uint32_t lo = 0, hi = in->y;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (r < g[2 * mid])
			hi = mid;
		else if (r > g[2 * mid + 1])
			lo = mid + 1;
		else
			return 1;
	}
	return 0;
}

typedef struct {
	const sel_regex_t *re;
	uint32_t *mark, *stack, gen;
	uint64_t steps;
} vm_t;

/* Adds pc and what it reaches without reading (JMP, SPLIT, assertions at
 * pos) to list, each instruction once per generation. */
static void vm_add(vm_t *vm, uint32_t *list, uint32_t *n, uint32_t pc, size_t pos, size_t end)
{
	uint32_t sp = 0;
	vm->stack[sp++] = pc;
	while (sp) {
		pc = vm->stack[--sp];
		if (vm->mark[pc] == vm->gen)
			continue;
		vm->mark[pc] = vm->gen;
		vm->steps++;
		const sel_inst_t *in = &vm->re->insts[pc];
		switch (in->op) {
		case I_JMP:
			vm->stack[sp++] = in->x;
			break;
		case I_SPLIT:
			vm->stack[sp++] = in->y;
			vm->stack[sp++] = in->x;
			break;
		case I_BOL:
			if (pos == 0)
				vm->stack[sp++] = pc + 1;
			break;
		case I_EOL:
			if (pos == end)
				vm->stack[sp++] = pc + 1;
			break;
		default:
			list[(*n)++] = pc;
		}
	}
}

int sel_regex_match(const sel_regex_t *re, slice_t s, uint64_t *steps)
{
	uint32_t n = re->n_insts, local[5 * 256 + 1];
	if (!n) {
		if (steps)
			*steps = 0;
		return 0;
	}
	uint32_t *mem = n <= 256 ? local : xmalloc((5 * (size_t)n + 1) * sizeof *mem);
	uint32_t *clist = mem, *nlist = mem + n, *mark = mem + 2 * (size_t)n;
	vm_t vm = {.re = re, .mark = mark, .stack = mem + 3 * (size_t)n, .gen = 1};
	memset(mark, 0, n * sizeof *mark);
	uint32_t nc = 0, nn;
	vm_add(&vm, clist, &nc, 0, 0, s.n);
	for (size_t pos = 0; pos < s.n && nc;) {
		size_t w;
		uint32_t r = utf8_decode(s.p + pos, s.n - pos, &w);
		vm.gen++;
		nn = 0;
		for (uint32_t i = 0; i < nc; i++) {
			const sel_inst_t *in = &re->insts[clist[i]];
			vm.steps++;
			int ok = in->op == I_ANY || (in->op == I_RUNE && in->x == r) ||
			         (in->op == I_CLASS && class_has(re, in, r));
			if (ok)
				vm_add(&vm, nlist, &nn, clist[i] + 1, pos + w, s.n);
		}
		uint32_t *t = clist;
		clist = nlist, nlist = t, nc = nn;
		pos += w;
	}
	int matched = 0;
	for (uint32_t i = 0; i < nc && !matched; i++)
		matched = re->insts[clist[i]].op == I_MATCH;
	if (steps)
		*steps = vm.steps;
	if (mem != local)
		free(mem);
	return matched;
}
