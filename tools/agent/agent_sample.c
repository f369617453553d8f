/* agent_sample.c — see agent_sample.h. */
#include "agent_sample.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/target_threads.h"

void agent_sampler_init(struct agent_sampler *s, pid_t pid)
{
    memset(s, 0, sizeof *s);
    s->pid = pid;
}

void agent_sampler_free(struct agent_sampler *s)
{
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

static struct agent_thread *find(struct agent_sampler *s, pid_t tid)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].tid == tid)
            return &s->v[i];
    return NULL;
}

static int is_stop_signal(int sig)
{
    return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

static void mark_gone(struct agent_sampler *s, struct agent_thread *th)
{
    if (!th->gone) {
        th->gone = 1;
        s->exited++;
    }
}

/* A ptrace notification that arrived while the thread was supposed to be running: let it go on.
 * Returns 1 if the thread is still alive. */
static int let_run(struct agent_sampler *s, struct agent_thread *th, int status)
{
    if (WIFEXITED(status) || WIFSIGNALED(status)) {
        mark_gone(s, th);
        return 0;
    }
    if (!WIFSTOPPED(status))
        return 1;
    int event = status >> 16, sig = WSTOPSIG(status);
    if (event == PTRACE_EVENT_STOP) {
        th->group_stop = is_stop_signal(sig);
        ptrace(th->group_stop ? PTRACE_LISTEN : PTRACE_CONT, th->tid, NULL, NULL);
    } else if (event == 0) {
        /* signal-delivery-stop: hand the signal over, as if we had not been there */
        s->signals_passed++;
        ptrace(PTRACE_CONT, th->tid, NULL, (void *)(long)sig);
    } else {
        ptrace(PTRACE_CONT, th->tid, NULL, NULL);
    }
    return 1;
}

static void reap(struct agent_sampler *s)
{
    for (;;) {
        int status;
        pid_t r = waitpid(-1, &status, __WALL | WNOHANG);
        if (r <= 0)
            return;
        struct agent_thread *th = find(s, r);
        if (th && !th->gone)
            let_run(s, th, status);
    }
}

size_t agent_sampler_refresh(struct agent_sampler *s)
{
    reap(s);
    pid_t *tids;
    size_t n;
    char err[256];
    if (target_threads_list(s->pid, &tids, &n, err) == 0) {
        for (size_t i = 0; i < n; i++) {
            if (find(s, tids[i]))
                continue;
            if (s->n == s->cap) {
                size_t cap = s->cap ? s->cap * 2 : 16;
                struct agent_thread *nv = realloc(s->v, cap * sizeof *nv);
                if (!nv)
                    break;
                s->v = nv;
                s->cap = cap;
            }
            struct agent_thread *th = &s->v[s->n++];
            memset(th, 0, sizeof *th);
            th->tid = tids[i];
            if (ptrace(PTRACE_SEIZE, th->tid, NULL, NULL) == 0) {
                s->seized++;
            } else {
                snprintf(s->last_error, sizeof s->last_error, "PTRACE_SEIZE %d: %s",
                         (int)th->tid, strerror(errno));
                s->seize_failures++;
                th->gone = 1;
            }
        }
        free(tids);
    }
    size_t live = 0;
    for (size_t i = 0; i < s->n; i++)
        live += !s->v[i].gone;
    return live;
}

int agent_thread_running(pid_t pid, pid_t tid)
{
    char path[96], buf[512];
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* comm may hold anything, the state follows its last ')' */
    return p && p[1] == ' ' && p[2] == 'R';
}

int agent_sampler_stop(struct agent_sampler *s, struct agent_thread *th)
{
    if (th->gone)
        return 0;
    if (ptrace(PTRACE_INTERRUPT, th->tid, NULL, NULL) != 0) {
        int status;
        if (waitpid(th->tid, &status, __WALL | WNOHANG) > 0 && WIFSTOPPED(status))
            return 1; /* already stopped, notification just collected */
        mark_gone(s, th);
        return 0;
    }
    /* The stop comes within microseconds; poll so that a thread that never reports (it cannot
     * happen, but a profiler must not hang) costs at most a second. */
    struct timespec pause = {0, 50 * 1000};
    for (int i = 0; i < 20000; i++) {
        int status;
        pid_t r = waitpid(th->tid, &status, __WALL | WNOHANG);
        if (r == 0) {
            if (i < 64)
                sched_yield();
            else
                nanosleep(&pause, NULL);
            if (i == 10000)
                ptrace(PTRACE_INTERRUPT, th->tid, NULL, NULL);
            continue;
        }
        if (r < 0) {
            if (errno == EINTR)
                continue;
            mark_gone(s, th); /* ECHILD: no longer ours */
            return 0;
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            mark_gone(s, th);
            return 0;
        }
        if (!WIFSTOPPED(status))
            continue;
        int event = status >> 16, sig = WSTOPSIG(status);
        if (event == PTRACE_EVENT_STOP) {
            th->group_stop = is_stop_signal(sig);
            return 1;
        }
        if (event == 0) {
            /* a signal got there first: deliver it, our interrupt stop follows */
            s->signals_passed++;
            ptrace(PTRACE_CONT, th->tid, NULL, (void *)(long)sig);
            continue;
        }
        ptrace(PTRACE_CONT, th->tid, NULL, NULL);
    }
    return 0; /* never stopped: leave it running; a late stop is resumed by the next refresh */
}

void agent_sampler_resume(struct agent_sampler *s, struct agent_thread *th)
{
    (void)s;
    if (ptrace(th->group_stop ? PTRACE_LISTEN : PTRACE_CONT, th->tid, NULL, NULL) != 0 &&
        errno == ESRCH)
        mark_gone(s, th);
}

void agent_sampler_detach_all(struct agent_sampler *s)
{
    reap(s);
    for (size_t i = 0; i < s->n; i++) {
        struct agent_thread *th = &s->v[i];
        if (th->gone)
            continue;
        if (agent_sampler_stop(s, th))
            ptrace(PTRACE_DETACH, th->tid, NULL, NULL);
        th->gone = 1;
    }
}
