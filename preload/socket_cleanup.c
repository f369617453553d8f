/* socket_cleanup.c — removes sockets left behind by proflink processes that were killed or that
 * exec'd (same uid only).
 *
 * A file is removed only when all of these hold, so that a live socket is never touched:
 *  - its name is ours ("proflink-<pid>-<hex>.sock") and it is a socket owned by our euid;
 *  - its pid is dead, or is our own pid (our pre-exec image: close-on-exec closed its socket);
 *  - connect() to it fails with ECONNREFUSED: no socket is bound to that file any more.
 *
 * The sweep runs in every starting process (before main), so its work is bounded: at most
 * SWEEP_MAX_ENTRIES directory entries are looked at per start, however full the directory is
 * (300,000 look-alike files in a shared /tmp must not slow every program on the host). Files
 * past the bound wait for a later start; most files never need the sweep, since proflink
 * removes its own on exit, _exit and exec. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fd_safe.h"
#include "log.h"
#include "socket.h"

/* Entries per start: one or two getdents calls' worth, well under a millisecond. */
#define SWEEP_MAX_ENTRIES 1024

static int name_pid(const char *name)
{
    int pid, end = 0;
    unsigned hex;
    if (sscanf(name, SOCKET_NAME_PREFIX "%d-%8x.sock%n", &pid, &hex, &end) != 2 ||
        name[end] != 0 || pid <= 0)
        return -1;
    return pid;
}

int socket_nobody_bound(const char *path)
{
    int fd = fd_above_stdio(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (fd < 0)
        return 0;
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    size_t n = strlen(path);
    if (n >= sizeof addr.sun_path) {
        close(fd);
        return 0;
    }
    memcpy(addr.sun_path, path, n + 1);
    int rc = connect(fd, (struct sockaddr *)&addr, sizeof addr);
    int refused = rc != 0 && errno == ECONNREFUSED;
    close(fd);
    return refused;
}

static int is_stale(int dirfd, const char *dir, const char *name, const char *own_path)
{
    int pid = name_pid(name);
    if (pid < 0)
        return 0;
    if (pid != getpid() && !(kill(pid, 0) != 0 && errno == ESRCH))
        return 0;
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISSOCK(st.st_mode) ||
        st.st_uid != geteuid())
        return 0;
    char path[SOCKET_PATH_MAX + 64];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path ||
        !strcmp(path, own_path))
        return 0;
    return socket_nobody_bound(path);
}

void socket_cleanup_stale(const char *dir, const char *own_path)
{
    int dfd = fd_above_stdio(open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return;
    }
    int removed = 0, examined = 0;
    struct dirent *e;
    while (examined < SWEEP_MAX_ENTRIES && (e = readdir(d)) != NULL) {
        examined++;
        if (strncmp(e->d_name, SOCKET_NAME_PREFIX, sizeof SOCKET_NAME_PREFIX - 1) != 0)
            continue;
        if (is_stale(dirfd(d), dir, e->d_name, own_path) &&
            unlinkat(dirfd(d), e->d_name, 0) == 0)
            removed++;
    }
    closedir(d);
    if (removed)
        log_info("removed %d stale socket file(s) in %s", removed, dir);
    log_debug("socket sweep of %s: %d entries examined (at most %d)", dir, examined,
              SWEEP_MAX_ENTRIES);
}
