/* deliverer.h — the "proflink-reader" thread: delivers the profiler's datagrams that the
 * "proflink-intake" thread (receiver.h) received (callback, FIFO, id table) and releases deferred
 * transactions when their delay has passed; and the start of both threads. */
#ifndef PROFLINK_READER_H
#define PROFLINK_READER_H

#include <stdint.h>

/* What the reader needs of the configuration, handed over once by the constructor (a fork
 * child keeps it): the FIFO's path ("" = none), the deferral queue's capacity, and whether the
 * mode is auto (a log line when a profiler first speaks). */
void reader_configure(const char *fifo_path, uint32_t buffer_size, int mode_auto,
                      int hold_always);

/* Prepares the reader to receive on sock_fd (owned by it from now on); the threads start later
 * (deliverer_lazy.h). Called by the constructor and, with a new socket, in a fork child. 0 ok, -1
 * failed (logged; proflink stays active without message intake). */
int reader_start(int sock_fd);

/* After a failed exec, the reader takes sock_fd in place of its socket, if its thread has not
 * started. 0 done, -1 not (the caller keeps sock_fd). */
int reader_replace_socket(int sock_fd);

/* The program is about to install a seccomp filter on every thread (SECCOMP_FILTER_FLAG_TSYNC;
 * hooks/seccomp.c, on the installing thread, before the filter): ends both threads and returns
 * once the kernel no longer knows them (at most 2 s), so that no system call of theirs meets a
 * filter written for the program. What was received is delivered first and held transactions
 * are delivered at once (their ids so far); the message side stays off in this process. */
void reader_stop_threads(void);

/* Fork child (fork_sequence.c): the parent's threads do not exist here; its socket is closed
 * (or the child would steal the parent's messages) and what it had received is forgotten (the
 * parent delivers it). The child has no threads until reader_start runs again with the child's
 * own socket, and then only once it asks (deliverer_lazy.h: if the parent's ran, at its first
 * thread or wait). */
void reader_fork_child(void);

#endif
