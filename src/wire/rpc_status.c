/* google.rpc.Status encoders (rpc_status.h): a handful of fields written
 * with the pb writer and buf_printf; nothing is parsed here. */
#include "wire/rpc_status.h"

#include "wire/pb.h"

void rpc_status_pb(int grpc_code, const char *msg, int retry_after_s, buf_t *out)
{
	pb_put_int64(out, 1, grpc_code); /* int32: negative codes would sign-extend, as protobuf does */
	if (msg && *msg)
		pb_put_bytes(out, 2, slice_cstr(msg));
	if (retry_after_s <= 0)
		return;
	size_t any = pb_begin(out, 3);
	pb_put_bytes(out, 1, slice_cstr(RPC_RETRY_INFO_TYPE));
	size_t info = pb_begin(out, 2);
	size_t delay = pb_begin(out, 1);
	pb_put_int64(out, 1, retry_after_s);
	pb_end(out, delay);
	pb_end(out, info);
	pb_end(out, any);
}

void rpc_status_json(int grpc_code, const char *msg, int retry_after_s, buf_t *out)
{
	buf_printf(out, "{\"code\":%d,\"message\":", grpc_code);
	buf_json_str(out, slice_cstr(msg ? msg : ""));
	if (retry_after_s > 0)
		buf_printf(out,
		           ",\"details\":[{\"@type\":\"" RPC_RETRY_INFO_TYPE "\",\"retryDelay\":\"%ds\"}]",
		           retry_after_s);
	buf_putc(out, '}');
}

int grpc_code_of_http(int http_status)
{
	switch (http_status) {
	case 200:
		return GRPC_OK;
	case 400:
		return GRPC_INVALID_ARGUMENT;
	case 401:
		return GRPC_UNAUTHENTICATED;
	case 403:
		return GRPC_PERMISSION_DENIED;
	case 404:
	case 501:
		return GRPC_UNIMPLEMENTED;
	case 504:
		return GRPC_DEADLINE_EXCEEDED;
	case 413:
	case 429:
		return GRPC_RESOURCE_EXHAUSTED;
	case 503:
		return GRPC_UNAVAILABLE;
	default:
		return GRPC_INTERNAL;
	}
}
