/* Tests of src/wire/multipart.c: tables of Content-Types (the boundary or
 * the exact refusal) and of bodies (the parts, or the exact message), with
 * the bounds of limits.h, and a body as Go's mime/multipart writer builds it
 * (the Go SDK's /ingest upload). */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "wire/multipart.h"

static const struct {
	const char *ct;
	const char *boundary; /* NULL: an error */
	int status;
	const char *msg;
} ct_cases[] = {
    {"multipart/form-data; boundary=abc", "abc", 0, NULL},
    {"Multipart/Form-Data;BOUNDARY=abc", "abc", 0, NULL},
    {"multipart/form-data; boundary=\"a b:c\"", "a b:c", 0, NULL},
    {"multipart/form-data; charset=utf-8; boundary=x1 ; other=2", "x1", 0, NULL},
    {"  multipart/form-data ;boundary=\"q\\\"\"", NULL, 400,
     "multipart: the boundary has a character RFC 2046 does not allow at position 1"},
    {"multipart/form-data; boundary=b6f9d3c2a1e0b6f9d3c2a1e0b6f9d3c2a1e0b6f9d3c2a1e0b6f9d3c2a1e0b6f9d3c2a1",
     "b6f9d3c2a1e0b6f9d3c2a1e0b6f9d3c2a1e0b6f9d3c2a1e0b6f9d3c2a1e0b6f9d3c2a1", 0, NULL},
    {"multipart/form-data; boundary=b6f9d3c2a1e0b6f9d3c2a1e0b6f9d3c2a1e0b6f9d3c2a1e0b6f9d3c2a1e0b6f9d3c2a1x",
     NULL, 400, "multipart: the boundary is 71 characters; RFC 2046 allows 1 to 70"},
    /* npm form-data (the Node.js SDK up to 0.5): 26 dashes and 24 digits. */
    {"multipart/form-data; boundary=--------------------------123456789012345678901234",
     "--------------------------123456789012345678901234", 0, NULL},
    {"multipart/form-data", NULL, 400, "multipart: the Content-Type has no boundary parameter"},
    {"multipart/form-data; charset=utf-8", NULL, 400,
     "multipart: the Content-Type has no boundary parameter"},
    {"multipart/form-data; boundary=", NULL, 400,
     "multipart: the boundary is empty; RFC 2046 allows 1 to 70 characters"},
    {"multipart/form-data; boundary=\"\"", NULL, 400,
     "multipart: the boundary is empty; RFC 2046 allows 1 to 70 characters"},
    {"multipart/form-data; boundary=\"ab \"", NULL, 400,
     "multipart: the boundary ends in a space (RFC 2046 does not allow it)"},
    {"multipart/form-data; boundary=ab@c", NULL, 400,
     "multipart: the boundary has a character RFC 2046 does not allow at position 2"},
    {"multipart/form-data; boundary=\"abc", NULL, 400,
     "multipart: Content-Type parameter \"boundary\" has an unterminated quote"},
    {"multipart/form-data; boundary", NULL, 400,
     "multipart: Content-Type parameter \"boundary\" has no '=' and no value"},
    {"multipart/mixed; boundary=abc", NULL, 415,
     "multipart/mixed is not supported: send multipart/form-data"},
    {"application/octet-stream", NULL, 415,
     "Content-Type application/octet-stream is not multipart/form-data"},
};

static void test_boundary(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof ct_cases / sizeof *ct_cases; i++) {
		char b[MULTIPART_BOUNDARY_MAX + 1] = "";
		err_t err = {0};
		int rc = multipart_boundary(slice_cstr(ct_cases[i].ct), b, &err);
		if (ct_cases[i].boundary) {
			if (rc != 0)
				fail_msg("%s: %s", ct_cases[i].ct, err.msg);
			assert_string_equal(b, ct_cases[i].boundary);
		} else {
			if (rc == 0)
				fail_msg("%s: parsed as %s", ct_cases[i].ct, b);
			assert_int_equal(err.status, ct_cases[i].status);
			assert_string_equal(err.msg, ct_cases[i].msg);
		}
	}
	assert_true(multipart_is(slice_cstr(" MULTIPART/form-data; boundary=x")));
	assert_false(multipart_is(slice_cstr("application/x-protobuf")));
}

/* "name[filename](type)=body;..." of a parse. */
static void render(const multipart_form_t *f, char *out, size_t cap)
{
	size_t o = 0;
	out[0] = 0;
	for (uint32_t i = 0; i < f->n_parts && o < cap; i++) {
		const multipart_part_t *p = &f->parts[i];
		o += (size_t)snprintf(out + o, cap - o, "%s%.*s", i ? ";" : "", (int)p->name.n,
		                      (const char *)p->name.p);
		if (p->filename.n && o < cap)
			o += (size_t)snprintf(out + o, cap - o, "[%.*s]", (int)p->filename.n,
			                      (const char *)p->filename.p);
		if (p->content_type.n && o < cap)
			o += (size_t)snprintf(out + o, cap - o, "(%.*s)", (int)p->content_type.n,
			                      (const char *)p->content_type.p);
		if (o < cap)
			o += (size_t)snprintf(out + o, cap - o, "=%.*s", (int)p->body.n,
			                      (const char *)p->body.p);
	}
}

#define CD "Content-Disposition: form-data; name="

static const struct {
	const char *body;
	const char *parse; /* NULL: an error */
	const char *msg;
} body_cases[] = {
    /* As Go's mime/multipart writer builds it (CreateFormFile, then Close). */
    {"--B\r\n" CD "\"profile\"; filename=\"profile.pprof\"\r\nContent-Type: application/octet-stream\r\n\r\n"
     "PPROF\r\n--B\r\n" CD "\"sample_type_config\"; filename=\"sample_type_config.json\"\r\n"
     "Content-Type: application/octet-stream\r\n\r\n{}\r\n--B--\r\n",
     "profile[profile.pprof](application/octet-stream)=PPROF;"
     "sample_type_config[sample_type_config.json](application/octet-stream)={}",
     NULL},
    {"preamble\r\n--B\r\n" CD "a\r\n\r\nx\r\n--B--epilogue", "a=x", NULL},
    {"--B\n" CD "a\n\nline1\nline2\n--B\n" CD "b\n\n\n--B--", "a=line1\nline2;b=", NULL},
    {"--B  \t\r\n" CD "\"a\"\r\n\r\n\r\n--B--", "a=", NULL},
    {"--B\r\n" CD "\"a\"\r\n\r\n--B--", "a=", NULL},
    {"--B\r\n" CD "\"a\"\r\n\r\n\r\n--Bx\r\n--B--", "a=\r\n--Bx", NULL},
    {"--B\r\n" CD "\"q\\\"\\\\\"\r\n\r\nv\r\n--B--", "q\"\\=v", NULL},
    {"--B\r\ncontent-disposition: FORM-DATA ; NAME=plain ; filename=f.json\r\n\r\nv\r\n--B--",
     "plain[f.json]=v", NULL},
    {"--B--", "", NULL},
    {"", NULL, "multipart: no delimiter line --B in the body"},
    {"PPROF", NULL, "multipart: no delimiter line --B in the body"},
    {"--Bx\r\n", NULL, "multipart: no delimiter line --B in the body"},
    {"--B", NULL, "multipart: no delimiter line --B in the body"},
    {"--B\r\n" CD "\"a\"\r\n\r\nbody", NULL, "multipart: part 1 (\"a\") has no closing delimiter --B--"},
    {"--B\r\n" CD "\"a\"\r\n\r\nbody\r\n--B", NULL,
     "multipart: part 1 (\"a\") has no closing delimiter --B--"},
    {"--B\r\n" CD "\"a\"\r\n\r\nbody\r\n--B-", NULL,
     "multipart: part 1 (\"a\") has no closing delimiter --B--"},
    {"--B\r\n" CD "\"a\"\r\n\r\nx\r\n--B\r\n" CD "\"b\"\r\n\r\ny\r\n", NULL,
     "multipart: part 2 (\"b\") has no closing delimiter --B--"},
    {"--B\r\n" CD "\"a\"\r\n", NULL, "multipart: part 1: the body ends inside the part's headers"},
    {"--B\r\n" CD "\"a\"", NULL, "multipart: part 1: the body ends inside the part's headers"},
    {"--B\r\nContent-Type: x\r\n\r\nv\r\n--B--", NULL, "multipart: part 1 has no Content-Disposition header"},
    {"--B\r\nContent-Disposition: form-data\r\n\r\nv\r\n--B--", NULL,
     "multipart: part 1: Content-Disposition has no name"},
    {"--B\r\nContent-Disposition: form-data; filename=\"x\"\r\n\r\nv\r\n--B--", NULL,
     "multipart: part 1: Content-Disposition has no name"},
    {"--B\r\n" CD "\"\"\r\n\r\nv\r\n--B--", NULL, "multipart: part 1: Content-Disposition has no name"},
    {"--B\r\nContent-Disposition: attachment; name=a\r\n\r\nv\r\n--B--", NULL,
     "multipart: part 1: Content-Disposition is \"attachment\", not form-data"},
    {"--B\r\n" CD "\"a\r\n\r\nv\r\n--B--", NULL,
     "multipart: part 1: Content-Disposition parameter \"name\" has an unterminated quote"},
    {"--B\r\nContent-Disposition: form-data; name\r\n\r\nv\r\n--B--", NULL,
     "multipart: part 1: Content-Disposition parameter \"name\" has no '=' and no value"},
    {"--B\r\n" CD "a\r\nno colon\r\n\r\nv\r\n--B--", NULL, "multipart: part 1: a header line without ':'"},
    {"--B\r\n" CD "a\r\n folded\r\n\r\nv\r\n--B--", NULL, "multipart: part 1: a folded header line"},
    {"--B\r\n" CD "a\r\n\r\nx\r\n--B\r\n" CD "a\r\n\r\ny\r\n--B--", NULL,
     "multipart: part 2: a second part named \"a\""},
};

static void test_parse(void **state)
{
	(void)state;
	static multipart_form_t f;
	for (size_t i = 0; i < sizeof body_cases / sizeof *body_cases; i++) {
		err_t err = {0};
		strcpy(f.boundary, "B");
		int rc = multipart_parse(slice_cstr(body_cases[i].body), &f, &err);
		if (body_cases[i].parse) {
			if (rc != 0)
				fail_msg("case %zu: %s", i, err.msg);
			char got[1024];
			render(&f, got, sizeof got);
			assert_string_equal(got, body_cases[i].parse);
		} else {
			if (rc == 0)
				fail_msg("case %zu: parsed", i);
			assert_int_equal(err.status, 400);
			assert_string_equal(err.msg, body_cases[i].msg);
		}
	}
	/* A boundary that starts with dashes, as npm form-data writes it. */
	err_t err = {0};
	strcpy(f.boundary, "----42");
	assert_int_equal(multipart_parse(slice_cstr("------42\r\n" CD "\"profile\"; filename=\"profile\"\r\n"
	                                            "Content-Type: text/json\r\n\r\n---42\r\n------42--\r\n"),
	                                 &f, &err),
	                 0);
	char got[256];
	render(&f, got, sizeof got);
	assert_string_equal(got, "profile[profile](text/json)=---42");
	strcpy(f.boundary, "B");
	assert_int_equal(multipart_parse(slice_cstr("--B\r\n" CD "a\r\n\r\nv\r\n--B--"), &f, &err), 0);
	const multipart_part_t *p = multipart_find(&f, "a");
	assert_non_null(p);
	assert_null(multipart_find(&f, "profile"));
}

/* LIMIT_MULTIPART_PARTS parts pass, one more is refused; headers of
 * LIMIT_MULTIPART_HEADER_BYTES are refused; a long quoted name too. */
static void test_bounds(void **state)
{
	(void)state;
	static multipart_form_t f;
	static char body[64 << 10];
	for (uint32_t extra = 0; extra < 2; extra++) {
		size_t o = 0;
		for (uint32_t i = 0; i < LIMIT_MULTIPART_PARTS + extra; i++)
			o += (size_t)snprintf(body + o, sizeof body - o, "--B\r\n" CD "p%u\r\n\r\nv\r\n", i);
		snprintf(body + o, sizeof body - o, "--B--\r\n");
		err_t err = {0};
		strcpy(f.boundary, "B");
		int rc = multipart_parse(slice_cstr(body), &f, &err);
		if (!extra) {
			assert_int_equal(rc, 0);
			assert_int_equal(f.n_parts, LIMIT_MULTIPART_PARTS);
		} else {
			assert_int_equal(rc, -1);
			assert_string_equal(err.msg, "multipart: more than 16 parts");
		}
	}
	size_t o = (size_t)snprintf(body, sizeof body, "--B\r\n" CD "a\r\nX-Pad: ");
	memset(body + o, 'x', LIMIT_MULTIPART_HEADER_BYTES);
	snprintf(body + o + LIMIT_MULTIPART_HEADER_BYTES, sizeof body - o - LIMIT_MULTIPART_HEADER_BYTES,
	         "\r\n\r\nv\r\n--B--");
	err_t err = {0};
	assert_int_equal(multipart_parse(slice_cstr(body), &f, &err), -1);
	assert_string_equal(err.msg, "multipart: part 1: headers longer than 4096 bytes");
	o = (size_t)snprintf(body, sizeof body, "--B\r\n" CD "\"");
	memset(body + o, 'n', MULTIPART_PARAM_MAX + 1);
	snprintf(body + o + MULTIPART_PARAM_MAX + 1, 32, "\"\r\n\r\nv\r\n--B--");
	assert_int_equal(multipart_parse(slice_cstr(body), &f, &err), -1);
	assert_string_equal(
	    err.msg, "multipart: part 1: Content-Disposition parameter \"name\" is longer than 256 bytes");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_boundary),
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
