/* runtime.h — the process's published presence (runtime.c): the profiler socket, the process
 * storage that names it and the OTel process context, through this process image's life:
 * start, fork child, failed exec, credential changes, exit. Starting proflink (the order of
 * start-up) is start.c; the fork sequence is fork_sequence.c; whether proflink is on is
 * runtime_state.h. */
#ifndef PROFLINK_RUNTIME_H
#define PROFLINK_RUNTIME_H

#include <sys/types.h>

struct config;

/* Creates the socket, publishes the storage naming it, then the OTel context (optional: its
 * failure is logged and ignored). Returns the socket fd for the reader, or -1 with nothing
 * left behind (logged). */
int runtime_publish(const struct config *cfg);

/* Removes the files that dead processes of this user left in the socket's directory. */
void runtime_sweep_stale(void);

/* Fork child (fork_sequence.c, step R): its own socket, storage, OTel context (a new
 * service.instance.id) and reader (its threads start later: deliverer_lazy.h) before fork()
 * returns. On failure proflink turns off in the
 * child (logged). runtime_fork_child_sandboxed: the same for a child of a sandboxed process,
 * which makes no system call: it only unpublishes and turns off. */
void runtime_fork_child(void);
void runtime_fork_child_sandboxed(void);

/* The socket path published in the process storage ("" when inactive). */
const char *runtime_socket_path(void);

/* Removes our socket file (exit paths). Only the process that created it, never after the
 * program installed a seccomp filter. */
void runtime_remove_socket(void);

/* Before a fork (fork_sequence.c's prepare): the page the children record their socket file in
 * (runtime.c), made at the first fork. */
void runtime_fork_prepare(void);

/* The program reaped its child pid (hooks/children.c): removes the socket file the child left if it
 * died without removing it (a signal, a raw exit_group). Async-signal-safe; preserves errno. */
void runtime_reap_child(int pid);
/* The program forked child pid (hooks/children.c): recorded, and the files of the children
 * recorded earlier that are gone by now (reaped by the kernel: SIGCHLD ignored) are removed.
 * Preserves errno. */
void runtime_forked_child(int pid);

/* exec: remove the file before, and if the exec returned (failed) publish a new socket. */
void runtime_exec_prepare(void);
void runtime_exec_failed(void);

/* The program changes (or changed) its effective ids: the socket file follows them. (uid_t)-1
 * and (gid_t)-1 mean the current ones. */
void runtime_creds_follow(uid_t euid, gid_t egid);

#endif
