/* google.rpc.Status bodies for failed OTLP and gRPC requests, in protobuf
 * and in JSON, with an optional google.rpc.RetryInfo detail; and the gRPC
 * code for an HTTP status. Encoding only: Kiln never reads a Status. */
#ifndef KILN_WIRE_RPC_STATUS_H
#define KILN_WIRE_RPC_STATUS_H

#include "base/buf.h"

/* google.rpc.Code: the gRPC status codes. */
enum grpc_code {
	GRPC_OK = 0,
	GRPC_CANCELLED = 1,
	GRPC_UNKNOWN = 2,
	GRPC_INVALID_ARGUMENT = 3,
	GRPC_DEADLINE_EXCEEDED = 4,
	GRPC_NOT_FOUND = 5,
	GRPC_ALREADY_EXISTS = 6,
	GRPC_PERMISSION_DENIED = 7,
	GRPC_RESOURCE_EXHAUSTED = 8,
	GRPC_FAILED_PRECONDITION = 9,
	GRPC_ABORTED = 10,
	GRPC_OUT_OF_RANGE = 11,
	GRPC_UNIMPLEMENTED = 12,
	GRPC_INTERNAL = 13,
	GRPC_UNAVAILABLE = 14,
	GRPC_DATA_LOSS = 15,
	GRPC_UNAUTHENTICATED = 16,
};

#define RPC_RETRY_INFO_TYPE "type.googleapis.com/google.rpc.RetryInfo"

/* Appends Status{1 code, 2 message, 3 details} to out; details holds one
 * Any{type_url RPC_RETRY_INFO_TYPE, value RetryInfo{1 retry_delay
 * Duration{1 seconds}}} when retry_after_s > 0. msg may be NULL. */
void rpc_status_pb(int grpc_code, const char *msg, int retry_after_s, buf_t *out);
/* The same in the proto3 JSON mapping:
 * {"code":8,"message":"...","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"5s"}]}
 */
void rpc_status_json(int grpc_code, const char *msg, int retry_after_s, buf_t *out);
/* The one map from Kiln's (HTTP-style) error statuses to gRPC codes:
 * 200→OK, 400→INVALID_ARGUMENT, 401→UNAUTHENTICATED, 403→PERMISSION_DENIED,
 * 404 and 501→UNIMPLEMENTED, 413 and 429→RESOURCE_EXHAUSTED, 503→UNAVAILABLE,
 * 504→DEADLINE_EXCEEDED; anything else (500 included) → INTERNAL. */
int grpc_code_of_http(int http_status);

#endif
