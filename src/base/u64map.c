/* Open-addressing (linear probing) map u64 -> u32 (base/u64map.h). */
#include "base/u64map.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

void u64map_init(u64map_t *m)
{
	memset(m, 0, sizeof *m);
}

void u64map_free(u64map_t *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof *m);
}

void u64map_clear(u64map_t *m)
{
	if (m->cap)
		memset(m->keys, 0, m->cap * sizeof *m->keys);
	m->len = 0;
}

static inline size_t slot_of(uint64_t key, size_t mask)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return (size_t)key & mask;
}

static void rehash(u64map_t *m, size_t cap)
{
	uint64_t *ok = m->keys;
	uint32_t *ov = m->vals;
	size_t ocap = m->cap;
	m->keys = xcalloc(cap, sizeof *m->keys);
	m->vals = xmalloc(cap * sizeof *m->vals);
	m->cap = cap;
	for (size_t i = 0; i < ocap; i++) {
		if (!ok[i])
			continue;
		size_t s = slot_of(ok[i], cap - 1);
		while (m->keys[s])
			s = (s + 1) & (cap - 1);
		m->keys[s] = ok[i];
		m->vals[s] = ov[i];
	}
	free(ok);
	free(ov);
}

void u64map_reserve(u64map_t *m, size_t n)
{
	size_t cap = m->cap ? m->cap : 64;
	while ((n + 1) * 4 > cap * 3)
		cap *= 2;
	if (cap != m->cap)
		rehash(m, cap);
}

int u64map_get(const u64map_t *m, uint64_t key, uint32_t *val)
{
	if (!m->cap || !key)
		return 0;
	size_t mask = m->cap - 1, s = slot_of(key, mask);
	while (m->keys[s]) {
		if (m->keys[s] == key) {
			*val = m->vals[s];
			return 1;
		}
		s = (s + 1) & mask;
	}
	return 0;
}

uint32_t u64map_get_or_put(u64map_t *m, uint64_t key, uint32_t val, int *inserted)
{
	if ((m->len + 1) * 4 > m->cap * 3)
		rehash(m, m->cap ? m->cap * 2 : 64);
	size_t mask = m->cap - 1, s = slot_of(key, mask);
	while (m->keys[s]) {
		if (m->keys[s] == key) {
			if (inserted)
				*inserted = 0;
			return m->vals[s];
		}
		s = (s + 1) & mask;
	}
	m->keys[s] = key;
	m->vals[s] = val;
	m->len++;
	if (inserted)
		*inserted = 1;
	return val;
}

void u64map_put(u64map_t *m, uint64_t key, uint32_t val)
{
	if ((m->len + 1) * 4 > m->cap * 3)
		rehash(m, m->cap ? m->cap * 2 : 64);
	size_t mask = m->cap - 1, s = slot_of(key, mask);
	while (m->keys[s] && m->keys[s] != key)
		s = (s + 1) & mask;
	if (!m->keys[s])
		m->len++;
	m->keys[s] = key;
	m->vals[s] = val;
}
