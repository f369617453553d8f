/* deliverer_lazy.h — when the reader and intake threads start.
 *
 * A process must stay as single-threaded as the program made it until it asks for profiler
 * messages itself: the kernel refuses unshare(CLONE_NEWUSER) and setns() into a mount namespace
 * to a process with two threads, which breaks sandboxes, container tools and nsenter, in a
 * process started with an inherited PROFLINK_FIFO as in a fork child of a process whose threads
 * ran. So reader_start (deliverer.h) prepares everything (the socket) and creates no thread; they
 * start:
 *   - on the first call of the message-side API (proflink_set_message_callback,
 *     proflink_end_transaction, proflink_samples_delay_ms, proflink_host_id,
 *     proflink_transactions_fd, ...): reader_ensure_running;
 *   - when something already consumes messages (PROFLINK_FIFO is set, or a fork child inherited
 *     its parent's running reader: a callback, held transactions), at the program's first
 *     pthread_create (it becomes multi-threaded anyway): reader_kick, or its first wait for
 *     work (accept, epoll_wait, poll, select and the like: a server) made outside a signal
 *     handler: reader_kick_wait. Those waits are async-signal-safe and a handler may make them,
 *     on top of a malloc it interrupted, while the start allocates and creates threads; a
 *     wait made while a signal that has a handler is blocked (as the kernel blocks it during
 *     its handler) leaves the start to the next thread creation or wait made with none
 *     blocked (a wait looks at most once per 5 ms). A single-threaded program that does
 *     neither keeps its datagrams in its socket (the kernel keeps the first 11; the profiler
 *     drops the rest) until it calls the API.
 * Never in a sandboxed process (the program installed a seccomp filter first): the threads'
 * system calls are not the program's. Never in a copy of the process made without fork
 * handlers (a raw clone) that was not set up: its descriptor is its parent's socket. */
#ifndef PROFLINK_READER_LAZY_H
#define PROFLINK_READER_LAZY_H

#include <stdatomic.h>

/* Starts the reader and intake threads if they are not running yet. Any thread; never waits for
 * another caller that is starting it. 0 running (or being started), -1 cannot run. */
int reader_ensure_running(void);

/* 1 while something consumes messages and the threads wait for the program's first thread or
 * wait (see the top). Relaxed: a stale 1 only costs one more call of reader_kick_slow, which
 * takes the flag with an exchange. */
extern _Atomic int reader_kick_pending;
void reader_kick_slow(void);
void reader_kick_wait_slow(void);

/* The program creates a thread: start the threads if something consumes messages. One load when
 * nothing waits. Not from a signal handler: the first start allocates and creates threads
 * (pthread_create is not async-signal-safe, so the program never calls it from one). */
static inline void reader_kick(void)
{
    if (__builtin_expect(atomic_load_explicit(&reader_kick_pending, memory_order_relaxed), 0))
        reader_kick_slow();
}

/* The program waits for work (accept, poll...), perhaps inside a signal handler: the same, unless
 * it may be in one (see the top). */
static inline void reader_kick_wait(void)
{
    if (__builtin_expect(atomic_load_explicit(&reader_kick_pending, memory_order_relaxed), 0))
        reader_kick_wait_slow();
}

#endif
