/* socket.c — creating the profiler socket (see socket.h). */
#include "socket.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "leaves/fd_safe.h"
#include "leaves/log.h"
#include "leaves/random.h"
#include "leaves/raw_syscall.h"
#include "leaves/real_calls.h"
#include "leaves/text.h"
#include "leaves/sys_calls.h"
#include "leaves/str.h"

/* "proflink-<pid>-<8 hex>.sock": the pid lets socket_cleanup.c skip live owners cheaply, the
 * random part keeps an exec'd image (same pid) from colliding with its predecessor's file. */
#define NAME_FMT SOCKET_NAME_PREFIX "%d-%08x.sock"

static uint32_t random_u32(void)
{
    uint32_t r;
    random_bytes(&r, sizeof r);
    return r;
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
    if (sys_lstat(dir, &st) != 0)
        return strerror(errno);
    if (S_ISLNK(st.st_mode))
        return "is a symbolic link";
    if (!S_ISDIR(st.st_mode))
        return "not a directory";
    /* Others who can write here could swap our fresh file for a symlink or their own socket.
     * A sticky directory owned by root or by us (as /tmp is) forbids them to rename or remove
     * our file, so it is safe; any other directory writable by group or others is refused. */
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) &&
        !((st.st_mode & S_ISVTX) && (st.st_uid == 0 || st.st_uid == raw_geteuid())))
        return "writable by others and not sticky (or not owned by root or us)";
    if (sys_faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) != 0)
        return "not writable";
    return NULL;
}

/* The file must be 0600 from its creation, and its mode is never changed through a path another
 * user could swap (a chmod by path follows whatever the path names by then). The umask is
 * process-wide: changing it, even for the instant of a bind, races every other thread that
 * creates a file (a failed exec recreates the socket while the program's threads run), so it
 * is never touched. Linux gives a bound socket the mode of the socket's own inode less the
 * umask, and that inode takes an fchmod before bind: 0600 less any usual umask (022, 077) is
 * exactly 0600. Only a umask that strips the owner's bits (0200 and the like) makes less: then
 * bind_private makes it elsewhere. */
#define SOCKET_MODE 0600

static int socket_fd(void)
{
    return fd_above_stdio(sys_socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
}

static int bind_at(int fd, const char *path)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    memcpy(addr.sun_path, path, strlen(path) + 1);
    return sys_bind(fd, (struct sockaddr *)&addr, sizeof addr);
}

/* renameat2 by number: the glibc build must not need a symbol musl lacks (Makefile), and the
 * instruction itself, not syscall(), which is proflink's own interposer (raw_syscall.h). */
#ifndef SYS_renameat2
#define SYS_renameat2 316 /* x86_64; aarch64's headers always define it */
#endif
#define RENAME_NOREPLACE_FLAG 1 /* linux/fs.h */

static int rename_noreplace(const char *from, const char *to)
{
    long r = raw_syscall6(SYS_renameat2, AT_FDCWD, (long)from, AT_FDCWD, (long)to,
                          RENAME_NOREPLACE_FLAG, 0);
    if (r < 0) {
        errno = (int)-r;
        return -1;
    }
    return 0;
}

/* The umask took owner bits: the socket is bound inside a directory of our own that nobody else
 * may enter (0700, made and checked through a descriptor), given its mode there by path (only
 * we can reach that path), then moved to its name without replacing anything. */
static int bind_private(int fd, const char *path)
{
    char dir[SOCKET_PATH_MAX + 2], tmp[SOCKET_PATH_MAX + 4]; /* sun_path holds 107 */
    const char *slash = str_last(path, '/');
    /* the hidden directory's name is the socket's, dot-prefixed: one byte longer */
    snprintf(dir, sizeof dir, "%.*s/.%s", (int)(slash - path), path, slash + 1);
    if (sys_mkdir(dir, 0700) != 0)
        return -1;
    int rc = -1;
    int dfd = fd_above_stdio(sys_open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st;
    if (dfd >= 0 && sys_fstat(dfd, &st) == 0 && st.st_uid == raw_geteuid() &&
        sys_fchmod(dfd, 0700) == 0) {
        snprintf(tmp, sizeof tmp, "%s/s", dir);
        if (bind_at(fd, tmp) == 0) {
            if (sys_chmod(tmp, SOCKET_MODE) == 0)
                rc = rename_noreplace(tmp, path);
            if (rc != 0 && errno == EINVAL) /* a file system without RENAME_NOREPLACE */
                rc = sys_link(tmp, path);
            int err = errno == EEXIST ? EADDRINUSE : errno; /* the name was taken: another */
            sys_unlink(tmp); /* after a rename: ENOENT, nothing done */
            errno = err;
        }
    }
    int err = errno;
    if (dfd >= 0)
        real_close(dfd);
    sys_rmdir(dir);
    errno = err;
    return rc;
}

static int bind_socket(const char *path, struct socket_file *file)
{
    int fd = socket_fd();
    if (fd < 0)
        return -1;
    int rc = sys_fchmod(fd, SOCKET_MODE) == 0 ? bind_at(fd, path) : -1;
    struct stat st;
    int found = rc == 0 && sys_lstat(path, &st) == 0;
    if (found && S_ISSOCK(st.st_mode) && (st.st_mode & 0777) != SOCKET_MODE &&
        (st.st_mode & 0777 & ~SOCKET_MODE) == 0) {
        /* the umask took owner bits: the directory lets nobody else use or replace the file */
        sys_unlink(path);
        real_close(fd);
        fd = socket_fd();
        if (fd < 0)
            return -1;
        rc = bind_private(fd, path);
        found = rc == 0 && sys_lstat(path, &st) == 0;
    }
    if (rc != 0) {
        int err = errno;
        real_close(fd);
        errno = err;
        return -1;
    }
    if (!found || !S_ISSOCK(st.st_mode) || (st.st_mode & 0777) != SOCKET_MODE) {
        /* ours with another mode: the directory lets nobody else replace it */
        if (found && S_ISSOCK(st.st_mode) && st.st_uid == raw_geteuid())
            sys_unlink(path);
        real_close(fd);
        errno = EPERM;
        return -1;
    }
    file->dev = st.st_dev;
    file->ino = st.st_ino;
    return fd;
}

/* DIR/proflink-PID-SUFFIX.sock (NAME_FMT), cut to SOCKET_PATH_MAX bytes (the callers have
 * checked that it fits). No stdio: also built in a fork child's handlers (socket_remove_dead). */
static void socket_name(char *path, const char *dir, pid_t pid, uint32_t suffix)
{
    size_t len = 0;
    path[0] = 0;
    if (strcmp(dir, "/") != 0)
        text_put_str(path, SOCKET_PATH_MAX + 1, &len, dir);
    text_put_str(path, SOCKET_PATH_MAX + 1, &len, "/" SOCKET_NAME_PREFIX);
    text_put_uint(path, SOCKET_PATH_MAX + 1, &len, (uint64_t)pid);
    text_put(path, SOCKET_PATH_MAX + 1, &len, "-", 1);
    text_put_hex32(path, SOCKET_PATH_MAX + 1, &len, suffix);
    text_put(path, SOCKET_PATH_MAX + 1, &len, ".sock", 5);
}

static int create_in(const char *dir, const uint32_t *suffix, char *path,
                     struct socket_file *file)
{
    for (int attempt = 0; attempt < 4; attempt++) {
        uint32_t r = attempt == 0 && suffix ? *suffix : random_u32();
        socket_name(path, dir, raw_getpid(), r);
        int fd = bind_socket(path, file);
        if (fd >= 0)
            file->suffix = r;
        if (fd >= 0 || errno != EADDRINUSE)
            return fd;
    }
    return -1;
}

int socket_create(const struct config *cfg, const uint32_t *suffix, char *path,
                  struct socket_file *file, const char **dir_used, char *why_out, size_t why_cap)
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
            int fd = create_in(dir, suffix, path, file);
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

/* Both act only on the file proflink bound (same device and inode): the directory was checked
 * (dir_problem) so that nobody else can replace it, and the check keeps a path that now names
 * something else (a successor's socket after exec, say) from being touched. */
static int same_file(const struct stat *st, const struct socket_file *file)
{
    return S_ISSOCK(st->st_mode) && st->st_dev == file->dev && st->st_ino == file->ino;
}

int socket_file_remove(const char *path, const struct socket_file *file)
{
    struct stat st;
    if (!path[0] || sys_lstat(path, &st) != 0 || !same_file(&st, file))
        return -1;
    return sys_unlink(path);
}

int socket_file_chown(const char *path, const struct socket_file *file, uid_t uid, gid_t gid)
{
    if (!path[0])
        return -1;
    /* Through a descriptor of the file itself (O_PATH, no symlink followed), never by path. */
    int fd = sys_open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    int rc = -1;
    if (sys_fstat(fd, &st) == 0 && same_file(&st, file))
        rc = (st.st_uid == uid && st.st_gid == gid) ? 0
                                                    : sys_fchownat(fd, "", uid, gid, AT_EMPTY_PATH);
    real_close(fd);
    return rc;
}

/* Appends the decimal digits of v (async-signal-safe: no stdio). */
void socket_remove_dead(const char *dir, int pid, uint32_t suffix)
{
    char path[SOCKET_PATH_MAX + 1];
    if (pid <= 0 || strlen(dir) + 34 > SOCKET_PATH_MAX) /* 34: the longest name, socket.h */
        return;
    int saved = errno;
    socket_name(path, dir, pid, suffix);
    struct stat st;
    /* Nobody can put another file under this name meanwhile: the directory lets only us (and
     * root) replace or remove our files, and a new process with this pid cannot bind a name
     * that exists (EADDRINUSE: it takes another). */
    if (sys_lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == raw_geteuid() &&
        socket_nobody_bound(path))
        sys_unlink(path);
    errno = saved;
}

void socket_remove_child(const char *dir, int pid, uint32_t suffix, uint64_t dev, uint64_t ino)
{
    char path[SOCKET_PATH_MAX + 1];
    if (pid <= 0 || strlen(dir) + 34 > SOCKET_PATH_MAX)
        return;
    int saved = errno;
    socket_name(path, dir, pid, suffix);
    struct stat st;
    /* The child is gone, and the directory (dir_problem) lets nobody but root and the file's
     * owner, the child's user, replace the file between the lstat and the unlink: that user
     * alone could, within those microseconds, swap in another file of its own under this
     * name, which would go in its place. */
    if (sys_lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && (uint64_t)st.st_dev == dev &&
        (uint64_t)st.st_ino == ino && socket_nobody_bound(path))
        sys_unlink(path);
    errno = saved;
}
