/* PushRequest of push.v1.PusherService (pyroscope_push.h): the protobuf
 * decoder over pb.h's message layer, bounded by limits.h, and the JSON
 * schema for Connect's JSON codec. */
#include "wire/pyroscope_push.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "wire/pb.h"
#include "wire/pb_json.h"

PB_SPEC(request_spec, {1, PB_F_LEN, "series"});
PB_SPEC(series_spec, {1, PB_F_LEN, "labels"}, {2, PB_F_LEN, "samples"});
PB_SPEC(sample_spec, {1, PB_F_LEN, "raw_profile"}, {2, PB_F_LEN, "ID"});
PB_SPEC(label_spec, {1, PB_F_LEN, "name"}, {2, PB_F_LEN, "value"});

static int decode_label(const pb_src_t *s, slice_t msg, const pb_path_t *lp, pyro_label_t *out, err_t *err)
{
	pb_reader_t r = pb_reader_make(msg);
	const pb_field_t *f;
	int wt, rc;
	*out = (pyro_label_t){{NULL, 0}, {NULL, 0}};
	while ((rc = pb_next(s, &r, &label_spec, lp, &f, &wt, err)) == 1) {
		slice_t v;
		if (pb_read_len(s, &r, &v, lp, f->name, err) < 0)
			return -1;
		if (v.n > LIMIT_STRING_BYTES)
			return pb_fail(s, err, 400, lp, f->name, "%zu bytes; the limit is %u", v.n,
			               LIMIT_STRING_BYTES);
		if (f->num == 1)
			out->key = v;
		else
			out->value = v;
	}
	if (rc < 0)
		return -1;
	if (!out->key.n)
		return pb_fail(s, err, 400, lp, "name", "empty label name");
	return 0;
}

static int decode_sample(const pb_src_t *s, slice_t msg, const pb_path_t *sp, slice_t *profile, err_t *err)
{
	pb_reader_t r = pb_reader_make(msg);
	const pb_field_t *f;
	int wt, rc;
	*profile = (slice_t){NULL, 0};
	while ((rc = pb_next(s, &r, &sample_spec, sp, &f, &wt, err)) == 1) {
		slice_t v;
		if (pb_read_len(s, &r, &v, sp, f->name, err) < 0)
			return -1;
		if (f->num == 1)
			*profile = v;
	}
	return rc;
}

/* Series o->series[last]: its labels go to labels (room for LIMIT_LABELS), its profiles to o->_profiles. */
static int decode_series(pyro_push_t *o, pyro_label_t *labels, const pb_src_t *s, slice_t msg,
                         const pb_path_t *sp, err_t *err)
{
	pb_reader_t r = pb_reader_make(msg);
	const pb_field_t *f;
	int wt, rc;
	pyro_series_t *ser = &o->series[o->n_series - 1];
	while ((rc = pb_next(s, &r, &series_spec, sp, &f, &wt, err)) == 1) {
		slice_t v;
		if (pb_read_len(s, &r, &v, sp, f->name, err) < 0)
			return -1;
		if (f->num == 1) {
			pb_path_t lp = {sp, "labels", ser->n_labels};
			if (ser->n_labels >= LIMIT_LABELS)
				return pb_fail(s, err, 400, sp, "labels", "more than %u labels",
				               LIMIT_LABELS);
			pyro_label_t l;
			if (decode_label(s, v, &lp, &l, err) < 0)
				return -1;
			for (uint32_t k = 0; k < ser->n_labels; k++)
				if (slice_eq(labels[k].key, l.key))
					return pb_fail(
					    s, err, 400, &lp, "name", "duplicate label name \"%.*s\"",
					    (int)(l.key.n > 64 ? 64 : l.key.n), (const char *)l.key.p);
			labels[ser->n_labels++] = l;
		} else {
			pb_path_t pp = {sp, "samples", ser->n_profiles};
			if (o->n_profiles >= LIMIT_PUSH_PROFILES)
				return pb_fail(s, err, 413, &pp, NULL,
				               "more than %u raw profiles in one request",
				               LIMIT_PUSH_PROFILES);
			o->_profiles =
			    xgrow(o->_profiles, &o->_cap_profiles, o->n_profiles + 1, sizeof *o->_profiles);
			if (decode_sample(s, v, &pp, &o->_profiles[o->n_profiles], err) < 0)
				return -1;
			ser->n_profiles++;
			o->n_profiles++;
		}
	}
	return rc;
}

int pyro_push_decode(slice_t pb, pyro_push_t *out, err_t *err)
{
	memset(out, 0, sizeof *out);
	pb_src_t s = {pb.p, "PushRequest"};
	pb_reader_t r = pb_reader_make(pb);
	const pb_field_t *f;
	int wt, rc;
	/* Labels go to one array, LIMIT_LABELS per series; the series' label
	 * pointers are set once every array has stopped moving. */
	uint32_t *label_at = NULL, *profile_at = NULL;
	size_t cap_la = 0, cap_pa = 0;
	while ((rc = pb_next(&s, &r, &request_spec, NULL, &f, &wt, err)) == 1) {
		slice_t v;
		pb_path_t sp = {NULL, "series", out->n_series};
		if (pb_read_len(&s, &r, &v, NULL, f->name, err) < 0) {
			rc = -1;
			break;
		}
		if (out->n_series >= LIMIT_PUSH_PROFILES) {
			rc = pb_fail(&s, err, 413, &sp, NULL, "more than %u series in one request",
			             LIMIT_PUSH_PROFILES);
			break; /* rc is -1 */
		}
		out->series = xgrow(out->series, &out->_cap_series, out->n_series + 1, sizeof *out->series);
		label_at = xgrow(label_at, &cap_la, out->n_series + 1, sizeof *label_at);
		profile_at = xgrow(profile_at, &cap_pa, out->n_series + 1, sizeof *profile_at);
		size_t used = 0;
		for (uint32_t i = 0; i < out->n_series; i++)
			used += out->series[i].n_labels;
		out->_labels =
		    xgrow(out->_labels, &out->_cap_labels, used + LIMIT_LABELS, sizeof *out->_labels);
		label_at[out->n_series] = (uint32_t)used;
		profile_at[out->n_series] = out->n_profiles;
		out->series[out->n_series] = (pyro_series_t){.labels = out->_labels + used};
		out->n_series++;
		if (decode_series(out, out->_labels + used, &s, v, &sp, err) < 0) {
			rc = -1;
			break;
		}
	}
	for (uint32_t i = 0; rc == 0 && i < out->n_series; i++) {
		out->series[i].labels = out->_labels + label_at[i];
		out->series[i].profiles =
		    out->_profiles ? out->_profiles + profile_at[i] : NULL; /* none at all */
	}
	free(label_at);
	free(profile_at);
	return rc < 0 ? -1 : 0;
}

void pyro_push_free(pyro_push_t *p)
{
	free(p->series);
	free(p->_labels);
	free(p->_profiles);
	memset(p, 0, sizeof *p);
}

uint32_t pyro_labels_to_series(const pyro_label_t *in, uint32_t n, slice_t *service, slice_t *profile_name,
                               model_label_t *out)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; i++) {
		const pyro_label_t *l = &in[i];
		if (!l->value.n)
			continue;
		if (slice_eq_cstr(l->key, "service_name"))
			*service = l->value;
		else if (slice_eq_cstr(l->key, "__name__") && profile_name)
			*profile_name = l->value;
		else if (!(l->key.n >= 2 && l->key.p[0] == '_' && l->key.p[1] == '_'))
			out[k++] = (model_label_t){l->key, l->value};
	}
	return k;
}

PB_JSON_MSG(j_label, {"name", "name", 1, PB_J_STRING, PB_J_SINGLE, NULL},
            {"value", "value", 2, PB_J_STRING, PB_J_SINGLE, NULL});
PB_JSON_MSG(j_sample, {"rawProfile", "raw_profile", 1, PB_J_BYTES, PB_J_SINGLE, NULL},
            {"ID", "ID", 2, PB_J_STRING, PB_J_SINGLE, NULL});
PB_JSON_MSG(j_series, {"labels", "labels", 1, PB_J_MSG, PB_J_REPEATED, &j_label},
            {"samples", "samples", 2, PB_J_MSG, PB_J_REPEATED, &j_sample});
PB_JSON_MSG(j_request, {"series", "series", 1, PB_J_MSG, PB_J_REPEATED, &j_series});

int pyro_push_json_to_pb(slice_t json, buf_t *pb, err_t *err)
{
	return pb_json_to_pb(json, &j_request, "PushRequest", pb, err);
}
