/* target_pids.c — see target_pids.h. */
#include "target_pids.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "target_util.h"

static int has(const struct target_pids *p, pid_t pid)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->v[i] == pid)
            return 1;
    return 0;
}

/* Inserts pid in order; 1 when added, 0 when already there or the list is full. */
static int add(struct target_pids *p, pid_t pid)
{
    if (has(p, pid) || p->n == TARGET_PIDS_MAX)
        return 0;
    size_t i = p->n;
    while (i > 0 && p->v[i - 1] > pid) {
        p->v[i] = p->v[i - 1];
        i--;
    }
    p->v[i] = pid;
    p->n++;
    return 1;
}

int target_pids_add_arg(struct target_pids *p, const char *arg, char *err)
{
    char *end;
    errno = 0;
    long v = strtol(arg, &end, 10);
    if (errno || end == arg || *end || v <= 0 || v > INT_MAX)
        return target_fail(err, "not a process id: %s", arg);
    if (p->n == TARGET_PIDS_MAX && !has(p, (pid_t)v))
        return target_fail(err, "more than %d processes", TARGET_PIDS_MAX);
    add(p, (pid_t)v);
    return 0;
}

static const char *base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* 1 when process pid is called name: its comm, argv[0]'s file name or its executable's. */
static int named(pid_t pid, const char *name)
{
    char path[64], buf[PATH_MAX];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    size_t len;
    char *comm = target_read_file(path, &len);
    if (comm) {
        comm[strcspn(comm, "\n")] = 0;
        int same = !strcmp(comm, name);
        free(comm);
        if (same)
            return 1;
    }
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    char *cmd = target_read_file(path, &len);
    if (cmd) {
        int same = len > 0 && !strcmp(base(cmd), name); /* argv[0] ends at the first NUL */
        free(cmd);
        if (same)
            return 1;
    }
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(path, buf, sizeof buf - 1);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    char *deleted = strstr(buf, " (deleted)");
    if (deleted && deleted[10] == 0)
        *deleted = 0;
    return !strcmp(base(buf), name);
}

/* Calls fn(p, pid, arg) for every process of /proc. */
static size_t each_process(struct target_pids *p, size_t (*fn)(struct target_pids *, pid_t, const void *),
                           const void *arg)
{
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    size_t added = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        added += fn(p, (pid_t)pid, arg);
    }
    closedir(d);
    return added;
}

static size_t add_if_named(struct target_pids *p, pid_t pid, const void *name)
{
    return pid != getpid() && named(pid, name) ? (size_t)add(p, pid) : 0;
}

size_t target_pids_add_name(struct target_pids *p, const char *name)
{
    return each_process(p, add_if_named, name);
}

/* The parent pid from /proc/PID/stat (after the command name, which may hold spaces and ')'). */
static pid_t parent_of(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    size_t len;
    char *stat = target_read_file(path, &len);
    if (!stat)
        return 0;
    char *close = strrchr(stat, ')');
    int ppid = 0;
    if (!close || sscanf(close + 1, " %*c %d", &ppid) != 1)
        ppid = 0;
    free(stat);
    return (pid_t)ppid;
}

static size_t add_if_child(struct target_pids *p, pid_t pid, const void *unused)
{
    (void)unused;
    pid_t ppid = parent_of(pid);
    return ppid > 0 && has(p, ppid) && pid != getpid() ? (size_t)add(p, pid) : 0;
}

size_t target_pids_add_children(struct target_pids *p)
{
    size_t total = 0, added;
    /* one pass per generation: a grandchild can be listed before its parent is added */
    while ((added = each_process(p, add_if_child, NULL)) > 0)
        total += added;
    return total;
}
