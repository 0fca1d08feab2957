/* multipart/form-data parsing for Pyroscope's /ingest (see multipart.h): the
 * boundary of the Content-Type, the delimiter lines, each part's headers
 * (Content-Disposition: form-data; name=...; filename=..., Content-Type) and
 * body. Lenient where Go's mime/multipart reader is (preamble, epilogue,
 * bare LF, transport padding after a delimiter, a line that starts with the
 * delimiter but goes on is content), strict and exact about the rest. */
#include "wire/multipart.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static int is_ws(uint8_t c)
{
	return c == ' ' || c == '\t';
}

static int starts_with_ci(slice_t s, const char *prefix)
{
	size_t n = strlen(prefix);
	return s.n >= n && strncasecmp((const char *)s.p, prefix, n) == 0;
}

static slice_t trim(slice_t s)
{
	while (s.n && is_ws(s.p[0]))
		s = slice_make(s.p + 1, s.n - 1);
	while (s.n && is_ws(s.p[s.n - 1]))
		s.n--;
	return s;
}

int multipart_is(slice_t content_type)
{
	return starts_with_ci(trim(content_type), "multipart/");
}

/* RFC 2046 5.1.1 bchars (space only inside). */
static int is_bchar(uint8_t c)
{
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c && strchr("'()+_,-./:=? ", c) != NULL);
}

/* One `;name=value` parameter from s at *pos: the name and the value,
 * unquoted into buf (at most cap bytes) when quoted. 1 a parameter, 0 the
 * end, -1 + err. what names the header in messages. */
static int next_param(slice_t s, size_t *pos, slice_t *name, slice_t *value, char *buf, size_t cap,
                      const char *what, err_t *err)
{
	size_t i = *pos;
	while (i < s.n && (is_ws(s.p[i]) || s.p[i] == ';'))
		i++;
	if (i == s.n)
		return 0;
	size_t k = i;
	while (i < s.n && s.p[i] != '=' && s.p[i] != ';')
		i++;
	*name = trim(slice_make(s.p + k, i - k));
	if (i == s.n || s.p[i] != '=')
		return err_set(err, 400, "multipart: %s parameter \"%.*s\" has no '=' and no value", what,
		               (int)(name->n > 64 ? 64 : name->n), (const char *)name->p);
	i++;
	while (i < s.n && is_ws(s.p[i]))
		i++;
	if (i < s.n && s.p[i] == '"') {
		size_t n = 0;
		for (i++; i < s.n && s.p[i] != '"'; i++) {
			if (s.p[i] == '\\' && i + 1 < s.n)
				i++;
			if (n == cap)
				return err_set(
				    err, 400, "multipart: %s parameter \"%.*s\" is longer than %zu bytes",
				    what, (int)(name->n > 64 ? 64 : name->n), (const char *)name->p, cap);
			buf[n++] = (char)s.p[i];
		}
		if (i == s.n)
			return err_set(err, 400, "multipart: %s parameter \"%.*s\" has an unterminated quote",
			               what, (int)(name->n > 64 ? 64 : name->n), (const char *)name->p);
		*value = slice_make(buf, n);
		i++;
	} else {
		k = i;
		while (i < s.n && s.p[i] != ';' && !is_ws(s.p[i]))
			i++;
		*value = slice_make(s.p + k, i - k);
	}
	*pos = i;
	return 1;
}

int multipart_boundary(slice_t content_type, char out[MULTIPART_BOUNDARY_MAX + 1], err_t *err)
{
	slice_t ct = trim(content_type);
	size_t semi = 0;
	while (semi < ct.n && ct.p[semi] != ';')
		semi++;
	slice_t media = trim(slice_make(ct.p, semi));
	if (!starts_with_ci(media, "multipart/"))
		return err_set(err, 415, "Content-Type %.*s is not multipart/form-data",
		               (int)(media.n > 64 ? 64 : media.n), (const char *)media.p);
	if (media.n != 19 || !starts_with_ci(media, "multipart/form-data"))
		return err_set(err, 415, "%.*s is not supported: send multipart/form-data",
		               (int)(media.n > 64 ? 64 : media.n), (const char *)media.p);
	char buf[MULTIPART_PARAM_MAX];
	slice_t name, value;
	int r;
	size_t pos = semi;
	while ((r = next_param(ct, &pos, &name, &value, buf, sizeof buf, "Content-Type", err)) > 0) {
		if (name.n != 8 || strncasecmp((const char *)name.p, "boundary", 8) != 0)
			continue;
		if (value.n == 0)
			return err_set(
			    err, 400, "multipart: the boundary is empty; RFC 2046 allows 1 to 70 characters");
		if (value.n > MULTIPART_BOUNDARY_MAX)
			return err_set(err, 400,
			               "multipart: the boundary is %zu characters; RFC 2046 allows 1 to 70",
			               value.n);
		for (size_t i = 0; i < value.n; i++)
			if (!is_bchar(value.p[i]))
				return err_set(
				    err, 400,
				    "multipart: the boundary has a character RFC 2046 does not allow at "
				    "position %zu",
				    i);
		if (value.p[value.n - 1] == ' ')
			return err_set(
			    err, 400, "multipart: the boundary ends in a space (RFC 2046 does not allow it)");
		memcpy(out, value.p, value.n);
		out[value.n] = 0;
		return 0;
	}
	if (r < 0)
		return -1;
	return err_set(err, 400, "multipart: the Content-Type has no boundary parameter");
}

enum { DELIM_NONE, DELIM_OPEN, DELIM_CLOSE, DELIM_TRUNCATED };

/* What a line starting at i is: not a delimiter, an opening one (*next: the
 * byte after its line end), the closing one, or a delimiter cut by the body's
 * end. */
static int delimiter_at(slice_t b, size_t i, const char *dash, size_t dn, size_t *next)
{
	if (b.n - i < dn)
		return memcmp(b.p + i, dash, b.n - i) == 0 ? DELIM_TRUNCATED : DELIM_NONE;
	if (memcmp(b.p + i, dash, dn) != 0)
		return DELIM_NONE;
	i += dn;
	if (b.n - i >= 2 && b.p[i] == '-' && b.p[i + 1] == '-')
		return DELIM_CLOSE;
	if (i == b.n || (b.n - i == 1 && b.p[i] == '-'))
		return DELIM_TRUNCATED;
	while (i < b.n && is_ws(b.p[i]))
		i++;
	if (i < b.n && b.p[i] == '\r')
		i++;
	if (i == b.n)
		return DELIM_TRUNCATED;
	if (b.p[i] != '\n')
		return DELIM_NONE;
	*next = i + 1;
	return DELIM_OPEN;
}

/* The next delimiter line at or after from (a line start: from itself when
 * at_start, else after a '\n'). Returns its kind (DELIM_NONE: none before
 * the end) with *line the '\n' before it (or from) and *next as above. */
static int next_delimiter(slice_t b, size_t from, int at_start, const char *dash, size_t dn, size_t *line,
                          size_t *next)
{
	if (at_start) {
		int k = delimiter_at(b, from, dash, dn, next);
		if (k != DELIM_NONE) {
			*line = from;
			return k;
		}
	}
	for (size_t i = from; i < b.n;) {
		const uint8_t *nl = memchr(b.p + i, '\n', b.n - i);
		if (!nl)
			break;
		size_t at = (size_t)(nl - b.p);
		int k = delimiter_at(b, at + 1, dash, dn, next);
		if (k != DELIM_NONE) {
			*line = at;
			return k;
		}
		i = at + 1;
	}
	return DELIM_NONE;
}

static int parse_disposition(slice_t v, multipart_part_t *p, uint32_t n, err_t *err)
{
	size_t semi = 0;
	while (semi < v.n && v.p[semi] != ';')
		semi++;
	slice_t kind = trim(slice_make(v.p, semi));
	if (kind.n != 9 || strncasecmp((const char *)kind.p, "form-data", 9) != 0)
		return err_set(err, 400, "multipart: part %u: Content-Disposition is \"%.*s\", not form-data",
		               n, (int)(kind.n > 64 ? 64 : kind.n), (const char *)kind.p);
	char buf[MULTIPART_PARAM_MAX], what[48];
	snprintf(what, sizeof what, "part %u: Content-Disposition", n);
	slice_t name, value;
	int r;
	size_t pos = semi;
	while ((r = next_param(v, &pos, &name, &value, buf, sizeof buf, what, err)) > 0) {
		char *dst;
		slice_t *field;
		if (name.n == 4 && strncasecmp((const char *)name.p, "name", 4) == 0)
			dst = p->_name, field = &p->name;
		else if (name.n == 8 && strncasecmp((const char *)name.p, "filename", 8) == 0)
			dst = p->_filename, field = &p->filename;
		else
			continue;
		if (value.p == (const uint8_t *)buf) {
			memcpy(dst, buf, value.n);
			value.p = (const uint8_t *)dst;
		}
		*field = value;
	}
	return r;
}

/* The headers of part n, from b at *pos up to and including the empty line. */
static int parse_headers(slice_t b, size_t *pos, multipart_part_t *p, uint32_t n, err_t *err)
{
	size_t start = *pos, i = *pos;
	int disposition = 0;
	for (;;) {
		const uint8_t *nl = memchr(b.p + i, '\n', b.n - i);
		size_t end = nl ? (size_t)(nl - b.p) : b.n;
		if (end - start >= LIMIT_MULTIPART_HEADER_BYTES)
			return err_set(err, 400, "multipart: part %u: headers longer than %u bytes", n,
			               LIMIT_MULTIPART_HEADER_BYTES);
		if (!nl)
			return err_set(err, 400,
			               "multipart: part %u: the body ends inside the part's headers", n);
		slice_t line = slice_make(b.p + i, end - i);
		if (line.n && line.p[line.n - 1] == '\r')
			line.n--;
		i = end + 1;
		if (line.n == 0)
			break;
		if (is_ws(line.p[0]))
			return err_set(err, 400, "multipart: part %u: a folded header line", n);
		const uint8_t *colon = memchr(line.p, ':', line.n);
		if (!colon)
			return err_set(err, 400, "multipart: part %u: a header line without ':'", n);
		slice_t key = trim(slice_make(line.p, (size_t)(colon - line.p)));
		slice_t value = trim(slice_make(colon + 1, line.n - (size_t)(colon - line.p) - 1));
		if (key.n == 19 && strncasecmp((const char *)key.p, "content-disposition", 19) == 0 &&
		    !disposition) {
			disposition = 1;
			if (parse_disposition(value, p, n, err) < 0)
				return -1;
		} else if (key.n == 12 && strncasecmp((const char *)key.p, "content-type", 12) == 0) {
			p->content_type = value;
		}
	}
	if (!disposition)
		return err_set(err, 400, "multipart: part %u has no Content-Disposition header", n);
	if (!p->name.n)
		return err_set(err, 400, "multipart: part %u: Content-Disposition has no name", n);
	*pos = i;
	return 0;
}

int multipart_parse(slice_t body, multipart_form_t *form, err_t *err)
{
	char dash[MULTIPART_BOUNDARY_MAX + 2];
	size_t bn = strlen(form->boundary), dn = bn + 2, line, next = 0;
	dash[0] = dash[1] = '-';
	memcpy(dash + 2, form->boundary, bn);
	form->n_parts = 0;
	int k = next_delimiter(body, 0, 1, dash, dn, &line, &next);
	if (k == DELIM_NONE || k == DELIM_TRUNCATED)
		return err_set(err, 400, "multipart: no delimiter line --%s in the body", form->boundary);
	while (k == DELIM_OPEN) {
		uint32_t n = form->n_parts + 1;
		if (form->n_parts == LIMIT_MULTIPART_PARTS)
			return err_set(err, 400, "multipart: more than %u parts", LIMIT_MULTIPART_PARTS);
		multipart_part_t *p = &form->parts[form->n_parts];
		memset(p, 0, offsetof(multipart_part_t, _name));
		size_t pos = next;
		if (parse_headers(body, &pos, p, n, err) < 0)
			return -1;
		for (uint32_t i = 0; i < form->n_parts; i++)
			if (slice_eq(form->parts[i].name, p->name))
				return err_set(err, 400, "multipart: part %u: a second part named \"%.*s\"",
				               n, (int)(p->name.n > 64 ? 64 : p->name.n),
				               (const char *)p->name.p);
		/* The '\n' that ends the headers may start the delimiter of an empty body. */
		k = next_delimiter(body, pos - 1, 0, dash, dn, &line, &next);
		if (k == DELIM_NONE || k == DELIM_TRUNCATED)
			return err_set(
			    err, 400, "multipart: part %u (\"%.*s\") has no closing delimiter --%s--", n,
			    (int)(p->name.n > 64 ? 64 : p->name.n), (const char *)p->name.p, form->boundary);
		size_t end = line;
		if (end > pos && body.p[end - 1] == '\r')
			end--;
		if (end < pos)
			end = pos;
		p->body = slice_make(body.p + pos, end - pos);
		form->n_parts++;
	}
	return 0;
}

const multipart_part_t *multipart_find(const multipart_form_t *form, const char *name)
{
	for (uint32_t i = 0; i < form->n_parts; i++)
		if (slice_eq_cstr(form->parts[i].name, name))
			return &form->parts[i];
	return NULL;
}
