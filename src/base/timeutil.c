/* Time parsing and clocks (base/timeutil.h). */
#include "base/timeutil.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t time_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

void time_deadline(struct timespec *ts, int64_t ns)
{
	clock_gettime(CLOCK_REALTIME, ts);
	int64_t at = (int64_t)ts->tv_nsec + ns;
	ts->tv_sec += (time_t)(at / NS_PER_SEC);
	ts->tv_nsec = (long)(at % NS_PER_SEC);
}

int64_t time_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

int time_parse_duration(const char *s, int64_t *out_ns)
{
	if (!s || !*s)
		return -1;
	int64_t total = 0;
	const char *p = s;
	while (*p) {
		if (!isdigit((unsigned char)*p))
			return -1;
		int64_t v = 0;
		while (isdigit((unsigned char)*p)) {
			if (v > 1000000000LL)
				return -1;
			v = v * 10 + (*p++ - '0');
		}
		int64_t unit;
		if (p[0] == 'm' && p[1] == 's')
			unit = 1000000LL, p += 2;
		else if (*p == 's' || *p == 0)
			unit = NS_PER_SEC, p += *p ? 1 : 0;
		else if (*p == 'm')
			unit = 60 * NS_PER_SEC, p++;
		else if (*p == 'h')
			unit = 3600 * NS_PER_SEC, p++;
		else if (*p == 'd')
			unit = 86400 * NS_PER_SEC, p++;
		else if (*p == 'w')
			unit = 7 * 86400 * NS_PER_SEC, p++;
		else
			return -1;
		if (v > INT64_MAX / unit || total > INT64_MAX - v * unit)
			return -1;
		total += v * unit;
	}
	*out_ns = total;
	return 0;
}

int time_parse(const char *s, int64_t now_ns, int64_t *out_ns)
{
	if (!s || !*s)
		return -1;
	if (strncmp(s, "now", 3) == 0) {
		if (s[3] == 0) {
			*out_ns = now_ns;
			return 0;
		}
		if (s[3] != '-')
			return -1;
		int64_t d;
		if (time_parse_duration(s + 4, &d) < 0)
			return -1;
		*out_ns = now_ns - d;
		return 0;
	}
	char *end;
	long long v = strtoll(s, &end, 10);
	if (*end || v < 0 || v > TIME_PARSE_MAX_SECONDS)
		return -1;
	*out_ns = (int64_t)v * NS_PER_SEC;
	return 0;
}

int64_t time_day(int64_t t_ns)
{
	int64_t d = t_ns / NS_PER_DAY;
	if (t_ns < 0 && t_ns % NS_PER_DAY)
		d--;
	return d;
}

void time_day_str(int64_t day, char out[11])
{
	time_t t = (time_t)(day * 86400);
	struct tm tm;
	gmtime_r(&t, &tm);
	unsigned y = (unsigned)(tm.tm_year + 1900) % 10000u, m = (unsigned)(tm.tm_mon + 1) % 100u,
	         d = (unsigned)tm.tm_mday % 100u;
	snprintf(out, 11, "%04u-%02u-%02u", y, m, d);
}
