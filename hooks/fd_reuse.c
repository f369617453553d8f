/* fd_reuse.c — interposes the calls other than close() (hooks/http_io.c) that can give a
 * descriptor number to another file: dup2 and dup3 onto it, close_range and closefrom over it.
 * Each tells fd_closing.h first, then makes the program's call with its arguments and returns
 * its result and errno untouched. dup, dup2 and dup3 of a connection give it a second number
 * that HTTP reading does not follow: the bytes written or read there go by unseen, so the
 * connection stops being followed (its requests end). close_range and closefrom exist in glibc only (2.34); a musl
 * program reaches them through syscall(), which hooks/seccomp.c reports the same way.
 *
 * Preload builds only: a statically linked program has no symbol precedence to interpose by. */
#ifndef PROFLINK_STATIC
#include <errno.h>
#include <limits.h>
#include <unistd.h>

#include "leaves/export.h"
#include "fd_closing.h"
#include "next_symbol.h"

typedef int (*dup_fn)(int);
typedef int (*dup2_fn)(int, int);
typedef int (*dup3_fn)(int, int, int);

NEXT_SYMBOL(dup_fn, dup)
NEXT_SYMBOL(dup2_fn, dup2)
NEXT_SYMBOL(dup3_fn, dup3)

/* oldfd is getting a second number: if it is a connection, it is not followed any more. */
static void fd_copied(int oldfd)
{
    if (__builtin_expect(atomic_load_explicit(&http_conn_live, memory_order_relaxed) == 0, 1))
        return;
    struct http_conn *c = http_conn_find(oldfd);
    if (c) {
        int saved = errno;
        http_conn_lost(c);
        http_thread_sync();
        errno = saved;
    }
}

PROFLINK_EXPORT int dup(int oldfd)
{
    fd_copied(oldfd);
    dup_fn f = next_dup();
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    return f(oldfd);
}

PROFLINK_EXPORT int dup2(int oldfd, int newfd)
{
    if (newfd >= 0 && newfd != oldfd) {
        fd_copied(oldfd);
        fd_closing((unsigned)newfd, (unsigned)newfd);
    }
    dup2_fn f = next_dup2();
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    return f(oldfd, newfd);
}

PROFLINK_EXPORT int dup3(int oldfd, int newfd, int flags)
{
    if (newfd >= 0 && newfd != oldfd) {
        fd_copied(oldfd);
        fd_closing((unsigned)newfd, (unsigned)newfd);
    }
    dup3_fn f = next_dup3();
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    return f(oldfd, newfd, flags);
}

#ifdef __GLIBC__
typedef int (*close_range_fn)(unsigned, unsigned, int);
typedef void (*closefrom_fn)(int);

NEXT_SYMBOL(close_range_fn, close_range)
NEXT_SYMBOL(closefrom_fn, closefrom)

PROFLINK_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
    /* CLOSE_RANGE_CLOEXEC only marks them: nothing closes before an exec */
    if (first <= last && !(flags & 4 /* CLOSE_RANGE_CLOEXEC */))
        fd_closing(first, last);
    close_range_fn f = next_close_range();
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    return f(first, last, flags);
}

PROFLINK_EXPORT void closefrom(int lowfd)
{
    fd_closing(lowfd < 0 ? 0u : (unsigned)lowfd, UINT_MAX);
    closefrom_fn f = next_closefrom();
    if (f)
        f(lowfd);
}
#endif
#endif
