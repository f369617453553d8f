/* real_calls.h — the calls of libc's that proflink interposes on the program's descriptors
 * (close, read, write, sendto: hooks/http_io.c), made by the library on its own descriptors with
 * the system call instruction (raw_syscall.h).
 *
 * Why not the libc names: in the preloaded library these names are proflink's own interposers,
 * exported and bound at load time ahead of libc's, so a plain call from the library would run
 * the HTTP reading hooks on proflink's own descriptors and make the library depend on its hooks
 * (the hooks depend on the library, never the reverse: tests/modules.bats). proflink's
 * descriptors are never the program's connections, so the hooks have nothing to do for them.
 * Same results as the libc calls: the value, or -1 with errno set. Not cancellation points (the
 * libc calls are): no caller relies on being cancelled there. */
#ifndef PROFLINK_REAL_CALLS_H
#define PROFLINK_REAL_CALLS_H

#include <errno.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include "raw_syscall.h"

static inline long real_io_result(long r)
{
    if (r < 0) {
        errno = (int)-r;
        return -1;
    }
    return r;
}

static inline int real_close(int fd)
{
    return (int)real_io_result(raw_syscall4(SYS_close, fd, 0, 0, 0));
}

static inline ssize_t real_read(int fd, void *buf, size_t n)
{
    return real_io_result(raw_syscall4(SYS_read, fd, (long)buf, (long)n, 0));
}

static inline ssize_t real_write(int fd, const void *buf, size_t n)
{
    return real_io_result(raw_syscall4(SYS_write, fd, (long)buf, (long)n, 0));
}

static inline ssize_t real_sendto(int fd, const void *buf, size_t n, int flags,
                                  const struct sockaddr *to, socklen_t to_len)
{
    return real_io_result(raw_syscall6(SYS_sendto, fd, (long)buf, (long)n, flags, (long)to,
                                       (long)to_len));
}

#endif
