/* The Connect protocol's unary errors (connectrpc.com/docs/protocol): the
 * code names, the HTTP status each code is sent with, and the JSON body
 * {"code":"...","message":"..."} (Content-Type application/json) of a failed
 * call. Codes are gRPC's (rpc_status.h), which Connect names in snake_case.
 * Used by every Connect route (push.v1 Push; the queriers next). */
#ifndef KILN_WIRE_CONNECT_H
#define KILN_WIRE_CONNECT_H

#include "base/buf.h"

/* "invalid_argument", "unauthenticated", ... for a gRPC code; "unknown" for
 * codes outside 1..16. */
const char *connect_code_name(int grpc_code);

/* The HTTP status Connect sends a code with: invalid_argument, out_of_range
 * and failed_precondition 400, unauthenticated 401, permission_denied 403,
 * not_found and unimplemented 404, aborted and already_exists 409,
 * resource_exhausted 429, canceled 499, unavailable 503, deadline_exceeded
 * 504, anything else 500. */
int connect_http_status(int grpc_code);

/* The code of one of Kiln's HTTP-style error statuses: grpc_code_of_http's
 * map (413 request too large → resource_exhausted, 429 → resource_exhausted,
 * 503 → unavailable, ...) plus 405 → unimplemented and 415 → invalid_argument. */
int connect_code_of_status(int status);

/* Appends {"code":"<name>","message":msg} to out (message omitted when msg
 * is NULL or empty). */
void connect_error_json(int grpc_code, const char *msg, buf_t *out);

#endif
