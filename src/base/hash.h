/* 64-bit hashing (xxHash XXH3) for identities that need no coordination:
 * frame ids, stack node ids, series ids. Stable across runs and machines:
 * these values are stored on disk. Never returns 0 (0 means "none"). */
#ifndef KILN_BASE_HASH_H
#define KILN_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "base/slice.h"

uint64_t hash_bytes(const void *p, size_t n, uint64_t seed);
static inline uint64_t hash_slice(slice_t s, uint64_t seed)
{
	return hash_bytes(s.p, s.n, seed);
}
/* Hash of two 64-bit values (e.g. parent node id, frame id). */
uint64_t hash_pair(uint64_t a, uint64_t b);

#endif
