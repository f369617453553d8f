/* runtime.h — proflink's life in one process: start (constructor or proflink_init), the fork
 * child's fresh start, and exit. */
#ifndef PROFLINK_RUNTIME_H
#define PROFLINK_RUNTIME_H

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

#endif
