/* exec.c — the exec family removes the process's socket file before the new image replaces
 * this one (the socket itself is close-on-exec, so the file would be left to a sweep, or
 * forever if the new program is one proflink does not run in: static, not selected,
 * disabled). If the exec fails, the program runs on and gets a new socket
 * (runtime_exec_failed). The l-forms are rebuilt here as argument vectors because libc's
 * call their v-forms internally, out of an interposer's reach. posix_spawn, system and popen
 * exec in a child that has no socket of its own, so they need nothing. */
#ifndef PROFLINK_STATIC
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <unistd.h>

#include "leaves/export.h"
#include "next_symbol.h"
#include "start/runtime.h"
#include "leaves/runtime_state.h"
#include "leaves/sys_calls.h"

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);
NEXT_SYMBOL(execve_fn, execve)
NEXT_SYMBOL(execv_fn, execv)
NEXT_SYMBOL(execv_fn, execvp)
NEXT_SYMBOL(execve_fn, execvpe)
NEXT_SYMBOL(fexecve_fn, fexecve)
NEXT_SYMBOL(execveat_fn, execveat)

/* rc is what the exec returned: it returns only on failure, with errno set. */
static int after_failure(int rc)
{
    int saved_errno = errno;
    runtime_exec_failed();
    errno = saved_errno;
    return rc;
}

/* A shell that searches PATH itself (dash, busybox ash) calls execve on each candidate until one
 * runs, and most candidates do not exist. Such an attempt fails before the kernel reads any image,
 * so the socket is kept for the next one: removing it would make a failed exec of every
 * attempt, and a process whose reader already runs cannot take a new socket (it would warn that
 * messages no longer reach it, right before the next attempt succeeds). One faccessat per exec,
 * none in a sandboxed process (no system call of our own there). A file that appears between
 * the check and the exec only leaves the socket file to the sweep (socket_cleanup.c). */
static int names_no_file(const char *path)
{
    if (!path || runtime_sandboxed())
        return 0;
    int saved_errno = errno;
    /* the errors of resolving the path, which the exec would meet first and fail with too */
    int missing = sys_faccessat(AT_FDCWD, path, F_OK, 0) != 0 &&
                  (errno == ENOENT || errno == ENOTDIR || errno == EACCES);
    errno = saved_errno;
    return missing;
}

static int no_function(void)
{
    errno = ENOSYS;
    return -1;
}

PROFLINK_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    execve_fn f = next_execve();
    if (!f)
        return no_function();
    if (names_no_file(path))
        return f(path, argv, envp); /* fails as it would have, with nothing of ours undone */
    runtime_exec_prepare();
    return after_failure(f(path, argv, envp));
}

PROFLINK_EXPORT int execv(const char *path, char *const argv[])
{
    execv_fn f = next_execv();
    if (!f)
        return no_function();
    if (names_no_file(path))
        return f(path, argv);
    runtime_exec_prepare();
    return after_failure(f(path, argv));
}

PROFLINK_EXPORT int execvp(const char *file, char *const argv[])
{
    execv_fn f = next_execvp();
    if (!f)
        return no_function();
    runtime_exec_prepare();
    return after_failure(f(file, argv));
}

PROFLINK_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    execve_fn f = next_execvpe();
    if (!f)
        return no_function();
    runtime_exec_prepare();
    return after_failure(f(file, argv, envp));
}

PROFLINK_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    fexecve_fn f = next_fexecve();
    if (!f)
        return no_function();
    runtime_exec_prepare();
    return after_failure(f(fd, argv, envp));
}

PROFLINK_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                             int flags)
{
    execveat_fn f = next_execveat();
    if (!f)
        return no_function();
    runtime_exec_prepare();
    return after_failure(f(dirfd, path, argv, envp, flags));
}

PROFLINK_LOCAL_ALIAS(exec_v, execv);
PROFLINK_LOCAL_ALIAS(exec_vp, execvp);
PROFLINK_LOCAL_ALIAS(exec_ve, execve);

/* Counts the arguments after arg0 up to the terminating NULL. */
static size_t count_args(const char *arg0, va_list ap)
{
    size_t n = 1;
    if (!arg0)
        return 0;
    while (va_arg(ap, const char *))
        n++;
    return n;
}

/* argv gets arg0, the n - 1 following arguments and a NULL; returns the envp that follows the
 * list when with_envp (execle), else NULL. */
static char *const *fill_args(char **argv, size_t n, const char *arg0, va_list ap, int with_envp)
{
    if (n)
        argv[0] = (char *)arg0;
    for (size_t i = 1; i < n; i++)
        argv[i] = va_arg(ap, char *);
    argv[n] = NULL;
    if (!with_envp)
        return NULL;
    if (n) /* the NULL that ended the list */
        (void)va_arg(ap, char *);
    return va_arg(ap, char *const *);
}

/* More arguments than the kernel accepts in any case (its argument-and-environment limit is a
 * quarter of the 8 MiB default stack, 262144 pointers): E2BIG, as the exec itself would say. The
 * bound also keeps the stack vector below from being sized by an unbounded count. */
#define L_FORM_ARGS_MAX (1u << 18)

/* The l-forms as their libc builds them: a vector on the stack, as long as the list. */
#define L_FORM(with_envp, call_with_argv)                                                                 \
    va_list ap;                                                                                \
    va_start(ap, arg0);                                                                        \
    size_t n = count_args(arg0, ap);                                                           \
    va_end(ap);                                                                                \
    if (n > L_FORM_ARGS_MAX) {                                                                 \
        errno = E2BIG;                                                                         \
        return -1;                                                                             \
    }                                                                                          \
    char *argv[n + 1];                                                                         \
    va_start(ap, arg0);                                                                        \
    char *const *envp = fill_args(argv, n, arg0, ap, with_envp);                                      \
    va_end(ap);                                                                                \
    (void)envp;                                                                                \
    return call_with_argv;

PROFLINK_EXPORT int execl(const char *path, const char *arg0, ...) { L_FORM(0, exec_v(path, argv)) }

PROFLINK_EXPORT int execlp(const char *file, const char *arg0, ...)
{
    L_FORM(0, exec_vp(file, argv))
}

PROFLINK_EXPORT int execle(const char *path, const char *arg0, ...)
{
    L_FORM(1, exec_ve(path, argv, envp))
}
#endif
