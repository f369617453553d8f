/* pull_queue.h — pull delivery of ended transactions (proflink_take_transactions,
 * proflink_transactions_fd): results wait in a bounded queue until the tracer takes them, and a
 * pipe's read end is readable while any wait.
 *
 * Why: a callback runs on the reader thread, and a runtime with one interpreter thread would
 * make the reader wait for its event loop while the profiler's datagrams are dropped. Here the
 * producers (the reader, and application threads delivering at once) never wait for a consumer:
 * a result is pushed onto a lock-free list with one compare-and-swap; consumers take the whole
 * list with one exchange and keep what did not fit their buffer for their next call (consumers
 * serialize among themselves with a mutex that no producer ever takes). */
#ifndef PROFLINK_PULL_QUEUE_H
#define PROFLINK_PULL_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "proflink.h"

/* Any thread: queues a copy of the result. 0 queued, -1 dropped (queue full, counted in
 * pull_overflows, or out of memory). Never waits for a consumer. */
int pull_queue_push(const uint8_t trace_id[16], const uint8_t transaction_id[8],
                    const proflink_stack_count *ids, size_t n_ids);

/* proflink_take_transactions (proflink.h). */
long pull_queue_take(void *buf, size_t cap);

/* proflink_transactions_fd: the pipe's read end, made on first call. -1 if it cannot be. */
int pull_queue_fd(void);

void pull_queue_fork_prepare(void);
/* A copy made without fork handlers (fork_sequence_orphan_child): the locks, new again. */
void pull_queue_fork_orphan(void);
void pull_queue_fork_parent(void);
/* Child: drops the parent's queued results (the parent's tracer takes them) and forgets the
 * parent's pipe (the child makes its own on first call). */
void pull_queue_fork_child(void);

#endif
