/* One ceiling on the request body bytes all servers of a process hold at
 * once (the body limits are per request; this bounds their sum, so that many
 * concurrent uploads cannot take the machine's memory). Bodies count from
 * their first byte until their request is freed; a body that would cross
 * the ceiling is refused with 503 + Retry-After (HTTP/1.1) or a
 * REFUSED_STREAM reset (HTTP/2: gRPC clients retry it as UNAVAILABLE).
 * Any thread (atomics). */
#ifndef KILN_NET_BUDGET_H
#define KILN_NET_BUDGET_H

#include <stdatomic.h>
#include <stddef.h>

typedef struct {
	_Atomic size_t used;
	size_t limit; /* 0 = no ceiling */
} net_budget_t;

/* Takes n bytes: 0, or -1 (nothing taken) when the ceiling would be crossed.
 * b may be NULL (no budget). */
static inline int net_budget_take(net_budget_t *b, size_t n)
{
	if (!b || !b->limit || !n)
		return 0;
	size_t before = atomic_fetch_add(&b->used, n);
	if (before + n > b->limit) {
		atomic_fetch_sub(&b->used, n);
		return -1;
	}
	return 0;
}

static inline void net_budget_give(net_budget_t *b, size_t n)
{
	if (b && b->limit && n)
		atomic_fetch_sub(&b->used, n);
}

#endif
