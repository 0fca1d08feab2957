/* User-facing errors (base/err.h). */
#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int err_set(err_t *err, int status, const char *fmt, ...)
{
	if (!err)
		return -1;
	err->status = status;
	err->retry_after = 0;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	return -1;
}

int err_prefix(err_t *err, const char *fmt, ...)
{
	if (!err)
		return -1;
	char head[160], old[sizeof err->msg];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(head, sizeof head, fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof old);
	size_t h = strlen(head), o = strnlen(old, sizeof old - 1);
	if (h > sizeof err->msg - 3)
		h = sizeof err->msg - 3;
	memcpy(err->msg, head, h);
	memcpy(err->msg + h, ": ", 2);
	size_t room = sizeof err->msg - 1 - h - 2;
	if (o > room)
		o = room;
	memcpy(err->msg + h + 2, old, o);
	err->msg[h + 2 + o] = 0;
	return -1;
}
