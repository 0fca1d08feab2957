/* Stable 64-bit hashes (XXH3) for stored identities; never 0. */
#include "base/hash.h"

#include <xxhash.h>

uint64_t hash_bytes(const void *p, size_t n, uint64_t seed)
{
	uint64_t h = XXH3_64bits_withSeed(p, n, seed);
	return h ? h : 1;
}

uint64_t hash_pair(uint64_t a, uint64_t b)
{
	uint64_t v[2] = {a, b};
	return hash_bytes(v, sizeof v, 0x6b696c6eULL);
}
