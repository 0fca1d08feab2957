/* Allocation wrappers. Kiln's out-of-memory policy is decided here, once:
 * allocation failure aborts the process. That is safe only because every
 * buffer that outside input can grow is bounded (see base/limits.h). */
#ifndef KILN_BASE_ALLOC_H
#define KILN_BASE_ALLOC_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
/* Grows an array of *cap elements of size elem so that it holds at least need; doubles. */
void *xgrow(void *p, size_t *cap, size_t need, size_t elem);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

#endif
