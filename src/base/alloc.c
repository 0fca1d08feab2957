/* Allocation wrappers: abort on out-of-memory (the policy of base/alloc.h). */
#include "base/alloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(size_t n)
{
	fprintf(stderr, "kiln: out of memory allocating %zu bytes\n", n);
	abort();
}

void xoom(const char *what)
{
	fprintf(stderr, "kiln: out of memory in %s\n", what);
	abort();
}

void xpthread_key_create(pthread_key_t *key, void (*destructor)(void *))
{
	int rc = pthread_key_create(key, destructor);
	if (rc != 0) {
		fprintf(stderr, "kiln: pthread_key_create: %s\n", strerror(rc));
		abort();
	}
}

void xpthread_setspecific(pthread_key_t key, const void *value)
{
	int rc = pthread_setspecific(key, value);
	if (rc != 0) {
		fprintf(stderr, "kiln: pthread_setspecific: %s\n", strerror(rc));
		abort();
	}
}

void *xcheck_at(void *p, const char *what)
{
	if (!p)
		xoom(what);
	return p;
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

void *xcalloc(size_t count, size_t size)
{
	void *p = calloc(count ? count : 1, size ? size : 1);
	if (!p)
		oom(count * size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		oom(n);
	return q;
}

void *xgrow(void *p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	size_t c = *cap ? *cap : 16;
	while (c < need)
		c *= 2;
	if (c > SIZE_MAX / elem)
		oom(SIZE_MAX);
	p = xrealloc(p, c * elem);
	*cap = c;
	return p;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = 0;
	return p;
}
