/* Kiln's series as Pyroscope's query API names them (query/pyro.c; API:
 * Query: querier.v1.QuerierService): each series of a range with its
 * Pyroscope profile type id NAME:SAMPLE_TYPE:SAMPLE_UNIT:PERIOD_TYPE:PERIOD_UNIT,
 * NAME being the series' profile name (its __name__ label) or, for a series
 * without one, the name Pyroscope's ingest would give it (API: Profile
 * names: pyro_stc_profile_name over the series' sample type, "unknown" when
 * that gives none). Both Pyroscope query routes (api/querier.c,
 * api/pyroscope_render.c) list, filter and translate queries with it; the id of a
 * series depends on the series alone, so an id given back selects exactly
 * the series it was listed for. */
#ifndef KILN_QUERY_PYRO_H
#define KILN_QUERY_PYRO_H

#include <stdint.h>

#include "base/arena.h"
#include "base/err.h"
#include "model/model.h"
#include "query/query.h"
#include "query/selector.h"
#include "store/store.h"

/* The name given to a series whose sample type yields no profile name. */
#define QUERY_PYRO_UNKNOWN_NAME "unknown"

/* One series with chunks in the range. Slices are valid during the callback. */
typedef struct {
	slice_t service;
	slice_t id; /* NAME:SAMPLE_TYPE:SAMPLE_UNIT:PERIOD_TYPE:PERIOD_UNIT */
	slice_t name, sample_type, sample_unit, period_type, period_unit;
	const model_label_t *labels; /* the series labels, sorted by key (__name__ included when set) */
	uint32_t n_labels;
	int64_t first_ns, last_ns; /* the times of its first and last chunk in the partition */
} query_pyro_series_t;

typedef void (*query_pyro_series_fn)(const query_pyro_series_t *s, void *ctx);

/* Calls fn for every series of project with chunks in [from_ns, until_ns)
 * (several times for a series stored in several partitions; a cpu_alias
 * series, samples:count with a CPU period, also once as
 * NAME:cpu:nanoseconds:cpu:nanoseconds, as /api/types lists it). 0, or -1
 * with err (store errors). */
int query_pyro_series(store_t *s, slice_t project, int64_t from_ns, int64_t until_ns, query_pyro_series_fn fn,
                      void *ctx, err_t *err);

/* Labels a series shows besides its own: service_name, __name__,
 * __profile_type__, __type__, __unit__, __period_type__, __period_unit__. */
#define QUERY_PYRO_PSEUDO_LABELS 7

/* The labels of series s as Pyroscope's query API shows them (API: Query:
 * querier.v1.QuerierService, Labels): the QUERY_PYRO_PSEUDO_LABELS above,
 * then the series labels under their own names (its __name__ and a
 * service_name label left out: the pseudo labels say them). names and
 * values have room for s->n_labels + QUERY_PYRO_PSEUDO_LABELS; the count. */
uint32_t query_pyro_labels(const query_pyro_series_t *s, slice_t *names, slice_t *values);

/* 1 when series s, whose labels (query_pyro_labels) are names/values[0..n),
 * matches any of the selectors sel[0..n_sel) (none: 1). A selector matches
 * when its name before '{', if any, is s's profile type id and every
 * matcher holds (a label s lacks is "", as in Prometheus: {k=""} selects
 * the series without k). */
int query_pyro_match(const sel_t *sel, uint32_t n_sel, const query_pyro_series_t *s, const slice_t *names,
                     const slice_t *values, uint32_t n);

/* The one translation of a Pyroscope query (API: Query:
 * querier.v1.QuerierService; the querier's Select methods and /pyroscope/render
 * both call it): fills q's series choice for a merge of profile type id id
 * and selector sel (q's project and range are the caller's): q->pyro_id and
 * q->type from id (exactly four ':', NAME and SAMPLE_TYPE not empty),
 * q->service from the required service_name="S" (other operators on it:
 * 501), other `=` matchers with a value as q->labels (series label, else
 * sample attribute, as /api's label.K=V), `!=`, `=~`, `!~` and `k=""` as
 * q->matchers (series labels, a label the series lacks being "": `k=""`
 * selects the series without k), sharing sel's compiled regexes (sel must
 * outlive q); a `__name__` matcher equal to id is the id itself (sel's name
 * before '{' is the caller's to read). Arrays in arena a. Messages name the
 * request's parts: id_what the id (e.g. "query: the profile type id"),
 * sel_what the selector (e.g. "query"). 0, or -1 with a 400 (501) in err. */
int query_pyro_query(slice_t id, const sel_t *sel, const char *id_what, const char *sel_what, arena_t *a,
                     query_params_t *q, err_t *err);

/* The distinct label names (label empty) or values of label of the series
 * of project with chunks in [from_ns, until_ns) that match any of the
 * selectors sel[0..n_sel) (query_pyro_match; none: all), sorted in byte
 * order, copied into arena a, as (*out)[0..*n). Values: non-empty ones,
 * plus "" when with_empty and a matching series lacks label (or has it
 * empty). 0, or -1 with err (store errors). */
int query_pyro_list(store_t *s, slice_t project, int64_t from_ns, int64_t until_ns, const sel_t *sel,
                    uint32_t n_sel, slice_t label, int with_empty, arena_t *a, slice_t **out, uint32_t *n,
                    err_t *err);

/* The profile name of a series (see above): its __name__, else Pyroscope's
 * rule on sample_type, else QUERY_PYRO_UNKNOWN_NAME. */
slice_t query_pyro_name(const store_series_t *s, slice_t sample_type);

/* 1 when series s, read as the query type t (its own type, or
 * cpu:nanoseconds for a cpu_alias series), has the profile type id id. */
struct query_type;
int query_pyro_is(const store_series_t *s, const struct query_type *t, slice_t id);

/* The value of label name on series s listed under profile type id id, as
 * the querier names labels: service_name (the service), __profile_type__
 * (id), __name__, __type__, __unit__, __period_type__, __period_unit__
 * (id's parts), else the series label of that key; "" when it has none. */
slice_t query_pyro_label(const store_series_t *s, slice_t id, slice_t name);

/* Label sets compared as Pyroscope's CompareLabelPairs: pair by pair (name,
 * then value, byte order), a prefix first. */
int query_pyro_labels_cmp(const model_label_t *a, uint32_t na, const model_label_t *b, uint32_t nb);

/* SelectSeries (API: Query: querier.v1.QuerierService, SelectSeries). */
typedef struct {
	query_params_t q;        /* service, type, pyro_id (required), filters, range */
	const slice_t *group_by; /* label names (query_pyro_label) */
	uint32_t n_group_by;
	int64_t start_ms, step_ms; /* the grid: start_ms + k·step_ms, k ≥ 0; step_ms ≥ 1 */
	int average;               /* 0: a point is the sum of its profiles' totals; 1: their mean */
	int in_step;   /* 0: a profile counts on the first grid point at or after it (SelectSeries);
	                * 1: on the last at or before it, the step that holds it (query_timeline's
	                * buckets: /pyroscope/render's timeline) */
	int64_t limit; /* > 0: only the first limit series */
} query_pyro_select_t;

/* One series of the answer: its group's labels (those of group_by the
 * series has, sorted by name) and its points, in time order. */
typedef struct {
	model_label_t *labels;
	uint32_t n_labels;
	int64_t *ts_ms;
	double *value;
	uint32_t n_points;
	double total; /* the sum of the points' values */
} query_pyro_ts_t;

/* The series of r: one per distinct tuple of group_by values among the
 * selected series with profiles in r->q's range (none: one series without
 * labels). A profile (a stored chunk: one push of one series) at time t
 * counts on the grid point start_ms + k·step_ms with the least k ≥ 0 that
 * is at or after t (timeseries.RangeSeries' rule; a profile after the last
 * point of the range gets the next one, so no profile is left out), or
 * with r->in_step the greatest k ≥ 0 at or before t; only
 * points with profiles are listed. Values are the chunks' totals, cpu_alias
 * series scaled by their period, as the flame graph counts them. Ordered by
 * total descending, ties by labels (query_pyro_labels_cmp; TopSeries).
 * *out is in arena a. 0, or -1 with err. */
int query_pyro_select_series(store_t *s, const query_pyro_select_t *r, arena_t *a, query_pyro_ts_t **out,
                             uint32_t *n_out, err_t *err);

/* SelectMergeSpanProfile: the merged tree (query_merge's shape) of the
 * samples linked to any of spans[0..n_spans) (span ids as the span index
 * takes them, any trace) among the series q selects (service, type,
 * pyro_id, filters) with chunks in q's range. 0, or -1 with err. */
int query_pyro_span_merge(store_t *s, const query_params_t *q, const slice_t *spans, uint32_t n_spans,
                          arena_t *a, model_tree_t *tree, err_t *err);

#endif
