/* Errors that reach a user: an HTTP-style status and a message a person can
 * act on (what was wrong, where, and what the limit is). */
#ifndef KILN_BASE_ERR_H
#define KILN_BASE_ERR_H

typedef struct {
	int status;     /* HTTP status: 400 bad input, 413 too large, 503 try later, 500 bug */
	int retry_after; /* seconds, for 429/503; 0 = none */
	char msg[480];
} err_t;

/* Sets status and formats msg (truncated to fit). Returns -1 so callers can
 * `return err_set(...)`. err may be NULL. */
int err_set(err_t *err, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prefixes the existing message with a path element: "samples[7]: <msg>". */
int err_prefix(err_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
