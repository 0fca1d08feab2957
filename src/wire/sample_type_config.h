/* Pyroscope's sample_type_config (the JSON part of a multipart /ingest, as
 * the Go SDK sends it): {SAMPLE_TYPE: {"units": "...", "display-name":
 * "...", "aggregation": "sum"|"average", "cumulative": bool, "sampled":
 * bool}, ...}. Parsed with jansson into a bounded table of copies; what the
 * entries mean for a push is the route's (API: Push: POST /ingest
 * (Pyroscope)). */
#ifndef KILN_WIRE_SAMPLE_TYPE_CONFIG_H
#define KILN_WIRE_SAMPLE_TYPE_CONFIG_H

#include <stdint.h>

#include "base/err.h"
#include "base/limits.h"
#include "base/slice.h"

enum { PYRO_STC_AGG_DEFAULT = 0, PYRO_STC_AGG_SUM = 1, PYRO_STC_AGG_AVERAGE = 2 };

typedef struct {
	char type[LIMIT_PYRO_STC_STRING_BYTES + 1];         /* the pprof sample type it applies to */
	char display_name[LIMIT_PYRO_STC_STRING_BYTES + 1]; /* "" = not given */
	char units[LIMIT_PYRO_STC_STRING_BYTES + 1];        /* "" = not given */
	uint8_t aggregation;                                /* PYRO_STC_AGG_* */
	uint8_t cumulative, sampled;
} pyro_stc_entry_t;

typedef struct {
	pyro_stc_entry_t entries[LIMIT_SAMPLE_TYPES];
	uint32_t n;
} pyro_stc_t;

/* Parses json (at most LIMIT_PYRO_STC_BYTES) into out. Fields other than the
 * five are ignored, as Go's decoder does; a field that is null or absent is
 * not given. 0, or -1 + err 400 "sample_type_config: ...": not JSON (with
 * the byte where it failed), a duplicate key, not an object, an entry that
 * is not an object, a field of the wrong JSON type, an aggregation other
 * than "sum" or "average" (or ""), an empty sample type, a string longer
 * than LIMIT_PYRO_STC_STRING_BYTES or with a NUL byte, more than
 * LIMIT_SAMPLE_TYPES entries, or more than LIMIT_PYRO_STC_BYTES. */
int pyro_stc_parse(slice_t json, pyro_stc_t *out, err_t *err);

/* The entry for sample type t, or NULL. */
const pyro_stc_entry_t *pyro_stc_find(const pyro_stc_t *c, slice_t t);

/* Pyroscope's profile name (its __name__) of a pprof whose sample types are
 * types[0..n), as Pyroscope's /ingest derives it (pkg/og/convert/pprof
 * metricName): "wall" when a sample type is named wall; else, for the first
 * sample type whose name — its display-name in c when given there, c NULL =
 * Pyroscope's default config (samples → cpu, goroutine → goroutines,
 * contentions → mutex_count, delay → mutex_duration) — contains "cpu":
 * process_cpu; "alloc_" or "inuse_", or is "space" or "objects": memory;
 * "mutex_": mutex; "block_": block; "goroutines": goroutines. When none
 * matches, the last type's name (display-name or type), as Pyroscope falls
 * back to, if model_profile_name_valid; else empty: unnamed (API: Profile
 * names). The result is static or points into c or types. */
slice_t pyro_stc_profile_name(const pyro_stc_t *c, const slice_t *types, uint32_t n);

#endif
