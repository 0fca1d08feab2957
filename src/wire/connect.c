/* Connect unary errors (connect.h). */
#include "wire/connect.h"

#include "wire/rpc_status.h"

static const char *const code_names[] = {
    [GRPC_CANCELLED] = "canceled",
    [GRPC_UNKNOWN] = "unknown",
    [GRPC_INVALID_ARGUMENT] = "invalid_argument",
    [GRPC_DEADLINE_EXCEEDED] = "deadline_exceeded",
    [GRPC_NOT_FOUND] = "not_found",
    [GRPC_ALREADY_EXISTS] = "already_exists",
    [GRPC_PERMISSION_DENIED] = "permission_denied",
    [GRPC_RESOURCE_EXHAUSTED] = "resource_exhausted",
    [GRPC_FAILED_PRECONDITION] = "failed_precondition",
    [GRPC_ABORTED] = "aborted",
    [GRPC_OUT_OF_RANGE] = "out_of_range",
    [GRPC_UNIMPLEMENTED] = "unimplemented",
    [GRPC_INTERNAL] = "internal",
    [GRPC_UNAVAILABLE] = "unavailable",
    [GRPC_DATA_LOSS] = "data_loss",
    [GRPC_UNAUTHENTICATED] = "unauthenticated",
};

const char *connect_code_name(int grpc_code)
{
	if (grpc_code < GRPC_CANCELLED || grpc_code > GRPC_UNAUTHENTICATED)
		return "unknown";
	return code_names[grpc_code];
}

int connect_http_status(int grpc_code)
{
	switch (grpc_code) {
	case GRPC_INVALID_ARGUMENT:
	case GRPC_OUT_OF_RANGE:
	case GRPC_FAILED_PRECONDITION:
		return 400;
	case GRPC_UNAUTHENTICATED:
		return 401;
	case GRPC_PERMISSION_DENIED:
		return 403;
	case GRPC_NOT_FOUND:
	case GRPC_UNIMPLEMENTED:
		return 404;
	case GRPC_ABORTED:
	case GRPC_ALREADY_EXISTS:
		return 409;
	case GRPC_RESOURCE_EXHAUSTED:
		return 429;
	case GRPC_CANCELLED:
		return 499;
	case GRPC_UNAVAILABLE:
		return 503;
	case GRPC_DEADLINE_EXCEEDED:
		return 504;
	default:
		return 500;
	}
}

int connect_code_of_status(int status)
{
	if (status == 405)
		return GRPC_UNIMPLEMENTED;
	if (status == 415)
		return GRPC_INVALID_ARGUMENT;
	return grpc_code_of_http(status);
}

void connect_error_json(int grpc_code, const char *msg, buf_t *out)
{
	buf_puts(out, "{\"code\":\"");
	buf_puts(out, connect_code_name(grpc_code));
	buf_puts(out, "\"");
	if (msg && *msg) {
		buf_puts(out, ",\"message\":");
		buf_json_str(out, slice_cstr(msg));
	}
	buf_puts(out, "}");
}
