/* multipart/form-data (RFC 7578 over RFC 2046) as Pyroscope's clients send
 * it to POST /ingest (the Go SDK, the Node SDK up to 0.5, Alloy's
 * receive_http forwarding): the boundary from the Content-Type, then the
 * parts, each with its form field name (Content-Disposition: form-data;
 * name="..."), optional filename and Content-Type, and its body. Bounded
 * (LIMIT_MULTIPART_PARTS parts, LIMIT_MULTIPART_HEADER_BYTES of headers per
 * part), no allocation: every slice points into the parsed bytes or into the
 * caller's table. */
#ifndef KILN_WIRE_MULTIPART_H
#define KILN_WIRE_MULTIPART_H

#include <stdint.h>

#include "base/err.h"
#include "base/limits.h"
#include "base/slice.h"

#define MULTIPART_BOUNDARY_MAX 70 /* RFC 2046 5.1.1 */
#define MULTIPART_PARAM_MAX 256   /* a name or filename, unquoted */

typedef struct {
	slice_t name;         /* the form field (never empty) */
	slice_t filename;     /* empty when not given */
	slice_t content_type; /* the part's Content-Type value; empty when not given */
	slice_t body;         /* the part's bytes, inside the parsed body */
	/* name and filename when quoted with escapes (the slices point here then). */
	char _name[MULTIPART_PARAM_MAX];
	char _filename[MULTIPART_PARAM_MAX];
} multipart_part_t;

typedef struct {
	multipart_part_t parts[LIMIT_MULTIPART_PARTS];
	uint32_t n_parts;
	char boundary[MULTIPART_BOUNDARY_MAX + 1];
} multipart_form_t;

/* 1 when content_type is multipart/anything (case-insensitive), else 0. */
int multipart_is(slice_t content_type);

/* The boundary of a Content-Type `multipart/form-data; boundary=B` (B quoted
 * or not; parameter names case-insensitive) into out (NUL-terminated).
 * 0, or -1 + err: 415 for a multipart type other than form-data, 400
 * "multipart: ..." for a missing boundary, one longer than 70 characters,
 * empty, ending in a space, or with a character RFC 2046 does not allow. */
int multipart_boundary(slice_t content_type, char out[MULTIPART_BOUNDARY_MAX + 1], err_t *err);

/* Parses body with boundary form->boundary (set by multipart_boundary) into
 * form->parts. The preamble before the first delimiter and the epilogue
 * after the closing one are ignored; lines end in CRLF (a bare LF is taken
 * too, as Go's reader does). 0, or -1 + err 400 "multipart: ..." naming the
 * part (counted from 1): no opening delimiter, no closing delimiter, bytes
 * after a delimiter, a header line without ':' or a folded one, headers
 * without an empty line or longer than LIMIT_MULTIPART_HEADER_BYTES, no
 * Content-Disposition or not form-data, no name or an empty one, a
 * duplicate name, more than LIMIT_MULTIPART_PARTS parts. */
int multipart_parse(slice_t body, multipart_form_t *form, err_t *err);

/* The part named name, or NULL. */
const multipart_part_t *multipart_find(const multipart_form_t *form, const char *name);

#endif
