/* api_fork_ns — a fork child that enters namespaces, as container runtimes, sandboxes and
 * nsenter do. usage: api_fork_ns [api]
 * With "api", a tracer in the parent first sets a message callback through proflink's API
 * (found with dlsym; absent without the library), so that proflink's threads run in the
 * parent. Then the parent forks; the child counts its threads, joins its own mount namespace
 * again (setns, which the kernel refuses to a process with two threads) and makes a new user
 * namespace (unshare(CLONE_NEWUSER), likewise), and prints
 * "threads=N setns=RESULT unshare=RESULT" (RESULT: ok or the error). The parent waits for it and
 * exits with its status. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proflink.h"

static void on_message(const proflink_message *m, void *user)
{
    (void)m;
    (void)user;
}

static int threads(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static const char *result(int rc) { return rc == 0 ? "ok" : strerror(errno); }

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "api")) {
        void (*set_cb)(proflink_message_fn, void *) = (void (*)(proflink_message_fn, void *))dlsym(
            RTLD_DEFAULT, "proflink_set_message_callback");
        if (set_cb)
            set_cb(on_message, NULL);
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 3;
    if (pid == 0) {
        int n = threads();
        int fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        const char *s = result(fd >= 0 ? setns(fd, CLONE_NEWNS) : -1);
        char setns_result[64];
        snprintf(setns_result, sizeof setns_result, "%s", s);
        const char *u = result(unshare(CLONE_NEWUSER));
        printf("threads=%d setns=%s unshare=%s\n", n, setns_result, u);
        fflush(stdout);
        _exit(0);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid)
        return 4;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 5;
}
