/* Pyroscope's push protocol, the parts that are pure text: the application
 * name with its labels (`name=APP{k=v,k2="v 2"}` of POST /ingest), the
 * from/until timestamps whose digit count gives the unit, and the
 * {"code","message"} error body Pyroscope's clients expect. No allocation:
 * the parser fills a caller-given table. */
#ifndef KILN_WIRE_PYROSCOPE_H
#define KILN_WIRE_PYROSCOPE_H

#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/limits.h"
#include "base/slice.h"

typedef struct {
	slice_t key, value;
} pyro_label_t;

/* A parsed name. app and the keys point into the parsed text; a value points
 * into it (unquoted) or into _text (quoted, escapes removed): both must
 * outlive their use. */
typedef struct {
	slice_t app;
	pyro_label_t labels[LIMIT_LABELS];
	uint32_t n_labels;
	char _text[LIMIT_PYRO_NAME_BYTES];
} pyro_name_t;

/* Parses `APP`, `APP{}` or `APP{k=v,k2="v,2",...}`. APP is everything before
 * '{', spaces trimmed (`APP.cpu` included as is); keys are runs of bytes other
 * than space, `=,{}"` and control bytes; values are unquoted (up to ',' or
 * '}', spaces trimmed, no `{"=`) or double-quoted with `\"` and `\\`
 * escapes (`""` is an empty value); spaces around keys and values are
 * trimmed; one trailing ',' is allowed. 0, or -1 + err 400
 * "name: <what> at byte N" (N counts from 0): an empty application or key,
 * a missing '=' or value, an unterminated quote, unbalanced braces, bytes
 * after '}', a duplicate key, a control byte, more than LIMIT_LABELS labels,
 * or a name longer than LIMIT_PYRO_NAME_BYTES. */
int pyro_name_parse(slice_t name, pyro_name_t *out, err_t *err);

/* from/until of /ingest: a string of digits is seconds, except that 13
 * digits are milliseconds, 16 microseconds and 19 nanoseconds; anything
 * else is what time_parse takes (now, now-1h). 0 and *out_ns, or -1 (not a
 * time, or past TIME_PARSE_MAX_SECONDS). */
int pyro_time_parse(const char *s, int64_t now_ns, int64_t *out_ns);

/* Pyroscope's error body {"code":"invalid_argument","message":msg} for an
 * HTTP-style status: 400 invalid_argument, 401 unauthenticated, 403
 * permission_denied, 404 not_found, 405 and 415 unimplemented, 413 and 429
 * resource_exhausted, 503 unavailable, 504 deadline_exceeded, else internal. */
void pyro_error_json(int status, const char *msg, buf_t *out);

#endif
