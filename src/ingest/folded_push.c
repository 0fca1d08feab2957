/* Pyroscope's folded-text push (ingest/folded_push.h): body → bounded
 * gunzip → wire/folded lines → one profile of name-only frames, its type
 * from `units`, `aggregationType` and `sampleRate` as API: Push: POST /ingest
 * (Pyroscope) tabulates. Identical stacks are summed as they are read, so
 * maxDecodedSampleRows bounds distinct stacks, not lines. */
#include "ingest/folded_push.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "base/timeutil.h"
#include "base/u64map.h"
#include "wire/folded.h"

#define DEFAULT_SAMPLE_RATE 100    /* Hz: Pyroscope's default sampleRate */
#define MAX_SAMPLE_RATE 1000000000 /* a period of 1 ns */

/* units → Kiln type: sum (window) / average (snapshot) names where they differ. */
static const struct {
	const char *units, *type, *unit, *average_type;
} units_table[] = {
    {"samples", "samples", "count", NULL}, /* with a sampleRate: cpu:nanoseconds */
    {"objects", "alloc_objects", "count", "inuse_objects"},
    {"bytes", "alloc_space", "bytes", "inuse_space"},
    {"goroutines", "goroutine", "count", NULL},
    {"lock_samples", "contentions", "count", NULL},
    {"lock_nanoseconds", "delay", "nanoseconds", NULL},
};

typedef struct {
	const char *type, *unit, *period_type, *period_unit;
	int64_t period; /* also each count's multiplier when > 0 */
	int aggregation;
} folded_kind_t;

static int parse_rate(const char *s, uint32_t *rate, err_t *err)
{
	uint64_t v = 0;
	*rate = DEFAULT_SAMPLE_RATE;
	if (!s || !*s)
		return 0;
	for (const char *q = s; *q; q++) {
		if (*q < '0' || *q > '9' || (v = v * 10 + (uint64_t)(*q - '0')) > MAX_SAMPLE_RATE)
			return err_set(
			    err, 400,
			    "sampleRate=%.32s is not a rate: a whole number of samples per second, 0 "
			    "to %d",
			    s, MAX_SAMPLE_RATE);
	}
	*rate = (uint32_t)v;
	return 0;
}

static int folded_kind(const ingest_folded_push_t *fp, folded_kind_t *k, err_t *err)
{
	const char *units = fp->units && *fp->units ? fp->units : "samples";
	const char *agg = fp->aggregation ? fp->aggregation : "";
	size_t i = 0, n = sizeof units_table / sizeof *units_table;
	while (i < n && strcmp(units_table[i].units, units) != 0)
		i++;
	if (i == n)
		return err_set(err, 400,
		               "units=%.32s is not one of samples, objects, bytes, goroutines, lock_samples, "
		               "lock_nanoseconds",
		               units);
	int average = strcmp(agg, "average") == 0;
	if (*agg && !average && strcmp(agg, "sum") != 0)
		return err_set(err, 400, "aggregationType=%.32s is not sum or average", agg);
	uint32_t rate;
	if (parse_rate(fp->sample_rate, &rate, err) < 0)
		return -1;
	*k = (folded_kind_t){units_table[i].type, units_table[i].unit, "", "", 0, 0};
	if (average && units_table[i].average_type)
		k->type = units_table[i].average_type;
	if (i == 0 && rate > 0) { /* CPU samples at rate Hz: each is 1e9/rate ns of CPU */
		*k = (folded_kind_t){"cpu", "nanoseconds", "cpu", "nanoseconds", NS_PER_SEC / rate, 0};
	}
	k->aggregation = !*agg     ? model_aggregation_of(slice_cstr(k->type))
	                 : average ? MODEL_SNAPSHOT
	                           : MODEL_WINDOW;
	return 0;
}

/* Reads every stack of text into p (the batch's only profile). */
static int read_stacks(const ingest_folded_push_t *fp, const folded_kind_t *k, slice_t text, model_batch_t *b,
                       model_profile_t *p, err_t *err)
{
	const ingest_pprof_req_t *r = &fp->pprof->req;
	uint32_t max_rows = r->max_rows ? r->max_rows : LIMIT_SAMPLE_ROWS;
	folded_reader_t *rd = xmalloc(sizeof *rd);
	folded_init(rd, text, fp->format == FOLDED_LINES ? FOLDED_LINES : FOLDED_GROUPS);
	u64map_t rows; /* leaf node + 1 → its sample's index in p */
	u64map_init(&rows);
	int rc;
	while ((rc = folded_next(rd, err)) > 0) {
		int64_t v = rd->value;
		if (k->period > 0 && v > INT64_MAX / k->period) {
			rc =
			    err_set(err, 400, "line %u: count %lld × the sample period %lld ns is above %lld",
			            rd->line, (long long)v, (long long)k->period, (long long)INT64_MAX);
			break;
		}
		if (k->period > 0)
			v *= k->period;
		uint32_t node = MODEL_NONE;
		for (uint32_t i = 0; i < rd->n_frames; i++) {
			model_frame_t f = {.name = rd->frames[i]};
			node = model_node_intern(b, node, model_frame_intern(b, &f));
		}
		int added;
		uint32_t ix = u64map_get_or_put(&rows, (uint64_t)node + 1, p->samples_count, &added);
		if (!added) {
			model_sample_t *s = &b->samples[p->samples_first + ix];
			if (s->value > INT64_MAX - v) {
				rc = err_set(err, 400, "line %u: the counts of this stack add up past %lld",
				             rd->line, (long long)INT64_MAX);
				break;
			}
			s->value += v;
			continue;
		}
		if (p->samples_count >= max_rows) {
			rc = err_set(err, 413,
			             "line %u: more than %u distinct stacks; the limit is %u "
			             "(maxDecodedSampleRows)",
			             rd->line, max_rows, max_rows);
			break;
		}
		b->frames_written += rd->n_frames;
		if (b->frames_written > LIMIT_REQUEST_FRAMES) {
			rc = err_set(
			    err, 413,
			    "line %u: the stacks write out more than %u frames; the limit is %u: send "
			    "fewer or shallower stacks",
			    rd->line, LIMIT_REQUEST_FRAMES, LIMIT_REQUEST_FRAMES);
			break;
		}
		model_sample_add(b, p, node, 0, v, 0);
	}
	if (rc == 0 && p->samples_count == 0)
		rc = err_set(err, 400, "no stacks: the folded text has only blank lines");
	u64map_free(&rows);
	free(rd);
	return rc;
}

static int decode_folded(ingest_push_t *p, const ingest_folded_push_t *fp, slice_t text, err_t *err)
{
	const ingest_pprof_req_t *r = &fp->pprof->req;
	folded_kind_t k = {0};
	if (folded_kind(fp, &k, err) < 0)
		return -1;
	if (text.n == 0)
		return err_set(err, 400,
		               "empty body: send folded text, raw or gzip: one 'frame;frame;frame COUNT' "
		               "per line (format=groups) or one stack per line (format=lines)");
	model_label_t *labels;
	uint32_t n_labels;
	if (ingest_series_labels(r, &labels, &n_labels, err) < 0)
		return -1;
	model_batch_t *b = model_batch_new(r->project);
	model_profile_t *prof = model_profile_add(b);
	model_profile_set_type(b, prof, slice_cstr(k.type), slice_cstr(k.unit), slice_cstr(k.period_type),
	                       slice_cstr(k.period_unit), k.period);
	prof->aggregation = (uint8_t)k.aggregation;
	model_profile_set_service(b, prof, r->service);
	for (uint32_t l = 0; l < n_labels; l++)
		model_profile_add_label(b, prof, labels[l].key, labels[l].value);
	free(labels);
	prof->time_ns = r->from_ns ? r->from_ns : r->now_ns;
	prof->duration_ns = r->from_ns && r->until_ns > r->from_ns ? r->until_ns - r->from_ns : 0;
	if (read_stacks(fp, &k, text, b, prof, err) < 0) {
		model_batch_free(b);
		return -1;
	}
	model_profile_finish(b, prof);
	fp->pprof->res = (ingest_result_t){1, prof->samples_count};
	p->batch = b;
	return ingest_push_window(p, fp->pprof, err);
}

int ingest_folded_decode(ingest_push_t *p, err_t *err)
{
	ingest_folded_push_t *fp = p->ctx;
	buf_t plain;
	buf_init(&plain, LIMIT_DECODED_BYTES);
	slice_t data;
	int rc = ingest_gunzip(p->body, fp->pprof->req.content_gzip, &plain, &data, err);
	if (rc == 0 && fp->format == INGEST_FOLDED_SNIFF && !folded_is_text(data)) {
		/* pprof, as without a format before folded text was taken: its own
		 * decoder from the body as sent (a gzipped one is inflated again). */
		buf_free(&plain);
		p->ctx = fp->pprof;
		rc = ingest_pprof_decode(p, err);
		p->ctx = fp;
		return rc;
	}
	if (rc == 0)
		rc = decode_folded(p, fp, data, err);
	buf_free(&plain);
	return rc;
}
