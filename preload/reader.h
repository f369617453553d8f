/* reader.h — the "proflink-reader" thread: receives the profiler's datagrams, delivers them
 * (callback, FIFO) and releases deferred transactions when their delay has passed. */
#ifndef PROFLINK_READER_H
#define PROFLINK_READER_H

/* Starts the reader on sock_fd, bound at socket_path (owned by the reader from now on). Called
 * by the constructor and, with a new socket, in a fork child. 0 ok, -1 failed (logged;
 * proflink stays active without message intake). */
int reader_start(int sock_fd, const char *socket_path);

/* After a failed exec, the reader takes sock_fd in place of its socket, if its thread has not
 * started. 0 done, -1 not (the caller keeps sock_fd). */
int reader_replace_socket(int sock_fd);

/* Fork child (fork_sequence.c): the parent's reader thread does not exist here; its socket
 * fds are closed (or the child would steal the parent's messages). The child has no reader
 * thread until reader_start runs again with the child's own socket; reader_start then starts
 * one at once if the parent had one. */
void reader_fork_child(void);

#endif
