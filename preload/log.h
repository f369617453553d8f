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

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
