/* out_line.h — for test helpers whose callbacks run on several threads: out() prints one
 * formatted line with a single write(2), so lines from different threads never interleave. */
#ifndef PROFLINK_TEST_OUT_LINE_H
#define PROFLINK_TEST_OUT_LINE_H

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static void out(const char *fmt, ...)
{
    char line[16384];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (n > (int)sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    for (int off = 0; off < n;) {
        ssize_t w = write(1, line + off, (size_t)(n - off));
        if (w <= 0)
            return;
        off += (int)w;
    }
}

#endif
