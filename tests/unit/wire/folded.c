/* Tests of src/wire/folded.c: a table of good and bad folded-text bodies in
 * both formats with the exact stacks read or the exact status and message,
 * the depth bound (leaf side kept), the frame-length bound, and the sniff
 * that tells folded text from a pprof. */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "wire/folded.h"

/* "a;b=5|c=1": every stack read, frames root first, '=' its value. */
static int render(slice_t text, int format, char *out, size_t cap, err_t *err)
{
	static folded_reader_t r;
	folded_init(&r, text, format);
	size_t o = 0;
	out[0] = 0;
	int rc;
	while ((rc = folded_next(&r, err)) > 0) {
		if (o)
			o += (size_t)snprintf(out + o, cap - o, "|");
		for (uint32_t i = 0; i < r.n_frames; i++)
			o += (size_t)snprintf(out + o, cap - o, "%s%.*s", i ? ";" : "", (int)r.frames[i].n,
			                      (const char *)r.frames[i].p);
		o += (size_t)snprintf(out + o, cap - o, "=%lld@%u", (long long)r.value, r.line);
	}
	return rc;
}

static const struct {
	int format;
	const char *in;
	const char *read; /* NULL: an error */
	int status;
	const char *msg;
} cases[] = {
    {FOLDED_GROUPS, "main;work;leaf 5\nmain;idle 2\n", "main;work;leaf=5@1|main;idle=2@2", 0, NULL},
    {FOLDED_GROUPS, "main;work 5", "main;work=5@1", 0, NULL}, /* no final newline */
    {FOLDED_GROUPS, "a;b 1\r\nc 2\r\n", "a;b=1@1|c=2@2", 0, NULL},
    {FOLDED_GROUPS, "\n\na;b 1\n\n  \t\r\nc 0\n", "a;b=1@3|c=0@6", 0, NULL},
    {FOLDED_GROUPS, "foo (file.py:3);bar (x.py:9) 7", "foo (file.py:3);bar (x.py:9)=7@1", 0, NULL},
    {FOLDED_GROUPS, "a;b   12  \t", "a;b=12@1", 0, NULL},
    {FOLDED_GROUPS, "a 9223372036854775807", "a=9223372036854775807@1", 0, NULL},
    {FOLDED_GROUPS, "\tx;y 3", "\tx;y=3@1", 0, NULL},
    {FOLDED_GROUPS, "", "", 0, NULL},
    {FOLDED_GROUPS, "\r\n\n", "", 0, NULL},
    {FOLDED_LINES, "a;b\na;b\nc d;e\n", "a;b=1@1|a;b=1@2|c d;e=1@3", 0, NULL},
    {FOLDED_LINES, "a;b 5\r\n\r\nx\r\n", "a;b 5=1@1|x=1@3", 0, NULL},
    {FOLDED_GROUPS, "a;b 1\nmain;work\n", NULL, 400,
     "line 2: no count: a groups line is 'frame;frame;... COUNT' (format=lines takes lines without "
     "counts)"},
    {FOLDED_GROUPS, "a;b x1", NULL, 400, "line 1: count 'x1' is not a non-negative integer"},
    {FOLDED_GROUPS, "a;b -1", NULL, 400, "line 1: count '-1' is not a non-negative integer"},
    {FOLDED_GROUPS, "a;b 1.5", NULL, 400, "line 1: count '1.5' is not a non-negative integer"},
    {FOLDED_GROUPS, "a 9223372036854775808", NULL, 400,
     "line 1: count 9223372036854775808 is above 9223372036854775807"},
    {FOLDED_GROUPS, "a 99999999999999999999999", NULL, 400,
     "line 1: count 99999999999999999999999 is above 9223372036854775807"},
    {FOLDED_GROUPS, " 5", NULL, 400, "line 1: no stack before the count"},
    {FOLDED_GROUPS, "ok 1\na;;b 1", NULL, 400,
     "line 2: frame 2 is empty (';;', or a ';' at the start or end of the stack)"},
    {FOLDED_GROUPS, ";a 1", NULL, 400,
     "line 1: frame 1 is empty (';;', or a ';' at the start or end of the stack)"},
    {FOLDED_GROUPS, "a;b; 1", NULL, 400,
     "line 1: frame 3 is empty (';;', or a ';' at the start or end of the stack)"},
    {FOLDED_LINES, "a;b\n\nc;\n", NULL, 400,
     "line 3: frame 2 is empty (';;', or a ';' at the start or end of the stack)"},
    {FOLDED_LINES, "a\x01;b\n", NULL, 400, "line 1: control byte 0x01 at column 2"},
    {FOLDED_GROUPS, "a;b\r;c 1\n", NULL, 400, "line 1: control byte 0x0d at column 4"},
};

static void test_table(void **state)
{
	(void)state;
	char got[512];
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		err_t err = {0};
		int rc = render(slice_cstr(cases[i].in), cases[i].format, got, sizeof got, &err);
		if (cases[i].read) {
			if (rc != 0)
				fail_msg("case %zu: %s", i, err.msg);
			if (strcmp(got, cases[i].read) != 0)
				fail_msg("case %zu: read %s, want %s", i, got, cases[i].read);
		} else {
			if (rc != -1)
				fail_msg("case %zu: accepted as %s", i, got);
			if (err.status != cases[i].status || strcmp(err.msg, cases[i].msg) != 0)
				fail_msg("case %zu: %d %s, want %d %s", i, err.status, err.msg,
				         cases[i].status, cases[i].msg);
		}
	}
}

static void test_bounds(void **state)
{
	(void)state;
	static folded_reader_t r;
	err_t err = {0};
	/* A NUL is a control byte like any other. */
	folded_init(&r, slice_make("a\0b 1", 5), FOLDED_GROUPS);
	assert_int_equal(folded_next(&r, &err), -1);
	assert_string_equal(err.msg, "line 1: control byte 0x00 at column 2");
	/* A stack one frame deeper than LIMIT_STACK_DEPTH keeps the frames nearest the leaf. */
	size_t cap = (size_t)(LIMIT_STACK_DEPTH + 1) * 8 + 16, o = 0;
	char *text = malloc(cap);
	for (unsigned i = 0; i <= LIMIT_STACK_DEPTH; i++)
		o += (size_t)snprintf(text + o, cap - o, "%sf%u", i ? ";" : "", i);
	o += (size_t)snprintf(text + o, cap - o, " 3\n");
	folded_init(&r, slice_make(text, o), FOLDED_GROUPS);
	assert_int_equal(folded_next(&r, &err), 1);
	assert_int_equal(r.depth, LIMIT_STACK_DEPTH + 1);
	assert_int_equal(r.n_frames, LIMIT_STACK_DEPTH);
	assert_true(slice_eq_cstr(r.frames[0], "f1"));
	assert_true(slice_eq_cstr(r.frames[LIMIT_STACK_DEPTH - 1], "f4096"));
	assert_int_equal(r.value, 3);
	assert_int_equal(folded_next(&r, &err), 0);
	free(text);

	/* A frame of LIMIT_STRING_BYTES is read; one byte more is 413. */
	text = malloc(LIMIT_STRING_BYTES + 16);
	memset(text, 'x', LIMIT_STRING_BYTES);
	memcpy(text + LIMIT_STRING_BYTES, " 1", 2);
	folded_init(&r, slice_make(text, LIMIT_STRING_BYTES + 2), FOLDED_GROUPS);
	assert_int_equal(folded_next(&r, &err), 1);
	assert_int_equal(r.frames[0].n, LIMIT_STRING_BYTES);
	memset(text, 'x', LIMIT_STRING_BYTES + 1);
	memcpy(text + LIMIT_STRING_BYTES + 1, " 1", 2);
	folded_init(&r, slice_make(text, LIMIT_STRING_BYTES + 3), FOLDED_LINES);
	assert_int_equal(folded_next(&r, &err), -1);
	assert_int_equal(err.status, 413);
	/* lines: the whole line, " 1" included, is the frame */
	assert_string_equal(err.msg, "line 1: frame 1 is 4099 bytes; the limit is 4096");
	free(text);
}

static void test_sniff(void **state)
{
	(void)state;
	assert_true(folded_is_text(slice_cstr("main;work 5\r\nmain;idle\t2\n")));
	assert_false(folded_is_text(slice_cstr("")));
	/* The first bytes of a pprof: sample_type { type: 1 unit: 2 }. */
	assert_false(folded_is_text(slice_make("\x0a\x04\x08\x01\x10\x02", 6)));
	/* A control byte past the first 256 is the parser's to report. */
	char text[300];
	memset(text, 'a', sizeof text);
	text[299] = 1;
	assert_true(folded_is_text(slice_make(text, sizeof text)));
	text[255] = 1;
	assert_false(folded_is_text(slice_make(text, sizeof text)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_bounds),
	    cmocka_unit_test(test_sniff),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
