/* target_socket.h — can a profiler reach the target's apmint socket? The profiler sends to the
 * socket-file-path of the process storage, as seen from the target's root:
 *  - the path is cleaned lexically and refused if a ".." component survives (escape attempt);
 *  - it becomes /proc/PID/root/<path>, which must exist and be a socket;
 *  - unless the target runs as root, its effective uid (owner bits) or gid (group bits), or
 *    anyone (other bits), must have write permission;
 *  - the whole /proc/PID/root/<path> must fit sockaddr_un.sun_path (107 bytes + NUL), or every
 *    send fails although the attach succeeded;
 *  - a datagram connect() must succeed (EPROTOTYPE: a stream socket; ECONNREFUSED: a file left
 *    behind with nobody bound to it) — again the attach would succeed but every send fail.
 * Checked first, beyond what the profiler checks: a socket proflink named for another pid than
 * the target's (in its pid namespace) is another process's (a raw clone() child before its
 * first use of the library publishes its parent's): the profiler would attach and send this
 * process's samples there. */
#ifndef TARGET_SOCKET_H
#define TARGET_SOCKET_H

#include <stddef.h>
#include <sys/types.h>

#define TARGET_SUN_PATH_USABLE 107

struct target_socket {
    char cleaned[1100];   /* the path after lexical cleaning */
    char proc_path[1200]; /* /proc/PID/root/<cleaned> */
    size_t proc_path_len;
    int stat_ok;
    mode_t mode;
    uid_t uid;
    gid_t gid;
    uid_t target_euid;
    gid_t target_egid;
    const char *access; /* who may write: "target is root", "owner", "group", "others" */
    int connect_tried;
    int connect_errno; /* 0: a datagram connect() succeeded */
    long named_for_pid; /* a proflink socket named for another pid than the target's, else 0 */
};

/* Runs the checks above in the profiler's order, stopping at the first failure; *out holds what
 * was learned up to then. */
int target_socket_check(pid_t pid, const char *path, size_t len, struct target_socket *out,
                        char *err);

/* The fix line for pid when the last check failed because its socket is another process's
 * (written into fix, returns 1), else 0. */
int target_socket_fix(pid_t pid, char *fix, size_t cap);

/* The effective uid and gid of pid (second field of the Uid:/Gid: lines of /proc/PID/status). */
int target_proc_owner(pid_t pid, uid_t *euid, gid_t *egid, char *err);

/* Go's filepath.Clean, which the profiler applies: collapse "//", drop ".", resolve "x/.."
 * lexically (".." at the root stays at the root). Returns -1 if out is too small. */
int target_clean_path(const char *in, char *out, size_t cap);

#endif
