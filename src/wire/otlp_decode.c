/* OTLP ExportProfilesServiceRequest → the normalized batch: resources
 * (service and series labels), profiles, samples (stack, attributes, link,
 * values and timestamps), the time window and the request limits. The
 * dictionary is otlp_dict.c's. No decompression, no JSON (otlp_json.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/hash.h"
#include "base/limits.h"
#include "wire/otlp_int.h"

PB_SPEC(request_spec, {1, PB_F_LEN, "resource_profiles"}, {2, PB_F_LEN, "dictionary"});
PB_SPEC(rp_spec, {1, PB_F_LEN, "resource"}, {2, PB_F_LEN, "scope_profiles"}, {3, PB_F_LEN, "schema_url"});
PB_SPEC(resource_spec, {1, PB_F_LEN, "attributes"}, {2, PB_F_VARINT, "dropped_attributes_count"},
        {3, PB_F_LEN, "entity_refs"});
PB_SPEC(sp_spec, {1, PB_F_LEN, "scope"}, {2, PB_F_LEN, "profiles"}, {3, PB_F_LEN, "schema_url"});
PB_SPEC(scope_spec, {1, PB_F_LEN, "name"}, {2, PB_F_LEN, "version"}, {3, PB_F_LEN, "attributes"},
        {4, PB_F_VARINT, "dropped_attributes_count"});
PB_SPEC(profile_spec, {1, PB_F_LEN, "sample_type"}, {2, PB_F_LEN, "samples"}, {3, PB_F_I64, "time_unix_nano"},
        {4, PB_F_VARINT, "duration_nano"}, {5, PB_F_LEN, "period_type"}, {6, PB_F_VARINT, "period"},
        {7, PB_F_LEN, "profile_id"}, {8, PB_F_VARINT, "dropped_attributes_count"},
        {9, PB_F_LEN, "original_payload_format"}, {10, PB_F_LEN, "original_payload"},
        {11, PB_F_PVARINT, "attribute_indices"});
PB_SPEC(value_type_spec, {1, PB_F_VARINT, "type_strindex"}, {2, PB_F_VARINT, "unit_strindex"});
PB_SPEC(sample_spec, {1, PB_F_VARINT, "stack_index"}, {2, PB_F_PVARINT, "attribute_indices"},
        {3, PB_F_ANY, "link_index"}, {4, PB_F_PVARINT, "values"}, {5, PB_F_PI64, "timestamps_unix_nano"});

/* What a resource gives each of its profiles. */
typedef struct {
	slice_t service;
	model_label_t labels[LIMIT_LABELS];
	char text[LIMIT_LABELS][32];
	uint32_t n_labels;
} ot_resource_t;

/* ---- Old formats ---------------------------------------------------------- */

/* Next length-delimited field `want` of msg, tolerating anything: used only
 * to recognise older formats before the strict decode. 1 found, 0 not. */
static int lenient_next(pb_reader_t *r, uint32_t want, slice_t *out)
{
	uint32_t num;
	int wt;
	while (!pb_done(r) && pb_key(r, &num, &wt) == 0) {
		if (num == want && wt == PB_LEN)
			return pb_bytes(r, out) == 0;
		if (pb_skip(r, wt) < 0)
			return 0;
	}
	return 0;
}

/* Points of one Sample (more values or timestamps, at least one), read
 * leniently: only to size the batch. */
static uint64_t lenient_points(slice_t sample)
{
	uint64_t values = 0, stamps = 0, v;
	pb_reader_t r = pb_reader_make(sample);
	uint32_t num;
	int wt;
	while (!pb_done(&r) && pb_key(&r, &num, &wt) == 0) {
		slice_t s;
		if (num == 4 && wt == PB_LEN && pb_bytes(&r, &s) == 0) {
			for (size_t i = 0; i < s.n; i++)
				values += !(s.p[i] & 0x80);
		} else if (num == 5 && wt == PB_LEN && pb_bytes(&r, &s) == 0) {
			stamps += s.n / 8;
		} else if ((num == 4 && wt == PB_VARINT) || (num == 5 && wt == PB_I64)) {
			if (pb_skip(&r, wt) < 0)
				break;
			*(num == 4 ? &values : &stamps) += 1;
		} else if (pb_skip(&r, wt) < 0) {
			break;
		}
	}
	v = values > stamps ? values : stamps;
	return v ? v : 1;
}

/* Profiles, samples and sample points of the request, read with any
 * dictionary layout. */
static void lenient_count(slice_t req, uint64_t *profiles, uint64_t *samples, uint64_t *points)
{
	slice_t rp, sp, prof, s;
	pb_reader_t r = pb_reader_make(req);
	*profiles = *samples = *points = 0;
	while (lenient_next(&r, 1, &rp)) {
		pb_reader_t rr = pb_reader_make(rp);
		while (lenient_next(&rr, 2, &sp)) {
			pb_reader_t sr = pb_reader_make(sp);
			while (lenient_next(&sr, 2, &prof)) {
				(*profiles)++;
				pb_reader_t pr = pb_reader_make(prof);
				while (lenient_next(&pr, 2, &s)) {
					(*samples)++;
					*points += lenient_points(s);
				}
			}
		}
	}
}

/* ---- Samples --------------------------------------------------------------- */

static void push_u64(uint64_t **arr, size_t *n, size_t *cap, uint64_t v)
{
	if (*n >= *cap)
		*arr = xgrow(*arr, cap, *n + 1, sizeof **arr);
	(*arr)[(*n)++] = v;
}

/* The attribute set of the sample just read (d->attr_ix and link). */
static int sample_attrset(ot_dec_t *d, uint32_t link, const pb_path_t *p, uint32_t *out, err_t *err)
{
	if (d->n_attr_ix == 0 && link == 0 && d->n[T_LINK] == 0) {
		*out = 0;
		return 0;
	}
	uint64_t key = hash_bytes(d->attr_ix, d->n_attr_ix * sizeof *d->attr_ix, (uint64_t)link + 1);
	if (u64map_get(&d->attrset_cache, key, out))
		return 0;
	uint32_t n = 0;
	for (size_t i = 0; i < d->n_attr_ix; i++) {
		slice_t k, v;
		int scalar;
		pb_path_t ap = {&ot_dictionary_path, "attribute_table", (uint32_t)d->attr_ix[i]};
		char *text = d->label_text[n < LIMIT_LABELS ? n : 0];
		if (ot_keyvalue(d, d->tbl[T_ATTRIBUTE][d->attr_ix[i]], 1, &k, &v, &scalar, text, &ap, err) <
		    0)
			return -1;
		if (!scalar || !k.n)
			continue;
		if (n >= LIMIT_LABELS)
			return pb_fail(&d->src, err, 413, p, "attribute_indices",
			               "sample has more than %u attributes; the limit is %u", LIMIT_LABELS,
			               LIMIT_LABELS);
		d->labels[n++] = (model_label_t){k, v};
	}
	if (link < d->n[T_LINK] && ot_link_hex(d, link)) {
		d->labels[n++] = (model_label_t){slice_cstr("trace_id"), slice_make(d->link_hex[0], 32)};
		d->labels[n++] = (model_label_t){slice_cstr("span_id"), slice_make(d->link_hex[1], 16)};
	}
	*out = model_attrset_intern(d->b, d->labels, n);
	u64map_put(&d->attrset_cache, key, *out);
	return 0;
}

static int decode_sample(ot_dec_t *d, slice_t msg, const pb_path_t *p, int64_t *min_ts, err_t *err)
{
	pb_reader_t r = pb_reader_make(msg);
	const pb_field_t *f;
	int wt, rc;
	uint64_t v, stack = 0, link = 0;
	size_t before;
	d->n_attr_ix = d->n_values = d->n_stamps = 0;
	while ((rc = pb_next(&d->src, &r, &sample_spec, p, &f, &wt, err)) == 1) {
		switch (f->num) {
		case 1:
			if (pb_read_varint(&d->src, &r, &stack, p, f->name, err) < 0 ||
			    ot_check_index(d, (int64_t)stack, T_STACK, p, f->name, err) < 0)
				return -1;
			break;
		case 2:
			before = d->n_attr_ix;
			if (ot_read_packed_varint(d, &r, wt, &d->attr_ix, &d->n_attr_ix, &d->cap_attr_ix, p,
			                          f->name, err) < 0)
				return -1;
			for (size_t i = before; i < d->n_attr_ix; i++)
				if (ot_check_index(d, (int64_t)d->attr_ix[i], T_ATTRIBUTE, p, f->name, err) <
				    0)
					return -1;
			break;
		case 3:
			if (wt == PB_LEN)
				return pb_fail(
				    &d->src, err, 400, p, f->name,
				    "wire type 2 (length-delimited), expected varint: a length-delimited "
				    "Sample field 3 is the attribute_indices of opentelemetry-proto "
				    "v1.8/v1.9 (Collector 0.136-0.147): the sender's OTLP version differs "
				    "from the one supported; Kiln supports " OT_SUPPORTED);
			if (wt != PB_VARINT)
				return pb_fail(&d->src, err, 400, p, f->name, "wire type %d, expected varint",
				               wt);
			if (pb_read_varint(&d->src, &r, &link, p, f->name, err) < 0)
				return -1;
			break;
		case 4:
			if (ot_read_packed_varint(d, &r, wt, &d->values, &d->n_values, &d->cap_values, p,
			                          f->name, err) < 0)
				return -1;
			break;
		default:
			if (wt == PB_I64) {
				if (pb_read_fixed64(&d->src, &r, &v, p, f->name, err) < 0)
					return -1;
				push_u64(&d->stamps, &d->n_stamps, &d->cap_stamps, v);
				break;
			}
			slice_t s;
			if (pb_read_len(&d->src, &r, &s, p, f->name, err) < 0)
				return -1;
			if (s.n % 8)
				return pb_fail(&d->src, err, 400, p, f->name,
				               "packed fixed64 of %zu bytes is not a multiple of 8", s.n);
			if (d->n_stamps + s.n / 8 > d->cap_stamps)
				d->stamps = xgrow(d->stamps, &d->cap_stamps, d->n_stamps + s.n / 8,
				                  sizeof *d->stamps);
			pb_reader_t sr = pb_reader_make(s);
			while (!pb_done(&sr) && pb_fixed64(&sr, &v) == 0)
				d->stamps[d->n_stamps++] = v;
			break;
		}
	}
	if (rc < 0)
		return -1;
	/* link_index 0 into an empty link_table means "no link". */
	if ((link != 0 || d->n[T_LINK] != 0) &&
	    ot_check_index(d, (int64_t)link, T_LINK, p, "link_index", err) < 0)
		return -1;
	if (d->n_values == 0 && d->n_stamps == 0)
		return pb_fail(&d->src, err, 400, p, NULL,
		               "no values and no timestamps (a sample needs at least one)");
	if (d->n_values && d->n_stamps && d->n_values != d->n_stamps)
		return pb_fail(&d->src, err, 400, p, NULL,
		               "%zu values but %zu timestamps (the lengths must be equal)", d->n_values,
		               d->n_stamps);

	const ot_stack_t *st = &d->stacks[stack];
	d->frames_total += st->depth;
	if (d->frames_total > LIMIT_REQUEST_FRAMES)
		d->frames_over = 1;
	if (d->frames_over)
		return 0; /* only count on, for the message */
	/* MODEL_NONE for an empty stack (stack_table[0] is one): counted at the root. */
	uint32_t node = ot_stack_node(d, (uint32_t)stack);
	uint32_t attrset;
	if (sample_attrset(d, (uint32_t)link, p, &attrset, err) < 0)
		return -1;
	size_t n = d->n_values ? d->n_values : d->n_stamps;
	for (size_t i = 0; i < d->n_values; i++) {
		uint64_t a = (int64_t)d->values[i] < 0 ? (uint64_t)0 - d->values[i] : d->values[i];
		if (a > (uint64_t)INT64_MAX - d->abs_sum)
			return pb_fail(&d->src, err, 400, p, "values",
			               "the profile's values add up past %" PRId64 " (a value of %" PRId64
			               ")",
			               INT64_MAX, (int64_t)d->values[i]);
		d->abs_sum += a;
	}
	if (!d->n_values) { /* value 1 per timestamp */
		if (d->n_stamps > (uint64_t)INT64_MAX - d->abs_sum)
			return pb_fail(&d->src, err, 400, p, "timestamps_unix_nano",
			               "the profile's values add up past %" PRId64, INT64_MAX);
		d->abs_sum += d->n_stamps;
	}
	if (d->n_pending + n > d->cap_pending)
		d->pending = xgrow(d->pending, &d->cap_pending, d->n_pending + n, sizeof *d->pending);
	for (size_t i = 0; i < n; i++) {
		int64_t t = d->n_stamps ? (int64_t)d->stamps[i] : 0;
		if (t && (*min_ts == 0 || t < *min_ts))
			*min_ts = t;
		d->pending[d->n_pending++] =
		    (model_sample_t){node, attrset, d->n_values ? (int64_t)d->values[i] : 1, t};
	}
	return 0;
}

/* ---- Profiles -------------------------------------------------------------- */

static int value_type(const ot_dec_t *d, slice_t msg, const pb_path_t *p, slice_t *type, slice_t *unit,
                      err_t *err)
{
	pb_reader_t r = pb_reader_make(msg);
	const pb_field_t *f;
	int wt, rc;
	uint64_t v, ix[3] = {0};
	while ((rc = pb_next(&d->src, &r, &value_type_spec, p, &f, &wt, err)) == 1) {
		if (pb_read_varint(&d->src, &r, &v, p, f->name, err) < 0 ||
		    ot_check_index(d, (int64_t)v, T_STRING, p, f->name, err) < 0)
			return -1;
		ix[f->num] = v;
	}
	if (rc < 0)
		return -1;
	/* An absent ValueType or string index 0 is the empty string; only an
	 * empty string_table cannot give it. */
	*type = d->n[T_STRING] ? d->tbl[T_STRING][ix[1]] : slice_make(NULL, 0);
	*unit = d->n[T_STRING] ? d->tbl[T_STRING][ix[2]] : slice_make(NULL, 0);
	return 0;
}

static int is_samples_count(slice_t type, slice_t unit)
{
	return (slice_eq_cstr(type, "samples") || slice_eq_cstr(type, "sample")) &&
	       slice_eq_cstr(unit, "count");
}

static int in_window(const otlp_decode_opts_t *o, int64_t t)
{
	return (!o->min_time_ns || t >= o->min_time_ns) && (!o->max_time_ns || t <= o->max_time_ns);
}

static int decode_profile(ot_dec_t *d, slice_t msg, const pb_path_t *p, const ot_resource_t *res,
                          otlp_result_t *out, err_t *err)
{
	const otlp_decode_opts_t *o = d->o;
	pb_reader_t r = pb_reader_make(msg);
	const pb_field_t *f;
	int wt, rc;
	uint64_t v, time_ns = 0, duration = 0, period = 0, n_samples = 0;
	slice_t s, type_msg = {0}, period_msg = {0};
	while ((rc = pb_next(&d->src, &r, &profile_spec, p, &f, &wt, err)) == 1) {
		switch (f->kind) {
		case PB_F_I64:
			if (pb_read_fixed64(&d->src, &r, &time_ns, p, f->name, err) < 0)
				return -1;
			break;
		case PB_F_VARINT:
			if (pb_read_varint(&d->src, &r, &v, p, f->name, err) < 0)
				return -1;
			if (f->num == 4)
				duration = v;
			else if (f->num == 6)
				period = v;
			break;
		case PB_F_PVARINT:
			d->n_u64s = 0;
			if (ot_read_packed_varint(d, &r, wt, &d->u64s, &d->n_u64s, &d->cap_u64s, p, f->name,
			                          err) < 0)
				return -1;
			for (size_t i = 0; i < d->n_u64s; i++)
				if (ot_check_index(d, (int64_t)d->u64s[i], T_ATTRIBUTE, p, f->name, err) < 0)
					return -1;
			break;
		default:
			if (pb_read_len(&d->src, &r, &s, p, f->name, err) < 0)
				return -1;
			if (f->num == 1)
				type_msg = s;
			else if (f->num == 5)
				period_msg = s;
			else if (f->num == 2)
				n_samples++;
			else if (f->num == 7 && s.n != 0 && s.n != 16)
				return pb_fail(&d->src, err, 400, p, f->name,
				               "%zu bytes; a profile id has 16 (or none)", s.n);
			break;
		}
	}
	if (rc < 0)
		return -1;
	slice_t type, unit, ptype, punit;
	pb_path_t tp = {p, "sample_type", PB_NOIX}, pp = {p, "period_type", PB_NOIX};
	if (value_type(d, type_msg, &tp, &type, &unit, err) < 0 ||
	    value_type(d, period_msg, &pp, &ptype, &punit, err) < 0)
		return -1;
	uint32_t max_rows = o->max_rows ? o->max_rows : LIMIT_SAMPLE_ROWS;
	if (n_samples > max_rows)
		return pb_fail(&d->src, err, 413, p, NULL,
		               "%" PRIu64 " samples; the limit is %" PRIu32
		               " sample rows per profile (maxDecodedSampleRows)",
		               n_samples, max_rows);

	/* The samples, into d->pending. */
	int64_t min_ts = 0;
	uint32_t k = 0;
	d->n_pending = 0;
	d->abs_sum = 0;
	r = pb_reader_make(msg);
	uint32_t num;
	while (!pb_done(&r) && pb_key(&r, &num, &wt) == 0) { /* checked above */
		if (num != 2 || wt != PB_LEN) {
			if (pb_skip(&r, wt) < 0)
				break;
			continue;
		}
		if (pb_bytes(&r, &s) < 0)
			break;
		pb_path_t sp = {p, "samples", k++};
		if (decode_sample(d, s, &sp, &min_ts, err) < 0)
			return -1;
	}
	if (d->frames_over || d->n_pending == 0)
		return 0;

	/* The time window: points outside are refused. */
	int64_t t0 = time_ns ? (int64_t)time_ns : min_ts ? min_ts : o->now_ns;
	size_t kept = 0;
	for (size_t i = 0; i < d->n_pending; i++) {
		model_sample_t *e = &d->pending[i];
		if (in_window(o, e->time_ns ? e->time_ns : t0))
			d->pending[kept++] = *e;
	}
	out->rejected_samples += d->n_pending - kept;
	if (kept == 0) {
		out->rejected_profiles++;
		return 0;
	}

	model_batch_t *b = d->b;
	model_profile_t *mp = model_profile_add(b);
	model_profile_set_type(b, mp, type, unit, ptype, punit, (int64_t)period);
	model_profile_set_service(b, mp, res->service);
	for (uint32_t l = 0; l < res->n_labels; l++)
		model_profile_add_label(b, mp, res->labels[l].key, res->labels[l].value);
	mp->aggregation = model_aggregation_of(type);
	mp->cpu_alias = is_samples_count(type, unit) && slice_eq_cstr(ptype, "cpu") &&
	                slice_eq_cstr(punit, "nanoseconds");
	mp->time_ns = t0;
	mp->duration_ns = (int64_t)duration;
	/* Room for every point of the request at once instead of a doubling
	 * chain per profile (points are bounded by the request's bytes). */
	size_t want = (size_t)b->n_samples + kept;
	if (want > b->cap_samples && b->n_samples + d->points > want)
		want = (size_t)(b->n_samples + d->points);
	b->samples = xgrow(b->samples, &b->cap_samples, want, sizeof *b->samples);
	model_samples_add(b, mp, d->pending, (uint32_t)kept);
	model_profile_finish(b, mp);
	out->profiles++;
	out->samples += kept;
	return 0;
}

/* ---- Resources and scopes ------------------------------------------------- */

static int check_scope(ot_dec_t *d, slice_t msg, const pb_path_t *p, err_t *err)
{
	pb_reader_t r = pb_reader_make(msg);
	const pb_field_t *f;
	int wt, rc;
	uint32_t k = 0;
	while ((rc = pb_next(&d->src, &r, &scope_spec, p, &f, &wt, err)) == 1) {
		slice_t s, key, value;
		uint64_t v;
		int scalar;
		char text[32];
		if (f->kind == PB_F_VARINT) {
			if (pb_read_varint(&d->src, &r, &v, p, f->name, err) < 0)
				return -1;
			continue;
		}
		if (pb_read_len(&d->src, &r, &s, p, f->name, err) < 0)
			return -1;
		if (f->num == 3) {
			pb_path_t ap = {p, "attributes", k++};
			if (ot_keyvalue(d, s, 0, &key, &value, &scalar, text, &ap, err) < 0)
				return -1;
		}
	}
	return rc;
}

static int decode_scope(ot_dec_t *d, slice_t msg, const pb_path_t *p, const ot_resource_t *res,
                        otlp_result_t *out, err_t *err)
{
	pb_reader_t r = pb_reader_make(msg);
	const pb_field_t *f;
	int wt, rc;
	uint32_t k = 0, first = d->b->n_profiles;
	while ((rc = pb_next(&d->src, &r, &sp_spec, p, &f, &wt, err)) == 1) {
		slice_t s;
		if (pb_read_len(&d->src, &r, &s, p, f->name, err) < 0)
			return -1;
		if (f->num == 1) {
			pb_path_t sp = {p, "scope", PB_NOIX};
			if (check_scope(d, s, &sp, err) < 0)
				return -1;
		} else if (f->num == 2) {
			pb_path_t pp = {p, "profiles", k++};
			if (decode_profile(d, s, &pp, res, out, err) < 0)
				return -1;
		}
	}
	if (rc < 0)
		return -1;
	/* samples:count is offered as cpu:nanoseconds only when no sibling
	 * profile already is cpu:nanoseconds. */
	model_batch_t *b = d->b;
	int has_cpu_ns = 0;
	for (uint32_t i = first; i < b->n_profiles && !has_cpu_ns; i++)
		has_cpu_ns = slice_eq_cstr(b->profiles[i].sample_type, "cpu") &&
		             slice_eq_cstr(b->profiles[i].sample_unit, "nanoseconds");
	for (uint32_t i = first; has_cpu_ns && i < b->n_profiles; i++)
		b->profiles[i].cpu_alias = 0;
	return 0;
}

/* Service (API: Services and naming) and series labels of a Resource. */
static int decode_resource(ot_dec_t *d, slice_t msg, const pb_path_t *p, ot_resource_t *res, err_t *err)
{
	pb_reader_t r = pb_reader_make(msg);
	const pb_field_t *f;
	int wt, rc;
	uint32_t k = 0;
	slice_t service = {0}, env_service = {0}, exe = {0};
	res->n_labels = 0;
	while ((rc = pb_next(&d->src, &r, &resource_spec, p, &f, &wt, err)) == 1) {
		slice_t s, key, value;
		uint64_t v;
		int scalar;
		char text[32];
		if (f->kind == PB_F_VARINT) {
			if (pb_read_varint(&d->src, &r, &v, p, f->name, err) < 0)
				return -1;
			continue;
		}
		if (pb_read_len(&d->src, &r, &s, p, f->name, err) < 0)
			return -1;
		if (f->num != 1)
			continue;
		pb_path_t ap = {p, "attributes", k++};
		if (ot_keyvalue(d, s, 0, &key, &value, &scalar, text, &ap, err) < 0)
			return -1;
		if (!scalar || !key.n)
			continue;
		if (slice_eq_cstr(key, "service.name")) {
			service = value;
			continue;
		}
		if (slice_eq_cstr(key, "process.environment_variable.OTEL_SERVICE_NAME"))
			env_service = value;
		else if (slice_eq_cstr(key, "process.executable.name"))
			exe = value;
		int dup = 0;
		for (uint32_t i = 0; i < res->n_labels && !dup; i++)
			dup = slice_eq(res->labels[i].key, key);
		if (dup || res->n_labels >= LIMIT_LABELS)
			continue;
		if (value.p == (const uint8_t *)text) { /* a rendered number: keep its text */
			memcpy(res->text[res->n_labels], text, sizeof text);
			value.p = (const uint8_t *)res->text[res->n_labels];
		}
		res->labels[res->n_labels++] = (model_label_t){key, value};
	}
	if (rc < 0)
		return -1;
	if (service.n) {
		res->service = service;
	} else if (env_service.n) {
		res->service = env_service;
	} else if (exe.n) {
		static const char prefix[] = "unknown_service:";
		size_t n = sizeof prefix - 1 + exe.n;
		char *s = arena_alloc(d->scratch, n);
		memcpy(s, prefix, sizeof prefix - 1);
		memcpy(s + sizeof prefix - 1, exe.p, exe.n);
		res->service = slice_make(s, n);
	} else {
		res->service = slice_cstr("unknown_service");
	}
	return 0;
}

static int decode_resource_profiles(ot_dec_t *d, slice_t msg, uint32_t i, otlp_result_t *out, err_t *err)
{
	pb_path_t p = {NULL, "resource_profiles", i};
	ot_resource_t *res = xmalloc(sizeof *res);
	pb_reader_t r = pb_reader_make(msg);
	const pb_field_t *f;
	int wt, rc;
	slice_t s, resource = {0};
	/* The resource may follow its scopes: find it first. */
	while ((rc = pb_next(&d->src, &r, &rp_spec, &p, &f, &wt, err)) == 1) {
		if (pb_read_len(&d->src, &r, &s, &p, f->name, err) < 0) {
			rc = -1;
			break;
		}
		if (f->num == 1)
			resource = s;
	}
	pb_path_t resp = {&p, "resource", PB_NOIX};
	if (rc < 0 || decode_resource(d, resource, &resp, res, err) < 0) {
		free(res);
		return -1;
	}
	uint32_t k = 0;
	r = pb_reader_make(msg);
	while ((rc = pb_next(&d->src, &r, &rp_spec, &p, &f, &wt, err)) == 1) {
		if (pb_read_len(&d->src, &r, &s, &p, f->name, err) < 0) {
			rc = -1;
			break;
		}
		if (f->num != 2)
			continue;
		pb_path_t sp = {&p, "scope_profiles", k++};
		if (decode_scope(d, s, &sp, res, out, err) < 0) {
			rc = -1;
			break;
		}
	}
	free(res);
	return rc;
}

/* ---- The request ----------------------------------------------------------- */

static void refusal_message(const otlp_decode_opts_t *o, otlp_result_t *res)
{
	char window[96];
	if (o->retention_days)
		snprintf(window, sizeof window, "samples older than the %" PRIu32 "-day retention",
		         o->retention_days);
	else
		snprintf(window, sizeof window, "samples older than the retention window");
	if (res->rejected_profiles)
		snprintf(res->message, sizeof res->message,
		         "%" PRIu32 " profile%s refused (%" PRIu64
		         " samples): %s or more than 10 minutes in the future",
		         res->rejected_profiles, res->rejected_profiles == 1 ? "" : "s",
		         res->rejected_samples, window);
	else if (res->rejected_samples)
		snprintf(res->message, sizeof res->message,
		         "%" PRIu64 " sample%s refused: %s or more than 10 minutes in the future",
		         res->rejected_samples, res->rejected_samples == 1 ? "" : "s", window);
}

static int decode(ot_dec_t *d, slice_t pb, otlp_result_t *res, err_t *err)
{
	/* Top level: resource_profiles and dictionary may come in any order. */
	uint32_t n_rp = 0, n_dicts = 0;
	slice_t *rps = NULL, *dicts = NULL;
	for (int pass = 0; pass < 2; pass++) {
		pb_reader_t r = pb_reader_make(pb);
		const pb_field_t *f;
		int wt, rc;
		uint32_t k_rp = 0, k_dict = 0;
		while ((rc = pb_next(&d->src, &r, &request_spec, NULL, &f, &wt, err)) == 1) {
			slice_t s;
			pb_path_t p = {NULL, f->name, f->num == 1 ? k_rp : PB_NOIX};
			if (pb_read_len(&d->src, &r, &s, &p, NULL, err) < 0)
				return -1;
			if (f->num == 1) {
				if (pass)
					rps[k_rp] = s;
				k_rp++;
			} else {
				if (pass)
					dicts[k_dict] = s;
				k_dict++;
			}
		}
		if (rc < 0)
			return -1;
		if (pass == 0) {
			n_rp = k_rp;
			n_dicts = k_dict;
			rps = arena_alloc(d->scratch, (n_rp + 1) * sizeof *rps);
			dicts = arena_alloc(d->scratch, (n_dicts + 1) * sizeof *dicts);
		}
	}

	uint64_t profiles = 0, samples = 0, points = 0;
	if (n_dicts == 0 || n_rp > 0)
		lenient_count(pb, &profiles, &samples, &points);
	d->points = points;
	if (n_dicts == 0) {
		if (profiles == 0)
			return 0; /* nothing to decode: an empty request succeeds */
		return err_set(
		    err, 400,
		    "the request has no dictionary: the sender speaks an OTLP profiles format older "
		    "than opentelemetry-proto v1.7; Kiln supports " OT_SUPPORTED);
	}
	if (ot_dict_load(d, dicts, n_dicts, err) < 0)
		return -1;
	if (d->n[T_STACK] == 0 && samples > 0)
		return err_set(
		    err, 400,
		    "dictionary.stack_table is empty but the request has %" PRIu64
		    " samples: the sender speaks the OTLP profiles format of opentelemetry-proto "
		    "v1.7 (Collector 0.128-0.135), which had no stack_table; Kiln supports " OT_SUPPORTED,
		    samples);
	if (ot_dict_check(d, err) < 0)
		return -1;
	d->stack_frames = arena_alloc(d->scratch, LIMIT_STACK_DEPTH * sizeof *d->stack_frames);
	d->frames_total = d->b->frames_written;
	for (uint32_t i = 0; i < n_rp; i++)
		if (decode_resource_profiles(d, rps[i], i, res, err) < 0)
			return -1;
	if (d->frames_over)
		return err_set(err, 413,
		               "request writes out %" PRIu64 " frames; the limit is %u: lower the batch size "
		               "(send_batch_size) of the sender",
		               d->frames_total, LIMIT_REQUEST_FRAMES);
	d->b->frames_written = d->frames_total;
	return 0;
}

int otlp_decode(slice_t pb, const otlp_decode_opts_t *o, model_batch_t *b, otlp_result_t *res, err_t *err)
{
	memset(res, 0, sizeof *res);
	ot_dec_t *d = xcalloc(1, sizeof *d);
	d->src = (pb_src_t){pb.p, NULL};
	d->scratch = arena_new();
	d->o = o;
	d->b = b;
	u64map_init(&d->attrset_cache);
	int rc = decode(d, pb, res, err);
	if (rc == 0)
		refusal_message(o, res);
	u64map_free(&d->attrset_cache);
	free(d->u64s);
	free(d->attr_ix);
	free(d->values);
	free(d->stamps);
	free(d->pending);
	free(d->loc_frames);
	arena_free(d->scratch);
	free(d);
	return rc;
}
