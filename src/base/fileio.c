/* File I/O helpers (base/fileio.h). */
#include "base/fileio.h"

#include <errno.h>
#include <unistd.h>

int fd_write_all(int fd, const void *p, size_t n, uint64_t off)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = pwrite(fd, (const uint8_t *)p + done, n - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0)
				errno = 0;
			return -1;
		}
		done += (size_t)r;
	}
	return 0;
}
