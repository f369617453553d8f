/* target_reap FORM [null] [nobody] [impostor] — forks one child, kills it with SIGKILL (so that it cannot
 * remove a socket file of its own) and reaps it in one of the ways a program can:
 *   wait, waitpid-any (waitpid(-1)), waitpid (its pid), wait3, wait4, syscall-wait4
 *   (syscall(SYS_wait4)), waitid-all (waitid(P_ALL)), waitid-pid (waitid(P_PID)),
 *   syscall-waitid (syscall(SYS_waitid, P_ALL)), or
 *   ignored: nobody waits (SIGCHLD ignored: the kernel reaps the child); once the child is gone
 *   the parent forks once more (a child that _exits at once) and is reaped by the kernel too.
 * null: no status pointer (no siginfo for waitid, no rusage for wait3/wait4); otherwise a
 * status (or siginfo) and an rusage are asked for, and the status must say SIGKILL.
 * nobody: the child first switches to uid and gid 65534 (setgid, setuid), as a server's worker
 * does; the parent must be root.
 * impostor: the child then puts another socket under its file's name (unlink, bind, close: a
 * look-alike nobody is bound to, as its user could make), which the parent must leave alone.
 * Prints "before=B owner=U reaped=R status=S after=A": B the files named proflink-<child pid>-*
 * in $ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR while the child runs (U the first
 * one's owner), R 1 when the call returned the child's pid (0 for waitid), S "ok" when the
 * status or siginfo said SIGKILL ("-" with null), A those files once the call returned.
 * Exits 0 when the child could be made and reaped. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* The files named for pid in the socket directory; *owner: the first one's uid. */
static int child_files(pid_t pid, long *owner)
{
    const char *dir = getenv("ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR");
    char prefix[64];
    snprintf(prefix, sizeof prefix, "proflink-%d-", (int)pid);
    DIR *d = dir ? opendir(dir) : NULL;
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        struct stat st;
        if (n++ == 0 && owner && fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
            *owner = (long)st.st_uid;
    }
    if (d)
        closedir(d);
    return n;
}

/* Replaces this process's socket file by a look-alike socket nobody is bound to. */
static int impersonate(void)
{
    const char *dir = getenv("ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR");
    char prefix[64];
    snprintf(prefix, sizeof prefix, "proflink-%d-", (int)getpid());
    DIR *d = dir ? opendir(dir) : NULL;
    struct dirent *e;
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    while (d && (e = readdir(d)))
        if (!strncmp(e->d_name, prefix, strlen(prefix)))
            snprintf(a.sun_path, sizeof a.sun_path, "%.60s/%.40s", dir, e->d_name);
    if (d)
        closedir(d);
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    if (!a.sun_path[0] || fd < 0 || unlink(a.sun_path) != 0 ||
        bind(fd, (struct sockaddr *)&a, sizeof a) != 0)
        return -1;
    close(fd);
    return 0;
}

static int killed(int status) { return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL; }

static int info_killed(const siginfo_t *si, pid_t pid)
{
    return si->si_pid == pid && si->si_code == CLD_KILLED && si->si_status == SIGKILL;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    const char *form = argv[1];
    int null = 0, nobody = 0, impostor = 0;
    for (int i = 2; i < argc; i++) {
        null |= !strcmp(argv[i], "null");
        nobody |= !strcmp(argv[i], "nobody");
        impostor |= !strcmp(argv[i], "impostor");
    }
    int ignored = !strcmp(form, "ignored");
    if (ignored)
        signal(SIGCHLD, SIG_IGN);
    int p[2];
    if (pipe(p) != 0)
        return 3;
    pid_t pid = fork();
    if (pid < 0)
        return 3;
    if (pid == 0) {
        close(p[0]);
        if (nobody && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(9);
        if (impostor && impersonate() != 0)
            _exit(9);
        if (write(p[1], "x", 1) != 1)
            _exit(9);
        for (;;)
            pause();
    }
    close(p[1]);
    char c;
    if (read(p[0], &c, 1) != 1)
        return 4;
    long owner = -1;
    int before = child_files(pid, &owner);
    kill(pid, SIGKILL);

    int status = 0, *sp = null ? NULL : &status;
    struct rusage ru, *rp = null ? NULL : &ru;
    siginfo_t si, *ip = null ? NULL : &si;
    memset(&si, 0, sizeof si);
    long got = -2;
    int by_info = 0;
    if (ignored) {
        while (kill(pid, 0) == 0 || errno != ESRCH) /* until the kernel reaped it */
            usleep(1000);
        pid_t next = fork();
        if (next == 0)
            _exit(0);
        while (next > 0 && (kill(next, 0) == 0 || errno != ESRCH))
            usleep(1000);
        got = next > 0 ? pid : -1;
        null = 1;
    } else if (!strcmp(form, "wait"))
        got = wait(sp);
    else if (!strcmp(form, "waitpid-any"))
        got = waitpid(-1, sp, 0);
    else if (!strcmp(form, "waitpid"))
        got = waitpid(pid, sp, 0);
    else if (!strcmp(form, "wait3"))
        got = wait3(sp, 0, rp);
    else if (!strcmp(form, "wait4"))
        got = wait4(pid, sp, 0, rp);
    else if (!strcmp(form, "syscall-wait4"))
        got = syscall(SYS_wait4, (long)-1, sp, 0L, rp);
    else if (!strcmp(form, "waitid-all"))
        got = waitid(P_ALL, 0, ip, WEXITED), by_info = 1;
    else if (!strcmp(form, "waitid-pid"))
        got = waitid(P_PID, (id_t)pid, ip, WEXITED), by_info = 1;
    else if (!strcmp(form, "syscall-waitid"))
        got = syscall(SYS_waitid, (long)P_ALL, 0L, ip, (long)WEXITED, rp), by_info = 1;
    else
        return 2;
    int reaped = by_info ? got == 0 : got == pid;
    const char *st = null ? "-" : (by_info ? info_killed(&si, pid) : killed(status)) ? "ok" : "bad";
    printf("before=%d owner=%ld reaped=%d status=%s after=%d\n", before, owner, reaped, st,
           child_files(pid, NULL));
    return reaped ? 0 : 5;
}
