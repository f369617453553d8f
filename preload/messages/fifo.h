/* fifo.h — PROFLINK_FIFO: JSON lines (records.h) into a named pipe, for consumers other than
 * an in-process tracer.
 *
 * The pipe is created 0600 if missing and opened O_WRONLY|O_NONBLOCK|O_CLOEXEC, so proflink
 * never waits for its reader. Every write() carries whole records only, at most RECORD_MAX
 * (= PIPE_BUF) bytes, which the kernel writes atomically: a reader never sees half a record,
 * nor records of two writers interleaved. When there is no reader (ENXIO), the pipe is full
 * (EAGAIN) or the reader went away (EPIPE), the records are dropped and counted (fifo_drops);
 * a closed pipe is reopened on a later record, at most every 100 ms. The SIGPIPE a write to a
 * closed pipe raises never reaches the program: it is blocked around the write and consumed.
 * A path that exists and is not a FIFO is refused (warned once): proflink never writes into a
 * regular file or a device. */
#ifndef PROFLINK_FIFO_H
#define PROFLINK_FIFO_H

#include <stddef.h>

#include "json_lines.h"

/* Once per process image, before the reader starts. path "" = off. */
void fifo_init(const char *path);
int fifo_enabled(void);

/* Writes len bytes holding n whole records with one write(). Any thread; never blocks for more
 * than one non-blocking write. signals_blocked: the caller already blocks every signal (the
 * reader thread), so the SIGPIPE mask dance is not needed. */
void fifo_write(const char *buf, size_t len, unsigned n, int signals_blocked);

/* Several records sharing one write() when they fit in RECORD_MAX together: the reader's
 * chunks of messages (a burst of 1000 correlations is about 60 writes, not 1000 wake-ups of
 * the consumer). One thread per batch. */
struct fifo_batch {
    char buf[RECORD_MAX];
    size_t len;
    unsigned n;
};
/* Adds one record of len bytes, writing out what the batch holds first if it would not fit. */
void fifo_batch_add(struct fifo_batch *b, const char *record, size_t len);
/* Writes out what the batch holds; its caller blocks every signal (the reader thread). */
void fifo_batch_flush(struct fifo_batch *b);

void fifo_fork_prepare(void);
/* A copy made without fork handlers (fork_sequence_orphan_child): the locks, new again. */
void fifo_fork_orphan(void);
void fifo_fork_parent(void);
void fifo_fork_child(void);

#endif
