/* Folded ("collapsed") stack text, Pyroscope's /ingest formats `groups` and
 * `lines` (API: Push: POST /ingest (Pyroscope)): one stack per line, frames
 * root first and separated by ';'. `groups`: `frame;frame;frame COUNT`, the
 * count a non-negative decimal integer after the line's last space (frames
 * may hold spaces); `lines`: the whole line is the stack, counting 1.
 * A reader walks the text one stack at a time, with no allocation: the
 * frames of the current stack are slices into the text. Pure; no model. */
#ifndef KILN_WIRE_FOLDED_H
#define KILN_WIRE_FOLDED_H

#include <stdint.h>

#include "base/err.h"
#include "base/limits.h"
#include "base/slice.h"

enum { FOLDED_GROUPS = 0, FOLDED_LINES = 1 };

typedef struct {
	/* The current stack, root first: the LIMIT_STACK_DEPTH frames nearest
	 * the leaf when the line has more (depth says how many it had). */
	slice_t frames[LIMIT_STACK_DEPTH];
	uint32_t n_frames;
	uint32_t depth;
	int64_t value; /* groups: the line's count; lines: 1 */
	uint32_t line; /* 1-based number of the current stack's line */
	slice_t _text;
	size_t _pos;
	int _format;
} folded_reader_t;

void folded_init(folded_reader_t *r, slice_t text, int format);

/* Reads the next stack: 1 (fields above set), 0 at the end of the text, or
 * -1 + err, which names the line ("line N: ..."). Lines end at '\n'; a
 * '\r' before it (CRLF) and trailing spaces and tabs are not part of the
 * line; lines left empty are skipped. Errors: 400 for a control byte (other
 * than tab) in a line, an empty frame (`;;`, or ';' first or last), and, in
 * groups, a line without a space, with no stack before its last space, or
 * whose count is not digits or is above INT64_MAX; 413 for a frame longer
 * than LIMIT_STRING_BYTES. */
int folded_next(folded_reader_t *r, err_t *err);

/* 1 when data reads as folded text rather than a protobuf: not empty, and
 * its first 256 bytes hold no control byte other than tab, CR and LF (a
 * pprof's tags and lengths are small bytes within its first few). */
int folded_is_text(slice_t data);

#endif
