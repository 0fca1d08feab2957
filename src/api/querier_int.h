/* Private to api/querier*.c: the Connect querier's request as decoded
 * (api/querier_req.c: field tables, binary and JSON decoding, checks, the
 * query it makes), apart from the listener, so the fuzz target
 * (api_querier_decode) and the calls (api/querier.c) share it. */
#ifndef KILN_API_QUERIER_INT_H
#define KILN_API_QUERIER_INT_H

#include <stdint.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/err.h"
#include "query/query.h"
#include "query/selector.h"

#define QUERIER_SERVICE "/querier.v1.QuerierService/"
#define QUERIER_MAX_BODY (1u << 20) /* a query request: selectors and times */

enum qr_method {
	QR_PROFILE_TYPES,
	QR_LABEL_NAMES,
	QR_LABEL_VALUES,
	QR_MERGE_STACKS,
	QR_SERIES,
	QR_STATS,
	QR_MERGE_PROFILE,
	QR_SELECT_SERIES,
	QR_SPAN_PROFILE,
	QR_COUNT
};

/* A request of method m, decoded. Slices point into the request body
 * (binary) or into pb (JSON, transcoded). */
typedef struct {
	enum qr_method m;
	int json;
	slice_t project; /* the caller's */
	int64_t from_ns, until_ns;
	int64_t start_ms;  /* start as asked, defaults applied (SelectSeries' grid) */
	slice_t label;     /* LabelValues: the name */
	slice_t type_id;   /* Select*: the profile type id */
	int64_t max_nodes; /* 0: absent */
	slice_t selector;  /* Select*: label_selector */
	slice_t *keep;     /* Series: label_names (n_keep; none: every label) */
	uint32_t n_keep;
	int tree;          /* SelectMergeStacktraces: format 2, tree bytes */
	slice_t *group_by; /* SelectSeries: group_by (n_group_by) */
	uint32_t n_group_by;
	double step_s;  /* SelectSeries: step, seconds */
	int average;    /* SelectSeries: aggregation 1 */
	int64_t limit;  /* SelectSeries: limit (0: absent) */
	slice_t *spans; /* SelectMergeSpanProfile: span_selector (n_spans) */
	uint32_t n_spans;
	query_params_t q; /* Select*: the query */
	sel_t *sel;       /* the matchers (LabelNames, LabelValues, Series) or the label_selector, parsed */
	uint32_t n_sel;
	buf_t pb;       /* the request as protobuf (JSON transcoded into it) */
	arena_t *arena; /* the query's copies (the caller's) */
} qr_req_t;

/* The method named name (e.g. "SelectSeries"), or -1. */
int qr_method_of(slice_t name);
void qr_req_init(qr_req_t *r, enum qr_method m, int json, slice_t project, arena_t *a);
void qr_req_free(qr_req_t *r);
/* Decodes and checks body (r->m's request message, JSON when r->json) into
 * r: fields, times (defaults: API), selectors, each method's rules, the
 * Select methods' query. 0, or -1 + err (400, 413, 501). */
int qr_req_decode(qr_req_t *r, slice_t body, err_t *err);

#endif
