/* log.c — see log.h. One write(2) per line so lines from several threads never interleave. */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

static _Atomic int current_level = LOG_WARN;

void log_set_level(enum log_level level) { atomic_store_explicit(&current_level, level, memory_order_relaxed); }

int log_enabled(enum log_level level)
{
    return level != LOG_OFF && (int)level <= atomic_load_explicit(&current_level, memory_order_relaxed);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    if (!log_enabled(level))
        return;
    int saved_errno = errno; /* logging must not change what the host program sees in errno */
    char line[512];
    int n = snprintf(line, sizeof line, "proflink: ");
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w; /* nowhere to report a failed diagnostic */
    errno = saved_errno;
}
