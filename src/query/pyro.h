/* Kiln's series as Pyroscope's query API names them (query/pyro.c; API:
 * Query: querier.v1.QuerierService): each series of a range with its
 * Pyroscope profile type id NAME:SAMPLE_TYPE:SAMPLE_UNIT:PERIOD_TYPE:PERIOD_UNIT,
 * NAME being the series' profile name (its __name__ label) or, for a series
 * without one, the name Pyroscope's ingest would give it (API: Profile
 * names: pyro_stc_profile_name over the series' sample type, "unknown" when
 * that gives none). The querier routes list and filter with it; the id of a
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

/* Fills q's series choice for a Pyroscope merge of profile type id and
 * selector sel (q's project and range are the caller's): q->pyro_id and
 * q->type from id (exactly four ':'), q->service from the required
 * service_name="S" (other operators on it: 501), other `=` matchers as
 * q->labels (series label, else sample attribute, as /api's label.K=V),
 * `!=`, `=~`, `!~` and `k=""` as q->matchers (series labels; absent is "") (sharing sel's compiled regexes:
 * sel must outlive q); a `__name__` matcher equal to id is the id itself. Arrays in arena a. what names the
 * request's part in messages ("query", "label_selector"). 0, or -1 with a 400 (501) in err. */
int query_pyro_query(slice_t id, const sel_t *sel, arena_t *a, const char *what, query_params_t *q,
                     err_t *err);

/* The distinct label names (label empty) or values of label of the series
 * of project with chunks in [from_ns, until_ns) that match sel (NULL: all;
 * a name before its '{' must be the series' id; its matchers see
 * query_pyro_labels), sorted in byte order, copied into arena a, as
 * (*out)[0..*n). Values: non-empty ones, plus "" when with_empty and a
 * matching series lacks label (or has it empty). 0, or -1 with err (store
 * errors). */
int query_pyro_list(store_t *s, slice_t project, int64_t from_ns, int64_t until_ns, const sel_t *sel,
                    slice_t label, int with_empty, arena_t *a, slice_t **out, uint32_t *n, err_t *err);

/* The profile name of a series (see above): its __name__, else Pyroscope's
 * rule on sample_type, else QUERY_PYRO_UNKNOWN_NAME. */
slice_t query_pyro_name(const store_series_t *s, slice_t sample_type);

/* 1 when series s, read as the query type t (its own type, or
 * cpu:nanoseconds for a cpu_alias series), has the profile type id id. */
struct query_type;
int query_pyro_is(const store_series_t *s, const struct query_type *t, slice_t id);

#endif
