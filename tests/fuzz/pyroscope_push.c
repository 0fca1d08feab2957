/* libFuzzer target for wire/pyroscope_push.c: the first byte picks the form
 * (even: protobuf, odd: Connect's JSON, transcoded by pb_json first), the
 * rest is a PushRequest as push.v1.PusherService/Push receives it. It checks
 * for crashes, leaks and UB, that an error is a 400 or 413 with a message,
 * and that a decode stays within its bounds: at most LIMIT_PUSH_PROFILES raw
 * profiles, at most LIMIT_LABELS labels per series with non-empty distinct
 * names of at most LIMIT_STRING_BYTES, every slice inside the decoded bytes;
 * and that the label mapping of each series keeps only labels with a value
 * and no "__" name. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/buf.h"
#include "base/limits.h"
#include "wire/pyroscope_push.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int inside(slice_t s, slice_t in)
{
	return s.n <= in.n && (!s.n || (s.p >= in.p && s.p + s.n <= in.p + in.n));
}

static void check(const pyro_push_t *p, slice_t in)
{
	uint32_t profiles = 0;
	model_label_t out[LIMIT_LABELS];
	for (uint32_t i = 0; i < p->n_series; i++) {
		const pyro_series_t *s = &p->series[i];
		if (s->n_labels > LIMIT_LABELS)
			abort();
		for (uint32_t k = 0; k < s->n_labels; k++) {
			slice_t n = s->labels[k].key, v = s->labels[k].value;
			if (!n.n || n.n > LIMIT_STRING_BYTES || v.n > LIMIT_STRING_BYTES || !inside(n, in) ||
			    !inside(v, in))
				abort();
			for (uint32_t j = 0; j < k; j++)
				if (slice_eq(n, s->labels[j].key))
					abort();
		}
		for (uint32_t k = 0; k < s->n_profiles; k++)
			if (!inside(s->profiles[k], in))
				abort();
		profiles += s->n_profiles;
		slice_t service = {NULL, 0}, name = {NULL, 0};
		uint32_t n = pyro_labels_to_series(s->labels, s->n_labels, &service, &name, out);
		if (n > s->n_labels)
			abort();
		for (uint32_t k = 0; k < n; k++)
			if (!out[k].value.n ||
			    (out[k].key.n >= 2 && out[k].key.p[0] == '_' && out[k].key.p[1] == '_'))
				abort();
	}
	if (profiles != p->n_profiles || profiles > LIMIT_PUSH_PROFILES)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	slice_t in = slice_make(data + 1, size - 1);
	buf_t pb;
	buf_init(&pb, 4u << 20);
	err_t err = {0};
	if (data[0] & 1) {
		if (pyro_push_json_to_pb(in, &pb, &err) < 0) {
			if ((err.status != 400 && err.status != 413) || !err.msg[0])
				abort();
			buf_free(&pb);
			return 0;
		}
		in = buf_slice(&pb);
	}
	pyro_push_t p;
	if (pyro_push_decode(in, &p, &err) == 0)
		check(&p, in);
	else if ((err.status != 400 && err.status != 413) || !err.msg[0])
		abort();
	pyro_push_free(&p);
	buf_free(&pb);
	return 0;
}
