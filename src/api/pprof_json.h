/* A pprof Profile message as Connect JSON (api/pprof_json.c), for the
 * querier's SelectMergeProfile in the JSON codec (API: Query:
 * querier.v1.QuerierService). */
#ifndef KILN_API_PPROF_JSON_H
#define KILN_API_PPROF_JSON_H

#include "base/buf.h"
#include "base/err.h"

/* Appends the protojson form of the binary pprof Profile profile
 * (uncompressed, e.g. pprof_encode's) to out: lowerCamelCase keys, repeated
 * fields as arrays, int64 and uint64 as decimal strings, default values
 * left out. 0, or -1 with err (500: not a well-formed Profile; 413: out's
 * ceiling). */
int api_pprof_json(slice_t profile, buf_t *out, err_t *err);

#endif
