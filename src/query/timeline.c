/* The timeline above the flame graph: value per time bucket from chunk heads
 * alone (chunks are decoded only when a filter applies to sample attributes).
 * Window types are summed per bucket, snapshot types averaged per series. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/timeutil.h"
#include "query/query_int.h"

/* A snapshot chunk; window chunks go straight into their bucket. */
typedef struct {
	uint64_t series;
	int64_t value;
	uint32_t bucket;
} snap_rec_t;

static int snap_cmp(const void *a, const void *b)
{
	const snap_rec_t *x = a, *y = b;
	if (x->series != y->series)
		return x->series < y->series ? -1 : 1;
	if (x->bucket != y->bucket)
		return x->bucket < y->bucket ? -1 : 1;
	return 0;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* A "nice" step giving at most ~300 points over range_s seconds. */
static int64_t auto_step(int64_t range_s)
{
	static const int64_t nice[] = {10,   15,   30,   60,    120,   300,   600,  900,
	                               1800, 3600, 7200, 10800, 21600, 43200, 86400};
	int64_t want = (range_s + 299) / 300;
	for (size_t i = 0; i < sizeof nice / sizeof *nice; i++)
		if (nice[i] >= want)
			return nice[i];
	return (want + 86399) / 86400 * 86400;
}

typedef struct {
	int64_t start_s, step_s;
	uint32_t n_points;
	int64_t *sum; /* window values per bucket */
	double *avg;  /* snapshot averages per bucket */
	snap_rec_t *snaps;
	size_t n_snaps, cap_snaps;
} timeline_t;

static int add_partition(store_view_t *v, const query_part_t *qp, timeline_t *tl, err_t *err)
{
	for (uint32_t i = 0; i < qp->n_heads; i++) {
		const store_chunk_head_t *h = &qp->heads[i];
		const query_sel_t *sel = query_part_sel(qp, h);
		int64_t b = floor_div(floor_div(h->t_ns, NS_PER_SEC) - tl->start_s, tl->step_s);
		if (b < 0 || b >= tl->n_points)
			continue;
		int64_t value;
		if (query_chunk_value(v, qp, h, &value, err) < 0)
			return -1;
		value = num_sat_mul(value, sel->scale);
		if (!sel->snapshot) {
			tl->sum[b] = num_sat_add(tl->sum[b], value);
			continue;
		}
		tl->snaps = xgrow(tl->snaps, &tl->cap_snaps, tl->n_snaps + 1, sizeof *tl->snaps);
		tl->snaps[tl->n_snaps++] = (snap_rec_t){sel->id, value, (uint32_t)b};
	}
	return 0;
}

/* Per (series, bucket): the sum of its snapshots (chunks) over their number. */
static void average_snapshots(timeline_t *tl)
{
	if (tl->n_snaps > 1)
		qsort(tl->snaps, tl->n_snaps, sizeof *tl->snaps, snap_cmp);
	size_t i = 0;
	while (i < tl->n_snaps) {
		size_t j = i;
		double sum = 0;
		uint32_t count = 0;
		for (; j < tl->n_snaps && tl->snaps[j].series == tl->snaps[i].series &&
		       tl->snaps[j].bucket == tl->snaps[i].bucket;
		     j++) {
			sum += (double)tl->snaps[j].value;
			count++;
		}
		tl->avg[tl->snaps[i].bucket] += sum / count;
		i = j;
	}
}

static int write_points(buf_t *json, const query_type_t *qt, const timeline_t *tl)
{
	int rc = buf_putc(json, '{');
	rc |= query_json_type(json, qt);
	rc |= buf_puts(json, "\"step\":");
	rc |= query_json_i64(json, tl->step_s);
	rc |= buf_puts(json, ",\"points\":[");
	for (uint32_t b = 0; b < tl->n_points && rc == 0; b++) {
		double avg = tl->avg[b];
		int64_t v = tl->sum[b];
		if (avg != 0)
			v = num_sat_add(v, avg > -9.2e18 && avg < 9.2e18 ? (int64_t)llround(avg) : INT64_MAX);
		rc |= buf_puts(json, b ? ",[" : "[");
		rc |= query_json_i64(json, tl->start_s + (int64_t)b * tl->step_s);
		rc |= buf_putc(json, ',');
		rc |= query_json_i64(json, v);
		rc |= buf_putc(json, ']');
	}
	rc |= buf_puts(json, "]}");
	return rc;
}

int query_timeline(store_t *s, const query_params_t *q, int64_t step_s, buf_t *json, err_t *err)
{
	query_type_t qt;
	if (query_check(q, 1, &qt, err) < 0)
		return -1;
	if (step_s < 0 || step_s > 100 * 366 * 86400LL)
		return err_set(err, 400, "step must be a positive number of seconds, got %lld",
		               (long long)step_s);
	int64_t from_s = floor_div(q->from_ns, NS_PER_SEC);
	int64_t until_s = floor_div(q->until_ns - 1, NS_PER_SEC) + 1;
	timeline_t tl;
	memset(&tl, 0, sizeof tl);
	tl.step_s = step_s ? step_s : auto_step(until_s - from_s);
	tl.start_s = floor_div(from_s, tl.step_s) * tl.step_s;
	int64_t n = (until_s - tl.start_s + tl.step_s - 1) / tl.step_s;
	if (n > LIMIT_TIMELINE_POINTS)
		return err_set(err, 400,
		               "step %llds gives %lld points; at most %d are allowed: use a larger step",
		               (long long)tl.step_s, (long long)n, LIMIT_TIMELINE_POINTS);
	tl.n_points = (uint32_t)n;
	tl.sum = xcalloc((size_t)n + 1, sizeof *tl.sum);
	tl.avg = xcalloc((size_t)n + 1, sizeof *tl.avg);

	store_view_t *v = NULL;
	int rc = store_view_open(s, q->project, q->from_ns, q->until_ns, &v, err);
	uint32_t np = rc == 0 ? store_view_partitions(v) : 0;
	for (uint32_t p = 0; p < np && rc == 0; p++) {
		query_part_t qp;
		rc = query_part_load(v, p, q, &qt, &qp, err);
		if (rc == 0)
			rc = add_partition(v, &qp, &tl, err);
		query_part_free(&qp);
	}
	if (v)
		store_view_close(v);
	if (rc == 0) {
		average_snapshots(&tl);
		if (write_points(json, &qt, &tl) < 0)
			rc = query_err_too_large(err);
	}
	free(tl.sum);
	free(tl.avg);
	free(tl.snaps);
	return rc;
}
