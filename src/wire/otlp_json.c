/* OTLP/JSON → protobuf for ExportProfilesServiceRequest: the schema table of
 * the v1.10 messages for the transcoder of pb_json.h, so the JSON form is
 * decoded by otlp_decode exactly like the protobuf form. It checks JSON
 * types, not OTLP semantics (indices, lengths): otlp_decode does that. And
 * the ExportProfilesServiceResponse in both forms. */
#include <inttypes.h>

#include "wire/otlp.h"
#include "wire/pb.h"
#include "wire/pb_json.h"

static const pb_json_msg_t m_anyvalue, m_keyvalue;

PB_JSON_MSG(m_arrayvalue, {"values", "values", 1, PB_J_MSG, PB_J_REPEATED, &m_anyvalue});
PB_JSON_MSG(m_kvlist, {"values", "values", 1, PB_J_MSG, PB_J_REPEATED, &m_keyvalue});
static const pb_json_field_t m_anyvalue_fields[] = {
    {"stringValue", "string_value", 1, PB_J_STRING, PB_J_ONEOF, NULL},
    {"boolValue", "bool_value", 2, PB_J_BOOL, PB_J_ONEOF, NULL},
    {"intValue", "int_value", 3, PB_J_I64, PB_J_ONEOF, NULL},
    {"doubleValue", "double_value", 4, PB_J_DOUBLE, PB_J_ONEOF, NULL},
    {"arrayValue", "array_value", 5, PB_J_MSG, PB_J_ONEOF, &m_arrayvalue},
    {"kvlistValue", "kvlist_value", 6, PB_J_MSG, PB_J_ONEOF, &m_kvlist},
    {"bytesValue", "bytes_value", 7, PB_J_BYTES, PB_J_ONEOF, NULL},
    {"stringValueStrindex", "string_value_strindex", 8, PB_J_I32, PB_J_ONEOF, NULL},
};
static const pb_json_msg_t m_anyvalue = {m_anyvalue_fields, 8};
static const pb_json_field_t m_keyvalue_fields[] = {
    {"key", "key", 1, PB_J_STRING, PB_J_SINGLE, NULL},
    {"value", "value", 2, PB_J_MSG, PB_J_SINGLE, &m_anyvalue},
    {"keyStrindex", "key_strindex", 3, PB_J_I32, PB_J_SINGLE, NULL},
};
static const pb_json_msg_t m_keyvalue = {m_keyvalue_fields, 3};

PB_JSON_MSG(m_resource, {"attributes", "attributes", 1, PB_J_MSG, PB_J_REPEATED, &m_keyvalue},
            {"droppedAttributesCount", "dropped_attributes_count", 2, PB_J_U32, PB_J_SINGLE, NULL});
PB_JSON_MSG(m_scope, {"name", "name", 1, PB_J_STRING, PB_J_SINGLE, NULL},
            {"version", "version", 2, PB_J_STRING, PB_J_SINGLE, NULL},
            {"attributes", "attributes", 3, PB_J_MSG, PB_J_REPEATED, &m_keyvalue},
            {"droppedAttributesCount", "dropped_attributes_count", 4, PB_J_U32, PB_J_SINGLE, NULL});
PB_JSON_MSG(m_valuetype, {"typeStrindex", "type_strindex", 1, PB_J_I32, PB_J_SINGLE, NULL},
            {"unitStrindex", "unit_strindex", 2, PB_J_I32, PB_J_SINGLE, NULL});
PB_JSON_MSG(m_sample, {"stackIndex", "stack_index", 1, PB_J_I32, PB_J_SINGLE, NULL},
            {"attributeIndices", "attribute_indices", 2, PB_J_I32, PB_J_REPEATED, NULL},
            {"linkIndex", "link_index", 3, PB_J_I32, PB_J_SINGLE, NULL},
            {"values", "values", 4, PB_J_I64, PB_J_REPEATED, NULL},
            {"timestampsUnixNano", "timestamps_unix_nano", 5, PB_J_FIXED64, PB_J_REPEATED, NULL});
PB_JSON_MSG(m_profile, {"sampleType", "sample_type", 1, PB_J_MSG, PB_J_SINGLE, &m_valuetype},
            {"samples", "samples", 2, PB_J_MSG, PB_J_REPEATED, &m_sample},
            {"timeUnixNano", "time_unix_nano", 3, PB_J_FIXED64, PB_J_SINGLE, NULL},
            {"durationNano", "duration_nano", 4, PB_J_U64, PB_J_SINGLE, NULL},
            {"periodType", "period_type", 5, PB_J_MSG, PB_J_SINGLE, &m_valuetype},
            {"period", "period", 6, PB_J_I64, PB_J_SINGLE, NULL},
            {"profileId", "profile_id", 7, PB_J_HEX, PB_J_SINGLE, NULL},
            {"droppedAttributesCount", "dropped_attributes_count", 8, PB_J_U32, PB_J_SINGLE, NULL},
            {"originalPayloadFormat", "original_payload_format", 9, PB_J_STRING, PB_J_SINGLE, NULL},
            {"originalPayload", "original_payload", 10, PB_J_BYTES, PB_J_SINGLE, NULL},
            {"attributeIndices", "attribute_indices", 11, PB_J_I32, PB_J_REPEATED, NULL});
PB_JSON_MSG(m_scope_profiles, {"scope", "scope", 1, PB_J_MSG, PB_J_SINGLE, &m_scope},
            {"profiles", "profiles", 2, PB_J_MSG, PB_J_REPEATED, &m_profile},
            {"schemaUrl", "schema_url", 3, PB_J_STRING, PB_J_SINGLE, NULL});
PB_JSON_MSG(m_resource_profiles, {"resource", "resource", 1, PB_J_MSG, PB_J_SINGLE, &m_resource},
            {"scopeProfiles", "scope_profiles", 2, PB_J_MSG, PB_J_REPEATED, &m_scope_profiles},
            {"schemaUrl", "schema_url", 3, PB_J_STRING, PB_J_SINGLE, NULL});
PB_JSON_MSG(m_mapping, {"memoryStart", "memory_start", 1, PB_J_U64, PB_J_SINGLE, NULL},
            {"memoryLimit", "memory_limit", 2, PB_J_U64, PB_J_SINGLE, NULL},
            {"fileOffset", "file_offset", 3, PB_J_U64, PB_J_SINGLE, NULL},
            {"filenameStrindex", "filename_strindex", 4, PB_J_I32, PB_J_SINGLE, NULL},
            {"attributeIndices", "attribute_indices", 5, PB_J_I32, PB_J_REPEATED, NULL});
PB_JSON_MSG(m_line, {"functionIndex", "function_index", 1, PB_J_I32, PB_J_SINGLE, NULL},
            {"line", "line", 2, PB_J_I64, PB_J_SINGLE, NULL},
            {"column", "column", 3, PB_J_I64, PB_J_SINGLE, NULL});
PB_JSON_MSG(m_location, {"mappingIndex", "mapping_index", 1, PB_J_I32, PB_J_SINGLE, NULL},
            {"address", "address", 2, PB_J_U64, PB_J_SINGLE, NULL},
            {"lines", "lines", 3, PB_J_MSG, PB_J_REPEATED, &m_line},
            {"attributeIndices", "attribute_indices", 4, PB_J_I32, PB_J_REPEATED, NULL});
PB_JSON_MSG(m_function, {"nameStrindex", "name_strindex", 1, PB_J_I32, PB_J_SINGLE, NULL},
            {"systemNameStrindex", "system_name_strindex", 2, PB_J_I32, PB_J_SINGLE, NULL},
            {"filenameStrindex", "filename_strindex", 3, PB_J_I32, PB_J_SINGLE, NULL},
            {"startLine", "start_line", 4, PB_J_I64, PB_J_SINGLE, NULL});
PB_JSON_MSG(m_link, {"traceId", "trace_id", 1, PB_J_HEX, PB_J_SINGLE, NULL},
            {"spanId", "span_id", 2, PB_J_HEX, PB_J_SINGLE, NULL});
PB_JSON_MSG(m_kvunit, {"keyStrindex", "key_strindex", 1, PB_J_I32, PB_J_SINGLE, NULL},
            {"value", "value", 2, PB_J_MSG, PB_J_SINGLE, &m_anyvalue},
            {"unitStrindex", "unit_strindex", 3, PB_J_I32, PB_J_SINGLE, NULL});
PB_JSON_MSG(m_stack, {"locationIndices", "location_indices", 1, PB_J_I32, PB_J_REPEATED, NULL});
PB_JSON_MSG(m_dictionary, {"mappingTable", "mapping_table", 1, PB_J_MSG, PB_J_REPEATED, &m_mapping},
            {"locationTable", "location_table", 2, PB_J_MSG, PB_J_REPEATED, &m_location},
            {"functionTable", "function_table", 3, PB_J_MSG, PB_J_REPEATED, &m_function},
            {"linkTable", "link_table", 4, PB_J_MSG, PB_J_REPEATED, &m_link},
            {"stringTable", "string_table", 5, PB_J_STRING, PB_J_REPEATED, NULL},
            {"attributeTable", "attribute_table", 6, PB_J_MSG, PB_J_REPEATED, &m_kvunit},
            {"stackTable", "stack_table", 7, PB_J_MSG, PB_J_REPEATED, &m_stack});
PB_JSON_MSG(m_request,
            {"resourceProfiles", "resource_profiles", 1, PB_J_MSG, PB_J_REPEATED, &m_resource_profiles},
            {"dictionary", "dictionary", 2, PB_J_MSG, PB_J_SINGLE, &m_dictionary});

int otlp_json_to_pb(slice_t json, buf_t *pb, err_t *err)
{
	return pb_json_to_pb(json, &m_request, "request", pb, err);
}

/* ---- Responses ---------------------------------------------------------------- */

void otlp_response_pb(const otlp_result_t *r, buf_t *out)
{
	if (!r->rejected_profiles && !r->message[0])
		return; /* the empty message is a valid ExportProfilesServiceResponse */
	size_t mark = pb_begin(out, 1);
	pb_put_uint(out, 1, r->rejected_profiles);
	if (r->message[0])
		pb_put_bytes(out, 2, slice_cstr(r->message));
	pb_end(out, mark);
}

void otlp_response_json(const otlp_result_t *r, buf_t *out)
{
	if (!r->rejected_profiles && !r->message[0]) {
		buf_puts(out, "{}");
		return;
	}
	buf_printf(out, "{\"partialSuccess\":{\"rejectedProfiles\":\"%" PRIu32 "\",\"errorMessage\":",
	           r->rejected_profiles);
	buf_json_str(out, slice_cstr(r->message));
	buf_puts(out, "}}");
}
