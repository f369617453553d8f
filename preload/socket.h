/* socket.h — the DGRAM unix socket the profiler sends to (README: formats).
 *
 * Limits: the profiler opens "/proc/<pid>/root" + path, which must fit sun_path (107 bytes
 * usable), so our path is at most SOCKET_PATH_MAX = 85 bytes; longer and every send would fail
 * silently. The file is 0600 in a directory that is not a symlink. */
#ifndef PROFLINK_SOCKET_H
#define PROFLINK_SOCKET_H

#include <stddef.h>

#define SOCKET_PATH_MAX 85
#define SOCKET_NAME_PREFIX "proflink-"

struct config;

/* Creates, binds and chmods the socket in the first usable directory among the configured one,
 * $TMPDIR and /tmp (warning on each fallback). Non-blocking, close-on-exec.
 * Fills path (SOCKET_PATH_MAX + 1 bytes). Returns the fd, or -1 with the last reason in why. */
int socket_create(const struct config *cfg, char *path, const char **dir_used, char *why,
                  size_t why_cap);

/* Removes socket files left by dead proflink processes of our uid in dir (see socket_cleanup.c). */
void socket_cleanup_stale(const char *dir, const char *own_path);

#endif
