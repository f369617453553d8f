/* log.c — see log.h. One write(2) per line so lines from several threads never interleave. */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "fd_identity.h"
#include "real_calls.h"
#include "start_path.h"

static _Atomic int current_level = LOG_WARN;

/* The stderr the program was given (log_capture_stderr): a program started with fd 2 closed
 * gets its own files on the lowest numbers, and a line of ours there would corrupt them. Written
 * once, before the program can have threads (constructor); read-only afterwards. */
START_PATH_DATA static int stderr_captured;
START_PATH_DATA static struct fd_identity stderr_id;

START_PATH_CODE void log_capture_stderr(void)
{
    fd_identity_record(STDERR_FILENO, &stderr_id);
    stderr_captured = 1;
}

/* Until captured (module test drivers), fd 2 is trusted as it is. */
static int stderr_is_ours(void)
{
    return !stderr_captured || fd_identity_same(STDERR_FILENO, &stderr_id);
}

void log_raw(const char *line, size_t len)
{
    int saved_errno = errno;
    if (stderr_is_ours()) {
        ssize_t w = real_write(STDERR_FILENO, line, len);
        (void)w; /* nowhere to report a failed diagnostic */
    }
    errno = saved_errno;
}

START_PATH_CODE void log_set_level(enum log_level level)
{
    atomic_store_explicit(&current_level, level, memory_order_relaxed);
}

START_PATH_CODE int log_enabled(enum log_level level)
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
    log_raw(line, len);
    errno = saved_errno;
}
