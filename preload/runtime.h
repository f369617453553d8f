/* runtime.h — proflink's life in one process: start (constructor or proflink_init), the fork
 * child's fresh start, and exit. */
#ifndef PROFLINK_RUNTIME_H
#define PROFLINK_RUNTIME_H

#include <sys/types.h>

/* 1 once proflink runs in this process (socket, storage and records published). Cheap. */
int runtime_active(void);

/* Starts proflink in this process image; a second call does nothing. 0 active, -1 not. */
int runtime_start(void);

/* pthread_atfork handlers (hooks/fork.c registers them). The child handler gives a child that
 * keeps running its own socket, storage, OTel context and reader before fork() returns. */
void runtime_fork_prepare(void);
void runtime_fork_parent(void);
void runtime_fork_child(void);

/* The socket path published in the process storage ("" when inactive). */
const char *runtime_socket_path(void);

/* Removes our socket file (exit paths). Only the process that created it, never after the
 * program installed a seccomp filter. */
void runtime_remove_socket(void);

/* exec: remove the file before, and if the exec returned (failed) publish a new socket. */
void runtime_exec_prepare(void);
void runtime_exec_failed(void);

/* The program changes (or changed) its effective ids: the socket file follows them. (uid_t)-1
 * and (gid_t)-1 mean the current ones. */
void runtime_creds_follow(uid_t euid, gid_t egid);

/* The program is about to install a seccomp filter (begin) / could not (failed). While
 * sandboxed, proflink makes no system call of its own. */
void runtime_sandbox_begin(void);
void runtime_sandbox_failed(void);
int runtime_sandboxed(void);

#endif
