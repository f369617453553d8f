/* http_io.c — interposes the calls through which a server accepts connections, reads requests
 * and waits for work, for HTTP reading (PROFLINK_HTTP=1, see http_conn.h, http_thread.h).
 *
 * Every hook calls the next definition (dlsym RTLD_NEXT) with the program's arguments and
 * returns its result untouched, errno included: proflink only looks at the bytes the call
 * returned. A descriptor that is not an accepted stream socket costs one load (no connection
 * tracked) or a table walk, then the plain call. What is not hooked is not seen: stdio reads
 * (libc-internal calls), recvmmsg, splice, io_uring; a connection read that way loses no data,
 * only its context.
 *
 * Preload builds only: a statically linked program has no symbol precedence to interpose by. */
#ifndef PROFLINK_STATIC
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "export.h"
#include "fd_closing.h"
#include "http_conn.h"
#include "http_thread.h"
#include "next_symbol.h"
#include "reader_lazy.h"
#include "runtime_state.h"

#ifdef __GLIBC__
#define SA_ARG __SOCKADDR_ARG
#else
#define SA_ARG struct sockaddr *restrict
#endif

#define NEXT NEXT_SYMBOL /* next_symbol.h */

typedef int (*accept_fn)(int, SA_ARG, socklen_t *restrict);
typedef int (*accept4_fn)(int, SA_ARG, socklen_t *restrict, int);
typedef ssize_t (*read_fn)(int, void *, size_t);
typedef ssize_t (*readv_fn)(int, const struct iovec *, int);
typedef ssize_t (*recv_fn)(int, void *, size_t, int);
typedef ssize_t (*recvfrom_fn)(int, void *restrict, size_t, int, SA_ARG, socklen_t *restrict);
typedef ssize_t (*recvmsg_fn)(int, struct msghdr *, int);
typedef int (*close_fn)(int);
typedef int (*epoll_wait_fn)(int, struct epoll_event *, int, int);
typedef int (*epoll_pwait_fn)(int, struct epoll_event *, int, int, const sigset_t *);
typedef int (*poll_fn)(struct pollfd *, nfds_t, int);
typedef int (*ppoll_fn)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
typedef int (*select_fn)(int, fd_set *restrict, fd_set *restrict, fd_set *restrict,
                         struct timeval *restrict);
typedef int (*pselect_fn)(int, fd_set *restrict, fd_set *restrict, fd_set *restrict,
                          const struct timespec *restrict, const sigset_t *restrict);

NEXT(accept_fn, accept)
NEXT(accept4_fn, accept4)
NEXT(read_fn, read)
NEXT(readv_fn, readv)
NEXT(recv_fn, recv)
NEXT(recvfrom_fn, recvfrom)
NEXT(recvmsg_fn, recvmsg)
NEXT(close_fn, close)
NEXT(epoll_wait_fn, epoll_wait)
NEXT(epoll_pwait_fn, epoll_pwait)
NEXT(poll_fn, poll)
NEXT(ppoll_fn, ppoll)
NEXT(select_fn, select)
NEXT(pselect_fn, pselect)

/* ---- what the hooks do around the call ---------------------------------------------------- */

/* Only streams over TCP (v4, v6) and unix sockets carry HTTP/1.x requests to a server. */
static int is_http_stream(int fd)
{
    int type = 0, domain = 0;
    socklen_t len = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM)
        return 0;
    len = sizeof domain;
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0)
        return 0;
    return domain == AF_INET || domain == AF_INET6 || domain == AF_UNIX;
}

/* Entering accept: the thread waits for new work. A server: proflink's threads may start now
 * if something consumes messages (reader_lazy.h). */
static void before_wait(void)
{
    reader_kick();
    http_thread_end();
}

static int after_accept(int fd)
{
    /* Sandboxed (the program installed a seccomp filter): no connection is tracked from then
     * on, so no hook makes a system call of its own (the type checks below are two) and every
     * read takes the plain path; an allowlist written for the program keeps it alive. */
    if (fd >= 0 && atomic_load_explicit(&proflink_http_reading, memory_order_relaxed) &&
        !runtime_sandboxed()) {
        int saved = errno;
        /* No fork_sequence_check_process here: a raw clone child that only serves did not ask
         * for a socket of its own, and setting it up allocates, which hangs in a copy whose
         * allocator lock a parent thread held (fork_sequence.h). It follows its connections in
         * its own memory all the same (the table's leaves are mmap'ed). */
        if (is_http_stream(fd))
            http_conn_open(fd);
        errno = saved;
    }
    return fd;
}

/* A read of a connection between requests waits for the next one: the last one's context ends
 * now, not when its bytes arrive (a keep-alive thread may wait there for a long time). */
static void before_read(struct http_conn *c)
{
    if (atomic_load_explicit(&c->idle, memory_order_relaxed))
        http_thread_end();
}

static void after_read(struct http_conn *c, int fd, const struct iovec *iov, int iovcnt,
                       ssize_t got, int flags)
{
    if (got <= 0 || (flags & MSG_PEEK)) /* peeked bytes come again: seen once, when read */
        return;
    int saved = errno;
    if (flags & MSG_TRUNC) {
        http_conn_lost(c); /* a stream discards them unread */
    } else {
        struct trace_ctx ctx;
        uint32_t gen = 0;
        int ok = -1;
        size_t left = (size_t)got;
        for (int i = 0; i < iovcnt && left > 0; i++) {
            size_t n = iov[i].iov_len < left ? iov[i].iov_len : left;
            ok = http_conn_feed(c, iov[i].iov_base, n, &ctx, &gen);
            left -= n;
        }
        if (ok == 0)
            http_thread_apply(fd, gen, &ctx);
    }
    errno = saved;
}

static ssize_t read_buf(struct http_conn *c, int fd, void *buf, size_t n, ssize_t got, int flags)
{
    struct iovec v = {buf, n};
    after_read(c, fd, &v, 1, got, flags);
    return got;
}

/* ---- the hooks ---------------------------------------------------------------------------- */

PROFLINK_EXPORT int accept(int fd, SA_ARG addr, socklen_t *restrict len)
{
    before_wait();
    return after_accept(next_accept()(fd, addr, len));
}

PROFLINK_EXPORT int accept4(int fd, SA_ARG addr, socklen_t *restrict len, int flags)
{
    before_wait();
    return after_accept(next_accept4()(fd, addr, len, flags));
}

PROFLINK_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
    struct http_conn *c = http_conn_find(fd);
    if (__builtin_expect(!c, 1))
        return next_read()(fd, buf, n);
    before_read(c);
    return read_buf(c, fd, buf, n, next_read()(fd, buf, n), 0);
}

PROFLINK_EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
    struct http_conn *c = http_conn_find(fd);
    if (__builtin_expect(!c, 1))
        return next_readv()(fd, iov, iovcnt);
    before_read(c);
    ssize_t got = next_readv()(fd, iov, iovcnt);
    after_read(c, fd, iov, iovcnt, got, 0);
    return got;
}

PROFLINK_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
    struct http_conn *c = http_conn_find(fd);
    if (__builtin_expect(!c, 1))
        return next_recv()(fd, buf, n, flags);
    before_read(c);
    return read_buf(c, fd, buf, n, next_recv()(fd, buf, n, flags), flags);
}

PROFLINK_EXPORT ssize_t recvfrom(int fd, void *restrict buf, size_t n, int flags, SA_ARG addr,
                                 socklen_t *restrict len)
{
    struct http_conn *c = http_conn_find(fd);
    if (__builtin_expect(!c, 1))
        return next_recvfrom()(fd, buf, n, flags, addr, len);
    before_read(c);
    return read_buf(c, fd, buf, n, next_recvfrom()(fd, buf, n, flags, addr, len), flags);
}

PROFLINK_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    struct http_conn *c = http_conn_find(fd);
    if (__builtin_expect(!c, 1))
        return next_recvmsg()(fd, msg, flags);
    before_read(c);
    ssize_t got = next_recvmsg()(fd, msg, flags);
    if (got > 0)
        after_read(c, fd, msg->msg_iov, (int)msg->msg_iovlen, got,
                   flags | (msg->msg_flags & MSG_TRUNC));
    return got;
}

PROFLINK_EXPORT int close(int fd)
{
    if (fd >= 0)
        fd_closing((unsigned)fd, (unsigned)fd); /* before: then the number may go to another file */
    return next_close()(fd);
}

PROFLINK_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
    before_wait();
    return next_epoll_wait()(epfd, ev, max, timeout);
}

PROFLINK_EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout,
                                const sigset_t *mask)
{
    before_wait();
    return next_epoll_pwait()(epfd, ev, max, timeout, mask);
}

PROFLINK_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
    before_wait();
    return next_poll()(fds, n, timeout);
}

PROFLINK_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *timeout,
                          const sigset_t *mask)
{
    before_wait();
    return next_ppoll()(fds, n, timeout, mask);
}

PROFLINK_EXPORT int select(int n, fd_set *restrict r, fd_set *restrict w, fd_set *restrict e,
                           struct timeval *restrict timeout)
{
    before_wait();
    return next_select()(n, r, w, e, timeout);
}

PROFLINK_EXPORT int pselect(int n, fd_set *restrict r, fd_set *restrict w, fd_set *restrict e,
                            const struct timespec *restrict timeout, const sigset_t *restrict mask)
{
    before_wait();
    return next_pselect()(n, r, w, e, timeout, mask);
}

/* ---- glibc's _FORTIFY_SOURCE entry points (Debian builds its packages with it) ------------ */
#ifdef __GLIBC__
typedef ssize_t (*read_chk_fn)(int, void *, size_t, size_t);
typedef ssize_t (*recv_chk_fn)(int, void *, size_t, size_t, int);
typedef ssize_t (*recvfrom_chk_fn)(int, void *restrict, size_t, size_t, int, SA_ARG,
                                   socklen_t *restrict);
typedef int (*poll_chk_fn)(struct pollfd *, nfds_t, int, size_t);
NEXT(read_chk_fn, __read_chk)
NEXT(recv_chk_fn, __recv_chk)
NEXT(recvfrom_chk_fn, __recvfrom_chk)
NEXT(poll_chk_fn, __poll_chk)

PROFLINK_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
PROFLINK_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
    struct http_conn *c = http_conn_find(fd);
    if (__builtin_expect(!c, 1))
        return next___read_chk()(fd, buf, n, buflen);
    before_read(c);
    return read_buf(c, fd, buf, n, next___read_chk()(fd, buf, n, buflen), 0);
}

PROFLINK_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
PROFLINK_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
    struct http_conn *c = http_conn_find(fd);
    if (__builtin_expect(!c, 1))
        return next___recv_chk()(fd, buf, n, buflen, flags);
    before_read(c);
    return read_buf(c, fd, buf, n, next___recv_chk()(fd, buf, n, buflen, flags), flags);
}

PROFLINK_EXPORT ssize_t __recvfrom_chk(int fd, void *restrict buf, size_t n, size_t buflen,
                                       int flags, SA_ARG addr, socklen_t *restrict len);
PROFLINK_EXPORT ssize_t __recvfrom_chk(int fd, void *restrict buf, size_t n, size_t buflen,
                                       int flags, SA_ARG addr, socklen_t *restrict len)
{
    struct http_conn *c = http_conn_find(fd);
    if (__builtin_expect(!c, 1))
        return next___recvfrom_chk()(fd, buf, n, buflen, flags, addr, len);
    before_read(c);
    return read_buf(c, fd, buf, n, next___recvfrom_chk()(fd, buf, n, buflen, flags, addr, len),
                    flags);
}

PROFLINK_EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen);
PROFLINK_EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen)
{
    before_wait();
    return next___poll_chk()(fds, n, timeout, fdslen);
}
#endif

#else
typedef int http_io_not_in_static_builds;
#endif
