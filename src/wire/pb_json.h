/* Protobuf JSON (the proto3 JSON mapping) → protobuf wire bytes, driven by
 * a schema table per message, so a JSON request is decoded by the same
 * protobuf decoder (and the same checks) as the binary form. Used for
 * OTLP/JSON (otlp_json.c) and Connect's JSON codec (pyroscope_push.c).
 * Checks JSON types, not the message's semantics: its decoder does that.
 * Memory: jansson's tree costs up to ~30x the JSON size; the caller's body
 * limit bounds it. */
#ifndef KILN_WIRE_PB_JSON_H
#define KILN_WIRE_PB_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"

/* A field's JSON form: a message, a string, bytes as base64 (standard or
 * URL alphabet, padding optional) or hex, integers as numbers or decimal
 * strings, bools, doubles (also "NaN", "Infinity"), fixed64 as an integer. */
enum {
	PB_J_MSG,
	PB_J_STRING,
	PB_J_BYTES,
	PB_J_HEX,
	PB_J_U64,
	PB_J_I64,
	PB_J_I32,
	PB_J_U32,
	PB_J_BOOL,
	PB_J_DOUBLE,
	PB_J_FIXED64,
	PB_J_ENUM /* by name (a field of sub) or number, as protojson reads an enum */
};
enum { PB_J_SINGLE = 0, PB_J_REPEATED = 1, PB_J_ONEOF = 2 /* written even when zero */ };

typedef struct pb_json_msg pb_json_msg_t;
typedef struct {
	const char *json, *proto;
	uint32_t num;
	uint8_t type;
	uint8_t card;
	const pb_json_msg_t *sub; /* PB_J_MSG: its schema; PB_J_ENUM: its values (json: the name, num) */
} pb_json_field_t;
struct pb_json_msg {
	const pb_json_field_t *f;
	size_t n;
};

/* Defines the static pb_json_msg_t `name` over the pb_json_field_t initialisers given
 * (json: the lowerCamelCase key; proto: the proto name, also accepted). */
#define PB_JSON_MSG(name, ...)                                                                               \
	static const pb_json_field_t name##_fields[] = {__VA_ARGS__};                                        \
	static const pb_json_msg_t name = {name##_fields, sizeof name##_fields / sizeof name##_fields[0]}

/* Transcodes the JSON object json of message root into protobuf appended to
 * pb (whose ceiling bounds the output: 413 past it). Unknown keys and nulls
 * are ignored; zero scalars are omitted as proto3 does. 400 with the JSON
 * path ("<root_name>: ..." at the top) on malformed JSON or a value of the
 * wrong type. */
int pb_json_to_pb(slice_t json, const pb_json_msg_t *root, const char *root_name, buf_t *pb, err_t *err);

#endif
