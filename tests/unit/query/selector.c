/* Tests of src/query/selector.c and sel_regex.c: a table of good and bad
 * label selectors with the exact parse or the exact message (the rules of
 * Prometheus's promql/parser, which Pyroscope's ParseMetricSelector runs),
 * regexes against strings (expected results checked against Python's re
 * fullmatch with DOTALL for this subset, API: Label selectors), the step
 * bound of the VM on patterns that make backtracking engines explode, and
 * matching with absent labels. */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "base/limits.h"
#include "query/selector.h"

static const char *op_name[] = {"=", "!=", "=~", "!~"};

/* "metric|name op value|..." of a parse, for comparing with the table. */
static void render(const sel_t *s, char *out, size_t cap)
{
	size_t o = (size_t)snprintf(out, cap, "%.*s", (int)s->metric.n, (const char *)s->metric.p);
	for (uint32_t i = 0; i < s->n && o < cap; i++)
		o += (size_t)snprintf(out + o, cap - o, "|%.*s%s%.*s", (int)s->m[i].name.n,
		                      (const char *)s->m[i].name.p, op_name[s->m[i].op], (int)s->m[i].value.n,
		                      (const char *)s->m[i].value.p);
}

static const struct {
	const char *in;
	const char *parse; /* NULL: an error */
	const char *msg;
} cases[] = {
    {"{}", "", NULL},
    {" { } ", "", NULL},
    {"up", "up", NULL},
    {"metric {}", "metric", NULL},
    {":m_1:{}", ":m_1:", NULL},
    {"process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name=\"app\"}",
     "process_cpu:cpu:nanoseconds:cpu:nanoseconds|service_name=app", NULL},
    {"{service_name=\"app\", env!=\"dev\", pod=~\"api-.*\", ns!~'kube-.*'}",
     "|service_name=app|env!=dev|pod=~api-.*|ns!~kube-.*", NULL},
    {" { a = \"b\" , } ", "|a=b", NULL},
    {"{\n\ta=\"b\"\r\n,c=`d`}", "|a=b|c=d", NULL},
    {"{_x9=\"1\",x_Y=\"2\"}", "|_x9=1|x_Y=2", NULL},
    {"{\"service.name\"=\"x\"}", "|service.name=x", NULL},
    {"{\"process_cpu:cpu\"}", "|__name__=process_cpu:cpu", NULL},
    {"{a=\"x\\\"y\\\\z\\n\\t\"}", "|a=x\"y\\z\n\t", NULL},
    {"{a='it\\'s \"q\"'}", "|a=it's \"q\"", NULL},
    {"{a=\"\\x41\\101\\u00e9\\U0001F600\\a\"}", "|a=AA\xc3\xa9\xf0\x9f\x98\x80\a", NULL},
    {"{a=`C:\\path\\n\"'`}", "|a=C:\\path\\n\"'", NULL},
    {"{a=\"\",b=~\"\"}", "|a=|b=~", NULL},
    {"{a=\"\\xff\"}", "|a=\xff", NULL},
    {"{a=\"\xc3\xa9\"}", "|a=\xc3\xa9", NULL},
    {"{a=`multi\nline`}", "|a=multi\nline", NULL},
    {"", NULL, "selector: at 0: expected a metric name or \"{\""},
    {"   ", NULL, "selector: at 3: expected a metric name or \"{\""},
    {"{a}", NULL, "selector: at 2: expected \"=\", \"!=\", \"=~\" or \"!~\""},
    {"{a==\"b\"}", NULL, "selector: at 3: expected a string in \"...\", '...' or `...`"},
    {"{service.name=\"x\"}", NULL, "selector: at 8: expected \"=\", \"!=\", \"=~\" or \"!~\""},
    {"{a=\"b\"", NULL, "selector: at 6: expected \",\" or \"}\""},
    {"{a=\"b\" c=\"d\"}", NULL, "selector: at 7: expected \",\" or \"}\""},
    {"{a=\"b\",,}", NULL, "selector: at 7: expected a label name, a string or \"}\""},
    {"{,}", NULL, "selector: at 1: expected a label name, a string or \"}\""},
    {"{{}", NULL, "selector: at 1: expected a label name, a string or \"}\""},
    {"{", NULL, "selector: at 1: expected a label name, a string or \"}\""},
    {"{9a=\"b\"}", NULL, "selector: at 1: expected a label name, a string or \"}\""},
    {"{a=b}", NULL, "selector: at 3: expected a string in \"...\", '...' or `...`"},
    {"{a!\"b\"}", NULL, "selector: at 2: expected \"=\", \"!=\", \"=~\" or \"!~\""},
    {"{a=\"b}", NULL, "selector: at 3: unterminated quoted string"},
    {"{a='b\"}", NULL, "selector: at 3: unterminated quoted string"},
    {"{a=`b}", NULL, "selector: at 3: unterminated raw string"},
    {"{a=\"b\nc\"}", NULL, "selector: at 3: unterminated quoted string"},
    {"{a=\"x\\q\"}", NULL, "selector: at 5: unknown escape sequence \\q"},
    {"{a=\"\\'\"}", NULL, "selector: at 4: unknown escape sequence \\'"},
    {"{a=\"\\x4\"}", NULL, "selector: at 4: escape sequence: too few digits"},
    {"{a=\"\\18\"}", NULL, "selector: at 4: escape sequence: too few digits"},
    {"{a=\"\\400\"}", NULL, "selector: at 4: octal escape sequence past \\377"},
    {"{a=\"\\ud800\"}", NULL, "selector: at 4: escape sequence is an invalid Unicode code point"},
    {"{a=\"\\U00110000\"}", NULL, "selector: at 4: escape sequence is an invalid Unicode code point"},
    {"{a=\"\xc3(\"}", NULL, "selector: at 4: invalid UTF-8"},
    {"{a=\"b\"}x", NULL, "selector: at 7: expected the end of the selector"},
    {"m{a=\"b\"}{", NULL, "selector: at 8: expected the end of the selector"},
    {"m x", NULL, "selector: at 2: expected \"{\" or the end of the selector"},
    {"m.x{}", NULL, "selector: at 1: expected \"{\" or the end of the selector"},
    {"{\"\"=\"x\"}", NULL, "selector: at 1: empty label name"},
    {"{a=~\"(ab\"}", NULL, "selector: at 4: regex: at 0: missing closing )"},
    {"{a=~\"x)\"}", NULL, "selector: at 4: regex: at 1: unexpected )"},
    {"{a=~\"a\\\\bc\"}", NULL, "selector: at 4: regex: at 1: \\b is not supported"},
    {"{a=~`\\pL`}", NULL, "selector: at 4: regex: at 0: \\p is not supported"},
    {"{a=~`(a)\\1`}", NULL, "selector: at 4: regex: at 3: \\1 is not supported"},
    {"{a=~\"[[:alpha:]]\"}", NULL, "selector: at 4: regex: at 1: [[:alpha:]] is not supported"},
    {"{a=~\"*\"}", NULL, "selector: at 4: regex: at 0: missing argument to repetition operator: *"},
    {"{a=~\"a|+\"}", NULL, "selector: at 4: regex: at 2: missing argument to repetition operator: +"},
    {"{a=~\"a**\"}", NULL, "selector: at 4: regex: at 2: invalid nested repetition operator: *"},
    {"{a!~\"a{2,1}\"}", NULL, "selector: at 4: regex: at 1: invalid repeat count: {2,1}"},
    {"{a!~\"a{1001}\"}", NULL, "selector: at 4: regex: at 1: invalid repeat count: {1001}"},
    {"{a=~\"[z-a]\"}", NULL, "selector: at 4: regex: at 1: invalid character class range: z-a"},
    {"{a=~\"[a-\\\\d]\"}", NULL, "selector: at 4: regex: at 3: a class escape cannot end a range"},
    {"{a=~\"[ab\"}", NULL, "selector: at 4: regex: at 0: missing closing ]"},
    {"{a=~\"(?m)x\"}", NULL, "selector: at 4: regex: at 2: flag m is not supported"},
    {"{a=~\"(?z)x\"}", NULL, "selector: at 4: regex: at 0: invalid or unsupported group flags"},
    {"{a=~\"(?P<>x)\"}", NULL, "selector: at 4: regex: at 0: invalid named capture"},
    {"{a=~\"\\\\\"}", NULL, "selector: at 4: regex: at 0: trailing backslash at end of expression"},
    {"{a=~\"\\\\x{110000}\"}", NULL,
     "selector: at 4: regex: at 0: invalid escape sequence: \\x{...} past U+10FFFF"},
    {"{a=~\"\\xff\"}", NULL, "selector: at 4: regex: at 0: invalid UTF-8"},
    {"{a=~\"(a{1000}){20}\"}", NULL,
     "selector: at 4: regex: at 9: too large: more than 10000 instructions with repetitions expanded"},
};

static void test_table(void **state)
{
	(void)state;
	char got[512];
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		sel_t s;
		err_t err = {0};
		int rc = sel_parse(slice_cstr(cases[i].in), &s, &err);
		if (cases[i].parse) {
			if (rc != 0)
				fail_msg("%s: %s", cases[i].in, err.msg);
			render(&s, got, sizeof got);
			if (strcmp(got, cases[i].parse) != 0)
				fail_msg("%s: parsed as %s, want %s", cases[i].in, got, cases[i].parse);
			sel_free(&s);
		} else {
			if (rc != -1 || err.status != 400)
				fail_msg("%s: accepted", cases[i].in);
			if (strcmp(err.msg, cases[i].msg) != 0)
				fail_msg("%s: message %s, want %s", cases[i].in, err.msg, cases[i].msg);
			assert_int_equal(s.n, 0);
			assert_null(s.m);
		}
	}
}

static void expect_error(const char *text, size_t n, const char *msg)
{
	sel_t s;
	err_t err = {0};
	assert_int_equal(sel_parse(slice_make(text, n), &s, &err), -1);
	assert_int_equal(err.status, 400);
	assert_string_equal(err.msg, msg);
}

static void test_bounds(void **state)
{
	(void)state;
	static char text[LIMIT_SELECTOR_BYTES + 64];
	/* The longest selector parses; one byte more is refused. */
	memset(text, ' ', sizeof text);
	memcpy(text, "{a=\"b\"}", 7);
	sel_t s;
	err_t err = {0};
	assert_int_equal(sel_parse(slice_make(text, LIMIT_SELECTOR_BYTES), &s, &err), 0);
	sel_free(&s);
	expect_error(text, LIMIT_SELECTOR_BYTES + 1, "selector: at 16384: longer than 16384 bytes");

	/* LIMIT_SELECTOR_MATCHERS matchers parse; one more is refused where it starts. */
	size_t o = (size_t)sprintf(text, "{");
	for (int i = 0; i < LIMIT_SELECTOR_MATCHERS; i++)
		o += (size_t)sprintf(text + o, "k%02d=\"v\",", i);
	size_t at = o;
	sprintf(text + o, "}");
	assert_int_equal(sel_parse(slice_make(text, o + 1), &s, &err), 0);
	assert_int_equal(s.n, LIMIT_SELECTOR_MATCHERS);
	assert_true(slice_eq_cstr(s.m[63].name, "k63"));
	sel_free(&s);
	sprintf(text + o, "x=\"y\"}");
	char want[64];
	snprintf(want, sizeof want, "selector: at %zu: more than 64 matchers", at);
	expect_error(text, strlen(text), want);

	/* A pattern of LIMIT_SELECTOR_REGEX_BYTES compiles; one byte more is refused. */
	memcpy(text, "{a=~\"", 5);
	memset(text + 5, 'a', LIMIT_SELECTOR_REGEX_BYTES);
	memcpy(text + 5 + LIMIT_SELECTOR_REGEX_BYTES, "\"}", 2);
	assert_int_equal(sel_parse(slice_make(text, LIMIT_SELECTOR_REGEX_BYTES + 7), &s, &err), 0);
	assert_int_equal(s.m[0].re.n_insts, LIMIT_SELECTOR_REGEX_BYTES + 1);
	assert_int_equal(sel_match(&s.m[0], slice_make(text + 5, LIMIT_SELECTOR_REGEX_BYTES)), 1);
	sel_free(&s);
	memset(text + 5, 'a', LIMIT_SELECTOR_REGEX_BYTES + 1);
	memcpy(text + 6 + LIMIT_SELECTOR_REGEX_BYTES, "\"}", 2);
	expect_error(text, LIMIT_SELECTOR_REGEX_BYTES + 8, "selector: at 4: regex longer than 4096 bytes");

	/* Nesting deeper than LIMIT_SELECTOR_REGEX_DEPTH groups. */
	o = (size_t)sprintf(text, "{a=~\"");
	for (int i = 0; i < LIMIT_SELECTOR_REGEX_DEPTH + 1; i++)
		text[o++] = '(';
	sprintf(text + o, "\"}");
	expect_error(text, strlen(text), "selector: at 4: regex: at 64: nested deeper than 64");
}

static const struct {
	const char *re, *s;
	int want;
} matches[] = {
    {"abc", "abc", 1},
    {"abc", "abcd", 0},
    {"abc", "xabc", 0},
    {"b", "abc", 0},
    {"", "", 1},
    {"", "a", 0},
    {"a.c", "a\nc", 1},
    {".*", "", 1},
    {".+", "", 0},
    {".*", "any\nthing", 1},
    {"[a-z0-9_-]+", "abc-9_", 1},
    {"[a-z0-9_-]+", "abC", 0},
    {"[]a]+", "]a]", 1},
    {"[^a-z]+", "ABC\n", 1},
    {"[^a-z]", "a", 0},
    {"[^a]", "\n", 1},
    {"\\d{2,3}", "12", 1},
    {"\\d{2,3}", "1234", 0},
    {"\\d{2,3}", "1", 0},
    {"\\w+\\s\\W", "ab_9 !", 1},
    {"\\D\\S", "a\t", 0},
    {"\\D\\S", "ab", 1},
    {"[\\d.]+", "1.25", 1},
    {"[^\\s]+", "a b", 0},
    {"api|web", "web", 1},
    {"api|web", "apiweb", 0},
    {"(api|web)-\\d+", "web-12", 1},
    {"(api|web)-\\d+", "db-12", 0},
    {"a|b|", "", 1},
    {"(?:ab)+", "ababab", 1},
    {"(?:ab)+", "ababa", 0},
    {"colou?r", "color", 1},
    {"colou?r", "colouur", 0},
    {"a{3}", "aaa", 1},
    {"a{3}", "aa", 0},
    {"a{2,}", "aaaaa", 1},
    {"a{2,}", "a", 0},
    {"a{0}", "", 1},
    {"a{0,2}b", "aab", 1},
    {"a{0,2}b", "aaab", 0},
    {"(ab|c){2}", "cab", 1},
    {"(?i)API", "Api", 1},
    {"(?i)[a-c]+", "aBC", 1},
    {"(?i)[^a]", "A", 0},
    {"[\\d-z]", "-", 1},
    {"(?i:a)b", "Ab", 1},
    {"(?i:a)b", "AB", 0},
    {"x(?i)a", "xA", 1},
    {"(?i)\xc3\xa9", "\xc3\x89", 0}, /* (?i) folds ASCII letters only */
    {"(?s).", "\n", 1},
    {"^abc$", "abc", 1},
    {"a^b", "ab", 0},
    {"a\\.b", "a.b", 1},
    {"a\\.b", "axb", 0},
    {"\xc3\xa9.", "\xc3\xa9x", 1},
    {".", "\xc3\xa9", 1}, /* one rune */
    {"..", "\xc3\xa9", 0},
    {"[\xc3\xa9-\xc3\xab]", "\xc3\xaa", 1},
    {"\\x41\\x{e9}\\101",
     "A\xc3\xa9"
     "A",
     1},
    {"a{", "a{", 1},
    {"a{,2}", "a{,2}", 1},
    {"a*?b", "aab", 1},
    {"(?P<name>x)y", "xy", 1},
    {"(?<n>x)+", "xx", 1},
    {".", "\xff", 1}, /* a byte that starts no UTF-8 sequence is one rune */
    {"\\t\\n\\x20", "\t\n ", 1},
    {"\\-\\ \\#", "- #", 1},
    {"(a*)*", "aaaa", 1},
    {"(|a)+", "aaa", 1},
};

static void test_regex(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof matches / sizeof *matches; i++) {
		sel_regex_t re;
		err_t err = {0};
		if (sel_regex_compile(slice_cstr(matches[i].re), &re, &err) != 0)
			fail_msg("%s: %s", matches[i].re, err.msg);
		uint64_t steps = 0;
		int got = sel_regex_match(&re, slice_cstr(matches[i].s), &steps);
		if (got != matches[i].want)
			fail_msg("/%s/ on \"%s\": %d, want %d", matches[i].re, matches[i].s, got,
			         matches[i].want);
		assert_true(steps <= 2 * (uint64_t)re.n_insts * (strlen(matches[i].s) + 1));
		sel_regex_free(&re);
	}
}

/* Patterns a backtracking matcher takes exponential time on: the VM's steps
 * stay within 2 × program size per rune (+ one closure), whatever the input. */
static void test_no_backtracking(void **state)
{
	(void)state;
	static const struct {
		const char *re;
		char fill;
		const char *tail;
		int want;
	} slow[] = {
	    {"(a*)*b", 'a', "", 0},        {"(a|aa)*c", 'a', "", 0},  {"(x+x+)+y", 'x', "", 0},
	    {"(a*)*b", 'a', "b", 1},       {"(.*a){20}", 'a', "", 1}, {"(?:a?){30}a{30}", 'a', "!", 0},
	    {"(\\w+\\s?)*$", 'w', "!", 0},
	};
	enum { N = 10000 };
	static char text[N + 2];
	for (size_t i = 0; i < sizeof slow / sizeof *slow; i++) {
		memset(text, slow[i].fill, N);
		strcpy(text + N, slow[i].tail);
		sel_regex_t re;
		err_t err = {0};
		assert_int_equal(sel_regex_compile(slice_cstr(slow[i].re), &re, &err), 0);
		uint64_t steps = 0;
		size_t n = strlen(text);
		assert_int_equal(sel_regex_match(&re, slice_make(text, n), &steps), slow[i].want);
		uint64_t bound = 2 * (uint64_t)re.n_insts * n + re.n_insts;
		if (steps > bound)
			fail_msg("/%s/: %llu steps, bound %llu", slow[i].re, (unsigned long long)steps,
			         (unsigned long long)bound);
		sel_regex_free(&re);
	}
	/* The exact count for (a*)*b on 10,000 a's. The program:
	 * 0 SPLIT 1,5; 1 SPLIT 2,4; 2 'a'; 3 JMP 1; 4 JMP 0; 5 'b'; 6 MATCH.
	 * The first closure marks 0 1 2 4 5 (5 steps); each 'a' tests the two
	 * threads 2 and 5 and the closure from 3 marks 3 1 2 4 0 5: 8 per rune. */
	sel_regex_t re;
	err_t err = {0};
	assert_int_equal(sel_regex_compile(slice_cstr("(a*)*b"), &re, &err), 0);
	assert_int_equal(re.n_insts, 7);
	memset(text, 'a', N);
	uint64_t steps = 0;
	assert_int_equal(sel_regex_match(&re, slice_make(text, N), &steps), 0);
	assert_int_equal(steps, 5 + 8 * (uint64_t)N);
	sel_regex_free(&re);
}

static void test_match(void **state)
{
	(void)state;
	sel_t s;
	err_t err = {0};
	assert_int_equal(sel_parse(slice_cstr("m{a=\"\",b!=\"\",c=~\"x|\",d!~\"y.*\"}"), &s, &err), 0);
	slice_t none = slice_make(NULL, 0);
	assert_int_equal(sel_match(&s.m[0], none), 1); /* absent = empty */
	assert_int_equal(sel_match(&s.m[0], slice_cstr("v")), 0);
	assert_int_equal(sel_match(&s.m[1], none), 0);
	assert_int_equal(sel_match(&s.m[1], slice_cstr("v")), 1);
	assert_int_equal(sel_match(&s.m[2], none), 1);
	assert_int_equal(sel_match(&s.m[2], slice_cstr("x")), 1);
	assert_int_equal(sel_match(&s.m[2], slice_cstr("xx")), 0);
	assert_int_equal(sel_match(&s.m[3], none), 1);
	assert_int_equal(sel_match(&s.m[3], slice_cstr("yes")), 0);

	slice_t names[] = {slice_cstr("b"), slice_cstr("__name__"), slice_cstr("c")};
	slice_t values[] = {slice_cstr("1"), slice_cstr("m"), slice_cstr("x")};
	assert_int_equal(sel_match_labels(&s, names, values, 3), 1);
	values[1] = slice_cstr("other"); /* the metric is the route's (a profile type id) */
	assert_int_equal(sel_match_labels(&s, names, values, 3), 1);
	values[2] = slice_cstr("xx");
	assert_int_equal(sel_match_labels(&s, names, values, 3), 0);
	assert_int_equal(sel_match_labels(&s, names, values, 2), 1);         /* c absent matches x| */
	assert_int_equal(sel_match_labels(&s, names + 1, values + 1, 1), 0); /* b absent: != "" fails */
	values[0] = slice_cstr("");
	assert_int_equal(sel_match_labels(&s, names, values, 2), 0); /* b="" is b absent */
	sel_free(&s);
	sel_free(&s); /* freeing twice is harmless */

	/* Everything the selector holds is its own: the text may go. */
	char *text = strdup("{\"service.name\"=~\"ap+\"}");
	assert_int_equal(sel_parse(slice_cstr(text), &s, &err), 0);
	memset(text, 'z', strlen(text));
	free(text);
	assert_true(slice_eq_cstr(s.m[0].name, "service.name"));
	assert_int_equal(sel_match(&s.m[0], slice_cstr("appp")), 1);
	sel_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table), cmocka_unit_test(test_bounds),
	    cmocka_unit_test(test_regex), cmocka_unit_test(test_no_backtracking),
	    cmocka_unit_test(test_match),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
