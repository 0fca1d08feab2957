/* Sums every sample value of a pprof file (raw or gzip) per sample type, with
 * only the protobuf reader (not Kiln's pprof decoder and its limits): the
 * oracle the query benchmark compares Kiln's flame graph total with.
 *
 *   pprof_total FILE      → one line per sample type: "type:unit total samples" */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/limits.h"
#include "wire/compress.h"
#include "wire/pb.h"

#define MAX_TYPES 64

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: pprof_total FILE.pb[.gz]\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	buf_t raw, data;
	buf_init(&raw, SIZE_MAX);
	buf_init(&data, (size_t)1 << 31);
	uint8_t tmp[65536];
	size_t n;
	while ((n = fread(tmp, 1, sizeof tmp, f)) > 0)
		buf_append(&raw, tmp, n);
	fclose(f);
	slice_t body = buf_slice(&raw);
	err_t err = {0};
	if (gz_is_gzip(body)) {
		if (gz_inflate(body, &data, &err) < 0) {
			fprintf(stderr, "%s: %s\n", argv[1], err.msg);
			return 1;
		}
		body = buf_slice(&data);
	}

	uint64_t type_ix[MAX_TYPES][2];
	int64_t totals[MAX_TYPES] = {0};
	uint32_t n_types = 0;
	uint64_t n_samples = 0;
	slice_t *strs = NULL;
	size_t n_strs = 0, cap_strs = 0;

	pb_reader_t r = pb_reader_make(body);
	while (!pb_done(&r)) {
		uint32_t field;
		int wt;
		if (pb_key(&r, &field, &wt) < 0)
			goto bad;
		if (field == 1 && wt == PB_LEN) { /* sample_type */
			slice_t m;
			if (pb_bytes(&r, &m) < 0 || n_types >= MAX_TYPES)
				goto bad;
			pb_reader_t vr = pb_reader_make(m);
			type_ix[n_types][0] = type_ix[n_types][1] = 0;
			while (!pb_done(&vr)) {
				uint32_t vf;
				int vwt;
				uint64_t v;
				if (pb_key(&vr, &vf, &vwt) < 0)
					goto bad;
				if ((vf == 1 || vf == 2) && vwt == PB_VARINT) {
					if (pb_varint(&vr, &v) < 0)
						goto bad;
					type_ix[n_types][vf - 1] = v;
				} else if (pb_skip(&vr, vwt) < 0)
					goto bad;
			}
			n_types++;
		} else if (field == 2 && wt == PB_LEN) { /* sample */
			slice_t m;
			if (pb_bytes(&r, &m) < 0)
				goto bad;
			n_samples++;
			pb_reader_t sr = pb_reader_make(m);
			uint32_t k = 0;
			while (!pb_done(&sr)) {
				uint32_t sf;
				int swt;
				uint64_t v;
				if (pb_key(&sr, &sf, &swt) < 0)
					goto bad;
				if (sf == 2 && swt == PB_LEN) {
					slice_t packed;
					if (pb_bytes(&sr, &packed) < 0)
						goto bad;
					pb_reader_t pr = pb_reader_make(packed);
					while (!pb_done(&pr)) {
						if (pb_packed_varint_next(&pr, &v) < 0)
							goto bad;
						if (k < MAX_TYPES)
							totals[k] += (int64_t)v;
						k++;
					}
				} else if (sf == 2 && swt == PB_VARINT) {
					if (pb_varint(&sr, &v) < 0)
						goto bad;
					if (k < MAX_TYPES)
						totals[k] += (int64_t)v;
					k++;
				} else if (pb_skip(&sr, swt) < 0)
					goto bad;
			}
		} else if (field == 6 && wt == PB_LEN) { /* string_table */
			slice_t s;
			if (pb_bytes(&r, &s) < 0)
				goto bad;
			if (n_strs == cap_strs) {
				cap_strs = cap_strs ? cap_strs * 2 : 256;
				strs = realloc(strs, cap_strs * sizeof *strs);
			}
			strs[n_strs++] = s;
		} else if (pb_skip(&r, wt) < 0) {
			goto bad;
		}
	}
	for (uint32_t t = 0; t < n_types; t++) {
		slice_t ty = type_ix[t][0] < n_strs ? strs[type_ix[t][0]] : slice_cstr("?");
		slice_t un = type_ix[t][1] < n_strs ? strs[type_ix[t][1]] : slice_cstr("?");
		printf("%.*s:%.*s %" PRId64 " %" PRIu64 "\n", (int)ty.n, (const char *)ty.p, (int)un.n,
		       (const char *)un.p, totals[t], n_samples);
	}
	return 0;
bad:
	fprintf(stderr, "%s: malformed protobuf\n", argv[1]);
	return 1;
}
