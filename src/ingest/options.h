/* The push path's settings as the config file gives them: the `limits:`
 * block and receivers.profiles.maxDecodedSampleRows. Ranges and defaults are
 * in base/limits.h; the config loader (cli/config.c) fills this over
 * ingest_options_defaults, kiln serve hands the values to the rate limiter,
 * the request-body budget (net/budget.h) and the decoders. */
#ifndef KILN_INGEST_OPTIONS_H
#define KILN_INGEST_OPTIONS_H

#include <stdint.h>

typedef struct {
	uint32_t max_rows;         /* receivers.profiles.maxDecodedSampleRows (LIMIT_SAMPLE_ROWS) */
	double samples_per_second; /* limits.samplesPerSecond: per key (OPS: Rate limits),
	                              LIMIT_SAMPLES_PER_SECOND */
	double default_samples_per_second; /* limits.defaultSamplesPerSecond: the caller of listeners
	                                      without auth (project default); 0 (default) = unlimited */
	double bodies_mib;                 /* limits.requestBodiesMiB: request bodies held at once, all
	                                      listeners together (net/budget.h), LIMIT_BODIES_MIB */
} ingest_options_t;

void ingest_options_defaults(ingest_options_t *o);

#endif
