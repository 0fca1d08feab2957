/* Structured logs in logfmt on stderr: ts=… level=… msg="…" key=value …
 * Thread-safe (one write(2) per line). */
#ifndef KILN_BASE_LOG_H
#define KILN_BASE_LOG_H

enum { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

/* fields_fmt is printf-style and yields `key=value key2="value 2"`; may be NULL. */
void log_msg(int level, const char *msg, const char *fields_fmt, ...) __attribute__((format(printf, 3, 4)));
void log_set_level(int level);

#define log_info(msg, ...) log_msg(LOG_INFO, msg, __VA_ARGS__)
#define log_warn(msg, ...) log_msg(LOG_WARN, msg, __VA_ARGS__)
#define log_error(msg, ...) log_msg(LOG_ERROR, msg, __VA_ARGS__)

#endif
