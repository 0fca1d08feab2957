/* Bump allocator (base/arena.h): blocks chained, freed together. */
#include "base/arena.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

#define ARENA_BLOCK (64u << 10)

typedef struct block {
	struct block *next;
	size_t used, size;
	_Alignas(16) unsigned char data[];
} block_t;

struct arena {
	block_t *head;
	size_t total;
};

arena_t *arena_new(void)
{
	return xcalloc(1, sizeof(arena_t));
}

void arena_free(arena_t *a)
{
	if (!a)
		return;
	block_t *b = a->head;
	while (b) {
		block_t *next = b->next;
		free(b);
		b = next;
	}
	free(a);
}

void arena_reset(arena_t *a)
{
	block_t *keep = NULL;
	block_t *b = a->head;
	while (b) {
		block_t *next = b->next;
		if (!keep && b->size == ARENA_BLOCK)
			keep = b;
		else
			free(b);
		b = next;
	}
	if (keep) {
		keep->next = NULL;
		keep->used = 0;
	}
	a->head = keep;
	a->total = 0;
}

void *arena_alloc(arena_t *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	block_t *b = a->head;
	if (!b || b->size - b->used < n) {
		size_t size = n > ARENA_BLOCK / 4 ? n : ARENA_BLOCK;
		block_t *nb = xmalloc(sizeof(block_t) + size);
		nb->used = 0;
		nb->size = size;
		if (b && size != ARENA_BLOCK) { /* big one-off: keep the current block on top */
			nb->next = b->next;
			b->next = nb;
			nb->used = n;
			a->total += n;
			return nb->data;
		}
		nb->next = b;
		a->head = b = nb;
	}
	void *p = b->data + b->used;
	b->used += n;
	a->total += n;
	return p;
}

void *arena_calloc(arena_t *a, size_t n)
{
	void *p = arena_alloc(a, n);
	memset(p, 0, n);
	return p;
}

slice_t arena_slice(arena_t *a, slice_t s)
{
	if (s.n == 0)
		return slice_make("", 0);
	uint8_t *p = arena_alloc(a, s.n);
	memcpy(p, s.p, s.n);
	return slice_make(p, s.n);
}

char *arena_strndup(arena_t *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, n + 1);
	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

size_t arena_used(const arena_t *a)
{
	return a->total;
}
