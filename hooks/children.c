/* children.c — the socket files of the program's fork children (runtime.c says why a fork child
 * has a file of its own and how its parent finds it): a child that ended through exit, _exit or
 * exec removed its own, one killed by a signal (a fork-per-connection server's child dying of
 * SIGPIPE when its client resets) or ended by a raw exit_group did not.
 *
 * The wait family: when the program reaps a child, the file that child may have left is
 * removed at once (runtime_reap_child; for a child that removed its own, one lstat finds
 * nothing). Only after a real reap: the child is gone, so nothing is bound to its file any
 * more, and the pid cannot be reused before the call returned. Not for WNOWAIT (nothing is
 * reaped), a stopped or continued child, or an error. The child is the one the kernel
 * returned (wait, waitpid(-1), wait3 and waitid(P_ALL) name none), and the status or siginfo
 * that tells how it ended is always asked for, into the hook's own variable when the program
 * passed none (waitid(P_ALL, 0, NULL, WEXITED) is valid). syscall(SYS_wait4) and
 * syscall(SYS_waitid) reach children_wait_syscall from syscall()'s interposer (seccomp.c). A
 * SIGCHLD handler may call these: what runs here is async-signal-safe.
 *
 * fork: a program that never waits (SIGCHLD ignored: the kernel reaps its children) passes no
 * wait hook, so fork records the child's pid (runtime_forked_child), and the children recorded
 * earlier that are gone by then have their files removed.
 *
 * Each hook returns the real call's result with its errno. */
#ifndef PROFLINK_STATIC
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "children.h"
#include "leaves/export.h"
#include "next_symbol.h"
#include "start/runtime.h"

typedef pid_t (*wait_fn)(int *);
typedef pid_t (*waitpid_fn)(pid_t, int *, int);
typedef pid_t (*wait3_fn)(int *, int, struct rusage *);
typedef pid_t (*wait4_fn)(pid_t, int *, int, struct rusage *);
typedef int (*waitid_fn)(idtype_t, id_t, siginfo_t *, int);
typedef pid_t (*fork_fn)(void);
NEXT_SYMBOL(wait_fn, wait)
NEXT_SYMBOL(waitpid_fn, waitpid)
NEXT_SYMBOL(wait3_fn, wait3)
NEXT_SYMBOL(wait4_fn, wait4)
NEXT_SYMBOL(waitid_fn, waitid)
NEXT_SYMBOL(fork_fn, fork)

/* got: what the call returned; status: what it reported (always asked for, into the hook's own
 * variable, and copied out to the caller's when it gave one). */
static pid_t reaped(pid_t got, int status, int *out)
{
    if (got <= 0)
        return got;
    if (out)
        *out = status;
    if (WIFEXITED(status) || WIFSIGNALED(status)) /* not a stop or a continue */
        runtime_reap_child((int)got);
    return got;
}

/* libc's function could not be found (it always can). */
static pid_t missing(void)
{
    errno = ENOSYS;
    return -1;
}

PROFLINK_EXPORT pid_t wait(int *status)
{
    wait_fn f = next_wait();
    int st = 0;
    pid_t got = f ? f(&st) : missing();
    return reaped(got, st, status);
}

PROFLINK_EXPORT pid_t waitpid(pid_t pid, int *status, int options)
{
    waitpid_fn f = next_waitpid();
    int st = 0;
    pid_t got = f ? f(pid, &st, options) : missing();
    return reaped(got, st, status);
}

PROFLINK_EXPORT pid_t wait3(int *status, int options, struct rusage *ru)
{
    wait3_fn f = next_wait3();
    int st = 0;
    pid_t got = f ? f(&st, options, ru) : missing();
    return reaped(got, st, status);
}

PROFLINK_EXPORT pid_t wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
    wait4_fn f = next_wait4();
    int st = 0;
    pid_t got = f ? f(pid, &st, options, ru) : missing();
    return reaped(got, st, status);
}

/* waitid's report: a child that ended (not a stop or a continue) and was reaped. */
static void reaped_info(const siginfo_t *info, int options)
{
    if (info->si_pid > 0 && !(options & WNOWAIT) &&
        (info->si_code == CLD_EXITED || info->si_code == CLD_KILLED ||
         info->si_code == CLD_DUMPED))
        runtime_reap_child((int)info->si_pid);
}

PROFLINK_EXPORT int waitid(idtype_t type, id_t id, siginfo_t *info, int options)
{
    waitid_fn f = next_waitid();
    siginfo_t own = {0}; /* the kernel zeroes si_pid when WNOHANG finds no child ready */
    siginfo_t *in = info ? info : &own;
    int rc = f ? f(type, id, in, options) : (int)missing();
    if (rc == 0)
        reaped_info(in, options);
    return rc;
}

long children_wait_syscall(long (*call)(long, long, long, long, long, long, long), long nr,
                           const long a[6])
{
    if (nr == SYS_wait4) { /* pid, status, options, rusage */
        int st = 0;
        long got = call(nr, a[0], (long)&st, a[2], a[3], a[4], a[5]);
        return reaped((pid_t)got, st, (int *)a[1]);
    }
    /* SYS_waitid: type, id, info, options, rusage */
    siginfo_t own = {0};
    siginfo_t *in = a[2] ? (siginfo_t *)a[2] : &own;
    long rc = call(nr, a[0], a[1], (long)in, a[3], a[4], a[5]);
    if (rc == 0)
        reaped_info(in, (int)a[3]);
    return rc;
}

PROFLINK_EXPORT pid_t fork(void)
{
    fork_fn f = next_fork();
    pid_t pid = f ? f() : missing();
    if (pid > 0)
        runtime_forked_child((int)pid); /* preserves errno */
    return pid;
}
#else
typedef int children_hooks_not_in_static_builds;
#endif
