/* OTLP Profiles (opentelemetry-proto profiles/v1development, the v1.10/v1.11
 * wire format that Collector >= 0.148 sends): decoding an
 * ExportProfilesServiceRequest into the normalized batch, transcoding its
 * OTLP/JSON form to the same protobuf, and writing the Export response. */
#ifndef KILN_WIRE_OTLP_H
#define KILN_WIRE_OTLP_H

#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "model/model.h"

typedef struct {
	slice_t project;         /* informational; the batch carries its own project */
	int64_t now_ns;          /* a profile's time when it has neither time_unix_nano nor timestamps */
	int64_t min_time_ns;     /* samples before this are refused (retention); 0 = no bound */
	int64_t max_time_ns;     /* samples after this are refused (now + 10 min); 0 = no bound */
	uint32_t max_rows;       /* OTLP Samples per Profile; 0 = LIMIT_SAMPLE_ROWS (413 past it) */
	uint32_t retention_days; /* only for the refusal message; 0 = "the retention window" */
} otlp_decode_opts_t;

typedef struct {
	uint32_t profiles;          /* profiles stored in the batch */
	uint32_t rejected_profiles; /* profiles all of whose samples were outside the time window */
	uint64_t samples;           /* sample points stored: one per timestamp (or per value) */
	uint64_t rejected_samples;  /* sample points outside the time window */
	char message[256];          /* partial_success.error_message; "" when nothing was refused */
} otlp_result_t;

/* Decodes an uncompressed ExportProfilesServiceRequest into b: one finished
 * model_profile_t per OTLP Profile that keeps at least one sample point.
 *  - Every index is checked against its ProfilesDictionary table; errors are
 *    400 naming the path, table, index and table size (e.g.
 *    "resource_profiles[0].scope_profiles[0].profiles[2].samples[7].stack_index:
 *    index 1000000000 out of range for stack_table (40 entries); ..."), and
 *    say when the request looks like an older OTLP format (no dictionary:
 *    < v1.7; no stack_table: v1.7; a length-delimited Sample field 3:
 *    v1.8/v1.9). Known fields with a wrong wire type are 400 naming the
 *    field; unknown fields are skipped; repeated scalars may be packed or not.
 *  - Service (API: Services and naming): service.name, else
 *    process.environment_variable.OTEL_SERVICE_NAME, else
 *    "unknown_service:<process.executable.name>", else "unknown_service".
 *    Other scalar resource attributes become series labels (first
 *    LIMIT_LABELS kept). Sample attributes plus the link (trace_id, span_id
 *    in lowercase hex) become the sample's attribute set.
 *  - Frames: Location.lines[0] is the leaf; a stack's location_indices are
 *    leaf first; kind from the location attribute profile.frame.type; a
 *    location without a named function is one unsymbolized frame of its
 *    mapping's file (kind "native" unless the attribute says otherwise); a
 *    Stack with no locations (stack_table[0] is one) is the empty stack, node
 *    MODEL_NONE, whose value counts at the root.
 *  - Time: one sample point per timestamp (values[i] at timestamps[i]);
 *    without timestamps the point takes the profile's time (time_unix_nano,
 *    else the earliest timestamp, else o->now_ns). Points outside
 *    [min_time_ns, max_time_ns] are dropped and counted in res; a profile
 *    that loses all of them is not stored and counts as rejected.
 *  - Limits: 413 when the request's stacks write out more than
 *    LIMIT_REQUEST_FRAMES frames (counted once per OTLP Sample, stacks cut at
 *    LIMIT_STACK_DEPTH) or a Profile has more than max_rows Samples.
 * On error returns -1 with err set and b may hold a partial decode (the
 * caller frees it); res is then meaningless. pb is only borrowed: every
 * string kept is copied into b. Thread-safe for distinct batches. */
int otlp_decode(slice_t pb, const otlp_decode_opts_t *o, model_batch_t *b, otlp_result_t *res, err_t *err);

/* Transcodes an OTLP/JSON ExportProfilesServiceRequest (lowerCamelCase or
 * proto field names; 64-bit integers as numbers or decimal strings;
 * trace_id/span_id/profile_id as hex, other bytes as base64) into the
 * protobuf that otlp_decode reads, appended to pb (whose ceiling bounds the
 * output: 413 past it). Unknown keys and nulls are ignored. 400 with the
 * JSON path on malformed JSON or a value of the wrong type. */
int otlp_json_to_pb(slice_t json, buf_t *pb, err_t *err);

/* ExportProfilesServiceResponse{1 partial_success{1 rejected_profiles,
 * 2 error_message}} appended to out; partial_success is written only when
 * something was refused (an empty response is valid). */
void otlp_response_pb(const otlp_result_t *r, buf_t *out);
/* The same as OTLP/JSON: {} or
 * {"partialSuccess":{"rejectedProfiles":"2","errorMessage":"..."}}. */
void otlp_response_json(const otlp_result_t *r, buf_t *out);

#endif
