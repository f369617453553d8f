/* seccomp.c — notices the program installing a seccomp filter, through the libc entry points
 * that can: prctl(PR_SET_SECCOMP) and syscall(SYS_seccomp, ...) (glibc and musl have no
 * seccomp() wrapper; libseccomp and programs use syscall()). From then on proflink makes no
 * system call of its own (runtime_sandboxed): an allowlist written for the program would kill
 * it for one (SIGSYS at exit, for the socket file's unlink). The flag is set before the filter
 * exists, so no window lets a call of ours through, and cleared if installing failed.
 * A filter applies to the installing thread (and the threads it creates later), so proflink's
 * own threads carry on under a plain one; one installed with SECCOMP_FILTER_FLAG_TSYNC (libseccomp's
 * TSYNC attribute, browser-style sandboxes) covers every thread of the process: proflink's end
 * first (reader_stop_threads), and stay ended should the installation fail.
 * A filter installed with an inline system call instruction is invisible to any library; no
 * later check could help either, since reading /proc/self/status or calling
 * prctl(PR_GET_SECCOMP) is itself a system call such a filter may forbid.
 * The prctl interposer also shows otel_ctx_watch.c every other option: an OTEL_CTX mapping the
 * program names is another process-context publisher; the syscall interposer hands the calls
 * that reap a child (SYS_wait4, SYS_waitid) to children.c. */
#ifndef PROFLINK_STATIC
#include <errno.h>
#include <stdarg.h>
#include <sys/syscall.h>

/* The kernel's ABI values (linux/seccomp.h, linux/prctl.h), spelled out: musl's toolchain has no
 * kernel headers, and <sys/prctl.h> is left out on purpose (see prctl below). */
#define SECCOMP_OP_STRICT 0L
#define SECCOMP_OP_FILTER 1L
#define SECCOMP_FILTER_FLAG_TSYNC 1L
#define PR_SET_SECCOMP 22

#include "children.h"
#include "delivery/deliverer.h"
#include "leaves/export.h"
#include "fd_closing.h"
#include "next_symbol.h"
#include "start/otel_ctx_watch.h"
#include "leaves/runtime_state.h"

typedef int (*prctl_fn)(int, unsigned long, unsigned long, unsigned long, unsigned long);
typedef long (*syscall_fn)(long, long, long, long, long, long, long);
NEXT_SYMBOL(prctl_fn, prctl)
NEXT_SYMBOL(syscall_fn, syscall)

/* Defined with its five arguments, not as libc's variadic prototype: a variadic callee reads
 * its register save area by the count a caller passes in %al, and callers that declare prctl
 * with fixed arguments (ASan's interceptor, for one) pass none, so reading va_args overflowed.
 * Either way the five values arrive in the same registers (x86_64 and aarch64 pass variadic
 * integers like fixed ones); what a caller did not pass is ignored by the option, as libc's own
 * prctl forwards whatever is there. */
PROFLINK_EXPORT int prctl(int option, unsigned long a2, unsigned long a3, unsigned long a4,
                          unsigned long a5)
{
    prctl_fn f = next_prctl();
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    if (option != PR_SET_SECCOMP) {
        int rc = f(option, a2, a3, a4, a5);
        otel_ctx_watch_prctl(option, a2, a3, a5); /* another OTEL_CTX publisher? */
        return rc;
    }
    runtime_sandbox_begin();
    int rc = f(option, a2, a3, a4, a5);
    if (rc != 0)
        runtime_sandbox_failed();
    return rc;
}

static int installs_filter(long nr, long a1, long a2)
{
    if (nr == SYS_seccomp)
        return a1 == SECCOMP_OP_STRICT || a1 == SECCOMP_OP_FILTER;
    return nr == SYS_prctl && a1 == PR_SET_SECCOMP && a2 != 0;
}

static void closes_fds(long nr, long a1, long a2, long a3)
{
    if (nr == SYS_close && a1 >= 0)
        fd_closing((unsigned)a1, (unsigned)a1);
#ifdef SYS_dup2
    else if (nr == SYS_dup2 && a2 >= 0 && a2 != a1)
        fd_closing((unsigned)a2, (unsigned)a2);
#endif
    else if (nr == SYS_dup3 && a2 >= 0 && a2 != a1)
        fd_closing((unsigned)a2, (unsigned)a2);
#ifdef SYS_close_range
    else if (nr == SYS_close_range && (unsigned)a1 <= (unsigned)a2 && !(a3 & 4 /* CLOEXEC */))
        fd_closing((unsigned)a1, (unsigned)a2);
#endif
}

/* Every system call takes at most six arguments; reading six is what libc's syscall() does. */
PROFLINK_EXPORT long syscall(long nr, ...)
{
    va_list ap;
    va_start(ap, nr);
    long a[6];
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    syscall_fn f = next_syscall();
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    /* This is the only syscall() proflink can interpose, so it also reports the calls that
     * can give a descriptor number to another file, as their libc hooks do (fd_reuse.c). */
    closes_fds(nr, a[0], a[1], a[2]);
    if (nr == SYS_wait4 || nr == SYS_waitid) /* and the calls that reap a child */
        return children_wait_syscall(f, nr, a);
    if (!installs_filter(nr, a[0], a[1]))
        return f(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
    runtime_sandbox_begin();
    if (nr == SYS_seccomp && a[0] == SECCOMP_OP_FILTER && (a[1] & SECCOMP_FILTER_FLAG_TSYNC))
        reader_stop_threads(); /* the filter will be theirs too */
    long rc = f(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
    if (rc != 0)
        runtime_sandbox_failed();
    return rc;
}
#endif
