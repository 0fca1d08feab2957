/* Pyroscope's push.v1.PusherService/Push request (API: Push:
 * push.v1.PusherService/Push): PushRequest{1 repeated RawProfileSeries
 * series}; RawProfileSeries{1 repeated LabelPair labels, 2 repeated
 * RawSample samples, 3 annotations (ignored)}; RawSample{1 bytes
 * raw_profile, 2 string ID}; LabelPair{1 string name, 2 string value}.
 * Decoded from protobuf, or from Connect's JSON codec transcoded to protobuf
 * first, so both forms pass the same checks. The raw profiles (pprof) are
 * returned as slices, not decoded here. */
#ifndef KILN_WIRE_PYROSCOPE_PUSH_H
#define KILN_WIRE_PYROSCOPE_PUSH_H

#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/slice.h"
#include "model/model.h"
#include "wire/pyroscope.h"

/* One RawProfileSeries: its labels as sent (names non-empty and distinct)
 * and its samples' raw_profile bytes. */
typedef struct {
	const pyro_label_t *labels;
	uint32_t n_labels;
	const slice_t *profiles;
	uint32_t n_profiles;
} pyro_series_t;

/* A decoded PushRequest. Slices point into the protobuf it was decoded
 * from, which must outlive them; the arrays are the struct's
 * (pyro_push_free). */
typedef struct {
	pyro_series_t *series;
	uint32_t n_series;
	uint32_t n_profiles; /* of all series */
	pyro_label_t *_labels;
	slice_t *_profiles;
	size_t _cap_series, _cap_labels, _cap_profiles;
} pyro_push_t;

/* Decodes a PushRequest. 0, or -1 + err (out then holds nothing to use but
 * must still be freed): 400 "<path>: <what>" for malformed protobuf (the
 * pb.h messages, e.g. "series[1].samples[0].raw_profile: length at byte 9
 * runs past the end of its message or is malformed"), an empty label name,
 * a duplicate label name in one series, a name or value longer than
 * LIMIT_STRING_BYTES or more than LIMIT_LABELS labels in a series; 413 for
 * more than LIMIT_PUSH_PROFILES raw profiles in the request. */
int pyro_push_decode(slice_t pb, pyro_push_t *out, err_t *err);
void pyro_push_free(pyro_push_t *p);

/* Pyroscope's labels as Kiln keeps them (POST /ingest's name= labels and a
 * Push series' labels): a non-empty service_name is the service (*service;
 * left alone when there is none), __name__ the profile name (*profile_name,
 * when not NULL; left alone when there is none), other names starting with
 * "__" and labels with an empty value are dropped, the rest are series
 * labels, written to out (room for n). Returns how many were written. */
uint32_t pyro_labels_to_series(const pyro_label_t *in, uint32_t n, slice_t *service, slice_t *profile_name,
                               model_label_t *out);

/* Connect's JSON form of a PushRequest ({"series":[{"labels":[{"name":..,
 * "value":..}],"samples":[{"rawProfile":"<base64>","ID":".."}]}]}, proto
 * names accepted too) → its protobuf, appended to pb (ceiling: 413 past it);
 * 400 "PushRequest: ..." or with the JSON path on malformed JSON or a wrong
 * type (pb_json.h). */
int pyro_push_json_to_pb(slice_t json, buf_t *pb, err_t *err);

#endif
