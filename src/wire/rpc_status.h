/* google.rpc.Status bodies for failed OTLP and gRPC requests, in protobuf
 * and in JSON, with an optional google.rpc.RetryInfo detail; and the gRPC
 * code for an HTTP status. Encoding only: Kiln never reads a Status. */
#ifndef KILN_WIRE_RPC_STATUS_H
#define KILN_WIRE_RPC_STATUS_H

#include "base/buf.h"

/* gRPC status codes Kiln answers with. */
enum {
	GRPC_OK = 0,
	GRPC_INVALID_ARGUMENT = 3,
	GRPC_RESOURCE_EXHAUSTED = 8,
	GRPC_UNIMPLEMENTED = 12,
	GRPC_INTERNAL = 13,
	GRPC_UNAVAILABLE = 14,
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
/* 400→3 INVALID_ARGUMENT, 401→16 UNAUTHENTICATED, 404→12 UNIMPLEMENTED,
 * 413 and 429→8 RESOURCE_EXHAUSTED, 503→14 UNAVAILABLE, 200→0; anything
 * else (500 included) → 13 INTERNAL. */
int grpc_code_of_http(int http_status);

#endif
