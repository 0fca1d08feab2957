/* Time helpers. Kiln keeps time as int64 unix nanoseconds. */
#ifndef KILN_BASE_TIMEUTIL_H
#define KILN_BASE_TIMEUTIL_H

#include <stdint.h>

#define NS_PER_SEC 1000000000LL
#define NS_PER_HOUR (3600LL * NS_PER_SEC)
#define NS_PER_DAY (86400LL * NS_PER_SEC)

int64_t time_now_ns(void);  /* CLOCK_REALTIME */
int64_t time_mono_ns(void); /* CLOCK_MONOTONIC */
/* *ts = CLOCK_REALTIME now + ns (ns ≥ 0): pthread_cond_timedwait's deadline. */
struct timespec;
void time_deadline(struct timespec *ts, int64_t ns);
/* Parses unix seconds ("1700000000", at most TIME_PARSE_MAX_SECONDS), "now", or
 * "now-1h"/"now-15m"/"now-30s"/"now-7d" relative to now_ns. Returns 0 and sets
 * *out_ns, or -1. */
#define TIME_PARSE_MAX_SECONDS 7258118400LL /* 2200-01-01: ns, plus days of slack, fit int64 */
int time_parse(const char *s, int64_t now_ns, int64_t *out_ns);
/* Parses a duration like "10s", "1m", "1h30m", "2d" (or plain seconds). -1 on error. */
int time_parse_duration(const char *s, int64_t *out_ns);
/* UTC day number (days since 1970-01-01) of t_ns, and "YYYY-MM-DD" of a day. */
int64_t time_day(int64_t t_ns);
void time_day_str(int64_t day, char out[11]);

#endif
