/* The scrape loop of the sensor (OPS: Scrape settings, OPS: Scrape requests, Scrape limits, Scrape log
 * lines): fetches each target's pprof endpoint on a schedule spread over the interval (libcurl multi on the
 * event loop, never blocking it), hands the body to the worker pool for the
 * push path (bounded gunzip, pprof decode, .sample_types, heap deltas of
 * API: Aggregation over time), submits to the store under project `default`, and keeps per-target
 * state for /api/targets and /metrics. Discovery (k8s, static config) only
 * hands it target sets; it never finds targets itself. */
#ifndef KILN_SCRAPE_SCRAPER_H
#define KILN_SCRAPE_SCRAPER_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/err.h"
#include "ingest/push.h"
#include "ingest/usage.h"
#include "model/model.h"
#include "net/loop.h"
#include "net/pool.h"
#include "scrape/delta.h"
#include "scrape/options.h"
#include "scrape/target.h"
#include "store/store.h"

#define SCRAPE_PROJECT "default" /* scraped data's project and usage key (OPS: Roles and listeners) */

/* Results of one scrape (OPS: Scrape log lines), in this order in /metrics and /api/targets.
 * http_5xx is a 5xx other than Go's busy CPU profiler (the spec has no code
 * for it). */
enum scrape_result {
	SCRAPE_OK,
	SCRAPE_CONNECTION_ERROR,
	SCRAPE_TIMEOUT,
	SCRAPE_HTTP_4XX,
	SCRAPE_HTTP_3XX,
	SCRAPE_HTTP_5XX,
	SCRAPE_TARGET_BUSY,
	SCRAPE_VALIDATION_ERROR,
	SCRAPE_TOO_LARGE,
	SCRAPE_SKIPPED_CONCURRENCY,
	SCRAPE_STORE_BUSY, /* fetched, but the store's queue was full (store_busy): not stored, not retried */
	SCRAPE_RESULTS
};
/* "ok", "connection_error", ...; "unknown" out of range. */
const char *scrape_result_name(int result);

/* ---- The loop. Every function here runs on the loop thread. ---------- */

typedef struct scraper scraper_t;

typedef struct {
	loop_t *loop;
	pool_t *pool;
	store_t *store;
	usage_t *usage;      /* may be NULL */
	int64_t interval_ns; /* checked already (scrape_check_settings) */
	uint32_t max_rows;   /* maxDecodedSampleRows, after .sample_types (0 = LIMIT_SAMPLE_ROWS) */
} scraper_opts_t;

/* A scraper with no targets. NULL if libcurl cannot be set up. */
scraper_t *scraper_new(const scraper_opts_t *o);

/* Replaces the target set with t[0..n) (copied). State (schedule offset,
 * results, heap delta baseline) is kept for keys already present; removed
 * targets stop (a scrape in flight finishes first, its result is dropped).
 * A target whose timeout exceeds the interval, or repeating a key, is left
 * out. */
void scraper_set_targets(scraper_t *s, const scrape_target_t *t, size_t n);

/* The OPS: Scrape log lines `profile scrape targets skipped` line, called by discovery after
 * each rebuild of the target set with the number of targets skipped for
 * reason (no_port, invalid_port, invalid_target) and one example. Logs when
 * the reason appears (count > 0 after a rebuild where it was 0 or on the
 * first call); count 0 clears it. */
void scraper_report_skip_reason(scraper_t *s, const char *reason, const char *namespace_, const char *pod,
                                const char *type, uint32_t count);

/* Targets skipped by one rebuild, per reason (enum annot_skip_reason: no_port,
 * invalid_port, invalid_target), with the first example of each. */
#define SCRAPE_SKIP_REASONS 3
typedef struct {
	uint32_t count[SCRAPE_SKIP_REASONS];
	int type[SCRAPE_SKIP_REASONS];
	char namespace_[SCRAPE_SKIP_REASONS][LIMIT_SCRAPE_NAME_BYTES];
	char pod[SCRAPE_SKIP_REASONS][LIMIT_SCRAPE_NAME_BYTES];
} scrape_skips_t;

/* Counts one skip (the first of a reason is its example). Out-of-range reasons are ignored. */
void scrape_skips_add(scrape_skips_t *sk, int reason, const char *namespace_, const char *pod, int type);
/* scraper_report_skip_reason for every reason (count 0 clears it). */
void scraper_report_skips(scraper_t *s, const scrape_skips_t *sk);

/* {"targets":[{key,type,url (masked),namespace,pod,container,service,
 * last_result,last_scrape,last_success,consecutive_failures,results:{…}}]}
 * sorted by key; times RFC 3339 UTC or null. */
void scraper_write_targets(scraper_t *s, buf_t *out);
/* kiln_scrape_results_total{type,result}, kiln_scrape_targets, kiln_scrape_inflight. */
void scraper_write_metrics(scraper_t *s, buf_t *out);

/* Shutdown, part 1 (before freeing the loop): stops timers and aborts
 * transfers. Scrapes already on the pool still finish (their completions,
 * posted to the loop, only update state). */
void scraper_stop(scraper_t *s);
/* Part 2, after loop_free ran the last posted completions. NULL is a no-op. */
void scraper_free(scraper_t *s);

/* The static targets of c (receivers.profiles.scrape.static) into a fresh
 * array (*out, caller frees; count returned); skips are added to sk and, when
 * log, logged as `static scrape target is invalid`. */
size_t scrape_static_targets(const scrape_options_t *c, int log, scrape_target_t **out, scrape_skips_t *sk);

/* From kiln serve's settings (c; max_rows: maxDecodedSampleRows): checks
 * them (logging the lines of OPS: Scrape settings), builds the static targets (logging skips)
 * and starts scraping them.
 * NULL when scraping is off (not enabled, or disabled by a bad setting). */
scraper_t *scraper_from_config(const scrape_options_t *c, uint32_t max_rows, loop_t *loop, pool_t *pool,
                               store_t *store, usage_t *usage);

/* ---- The push job's scrape decoder (worker thread). ------------------ */

/* p->ctx of a scrape's push. */
typedef struct {
	ingest_pprof_push_t pprof; /* first: ingest_pprof_decode reads p->ctx as one */
	const scrape_target_t *t;
	scrape_delta_t *delta; /* memory targets' baseline, or NULL */
	uint32_t max_rows;   /* maxDecodedSampleRows after .sample_types (0 = LIMIT_SAMPLE_ROWS) */
	int result;          /* out: SCRAPE_OK, or SCRAPE_VALIDATION_ERROR / SCRAPE_TOO_LARGE */
} scrape_push_t;

/* Gunzips p->body (bounded by LIMIT_SCRAPE_DECODED_BYTES), decodes it as the
 * target's pprof (project default, its attribution labels), keeps the
 * listed .sample_types, checks the rows (OPS: Scrape limits) and, for memory targets,
 * turns alloc_* into deltas (API: Aggregation over time). 0, or -1 + err. */
int scrape_push_decode(ingest_push_t *p, err_t *err);

/* ---- Pure rules (scraper_rules.c): no I/O, any thread. ---------------- */

/* Copies url into out (size n, NUL-terminated, truncated) with every query
 * value except `seconds` replaced by *** and a userinfo password too
 * (OPS: Scrape requests): "/x?seconds=2&token=abc" → "/x?seconds=2&token=***". */
void scrape_mask_url(const char *url, char *out, size_t n);

/* The target's stable place in the interval: a hash of key, whole ms. */
int64_t scrape_offset_ns(const char *key, int64_t interval_ns);
/* The first time after now that is offset modulo interval. */
int64_t scrape_next_due(int64_t now_ns, int64_t interval_ns, int64_t offset_ns);

/* OPS: Scrape settings: 0 when scraping can run; -1 with a reason ("interval 5s is below
 * the minimum of 10s", "extraAnnotationPrefixes[1] \"Bad_Prefix\" is not a
 * DNS subdomain") otherwise. type_ok[type] = 1 for types whose timeout fits
 * the interval; invalid gets their names ("cpu,block,mutex"; "" when none). */
int scrape_check_settings(int64_t interval_ns, char *const *prefixes, uint32_t n_prefixes,
                          int type_ok[SCRAPE_TYPES], char *invalid, size_t invalid_n, char *reason,
                          size_t reason_n);

/* Fills t from one static target's type settings (OPS: Discovery, Annotations, Scraped profile types): url
 * from url or host+port plus path (default per type; `seconds` added or checked), scheme, timeouts,
 * attribution, key "static/NAME/TYPE". 0, or -1 with the skip reason ("invalid_target", "invalid_port") and a
 * message. */
int scrape_static_target(const scrape_static_options_t *c, int type, scrape_target_t *t, const char **reason,
                         char *msg, size_t msg_n);

/* Keeps the profiles whose sample type is in list (comma separated, spaces
 * ignored; "" keeps all). -1 with err (a validation_error) when a listed
 * type is missing from the profile. */
int scrape_filter_sample_types(model_batch_t *b, const char *list, err_t *err);
/* -1 with err when a profile of b has more than max_rows rows (OPS: Scrape limits). */
int scrape_check_rows(const model_batch_t *b, uint32_t max_rows, err_t *err);

#endif
