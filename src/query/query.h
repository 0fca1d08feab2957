/* Queries over the store: merge samples into a call tree and write the
 * results of SPEC S7 (services, types, flame graph, top, timeline, pprof).
 * Each call opens its own store view: safe to run on several worker threads. */
#ifndef KILN_QUERY_QUERY_H
#define KILN_QUERY_QUERY_H

#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "model/model.h"
#include "store/store.h"

typedef struct {
	slice_t project;
	slice_t service;         /* required except for services */
	slice_t type;            /* "sample_type:unit", required except for services/types */
	int64_t from_ns, until_ns;
	const model_label *labels; /* filters label.K=V: series labels or sample attributes */
	uint32_t n_labels;
} query_params;

/* {"services":[{"name","types":[…],"cpu_nanoseconds"}]} busiest first. */
int query_services(store_t *s, const query_params *q, buf_t *json, kn_err *err);
/* {"types":["cpu:nanoseconds", …]} for q->service over the range. */
int query_types(store_t *s, const query_params *q, buf_t *json, kn_err *err);
/* {"type","unit","total","root":{"name","self","total","children":[…]}} */
int query_flamegraph(store_t *s, const query_params *q, buf_t *json, kn_err *err);
/* {"type","unit","total","rows":[{"name","self","total"}]} sorted by self desc. */
int query_top(store_t *s, const query_params *q, uint32_t limit, buf_t *json, kn_err *err);
/* {"type","unit","step","points":[[unix_s,value],…]}; step_s 0 = automatic. */
int query_timeline(store_t *s, const query_params *q, int64_t step_s, buf_t *json, kn_err *err);
/* gzip-compressed pprof of the merged result. */
int query_pprof(store_t *s, const query_params *q, buf_t *out, kn_err *err);

/* The merged call tree itself (for the above and for tests). Values of
 * snapshot types are averaged per series over its snapshots (S5.2); window
 * types summed. *tree is allocated in arena a. */
int query_merge(store_t *s, const query_params *q, arena_t *a, model_tree *tree, kn_err *err);

#endif
