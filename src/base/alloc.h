/* Allocation wrappers. Kiln's out-of-memory policy is decided here, once:
 * allocation failure aborts the process. That is safe only because every
 * buffer that outside input can grow is bounded (see base/limits.h). */
#ifndef KILN_BASE_ALLOC_H
#define KILN_BASE_ALLOC_H

#include <pthread.h>
#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
/* Grows an array of *cap elements of size elem so that it holds at least need; doubles. */
void *xgrow(void *p, size_t *cap, size_t need, size_t elem);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

/* The same policy for the constructors of the libraries Kiln uses
 * (evtimer_new, event_new, curl_easy_init, curl_multi_init, curl_slist_append,
 * ZSTD_createCCtx/DCtx, libdeflate_alloc_*, json_object, …), which return NULL
 * only when they cannot allocate: xcheck(expr) is expr, or the process aborts
 * naming the call. Constructors that fail for other reasons (a socket, a
 * certificate, a listen address) are errors to report, not this. */
#define xcheck(expr) xcheck_at((expr), #expr)
void *xcheck_at(void *p, const char *what);
/* Aborts naming what could not be allocated (for constructors that report
 * out-of-memory as a return code, e.g. nghttp2_session_server_new). */
_Noreturn void xoom(const char *what);
/* pthread_key_create and pthread_setspecific, which fail only for want of
 * memory or of keys: the process aborts naming the call and its error. For
 * per-thread state made at a thread's first use. */
void xpthread_key_create(pthread_key_t *key, void (*destructor)(void *));
void xpthread_setspecific(pthread_key_t key, const void *value);

#endif
