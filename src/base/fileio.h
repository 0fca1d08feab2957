/* File I/O helpers shared by the store's files (its log, its partitions). */
#ifndef KILN_BASE_FILEIO_H
#define KILN_BASE_FILEIO_H

#include <stddef.h>
#include <stdint.h>

/* pwrite()s all n bytes of p at offset off, retrying short writes and
 * EINTR. 0, or -1 with errno (0 after a write that wrote nothing). */
int fd_write_all(int fd, const void *p, size_t n, uint64_t off);

#endif
