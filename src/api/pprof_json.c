/* A pprof Profile (google.v1 / perftools.profiles, profile.proto) as Connect
 * JSON, for SelectMergeProfile's JSON codec (API: Query:
 * querier.v1.QuerierService): the binary message Kiln encodes
 * (pprof_encode) read back field by field through a schema table and
 * written as protojson writes it: lowerCamelCase keys in field-number
 * order, repeated fields as arrays (packed or not), int64/uint64 as decimal
 * strings, bools as true, fields at their default value left out. */
#include "api/pprof_json.h"

#include "wire/pb.h"

enum { PJ_I64, PJ_U64, PJ_BOOL, PJ_MSG, PJ_STRING };

typedef struct pj_msg pj_msg_t;
typedef struct {
	uint32_t num;
	const char *json;
	uint8_t kind, repeated;
	const pj_msg_t *sub;
} pj_field_t;
struct pj_msg {
	const pj_field_t *f;
	uint32_t n;
};

#define PJ_MSG(name, ...)                                                                                    \
	static const pj_field_t name##_f[] = {__VA_ARGS__};                                                  \
	static const pj_msg_t name = {name##_f, sizeof name##_f / sizeof name##_f[0]}

PJ_MSG(pj_value_type, {1, "type", PJ_I64, 0, NULL}, {2, "unit", PJ_I64, 0, NULL});
PJ_MSG(pj_label, {1, "key", PJ_I64, 0, NULL}, {2, "str", PJ_I64, 0, NULL}, {3, "num", PJ_I64, 0, NULL},
       {4, "numUnit", PJ_I64, 0, NULL});
PJ_MSG(pj_sample, {1, "locationId", PJ_U64, 1, NULL}, {2, "value", PJ_I64, 1, NULL},
       {3, "label", PJ_MSG, 1, &pj_label});
PJ_MSG(pj_mapping, {1, "id", PJ_U64, 0, NULL}, {2, "memoryStart", PJ_U64, 0, NULL},
       {3, "memoryLimit", PJ_U64, 0, NULL}, {4, "fileOffset", PJ_U64, 0, NULL},
       {5, "filename", PJ_I64, 0, NULL}, {6, "buildId", PJ_I64, 0, NULL},
       {7, "hasFunctions", PJ_BOOL, 0, NULL}, {8, "hasFilenames", PJ_BOOL, 0, NULL},
       {9, "hasLineNumbers", PJ_BOOL, 0, NULL}, {10, "hasInlineFrames", PJ_BOOL, 0, NULL});
PJ_MSG(pj_line, {1, "functionId", PJ_U64, 0, NULL}, {2, "line", PJ_I64, 0, NULL},
       {3, "column", PJ_I64, 0, NULL});
PJ_MSG(pj_location, {1, "id", PJ_U64, 0, NULL}, {2, "mappingId", PJ_U64, 0, NULL},
       {3, "address", PJ_U64, 0, NULL}, {4, "line", PJ_MSG, 1, &pj_line}, {5, "isFolded", PJ_BOOL, 0, NULL});
PJ_MSG(pj_function, {1, "id", PJ_U64, 0, NULL}, {2, "name", PJ_I64, 0, NULL},
       {3, "systemName", PJ_I64, 0, NULL}, {4, "filename", PJ_I64, 0, NULL},
       {5, "startLine", PJ_I64, 0, NULL});
PJ_MSG(pj_profile, {1, "sampleType", PJ_MSG, 1, &pj_value_type}, {2, "sample", PJ_MSG, 1, &pj_sample},
       {3, "mapping", PJ_MSG, 1, &pj_mapping}, {4, "location", PJ_MSG, 1, &pj_location},
       {5, "function", PJ_MSG, 1, &pj_function}, {6, "stringTable", PJ_STRING, 1, NULL},
       {7, "dropFrames", PJ_I64, 0, NULL}, {8, "keepFrames", PJ_I64, 0, NULL},
       {9, "timeNanos", PJ_I64, 0, NULL}, {10, "durationNanos", PJ_I64, 0, NULL},
       {11, "periodType", PJ_MSG, 0, &pj_value_type}, {12, "period", PJ_I64, 0, NULL},
       {13, "comment", PJ_I64, 1, NULL}, {14, "defaultSampleType", PJ_I64, 0, NULL});

static int put_value(buf_t *out, const pj_field_t *f, uint64_t v)
{
	if (f->kind == PJ_BOOL)
		return buf_puts(out, v ? "true" : "false");
	if (f->kind == PJ_I64)
		return buf_printf(out, "\"%lld\"", (long long)(int64_t)v);
	return buf_printf(out, "\"%llu\"", (unsigned long long)v);
}

static int put_msg(buf_t *out, const pj_msg_t *m, slice_t pb, int depth, err_t *err);

/* Writes the occurrences of field f in message pb: a value, or an array
 * when repeated (packed runs unfolded). *first: no key written yet. */
static int put_field(buf_t *out, const pj_field_t *f, slice_t pb, int *first, int depth, err_t *err)
{
	uint32_t count = 0;
	int rc = 0;
	pb_reader_t r = pb_reader_make(pb);
	while (!pb_done(&r) && rc == 0) {
		uint32_t num;
		int wt;
		if (pb_key(&r, &num, &wt) < 0)
			return err_set(err, 500, "pprof JSON: malformed profile");
		if (num != f->num) {
			if (pb_skip(&r, wt) < 0)
				return err_set(err, 500, "pprof JSON: malformed profile");
			continue;
		}
		uint64_t v = 0;
		slice_t s = {NULL, 0};
		int packed = wt == 2 && f->kind != PJ_MSG && f->kind != PJ_STRING;
		if ((wt == 0 ? pb_varint(&r, &v) : wt == 2 ? pb_bytes(&r, &s) : -1) < 0)
			return err_set(err, 500, "pprof JSON: malformed profile");
		pb_reader_t pr = pb_reader_make(s);
		for (int one = 1; one || (packed && !pb_done(&pr)); one = 0) {
			if (packed && (pb_done(&pr) || pb_varint(&pr, &v) < 0))
				break;
			int zero = f->kind == PJ_MSG ? 0 : f->kind == PJ_STRING ? !s.n : !v;
			if (!f->repeated && zero)
				continue;
			if (count++ == 0) {
				rc |= buf_printf(out, "%s\"%s\":%s", *first ? "" : ",", f->json,
				                 f->repeated ? "[" : "");
				*first = 0;
			} else if (f->repeated) {
				rc |= buf_putc(out, ',');
			}
			if (f->kind == PJ_MSG)
				rc |= put_msg(out, f->sub, s, depth + 1, err);
			else if (f->kind == PJ_STRING)
				rc |= buf_json_str(out, s);
			else
				rc |= put_value(out, f, v);
		}
	}
	if (count && f->repeated)
		rc |= buf_putc(out, ']');
	return rc < 0 ? -1 : 0;
}

static int put_msg(buf_t *out, const pj_msg_t *m, slice_t pb, int depth, err_t *err)
{
	if (depth > 4)
		return err_set(err, 500, "pprof JSON: nesting too deep");
	int first = 1;
	if (buf_putc(out, '{') < 0)
		return -1;
	for (uint32_t i = 0; i < m->n; i++)
		if (put_field(out, &m->f[i], pb, &first, depth, err) < 0)
			return -1;
	return buf_putc(out, '}');
}

int api_pprof_json(slice_t profile, buf_t *out, err_t *err)
{
	int rc = put_msg(out, &pj_profile, profile, 0, err);
	if (rc < 0 && !err->status)
		err_set(err, 413,
		        "the profile is too large as JSON: use application/proto or lower max_nodes");
	return rc;
}
