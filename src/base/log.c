/* logfmt logs on stderr, one write(2) per line so threads don't interleave. */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile int min_level = LOG_INFO; /* set once at startup */

void log_set_level(int level)
{
	min_level = level;
}

void log_msg(int level, const char *msg, const char *fields_fmt, ...)
{
	static const char *names[] = {"debug", "info", "warn", "error"};
	if (level < min_level)
		return;
	char line[2048];
	struct timeval tv;
	gettimeofday(&tv, NULL);
	struct tm tm;
	gmtime_r(&tv.tv_sec, &tm);
	int n = snprintf(line, sizeof line, "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03dZ level=%s msg=", tm.tm_year + 1900,
	                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(tv.tv_usec / 1000),
	                 names[level & 3]);
	int quote = strpbrk(msg, " =\"") != NULL;
	n += snprintf(line + n, sizeof line - (size_t)n, quote ? "\"%s\"" : "%s", msg);
	if (fields_fmt && *fields_fmt && (size_t)n < sizeof line - 2) {
		line[n++] = ' ';
		va_list ap;
		va_start(ap, fields_fmt);
		int m = vsnprintf(line + n, sizeof line - (size_t)n, fields_fmt, ap);
		va_end(ap);
		n = m < 0 ? n : n + m;
	}
	if ((size_t)n >= sizeof line - 1)
		n = sizeof line - 2;
	line[n++] = '\n';
	ssize_t w = write(2, line, (size_t)n);
	(void)w;
}
