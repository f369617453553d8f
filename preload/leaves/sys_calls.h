/* sys_calls.h — libc's thin system-call wrappers that the library uses (files, sockets, mappings,
 * signal sets), made with the instruction itself (raw_syscall.h) under the same arguments and
 * with the same result: the value, or -1 (MAP_FAILED for sys_mmap) with errno set.
 *
 * Why: every libc name the library imports is looked up by the dynamic loader at load time (-z
 * now), in every process of a host that preloads it, served or not, about 1,000 instructions per
 * name (raw_syscall.h). Each function here makes the system call the libc function makes on
 * x86_64 and aarch64 (glibc 2.33 and later, musl): the legacy call where the architecture has it
 * and libc uses it (unlink, mkdir... on x86_64), else its *at form (aarch64 has only those), so
 * a seccomp policy or strace sees the very same calls as before. No cache, no state: nothing to
 * keep in step with libc. Not cancellation points (some of the libc calls are): no caller relies
 * on being cancelled there. */
#ifndef PROFLINK_SYS_CALLS_H
#define PROFLINK_SYS_CALLS_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>

#include "raw_syscall.h"

/* The kernel's struct stat is the one both libcs give these 64-bit targets: the buffer is
 * handed to the kernel as is. */
#if defined(__x86_64__)
_Static_assert(sizeof(struct stat) == 144, "struct stat is not the kernel's (x86_64)");
#elif defined(__aarch64__)
_Static_assert(sizeof(struct stat) == 128, "struct stat is not the kernel's (aarch64)");
#endif

#ifndef SYS_faccessat2
#define SYS_faccessat2 439 /* the same on both targets; older headers lack it */
#endif

/* The kernel's signal set: 64 signals on both targets (libc's sigset_t is larger). */
#define SYS_SIGSET_BYTES 8

static inline long sys_result(long r)
{
    if (r < 0) {
        errno = (int)-r;
        return -1;
    }
    return r;
}

static inline long sys_call(long nr, long a1, long a2, long a3, long a4, long a5)
{
    return sys_result(raw_syscall6(nr, a1, a2, a3, a4, a5, 0));
}

/* -- files -- */

/* Opens an existing file (no O_CREAT: no mode). glibc's open is openat; musl's is open where
 * the architecture has it (x86_64), as its dynamic loader's. */
static inline int sys_open(const char *path, int flags)
{
#if !defined(__GLIBC__) && defined(SYS_open)
    return (int)sys_call(SYS_open, (long)path, flags, 0, 0, 0);
#else
    return (int)sys_call(SYS_openat, AT_FDCWD, (long)path, flags, 0, 0);
#endif
}

static inline int sys_fstatat(int dfd, const char *path, struct stat *st, int flags)
{
    return (int)sys_call(SYS_newfstatat, dfd, (long)path, (long)st, flags, 0);
}

/* glibc's fstat is newfstatat(fd, "", AT_EMPTY_PATH); musl's is fstat, as its dynamic loader's. */
static inline int sys_fstat(int fd, struct stat *st)
{
#if !defined(__GLIBC__) && defined(SYS_fstat)
    return (int)sys_call(SYS_fstat, fd, (long)st, 0, 0, 0);
#else
    return sys_fstatat(fd, "", st, AT_EMPTY_PATH);
#endif
}

/* glibc's lstat is newfstatat(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW); musl's is lstat where the
 * architecture has it (x86_64). */
static inline int sys_lstat(const char *path, struct stat *st)
{
#if !defined(__GLIBC__) && defined(SYS_lstat)
    return (int)sys_call(SYS_lstat, (long)path, (long)st, 0, 0, 0);
#else
    return sys_fstatat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
#endif
}

/* Flags 0 or AT_EACCESS only. Without faccessat2 (Linux before 5.8) AT_EACCESS falls back to the
 * flagless call as glibc's does outside a secure-exec process, where proflink is never active. */
static inline int sys_faccessat(int dfd, const char *path, int mode, int flags)
{
    if (flags & ~AT_EACCESS) {
        errno = EINVAL;
        return -1;
    }
    long r = -ENOSYS;
    if (flags)
        r = raw_syscall6(SYS_faccessat2, dfd, (long)path, mode, flags, 0, 0);
    if (r == -ENOSYS)
        r = raw_syscall6(SYS_faccessat, dfd, (long)path, mode, 0, 0, 0);
    return (int)sys_result(r);
}

static inline int sys_fchmod(int fd, mode_t mode)
{
    return (int)sys_call(SYS_fchmod, fd, mode, 0, 0, 0);
}

static inline int sys_chmod(const char *path, mode_t mode)
{
#ifdef SYS_chmod
    return (int)sys_call(SYS_chmod, (long)path, mode, 0, 0, 0);
#else
    return (int)sys_call(SYS_fchmodat, AT_FDCWD, (long)path, mode, 0, 0);
#endif
}

static inline int sys_fchownat(int dfd, const char *path, uid_t uid, gid_t gid, int flags)
{
    return (int)sys_call(SYS_fchownat, dfd, (long)path, uid, gid, flags);
}

/* Commands whose argument is an int or nothing (F_DUPFD_CLOEXEC, F_GETFL, F_SETFL...). */
static inline int sys_fcntl(int fd, int cmd, int arg)
{
    return (int)sys_call(SYS_fcntl, fd, cmd, arg, 0, 0);
}

static inline int sys_mkdir(const char *path, mode_t mode)
{
#ifdef SYS_mkdir
    return (int)sys_call(SYS_mkdir, (long)path, mode, 0, 0, 0);
#else
    return (int)sys_call(SYS_mkdirat, AT_FDCWD, (long)path, mode, 0, 0);
#endif
}

static inline int sys_mkfifo(const char *path, mode_t mode)
{
    return (int)sys_call(SYS_mknodat, AT_FDCWD, (long)path, mode | S_IFIFO, 0, 0);
}

static inline int sys_link(const char *from, const char *to)
{
#ifdef SYS_link
    return (int)sys_call(SYS_link, (long)from, (long)to, 0, 0, 0);
#else
    return (int)sys_call(SYS_linkat, AT_FDCWD, (long)from, AT_FDCWD, (long)to, 0);
#endif
}

static inline int sys_unlinkat(int dfd, const char *path, int flags)
{
    return (int)sys_call(SYS_unlinkat, dfd, (long)path, flags, 0, 0);
}

static inline int sys_unlink(const char *path)
{
#ifdef SYS_unlink
    return (int)sys_call(SYS_unlink, (long)path, 0, 0, 0, 0);
#else
    return sys_unlinkat(AT_FDCWD, path, 0);
#endif
}

static inline int sys_rmdir(const char *path)
{
#ifdef SYS_rmdir
    return (int)sys_call(SYS_rmdir, (long)path, 0, 0, 0, 0);
#else
    return sys_unlinkat(AT_FDCWD, path, AT_REMOVEDIR);
#endif
}

static inline ssize_t sys_readlink(const char *path, char *buf, size_t size)
{
#ifdef SYS_readlink
    return sys_call(SYS_readlink, (long)path, (long)buf, (long)size, 0, 0);
#else
    return sys_call(SYS_readlinkat, AT_FDCWD, (long)path, (long)buf, (long)size, 0);
#endif
}

static inline int sys_pipe2(int fds[2], int flags)
{
    return (int)sys_call(SYS_pipe2, (long)fds, flags, 0, 0, 0);
}

/* -- mappings -- */

static inline void *sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    long r = raw_syscall6(SYS_mmap, (long)addr, (long)len, prot, flags, fd, (long)off);
    if ((unsigned long)r > -4096UL) { /* the kernel's errors are -4095..-1 */
        errno = (int)-r;
        return MAP_FAILED;
    }
    return (void *)r;
}

static inline int sys_munmap(void *addr, size_t len)
{
    return (int)sys_call(SYS_munmap, (long)addr, (long)len, 0, 0, 0);
}

/* -- sockets -- */

static inline int sys_socket(int domain, int type, int protocol)
{
    return (int)sys_call(SYS_socket, domain, type, protocol, 0, 0);
}

static inline int sys_bind(int fd, const struct sockaddr *addr, socklen_t len)
{
    return (int)sys_call(SYS_bind, fd, (long)addr, len, 0, 0);
}

static inline int sys_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
    return (int)sys_call(SYS_connect, fd, (long)addr, len, 0, 0);
}

static inline int sys_getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
    return (int)sys_call(SYS_getsockopt, fd, level, name, (long)val, (long)len);
}

/* -- signals -- */

static inline void sys_sigemptyset(sigset_t *set) { memset(set, 0, sizeof *set); }

/* As libc's sigfillset: every signal but the ones libc keeps for itself (32 and 33; musl also 34),
 * which a mask must never block (musl's pthread_sigmask passes the set on unfiltered). */
static inline void sys_sigfillset(sigset_t *set)
{
    memset(set, 0xff, sizeof *set);
    unsigned long *w = (unsigned long *)set;
    w[0] &= ~(3UL << 31);
#ifndef __GLIBC__
    w[0] &= ~(1UL << 33);
#endif
}

/* For the signals below 65 (the kernel's), as the callers use. */
static inline void sys_sigaddset(sigset_t *set, int sig)
{
    ((unsigned long *)set)[0] |= 1UL << (sig - 1);
}

static inline int sys_sigismember(const sigset_t *set, int sig)
{
    return (int)((((const unsigned long *)set)[0] >> (sig - 1)) & 1);
}

static inline int sys_sigpending(sigset_t *set)
{
    return (int)sys_call(SYS_rt_sigpending, (long)set, SYS_SIGSET_BYTES, 0, 0, 0);
}

static inline int sys_sigtimedwait(const sigset_t *set, siginfo_t *info,
                                   const struct timespec *timeout)
{
    return (int)sys_call(SYS_rt_sigtimedwait, (long)set, (long)info, (long)timeout,
                         SYS_SIGSET_BYTES, 0);
}

#endif
