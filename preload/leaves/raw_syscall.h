/* raw_syscall.h — a system call made with the instruction itself, for the futex waits and
 * wakes between proflink's threads (wakeup.c), the intake thread's receives (receiver.c) and a
 * renameat2 the musl toolchain has no wrapper for (socket.c), and calls that would otherwise be
 * the library's only reason to import a libc function (below says why that matters).
 *
 * Why not syscall(): in the preloaded library that name is proflink's own interposer
 * (hooks/seccomp.c), which reads its arguments through va_arg; in proflink's own threads, which
 * ASan does not know (they are created past its pthread_create interceptor: "thread T-1"), ASan
 * reported that read as a stack overflow (make asan). And the detour, an indirect call through
 * the interposer to libc's syscall, is pointless for a call proflink makes itself. Returns what the kernel
 * returns: the result, or -errno (errno is not touched). x86_64 and aarch64, the architectures proflink builds for. */
#ifndef PROFLINK_RAW_SYSCALL_H
#define PROFLINK_RAW_SYSCALL_H

#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>

static inline long raw_syscall6(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
#if defined(__x86_64__)
    long ret;
    register long r10 __asm__("r10") = a4;
    register long r8 __asm__("r8") = a5;
    register long r9 __asm__("r9") = a6;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = nr;
    register long x0 __asm__("x0") = a1;
    register long x1 __asm__("x1") = a2;
    register long x2 __asm__("x2") = a3;
    register long x3 __asm__("x3") = a4;
    register long x4 __asm__("x4") = a5;
    register long x5 __asm__("x5") = a6;
    __asm__ volatile("svc 0"
                     : "+r"(x0)
                     : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                     : "memory");
    return x0;
#else
#error "raw_syscall6: add this architecture's system call instruction"
#endif
}

/* The arguments a call does not take are passed as 0 (never left to chance). */
static inline long raw_syscall4(long nr, long a1, long a2, long a3, long a4)
{
    return raw_syscall6(nr, a1, a2, a3, a4, 0, 0);
}

/* Each libc function the library imports is looked up when it is loaded (-z now, Makefile), in
 * every process of a host that preloads it, served or not: about 1,000 instructions of the
 * dynamic loader per name (callgrind, make bench). So the simple calls (these, and getrandom,
 * memfd_create, madvise, mprotect, kill, nanosleep, process_vm_readv, ioctl where they are
 * made) go to the kernel directly: glibc (since 2.25) and musl make the very same system calls,
 * with no cache to keep in step, and the callers read the -errno result instead of errno.
 * sys_calls.h does the same for the file, socket, mapping and signal calls, with libc's results. */
static inline int raw_getpid(void) { return (int)raw_syscall6(SYS_getpid, 0, 0, 0, 0, 0, 0); }
static inline uid_t raw_geteuid(void) { return (uid_t)raw_syscall6(SYS_geteuid, 0, 0, 0, 0, 0, 0); }
static inline gid_t raw_getegid(void) { return (gid_t)raw_syscall6(SYS_getegid, 0, 0, 0, 0, 0, 0); }
static inline void raw_sched_yield(void) { raw_syscall6(SYS_sched_yield, 0, 0, 0, 0, 0, 0); }
/* Callers that ignore an interrupted sleep's remainder (a pause, not a deadline). */
static inline void raw_nanosleep(const struct timespec *ts)
{
    raw_syscall6(SYS_nanosleep, (long)ts, 0, 0, 0, 0, 0);
}

#endif
