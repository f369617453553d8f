/* socket.c — creating the profiler socket (see socket.h). */
#include "socket.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "fd_safe.h"
#include "log.h"

/* "proflink-<pid>-<8 hex>.sock": the pid lets socket_cleanup.c skip live owners cheaply, the
 * random part keeps an exec'd image (same pid) from colliding with its predecessor's file. */
#define NAME_FMT SOCKET_NAME_PREFIX "%d-%08x.sock"

static uint32_t random_u32(void)
{
    uint32_t r;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) == (ssize_t)sizeof r)
        return r;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint32_t)ts.tv_nsec ^ ((uint32_t)getpid() << 16);
}

/* Why a directory cannot hold our socket, or NULL if it can. */
static const char *dir_problem(const char *dir)
{
    struct stat st;
    if (dir[0] != '/')
        return "not an absolute path";
    /* path = dir + '/' + name; name is at most 9 + 10 + 1 + 8 + 5 = 33 bytes */
    if (strlen(dir) + 1 + 33 > SOCKET_PATH_MAX)
        return "too long for the profiler's /proc/<pid>/root/<path> (85 bytes at most)";
    if (lstat(dir, &st) != 0)
        return strerror(errno);
    if (S_ISLNK(st.st_mode))
        return "is a symbolic link";
    if (!S_ISDIR(st.st_mode))
        return "not a directory";
    if (access(dir, W_OK | X_OK) != 0)
        return "not writable";
    return NULL;
}

static int bind_socket(const char *path)
{
    int fd = fd_above_stdio(socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (fd < 0)
        return -1;
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    memcpy(addr.sun_path, path, strlen(path) + 1);
    /* The file must be 0600 from its creation. umask is process-wide, so it is only narrowed
     * here, where proflink runs before main or in a fresh fork child (no other thread creates
     * files meanwhile in practice); chmod afterwards covers a racing umask change. */
    mode_t old = umask(0177);
    int rc = bind(fd, (struct sockaddr *)&addr, sizeof addr);
    int bind_errno = errno;
    umask(old);
    if (rc != 0 || chmod(path, 0600) != 0) {
        if (rc == 0)
            unlink(path);
        close(fd);
        errno = rc != 0 ? bind_errno : errno;
        return -1;
    }
    return fd;
}

static int create_in(const char *dir, char *path)
{
    for (int attempt = 0; attempt < 4; attempt++) {
        snprintf(path, SOCKET_PATH_MAX + 1, "%s/" NAME_FMT, strcmp(dir, "/") ? dir : "",
                 (int)getpid(), random_u32());
        int fd = bind_socket(path);
        if (fd >= 0 || errno != EADDRINUSE)
            return fd;
    }
    return -1;
}

int socket_create(const struct config *cfg, char *path, const char **dir_used, char *why_out,
                  size_t why_cap)
{
    const char *tmpdir = secure_getenv("TMPDIR");
    const char *candidates[3] = {cfg->socket_dir[0] ? cfg->socket_dir : NULL,
                                 tmpdir && tmpdir[0] ? tmpdir : NULL, "/tmp"};
    const char *why = "no candidate directory";
    for (int i = 0; i < 3; i++) {
        const char *dir = candidates[i];
        if (!dir)
            continue;
        why = dir_problem(dir);
        if (!why) {
            int fd = create_in(dir, path);
            if (fd >= 0) {
                *dir_used = dir;
                return fd;
            }
            why = strerror(errno);
            if (errno != EACCES && errno != EROFS && errno != EPERM && errno != ENOSPC) {
                /* not the directory's fault (no fd, no memory): another one will not help */
                snprintf(why_out, why_cap, "%s", why);
                return -1;
            }
        }
        snprintf(why_out, why_cap, "%.200s: %s", dir, why);
        /* Only a directory the user configured deserves a warning of its own when we move on:
         * a default that does not work is simply not used. */
        if (i == 0 && (candidates[1] || candidates[2]))
            log_warn("socket dir %s; using the default instead", why_out);
    }
    return -1;
}
