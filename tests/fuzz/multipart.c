/* libFuzzer target for wire/multipart.c and wire/sample_type_config.c, as
 * the multipart /ingest decoder uses them: the input's first line is the
 * Content-Type, the rest the body; a first line "sample_type_config" feeds
 * the rest to the config parser instead. It checks for crashes and UB, that
 * an error is a 400 (415 for a Content-Type) with the parser's prefix, and
 * that a parse stays within its bounds: at most LIMIT_MULTIPART_PARTS parts
 * with distinct non-empty names, every slice inside the input or the part's
 * own buffers, a boundary of 1-70 bytes; at most LIMIT_SAMPLE_TYPES config
 * entries with non-empty bounded strings and known aggregations. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/limits.h"
#include "wire/multipart.h"
#include "wire/sample_type_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int inside(slice_t s, const void *base, size_t n)
{
	const uint8_t *b = base;
	return s.n <= n && (!s.n || (s.p >= b && s.p + s.n <= b + n));
}

static void check_config(slice_t json)
{
	static pyro_stc_t c;
	err_t err = {0};
	if (pyro_stc_parse(json, &c, &err) < 0) {
		if (err.status != 400 || strncmp(err.msg, "sample_type_config: ", 20) != 0 || c.n)
			abort();
		return;
	}
	if (c.n > LIMIT_SAMPLE_TYPES)
		abort();
	for (uint32_t i = 0; i < c.n; i++) {
		const pyro_stc_entry_t *e = &c.entries[i];
		if (!e->type[0] || strlen(e->type) > LIMIT_PYRO_STC_STRING_BYTES ||
		    strlen(e->display_name) > LIMIT_PYRO_STC_STRING_BYTES ||
		    strlen(e->units) > LIMIT_PYRO_STC_STRING_BYTES || e->aggregation > PYRO_STC_AGG_AVERAGE ||
		    e->cumulative > 1 || e->sampled > 1 ||
		    pyro_stc_find(&c, slice_cstr(e->type)) != &c.entries[i])
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static multipart_form_t form;
	if (size > LIMIT_BODY_BYTES)
		return 0;
	const uint8_t *nl = memchr(data, '\n', size);
	size_t ct_n = nl ? (size_t)(nl - data) : size;
	slice_t ct = slice_make(data, ct_n);
	slice_t body = nl ? slice_make(nl + 1, size - ct_n - 1) : slice_make(data + size, 0);
	if (slice_eq_cstr(ct, "sample_type_config")) {
		check_config(body);
		return 0;
	}
	err_t err = {0};
	if (multipart_boundary(ct, form.boundary, &err) < 0) {
		if ((err.status != 400 || strncmp(err.msg, "multipart: ", 11) != 0) && err.status != 415)
			abort();
		return 0;
	}
	size_t bn = strlen(form.boundary);
	if (bn < 1 || bn > MULTIPART_BOUNDARY_MAX || form.boundary[bn - 1] == ' ')
		abort();
	if (multipart_parse(body, &form, &err) < 0) {
		if (err.status != 400 || strncmp(err.msg, "multipart: ", 11) != 0)
			abort();
		return 0;
	}
	if (form.n_parts > LIMIT_MULTIPART_PARTS)
		abort();
	for (uint32_t i = 0; i < form.n_parts; i++) {
		const multipart_part_t *p = &form.parts[i];
		if (!p->name.n ||
		    !(inside(p->name, body.p, body.n) || inside(p->name, p->_name, sizeof p->_name)) ||
		    !(inside(p->filename, body.p, body.n) ||
		      inside(p->filename, p->_filename, sizeof p->_filename)) ||
		    !inside(p->content_type, body.p, body.n) || !inside(p->body, body.p, body.n))
			abort();
		for (uint32_t j = 0; j < i; j++)
			if (slice_eq(p->name, form.parts[j].name))
				abort();
		if (multipart_find(&form, "sample_type_config") == p)
			check_config(p->body);
	}
	return 0;
}
