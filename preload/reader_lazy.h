/* reader_lazy.h — when the reader and intake threads start.
 *
 * A process that consumes no profiler message must stay as single-threaded as it was: the
 * kernel refuses unshare(CLONE_NEWUSER) and setns() into a mount namespace to a process with
 * two threads, which breaks sandboxes and container tools run under a system-wide preload. So
 * reader_start (reader.h) prepares everything (the socket) but creates the threads
 * only when something will consume what it receives:
 *   - at once, when PROFLINK_FIFO is set (a consumer is waiting), or in a fork child whose
 *     parent had it;
 *   - otherwise on the first call of the message-side API (proflink_set_message_callback,
 *     proflink_end_transaction, proflink_samples_delay_ms, proflink_host_id).
 * Until then datagrams wait in the socket (the kernel keeps the first 11; the profiler drops
 * the rest) and transactions are delivered at once. Never in a sandboxed process (the program
 * installed a seccomp filter first): the threads' system calls are not the program's. */
#ifndef PROFLINK_READER_LAZY_H
#define PROFLINK_READER_LAZY_H

/* Starts the reader and intake threads if they are not running yet. Any thread; never waits for another
 * caller that is starting it. 0 running (or being started), -1 cannot run. */
int reader_ensure_running(void);

#endif
