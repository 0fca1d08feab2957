/* Open-addressing hash map from a 64-bit key (usually already a hash) to a
 * 32-bit value. Key 0 is reserved (hash_* never produces it). Not thread-safe. */
#ifndef KILN_BASE_U64MAP_H
#define KILN_BASE_U64MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
	uint64_t *keys;
	uint32_t *vals;
	size_t cap; /* power of two, 0 when empty */
	size_t len;
} u64map_t;

void u64map_init(u64map_t *m);
void u64map_free(u64map_t *m);
void u64map_clear(u64map_t *m);
/* Grows the table once so that n entries in all fit without a rehash (for a
 * caller that knows its count: no table is built and copied at every doubling). */
void u64map_reserve(u64map_t *m, size_t n);
/* 1 and *val set when present, else 0. */
int u64map_get(const u64map_t *m, uint64_t key, uint32_t *val);
/* Inserts or overwrites. key must not be 0. */
void u64map_put(u64map_t *m, uint64_t key, uint32_t val);
/* Returns the existing value if present; otherwise inserts val and returns it.
 * *inserted (may be NULL) tells which happened. */
uint32_t u64map_get_or_put(u64map_t *m, uint64_t key, uint32_t val, int *inserted);

#endif
