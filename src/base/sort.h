/* qsort for arrays that often arrive sorted already (rows a database
 * returned in key order): one pass to check, the sort only when needed. */
#ifndef KILN_BASE_SORT_H
#define KILN_BASE_SORT_H

#include <stdlib.h>

static inline void sort_unless_sorted(void *base, size_t n, size_t size,
                                      int (*cmp)(const void *, const void *))
{
	const char *p = base;
	for (size_t i = 1; i < n; i++)
		if (cmp(p + (i - 1) * size, p + i * size) > 0) {
			qsort(base, n, size, cmp);
			return;
		}
}

#endif
