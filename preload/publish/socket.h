/* socket.h — the DGRAM unix socket the profiler sends to (docs/formats.md).
 *
 * Limits: the profiler opens "/proc/<pid>/root" + path, which must fit sun_path (107 bytes
 * usable), so our path is at most SOCKET_PATH_MAX = 85 bytes; longer and every send would fail
 * silently. The file is 0600 from the moment it has its name (never chmod'ed by a path another
 * user could swap; the process's umask is never touched, socket.c) in a directory that is not a
 * symlink and that nobody else can write to (or sticky and owned by root or us, as /tmp). */
#ifndef PROFLINK_SOCKET_H
#define PROFLINK_SOCKET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SOCKET_PATH_MAX 85
#define SOCKET_NAME_PREFIX "proflink-"

struct config;

/* The file bind() created: later operations act on it only while the path still names it.
 * suffix: the random part of its name (NAME_FMT in socket.c). */
struct socket_file {
    dev_t dev;
    ino_t ino;
    uint32_t suffix;
};

/* Creates and binds the socket (mode 0600) in the first usable directory among the configured
 * one, $TMPDIR and /tmp (warning when the configured one is refused). Non-blocking,
 * close-on-exec. The name's random part is *suffix when suffix is not NULL and that name is
 * free (a fork child takes its parent's, so that the parent can find the file: runtime.c), a
 * new random value otherwise. Fills path (SOCKET_PATH_MAX + 1 bytes) and file. Returns the fd,
 * or -1 with the last reason in why. */
int socket_create(const struct config *cfg, const uint32_t *suffix, char *path,
                  struct socket_file *file, const char **dir_used, char *why, size_t why_cap);

/* Removes the socket file that a dead process pid named with suffix in dir left behind: only
 * a socket owned by our euid to which nobody is bound any more. Async-signal-safe (a SIGCHLD
 * handler's waitpid may call it). Preserves errno. */
void socket_remove_dead(const char *dir, int pid, uint32_t suffix);

/* Removes the socket file fork child pid bound in dir (its name's suffix, device and inode, as
 * the child recorded them: runtime.c) once nobody is bound to it, whoever owns it now (a child
 * that changed its ids gave it to them). Async-signal-safe. Preserves errno. */
void socket_remove_child(const char *dir, int pid, uint32_t suffix, uint64_t dev, uint64_t ino);

/* 1 when no socket is bound to path (a connect is refused): its process is gone. */
int socket_nobody_bound(const char *path);

/* Unlinks path if it still names file. 0 removed, -1 not. */
int socket_file_remove(const char *path, const struct socket_file *file);

/* Gives file (if path still names it) to uid:gid, through a descriptor. 0 done, -1 not. */
int socket_file_chown(const char *path, const struct socket_file *file, uid_t uid, gid_t gid);

/* Removes socket files left by dead proflink processes of our uid in dir (see socket_cleanup.c). */
void socket_cleanup_stale(const char *dir, const char *own_path);

#endif
