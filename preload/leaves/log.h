/* log.h — one-line diagnostics on stderr, prefixed "proflink:". Never allocates, safe in a
 * constructor and in a fork child; the level comes from PROFLINK_LOG (default warn). */
#ifndef PROFLINK_LOG_H
#define PROFLINK_LOG_H

#include <stddef.h>

enum log_level { LOG_OFF = 0, LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

void log_set_level(enum log_level level);
/* Remembers which file fd 2 is (or that it is closed); from then on a line is written only
 * while fd 2 is still that file. Called first thing at start, before anything opens a file. */
void log_capture_stderr(void);
/* Writes len bytes as they are (a whole line) under the same rule; calls no formatting. */
void log_raw(const char *line, size_t len);
int log_enabled(enum log_level level);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The arguments are evaluated only when the line is written: a disabled debug line's
 * strerror() would otherwise run libc's message lookup, and fault its pages in, in every
 * starting process. */
#define LOG_AT(level, ...) ((void)(log_enabled(level) && (log_msg(level, __VA_ARGS__), 1)))
#define log_error(...) LOG_AT(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) LOG_AT(LOG_WARN, __VA_ARGS__)
#define log_info(...) LOG_AT(LOG_INFO, __VA_ARGS__)
#define log_debug(...) LOG_AT(LOG_DEBUG, __VA_ARGS__)

#endif
