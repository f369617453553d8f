/* http_io.c — interposes the calls through which a server accepts connections, reads requests,
 * writes responses and waits for work, for HTTP reading (PROFLINK_HTTP=1, see http_conn.h,
 * http_thread.h).
 *
 * Every hook calls the next definition (dlsym RTLD_NEXT) with the program's arguments and
 * returns its result untouched, errno included: proflink only looks at the bytes the call
 * returned. A descriptor that is not an accepted stream socket costs one load (no connection
 * tracked) or a table walk, then the plain call. Bytes of a tracked connection that go by where
 * proflink cannot see them (splice, recvmmsg, sendmmsg, stdio after fdopen, MSG_TRUNC) make it
 * lost: its requests end and it is not followed again. io_uring is not seen at all.
 *
 * Preload builds only: a statically linked program has no symbol precedence to interpose by. */
#ifndef PROFLINK_STATIC
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "leaves/export.h"
#include "fd_closing.h"
#include "http/http_conn.h"
#include "http/http_thread.h"
#include "next_symbol.h"
#include "delivery/deliverer_lazy.h"
#include "leaves/runtime_state.h"
#include "leaves/sys_calls.h"

#ifdef __GLIBC__
#define SA_ARG __SOCKADDR_ARG
#define MMSG_FLAGS int
#else
#define SA_ARG struct sockaddr *restrict
#define MMSG_FLAGS unsigned
#endif

#define NEXT NEXT_SYMBOL /* next_symbol.h */

typedef int (*accept_fn)(int, SA_ARG, socklen_t *restrict);
typedef int (*accept4_fn)(int, SA_ARG, socklen_t *restrict, int);
typedef ssize_t (*read_fn)(int, void *, size_t);
typedef ssize_t (*readv_fn)(int, const struct iovec *, int);
typedef ssize_t (*recv_fn)(int, void *, size_t, int);
typedef ssize_t (*recvfrom_fn)(int, void *restrict, size_t, int, SA_ARG, socklen_t *restrict);
typedef ssize_t (*recvmsg_fn)(int, struct msghdr *, int);
typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*writev_fn)(int, const struct iovec *, int);
typedef ssize_t (*send_fn)(int, const void *, size_t, int);
typedef ssize_t (*sendto_fn)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
typedef ssize_t (*sendmsg_fn)(int, const struct msghdr *, int);
typedef ssize_t (*sendfile_fn)(int, int, off_t *, size_t);
typedef ssize_t (*splice_fn)(int, loff_t *, int, loff_t *, size_t, unsigned);
typedef int (*mmsg_fn)(int, struct mmsghdr *, unsigned, MMSG_FLAGS);
typedef int (*recvmmsg_fn)(int, struct mmsghdr *, unsigned, MMSG_FLAGS, struct timespec *);
typedef FILE *(*fdopen_fn)(int, const char *);
typedef int (*fclose_fn)(FILE *);
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
NEXT(write_fn, write)
NEXT(writev_fn, writev)
NEXT(send_fn, send)
NEXT(sendto_fn, sendto)
NEXT(sendmsg_fn, sendmsg)
NEXT(sendfile_fn, sendfile)
NEXT(splice_fn, splice)
NEXT(mmsg_fn, sendmmsg)
NEXT(recvmmsg_fn, recvmmsg)
NEXT(fdopen_fn, fdopen)
NEXT(fclose_fn, fclose)
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
    if (sys_getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM)
        return 0;
    len = sizeof domain;
    if (sys_getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0)
        return 0;
    return domain == AF_INET || domain == AF_INET6 || domain == AF_UNIX;
}

/* The socket's inode, for checking later that the number still names it (http_conn.c); 0
 * (not checked) in a sandboxed process, which proflink makes no system call in. */
static uint64_t socket_inode(int fd)
{
    struct stat st;
    if (runtime_sandboxed() || sys_fstat(fd, &st) != 0)
        return 0;
    return (uint64_t)st.st_ino;
}

/* A wait: requests other threads answered meanwhile end here, before and after it. The
 * request a thread has open stays shown across its waits (an event loop continues it after a
 * zero-timeout poll). A server's wait for work is also when proflink's threads may start, if
 * something consumes messages and it is not made inside a signal handler (deliverer_lazy.h). */
static int around_wait(int r)
{
    reader_kick_wait();
    if (__builtin_expect((http_thread_notes | http_thread_unsure) != 0, 0)) {
        int saved = errno;
        http_thread_waited();
        errno = saved;
    }
    return r;
}

static int after_accept(int fd)
{
    /* Sandboxed (the program installed a seccomp filter): no connection is tracked from then
     * on, so no hook makes a system call of its own (the type checks below are two) and every
     * read takes the plain path; an allowlist written for the program keeps it alive. */
    if (fd >= 0 && atomic_load_explicit(&http_reading, memory_order_relaxed) &&
        !runtime_sandboxed()) {
        int saved = errno;
        /* No fork_sequence_check_process here: a raw clone child that only serves did not ask
         * for a socket of its own, and setting it up allocates, which hangs in a copy whose
         * allocator lock a parent thread held (fork_sequence.h). It follows its connections in
         * its own memory all the same (the table's leaves are mmap'ed). */
        if (is_http_stream(fd))
            http_conn_open(fd, socket_inode(fd));
        errno = saved;
    }
    return around_wait(fd);
}

static void after_read(struct http_conn *c, int fd, const struct iovec *iov, int iovcnt,
                       ssize_t got, int flags)
{
    if (got <= 0 || (flags & MSG_PEEK)) /* peeked bytes come again: seen once, when read */
        return;
    int saved = errno;
    if (flags & MSG_TRUNC) {
        http_conn_lost(c); /* a stream discards them unread */
        http_thread_touched(c);
        http_thread_sync();
    } else {
        uint32_t gen = 0, newest = 0;
        size_t left = (size_t)got;
        for (int i = 0; i < iovcnt && left > 0; i++) {
            size_t n = iov[i].iov_len < left ? iov[i].iov_len : left;
            uint32_t s = http_conn_feed(c, fd, iov[i].iov_base, n, i > 0, &gen);
            newest = s ? s : newest;
            left -= n;
        }
        http_thread_touched(c);
        if (newest)
            http_thread_read(c, gen, newest);
        else
            http_thread_sync();
    }
    errno = saved;
}

static ssize_t read_buf(struct http_conn *c, int fd, void *buf, size_t n, ssize_t got, int flags)
{
    struct iovec v = {buf, n};
    after_read(c, fd, &v, 1, got, flags);
    return got;
}

/* The program wrote `put` bytes of iov to c; adopt/gen from http_thread_adoptable before. */
static void after_write(struct http_conn *c, const struct iovec *iov, size_t iovcnt, ssize_t put,
                        uint32_t gen, uint32_t adopt)
{
    int saved = errno;
    size_t left = put > 0 ? (size_t)put : 0;
    int between = 1;
    for (size_t i = 0; i < iovcnt && left > 0; i++) {
        size_t n = iov[i].iov_len < left ? iov[i].iov_len : left;
        between = http_conn_wrote(c, iov[i].iov_base, n, http_thread_heads_before);
        left -= n;
    }
    http_thread_wrote(c, gen, put > 0 ? adopt : 0, between);
    errno = saved;
}

static ssize_t write_buf(struct http_conn *c, const void *buf, size_t n, ssize_t put,
                         uint32_t gen, uint32_t adopt)
{
    struct iovec v = {(void *)buf, n};
    after_write(c, &v, 1, put, gen, adopt);
    return put;
}

/* Bytes of c moved where proflink cannot see them: c is not followed any more. */
static void unseen(int fd, ssize_t moved)
{
    struct http_conn *c = http_conn_find(fd);
    if (c && moved > 0) {
        int saved = errno;
        http_conn_lost(c);
        http_thread_touched(c);
        http_thread_sync();
        errno = saved;
    }
}

/* ---- the hooks ---------------------------------------------------------------------------- */

PROFLINK_EXPORT int accept(int fd, SA_ARG addr, socklen_t *restrict len)
{
    around_wait(0);
    return after_accept(next_accept()(fd, addr, len));
}

PROFLINK_EXPORT int accept4(int fd, SA_ARG addr, socklen_t *restrict len, int flags)
{
    around_wait(0);
    return after_accept(next_accept4()(fd, addr, len, flags));
}

PROFLINK_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
    struct http_conn *c = http_conn_find(fd);
    if (__builtin_expect(!c, 1))
        return next_read()(fd, buf, n);
    return read_buf(c, fd, buf, n, next_read()(fd, buf, n), 0);
}

PROFLINK_EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
    struct http_conn *c = http_conn_find(fd);
    if (__builtin_expect(!c, 1))
        return next_readv()(fd, iov, iovcnt);
    ssize_t got = next_readv()(fd, iov, iovcnt);
    after_read(c, fd, iov, iovcnt, got, 0);
    return got;
}

PROFLINK_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
    struct http_conn *c = http_conn_find(fd);
    if (__builtin_expect(!c, 1))
        return next_recv()(fd, buf, n, flags);
    return read_buf(c, fd, buf, n, next_recv()(fd, buf, n, flags), flags);
}

PROFLINK_EXPORT ssize_t recvfrom(int fd, void *restrict buf, size_t n, int flags, SA_ARG addr,
                                 socklen_t *restrict len)
{
    struct http_conn *c = http_conn_find(fd);
    if (__builtin_expect(!c, 1))
        return next_recvfrom()(fd, buf, n, flags, addr, len);
    return read_buf(c, fd, buf, n, next_recvfrom()(fd, buf, n, flags, addr, len), flags);
}

PROFLINK_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    struct http_conn *c = http_conn_find(fd);
    if (__builtin_expect(!c, 1))
        return next_recvmsg()(fd, msg, flags);
    ssize_t got = next_recvmsg()(fd, msg, flags);
    if (got > 0)
        after_read(c, fd, msg->msg_iov, (int)msg->msg_iovlen, got,
                   flags | (msg->msg_flags & MSG_TRUNC));
    return got;
}

PROFLINK_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
    struct http_conn *c = http_conn_find(fd);
    if (__builtin_expect(!c, 1))
        return next_write()(fd, buf, n);
    uint32_t gen = 0, adopt = http_thread_adoptable(c, &gen);
    return write_buf(c, buf, n, next_write()(fd, buf, n), gen, adopt);
}

PROFLINK_EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
    struct http_conn *c = http_conn_find(fd);
    if (__builtin_expect(!c, 1))
        return next_writev()(fd, iov, iovcnt);
    uint32_t gen = 0, adopt = http_thread_adoptable(c, &gen);
    ssize_t put = next_writev()(fd, iov, iovcnt);
    after_write(c, iov, iovcnt > 0 ? (size_t)iovcnt : 0, put, gen, adopt);
    return put;
}

PROFLINK_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
    struct http_conn *c = http_conn_find(fd);
    if (__builtin_expect(!c, 1))
        return next_send()(fd, buf, n, flags);
    uint32_t gen = 0, adopt = http_thread_adoptable(c, &gen);
    return write_buf(c, buf, n, next_send()(fd, buf, n, flags), gen, adopt);
}

PROFLINK_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags,
                               const struct sockaddr *addr, socklen_t len)
{
    struct http_conn *c = http_conn_find(fd);
    if (__builtin_expect(!c, 1))
        return next_sendto()(fd, buf, n, flags, addr, len);
    uint32_t gen = 0, adopt = http_thread_adoptable(c, &gen);
    return write_buf(c, buf, n, next_sendto()(fd, buf, n, flags, addr, len), gen, adopt);
}

PROFLINK_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
    struct http_conn *c = http_conn_find(fd);
    if (__builtin_expect(!c, 1))
        return next_sendmsg()(fd, msg, flags);
    uint32_t gen = 0, adopt = http_thread_adoptable(c, &gen);
    ssize_t put = next_sendmsg()(fd, msg, flags);
    after_write(c, msg->msg_iov, msg->msg_iovlen, put, gen, adopt);
    return put;
}

/* A file's bytes to a connection: body bytes proflink counts without seeing them. */
static ssize_t after_sendfile(struct http_conn *c, ssize_t put, uint32_t gen, uint32_t adopt)
{
    int saved = errno;
    int between = put > 0 ? http_conn_wrote_unseen(c, (uint64_t)put) : 1;
    http_thread_wrote(c, gen, put > 0 ? adopt : 0, between);
    errno = saved;
    return put;
}

PROFLINK_EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t n)
{
    struct http_conn *c = http_conn_find(out);
    if (__builtin_expect(!c, 1))
        return next_sendfile()(out, in, off, n);
    uint32_t gen = 0, adopt = http_thread_adoptable(c, &gen);
    return after_sendfile(c, next_sendfile()(out, in, off, n), gen, adopt);
}

PROFLINK_EXPORT ssize_t splice(int in, loff_t *in_off, int out, loff_t *out_off, size_t n,
                               unsigned flags)
{
    ssize_t moved = next_splice()(in, in_off, out, out_off, n, flags);
    if (__builtin_expect(atomic_load_explicit(&http_conn_live, memory_order_relaxed) != 0, 0)) {
        unseen(in, moved);
        unseen(out, moved);
    }
    return moved;
}

PROFLINK_EXPORT int recvmmsg(int fd, struct mmsghdr *v, unsigned n, MMSG_FLAGS flags,
                             struct timespec *timeout)
{
    int got = next_recvmmsg()(fd, v, n, flags, timeout);
    unseen(fd, got > 0 && !(flags & MSG_PEEK) ? got : 0);
    return got;
}

PROFLINK_EXPORT int sendmmsg(int fd, struct mmsghdr *v, unsigned n, MMSG_FLAGS flags)
{
    int put = next_sendmmsg()(fd, v, n, flags);
    unseen(fd, put);
    return put;
}

/* Reads and writes through stdio are libc-internal calls no hook sees: a connection handed to
 * stdio stops being followed, whether the call succeeds or not. */
PROFLINK_EXPORT FILE *fdopen(int fd, const char *mode)
{
    unseen(fd, 1);
    return next_fdopen()(fd, mode);
}

/* fclose closes the descriptor inside libc: tell fd_closing.h first, as close() does. */
PROFLINK_EXPORT int fclose(FILE *f)
{
    if (__builtin_expect(atomic_load_explicit(&http_conn_live, memory_order_relaxed) != 0, 0) &&
        f) {
        int fd = fileno(f);
        if (fd >= 0)
            fd_closing((unsigned)fd, (unsigned)fd);
    }
    return next_fclose()(f);
}

PROFLINK_EXPORT int close(int fd)
{
    if (fd >= 0)
        fd_closing((unsigned)fd, (unsigned)fd); /* before: then the number may go to another file */
    return next_close()(fd);
}

PROFLINK_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
    around_wait(0);
    return around_wait(next_epoll_wait()(epfd, ev, max, timeout));
}

PROFLINK_EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout,
                                const sigset_t *mask)
{
    around_wait(0);
    return around_wait(next_epoll_pwait()(epfd, ev, max, timeout, mask));
}

PROFLINK_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
    around_wait(0);
    return around_wait(next_poll()(fds, n, timeout));
}

PROFLINK_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *timeout,
                          const sigset_t *mask)
{
    around_wait(0);
    return around_wait(next_ppoll()(fds, n, timeout, mask));
}

PROFLINK_EXPORT int select(int n, fd_set *restrict r, fd_set *restrict w, fd_set *restrict e,
                           struct timeval *restrict timeout)
{
    around_wait(0);
    return around_wait(next_select()(n, r, w, e, timeout));
}

PROFLINK_EXPORT int pselect(int n, fd_set *restrict r, fd_set *restrict w, fd_set *restrict e,
                            const struct timespec *restrict timeout, const sigset_t *restrict mask)
{
    around_wait(0);
    return around_wait(next_pselect()(n, r, w, e, timeout, mask));
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
    return read_buf(c, fd, buf, n, next___read_chk()(fd, buf, n, buflen), 0);
}

PROFLINK_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
PROFLINK_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
    struct http_conn *c = http_conn_find(fd);
    if (__builtin_expect(!c, 1))
        return next___recv_chk()(fd, buf, n, buflen, flags);
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
    return read_buf(c, fd, buf, n, next___recvfrom_chk()(fd, buf, n, buflen, flags, addr, len),
                    flags);
}

typedef int (*epoll_pwait2_fn)(int, struct epoll_event *, int, const struct timespec *,
                               const sigset_t *);
NEXT(epoll_pwait2_fn, epoll_pwait2)
NEXT(sendfile_fn, sendfile64)

/* glibc 2.35; a program that finds it in libc finds this one first */
PROFLINK_EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int max,
                                 const struct timespec *timeout, const sigset_t *mask)
{
    epoll_pwait2_fn f = next_epoll_pwait2();
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    around_wait(0);
    return around_wait(f(epfd, ev, max, timeout, mask));
}

/* the same function as sendfile on 64-bit glibc, under the name large-file builds call */
PROFLINK_EXPORT ssize_t sendfile64(int out, int in, off64_t *off, size_t n)
{
    struct http_conn *c = http_conn_find(out);
    if (__builtin_expect(!c, 1))
        return next_sendfile64()(out, in, (off_t *)off, n);
    uint32_t gen = 0, adopt = http_thread_adoptable(c, &gen);
    return after_sendfile(c, next_sendfile64()(out, in, (off_t *)off, n), gen, adopt);
}

PROFLINK_EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen);
PROFLINK_EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen)
{
    around_wait(0);
    return around_wait(next___poll_chk()(fds, n, timeout, fdslen));
}
#endif

#else
typedef int http_io_not_in_static_builds;
#endif
