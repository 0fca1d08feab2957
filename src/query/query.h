/* Queries over the store: merge samples into a call tree and write the
 * results of the query API (API: Query: services, types, flame graph, top, timeline, pprof,
 * span view).
 * Each call opens its own store view: safe to run on several worker threads.
 * Retention (OPS: Retention): the views start no earlier than the project's retention
 * (store_set_retention), so no query returns expired samples; a range wholly
 * before it answers as empty (timeline points there are 0). Sums saturate at
 * the int64 limits. */
#ifndef KILN_QUERY_QUERY_H
#define KILN_QUERY_QUERY_H

#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "model/model.h"
#include "query/selector.h"
#include "store/store.h"

typedef struct {
	slice_t project;
	slice_t service; /* required except for services */
	slice_t type;    /* "sample_type:unit", required except for services/types */
	int64_t from_ns, until_ns;
	const model_label_t *labels; /* filters label.K=V: series labels or sample attributes */
	uint32_t n_labels;
	slice_t pyro_id;               /* optional: a Pyroscope profile type id (query/pyro.h) that selects
	                                * only its series; type must then be its SAMPLE_TYPE:SAMPLE_UNIT */
	const sel_matcher_t *matchers; /* optional: selector matchers (query/selector.h) on series
	                                * labels, a label the series lacks matching as "" */
	uint32_t n_matchers;
} query_params_t;

/* {"services":[{"name","types":[…],"cpu_nanoseconds"}]} busiest first. */
int query_services(store_t *s, const query_params_t *q, buf_t *json, err_t *err);
/* {"types":["cpu:nanoseconds", …]} for q->service over the range. */
int query_types(store_t *s, const query_params_t *q, buf_t *json, err_t *err);
/* {"type","unit","total","root":{"name","self","total","children":[…]}} */
int query_flamegraph(store_t *s, const query_params_t *q, buf_t *json, err_t *err);
/* {"type","unit","total","rows":[{"name","self","total"}]} sorted by self desc. */
int query_top(store_t *s, const query_params_t *q, uint32_t limit, buf_t *json, err_t *err);
/* {"type","unit","step","points":[[unix_s,value],…]}; step_s 0 = automatic. */
int query_timeline(store_t *s, const query_params_t *q, int64_t step_s, buf_t *json, err_t *err);
/* {"labels":[{"name","source":"series"|"sample","values":[…][,"truncated":true]}]}:
 * the label names and values of q's service and type over its range (with
 * q's filters applied), sorted; sample attributes span_id, trace_id and
 * profile_id are left out. For the UI's filter suggestions. */
int query_labels(store_t *s, const query_params_t *q, buf_t *json, err_t *err);
/* gzip-compressed pprof of the merged result. */
int query_pprof(store_t *s, const query_params_t *q, buf_t *out, err_t *err);

/* Hints for query_span from the caller (a trace viewer knows the span's
 * service and time). All optional (zero). */
typedef struct {
	slice_t service;           /* preferred when the span's samples or its trace's span several services;
	                              echoed when nothing is linked */
	int64_t from_ns, until_ns; /* the span's time: echoed (in whole minutes) when nothing is linked;
	                              also widens the search when outside the default one */
	slice_t type;              /* "sample_type:unit" to show instead of the default choice */
	int64_t now_ns;            /* 0: the clock (tests pin it) */
} query_span_opts_t;

/* GET /api/span (API: Span links). Samples linked to span_id (and trace_id when given;
 * samples linked with span_id alone match any trace) over [now - 14 d,
 * now + 1 d) (widened to the hints): when there are some,
 *   {"samples":N,"service":S,"type":T,"unit":U,"from":F,"until":U,"total":V,
 *    "types":[…],"root":{flame graph as query_flamegraph}}
 * with T = cpu:nanoseconds when the span has CPU samples (cpu_alias series
 * scaled by their period), else the type with most samples (o->type when
 * set); N counts linked sample rows of S and T; F/U are unix seconds, whole
 * minutes around the linked profiles; types lists every type of S linked to
 * the span. Only S's samples are merged (the hinted service when linked,
 * else the one with most). Otherwise
 *   {"samples":0,"service":S,"from":F,"until":U}
 * where S/F/U come from the trace's other linked samples (service with
 * most, minutes around them), else the hints, else "" and the last hour;
 * when only other types than o->type are linked, S/F/U are the span's own
 * and "types":[…] follows. span_id: 1 to 64 bytes, trace_id at most 64, no
 * control characters; else 400. */
int query_span(store_t *s, slice_t project, slice_t trace_id, slice_t span_id, const query_span_opts_t *o,
               buf_t *json, err_t *err);

/* The merged call tree itself (for the above and for tests). Values of
 * snapshot types are averaged per series over its snapshots (API: Aggregation over time); window
 * types summed. *tree is allocated in arena a. */
int query_merge(store_t *s, const query_params_t *q, arena_t *a, model_tree_t *tree, err_t *err);

#endif
