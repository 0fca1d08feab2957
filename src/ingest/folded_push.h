/* Pyroscope's folded-text push (API: Push: POST /ingest (Pyroscope)): the
 * push job's decoder for format=groups and format=lines, and for a body
 * sent without a format, which is folded text unless it reads as pprof
 * (wire/folded.h: folded_is_text) and then goes to the pprof decoder as it
 * always did. One profile per push, its frames name-only; `units`,
 * `aggregationType` and `sampleRate` choose its type (the table in
 * folded_push.c, quoted in API.md). Runs on a worker; no store, no network. */
#ifndef KILN_INGEST_FOLDED_PUSH_H
#define KILN_INGEST_FOLDED_PUSH_H

#include "ingest/push.h"

enum { INGEST_FOLDED_SNIFF = -1 }; /* no format given: folded text (groups) unless pprof */

typedef struct {
	/* The request (project, service, labels, from/until, rows, retention)
	 * and its result; also the pprof decoder's state for a pprof body. */
	ingest_pprof_push_t *pprof;
	int format; /* FOLDED_GROUPS, FOLDED_LINES (wire/folded.h) or INGEST_FOLDED_SNIFF */
	/* The query's units, aggregationType and sampleRate as sent (NULL or
	 * "": the default); read only for folded text, so a pprof body ignores
	 * them. They must live until the decoder has run. */
	const char *units, *aggregation, *sample_rate;
} ingest_folded_push_t;

/* The decoder: p->ctx is an ingest_folded_push_t. Folded text: 400 for a
 * bad parameter (naming it), an empty body or no stack, a malformed line
 * (wire/folded.h, naming the line), a count that overflows once scaled by
 * the sample period or summed; 413 past maxDecodedSampleRows distinct stacks
 * or LIMIT_REQUEST_FRAMES frames; the window of ingest_push_window. */
int ingest_folded_decode(ingest_push_t *p, err_t *err);

#endif
