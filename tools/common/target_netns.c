/* target_netns.c — see target_netns.h. */
#include "target_netns.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define QLEN_PATH "/proc/sys/net/unix/max_dgram_qlen"

static int read_qlen(char *why, size_t cap)
{
    char v[32] = "";
    int fd = open(QLEN_PATH, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, v, sizeof v - 1) : -1;
    if (n <= 0)
        snprintf(why, cap, "cannot read " QLEN_PATH ": %s", strerror(errno));
    if (fd >= 0)
        close(fd);
    return n > 0 ? atoi(v) : -1;
}

int target_dgram_qlen(pid_t pid, char *why, size_t cap)
{
    char ns[64];
    struct stat ours, theirs;
    snprintf(ns, sizeof ns, "/proc/%d/ns/net", (int)pid);
    if (stat(ns, &theirs) != 0) {
        snprintf(why, cap, "cannot see its network namespace (%s: %s)", ns, strerror(errno));
        return -1;
    }
    if (stat("/proc/self/ns/net", &ours) == 0 && ours.st_dev == theirs.st_dev &&
        ours.st_ino == theirs.st_ino)
        return read_qlen(why, cap);
    int nsfd = open(ns, O_RDONLY | O_CLOEXEC), p[2];
    if (nsfd < 0) {
        snprintf(why, cap, "cannot open %s: %s", ns, strerror(errno));
        return -1;
    }
    if (pipe(p) != 0) {
        snprintf(why, cap, "pipe: %s", strerror(errno));
        close(nsfd);
        return -1;
    }
    pid_t child = fork();
    if (child == 0) { /* joins the namespace for this one read; the parent stays where it was */
        char v[TARGET_QLEN_WHY_MAX] = "";
        int qlen = -1;
        if (setns(nsfd, CLONE_NEWNET) != 0)
            snprintf(v, sizeof v, "!joining its network namespace (setns) needs root "
                                  "(CAP_SYS_ADMIN): %s; run as root to check it",
                     strerror(errno));
        else if ((qlen = read_qlen(v + 1, sizeof v - 1)) < 0)
            v[0] = '!';
        else
            snprintf(v, sizeof v, "%d", qlen);
        size_t n = strlen(v);
        _exit(write(p[1], v, n) == (ssize_t)n ? 0 : 1);
    }
    close(nsfd);
    close(p[1]);
    char v[TARGET_QLEN_WHY_MAX] = "";
    ssize_t n = child > 0 ? read(p[0], v, sizeof v - 1) : -1;
    close(p[0]);
    if (child > 0)
        waitpid(child, NULL, 0);
    if (n > 0 && v[0] != '!')
        return atoi(v);
    snprintf(why, cap, "%s", n > 0 ? v + 1 : "the child that reads it failed");
    return -1;
}
