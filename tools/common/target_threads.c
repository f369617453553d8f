/* target_threads.c — see target_threads.h. */
#include "target_threads.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "target_util.h"

#if defined(__aarch64__)
#include <elf.h> /* NT_ARM_TLS */
#elif !defined(__x86_64__)
#error "proflink tools support x86_64 and aarch64 only"
#endif

static int cmp_pid(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return (x > y) - (x < y);
}

int target_threads_list(pid_t pid, pid_t **tids, size_t *n, char *err)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    *tids = NULL;
    *n = 0;
    DIR *d = opendir(path);
    if (!d)
        return target_fail(err, "cannot list %s: %s", path, strerror(errno));
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char *end;
        long tid = strtol(de->d_name, &end, 10);
        if (*end != '\0' || tid <= 0)
            continue; /* "." and ".." */
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            pid_t *nt = realloc(*tids, cap * sizeof *nt);
            if (!nt) {
                closedir(d);
                free(*tids);
                *tids = NULL;
                *n = 0;
                return target_fail(err, "out of memory");
            }
            *tids = nt;
        }
        (*tids)[(*n)++] = (pid_t)tid;
    }
    closedir(d);
    qsort(*tids, *n, sizeof **tids, cmp_pid);
    return 0;
}

void target_thread_comm(pid_t pid, pid_t tid, char *buf, size_t cap)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/task/%d/comm", (int)pid, (int)tid);
    buf[0] = '\0';
    char *s = target_read_file(path, NULL);
    if (!s)
        return;
    s[strcspn(s, "\n")] = '\0';
    snprintf(buf, cap, "%s", s);
    free(s);
}

int target_thread_stop(pid_t tid, struct target_stopped *st, char *err)
{
    st->tid = tid;
    st->pending_signal = 0;
    if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) != 0)
        return target_fail(err, "PTRACE_SEIZE %d: %s%s", (int)tid, strerror(errno),
                           errno == EPERM ? " (another tracer, or no CAP_SYS_PTRACE/yama)" : "");
    if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) != 0) {
        int e = errno;
        ptrace(PTRACE_DETACH, tid, NULL, NULL);
        return target_fail(err, "PTRACE_INTERRUPT %d: %s", (int)tid, strerror(e));
    }
    for (;;) {
        int status;
        pid_t r = waitpid(tid, &status, __WALL);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return target_fail(err, "waitpid %d: %s", (int)tid, strerror(errno));
        if (WIFEXITED(status) || WIFSIGNALED(status))
            return target_fail(err, "thread %d exited", (int)tid);
        if (!WIFSTOPPED(status))
            continue;
        /* A plain signal-delivery stop (event 0) means a signal reached the thread before our
         * interrupt did: the thread is stopped all the same; give the signal back on detach. */
        if ((status >> 16) == 0)
            st->pending_signal = WSTOPSIG(status);
        return 0;
    }
}

int target_thread_tp(const struct target_stopped *st, uint64_t *tp, char *err)
{
#if defined(__x86_64__)
    struct user_regs_struct regs;
    if (ptrace(PTRACE_GETREGS, st->tid, NULL, &regs) != 0)
        return target_fail(err, "PTRACE_GETREGS %d: %s", (int)st->tid, strerror(errno));
    *tp = regs.fs_base;
#else
    uint64_t tpidr = 0;
    struct iovec iov = {.iov_base = &tpidr, .iov_len = sizeof tpidr};
    if (ptrace(PTRACE_GETREGSET, st->tid, (void *)NT_ARM_TLS, &iov) != 0)
        return target_fail(err, "PTRACE_GETREGSET(NT_ARM_TLS) %d: %s", (int)st->tid,
                           strerror(errno));
    *tp = tpidr;
#endif
    return 0;
}

void target_thread_release(const struct target_stopped *st)
{
    ptrace(PTRACE_DETACH, st->tid, NULL, (void *)(long)st->pending_signal);
}

int target_thread_pointer(pid_t tid, uint64_t *tp, char *err)
{
    struct target_stopped st;
    if (target_thread_stop(tid, &st, err) != 0)
        return -1;
    int rc = target_thread_tp(&st, tp, err);
    target_thread_release(&st);
    return rc;
}
