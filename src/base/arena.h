/* Bump allocator for one request or one batch: many small allocations, one
 * free at the end. Not thread-safe; an arena belongs to one owner at a time. */
#ifndef KILN_BASE_ARENA_H
#define KILN_BASE_ARENA_H

#include <stddef.h>

#include "base/slice.h"

typedef struct arena arena_t;

arena_t *arena_new(void);
void arena_free(arena_t *a);
/* Takes back everything handed out (what it handed out becomes invalid)
 * and keeps one standard block for reuse, so an arena reused per request
 * allocates nothing in the steady state. */
void arena_reset(arena_t *a);
/* 16-byte aligned; aborts on out-of-memory (callers bound what they ask for). */
void *arena_alloc(arena_t *a, size_t n);
void *arena_calloc(arena_t *a, size_t n);
/* Copies s into the arena; the result borrows the arena's memory. */
slice_t arena_slice(arena_t *a, slice_t s);
char *arena_strndup(arena_t *a, const char *s, size_t n);
/* Bytes handed out so far (for memory accounting). */
size_t arena_used(const arena_t *a);

#endif
