/* Renaming of JVM-generated class names and extracted native libraries,
 * as grafana/jfr-parser does before converting (wire/jfr_int.h). Each rule
 * is a small hand-written matcher of the reference's anchored regular
 * expression: no regex engine, linear in the symbol. */
#include <string.h>

#include "wire/jfr_int.h"

typedef struct {
	const uint8_t *p;
	size_t n, i;
} sym_cur_t;

static int eat(sym_cur_t *c, const char *lit)
{
	size_t k = strlen(lit);
	if (c->n - c->i < k || memcmp(c->p + c->i, lit, k) != 0)
		return 0;
	c->i += k;
	return 1;
}

static size_t eat_digits(sym_cur_t *c)
{
	size_t k = 0;
	while (c->i < c->n && c->p[c->i] >= '0' && c->p[c->i] <= '9')
		c->i++, k++;
	return k;
}

static int is_hex(uint8_t b)
{
	return (b >= '0' && b <= '9') || (b >= 'a' && b <= 'f');
}

static size_t eat_hex(sym_cur_t *c)
{
	size_t k = 0;
	while (c->i < c->n && is_hex(c->p[c->i]))
		c->i++, k++;
	return k;
}

/* (\.?/tmp/)? */
static void eat_tmp(sym_cur_t *c)
{
	if (!eat(c, "./tmp/"))
		eat(c, "/tmp/");
}

/* (\.so)( \(deleted\))?$ */
static int so_end(sym_cur_t *c)
{
	if (!eat(c, ".so"))
		return 0;
	eat(c, " (deleted)");
	return c->i == c->n;
}

static slice_t concat(arena_t *a, slice_t head, const char *tail)
{
	size_t k = strlen(tail);
	uint8_t *s = arena_alloc(a, head.n + k);
	memcpy(s, head.p, head.n);
	memcpy(s + head.n, tail, k);
	return slice_make(s, head.n + k);
}

/* The greedy `^(.+LIT)(REST)$`: its group 1's end, or 0. Only the last
 * occurrence of lit can start group 1: for an earlier one the rest would
 * hold the later "$$", which neither rest allows but `.*` (which takes the
 * last occurrence anyway). Linear in s. */
static size_t last_match(slice_t s, const char *lit, int (*ok)(sym_cur_t *))
{
	size_t k = strlen(lit);
	for (size_t i = s.n >= k ? s.n - k + 1 : 0; i-- > 1;) {
		if (memcmp(s.p + i, lit, k) != 0)
			continue;
		sym_cur_t c = {s.p, s.n, i + k};
		return ok(&c) ? i + k : 0;
	}
	return 0;
}

/* (\$?\d*[./](0x)?[\da-f]+|\d+)$ */
static int lambda_rest(sym_cur_t *c)
{
	sym_cur_t d = *c;
	if (eat_digits(&d) > 0 && d.i == d.n)
		return 1;
	eat(c, "$");
	eat_digits(c);
	if (c->i >= c->n || (c->p[c->i] != '.' && c->p[c->i] != '/'))
		return 0;
	c->i++;
	sym_cur_t x = *c;
	if (eat(&x, "0x") && eat_hex(&x) > 0 && x.i == x.n)
		return 1;
	return eat_hex(c) > 0 && c->i == c->n;
}

static int any_rest(sym_cur_t *c)
{
	return 1;
}

slice_t jfr_symbol_merge(arena_t *a, slice_t s)
{
	sym_cur_t c = {s.p, s.n, 0};
	size_t k;
	static const char accessor[] = "jdk/internal/reflect/GeneratedMethodAccessor";
	if (eat(&c, accessor) && eat_digits(&c) > 0 && c.i == c.n)
		s = concat(a, slice_make(accessor, sizeof accessor - 1), "_");
	if ((k = last_match(s, "$$Lambda", lambda_rest)) != 0)
		s = concat(a, slice_make(s.p, k), "_");
	c = (sym_cur_t){s.p, s.n, 0};
	eat_tmp(&c);
	if (eat(&c, "libzstd-jni-") && eat_digits(&c) && eat(&c, ".") && eat_digits(&c) && eat(&c, ".") &&
	    eat_digits(&c) && eat(&c, "-") && eat_digits(&c) && so_end(&c))
		s = slice_make("libzstd-jni-_.so", 16);
	c = (sym_cur_t){s.p, s.n, 0};
	eat_tmp(&c);
	eat(&c, "lib");
	if (eat(&c, "amazonCorrettoCryptoProvider")) {
		eat(&c, "NativeLibraries.");
		size_t h = c.i;
		while (c.i < c.n && c.i - h < 16 && is_hex(c.p[c.i]))
			c.i++;
		if (c.i - h == 16) {
			if (!eat(&c, "/libcrypto"))
				eat(&c, "/libamazonCorrettoCryptoProvider");
			if (so_end(&c))
				s = slice_make("libamazonCorrettoCryptoProvider_.so", 35);
		}
	}
	c = (sym_cur_t){s.p, s.n, 0};
	eat_tmp(&c);
	if (eat(&c, "libasyncProfiler-") &&
	    (eat(&c, "linux-arm64") || eat(&c, "linux-musl-x64") || eat(&c, "linux-x64") ||
	     eat(&c, "macos")) &&
	    eat(&c, "-17b9a1d8156277a98ccc871afa9a8f69215f92") && so_end(&c))
		s = slice_make("libasyncProfiler-_.so", 21);
	if ((k = last_match(s, "$$EnhancerBySpringCGLIB$$", any_rest)) != 0)
		s = concat(a, slice_make(s.p, k), "_");
	return s;
}
