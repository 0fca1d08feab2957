/* Usage (OPS: Usage): samples accepted and rejected (by reason) per project, key
 * name and UTC day, counted in memory and flushed to the store each second
 * (store_usage_write: DATA/usage.db on the embedded engine, the usage table
 * on ClickHouse). It does not decide what a request counts as; the push
 * routes tell it, nor where the counts are kept; the store does. */
#ifndef KILN_INGEST_USAGE_H
#define KILN_INGEST_USAGE_H

#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/limits.h"
#include "base/slice.h"

/* Counters, in this order everywhere (counts[USAGE_*]). */
enum {
	USAGE_ACCEPTED = 0,
	USAGE_RATE_LIMITED = 1,
	USAGE_TOO_LARGE = 2,
	USAGE_INVALID = 3,
	USAGE_OUT_OF_WINDOW = 4,
	USAGE_COUNTERS = 5
};

typedef struct usage usage_t;

/* One (day, project, key) row as usage_rows reports it. */
typedef struct {
	int64_t day; /* days since 1970-01-01, UTC */
	slice_t project, key;
	uint64_t counts[USAGE_COUNTERS];
} usage_row_t;

/* Counts into s (store.h's usage rows); opening reads nothing. */
struct store;
usage_t *usage_open(struct store *s);
/* Flushes what is pending, then closes. NULL is fine. */
void usage_close(usage_t *u);

/* Counts one request of key (a key name, never the secret) of project, at
 * t_ns (the request's arrival, which picks the UTC day): accepted samples are
 * added to the accepted counter, and samples to the counter of reason
 * (USAGE_*; USAGE_ACCEPTED adds them to accepted too). So a partly accepted
 * OTLP export is one call: (accepted = stored, reason = USAGE_OUT_OF_WINDOW,
 * samples = dropped). Thread-safe and cheap: one hash lookup under a short
 * mutex, no I/O. */
void usage_add(usage_t *u, slice_t project, slice_t key, int64_t t_ns, uint64_t accepted, int reason,
               uint64_t samples);

/* Writes the pending counts to the store, adding them to what is there (one
 * store_usage_write: one transaction with synchronous=FULL, one INSERT). The server calls it every second and
 * at shutdown, so a kill -9 loses at most about one second of counts. On failure the counts stay pending for
 * the next flush. 0, or -1 + err. Thread-safe. */
int usage_flush(usage_t *u, err_t *err);

/* Calls cb for every row of project (all projects if project is empty) whose
 * day overlaps [from_ns, until_ns] (until_ns = 0: no upper bound), ordered by
 * day, project, key; pending (unflushed) counts are included. 0 or -1 + err. */
int usage_rows(usage_t *u, slice_t project, int64_t from_ns, int64_t until_ns,
               void (*cb)(const usage_row_t *row, void *ctx), void *ctx, err_t *err);

/* Appends GET /api/usage's answer for project (rows as usage_rows gives them):
 * {"days":[{"day":"2026-12-02","key":"ci","accepted":N,"rejected":M,
 *   "rejected_by_reason":{"rate_limited":a,"too_large":b,"invalid":c,"out_of_window":d}}]}
 * 0, or -1 + err (500 if json's ceiling is reached). */
int usage_query(usage_t *u, slice_t project, int64_t from_ns, int64_t until_ns, buf_t *json, err_t *err);

/* Totals counted since usage_open, per (project, key), for /metrics. cb runs
 * under the usage mutex: it must not call back into u. At most
 * LIMIT_USAGE_TOTALS pairs are tracked; later new pairs are not in the totals
 * (their daily rows still are). */
void usage_totals(usage_t *u, void (*cb)(slice_t project, slice_t key, const uint64_t counts[USAGE_COUNTERS], void *ctx),
                  void *ctx);

#endif
