/* txqueue.h — the deferral queue: ended transactions waiting for samples-delay-ms, handed from
 * any application thread (many producers) to the reader thread (the consumer; a thread that
 * flushes at shutdown may take items concurrently).
 *
 * Why a lock-free ring and not a mutex: proflink_end_transaction runs in the application's
 * request path and must never wait for the reader, which may be busy in a user callback or
 * preempted. A bounded ring with a sequence number per cell (the classic multi-producer design)
 * lets a producer claim a cell with one compare-and-swap and publish it with one store (and a
 * consumer likewise: take never waits for another consumer either); it
 * never waits: if the cell it would take is still in use, the queue is full and the caller
 * delivers at once. The consumer never blocks producers either; it only ever sees a cell that
 * a slow producer claimed but has not published yet as "not there yet", and that producer
 * wakes it when it publishes (txq_push's *wake).
 *
 * Items leave in FIFO order, which is also the order of their end times, so the head is always
 * the first one due whatever the delay (a new delay applies to every item still queued).
 * Memory: capacity × 56 bytes, zero-filled, touched only as the ring turns. */
#ifndef PROFLINK_TXQUEUE_H
#define PROFLINK_TXQUEUE_H

#include <stdatomic.h>
#include <stdint.h>

#include "proflink.h"

struct txq_item {
    uint8_t trace_id[16];
    uint8_t transaction_id[8];
    proflink_transaction_fn fn;
    void *user;
    uint64_t end_ns; /* CLOCK_MONOTONIC when it ended */
};

struct txq_cell;

struct txqueue {
    struct txq_cell *cells;
    uint64_t cap;
    _Alignas(64) _Atomic uint64_t head; /* next position producers claim */
    _Alignas(64) _Atomic uint64_t tail; /* next position the consumer takes */
};

/* 0 ok, -1 out of memory. cap >= 1. */
int txq_init(struct txqueue *q, uint32_t cap);
void txq_free(struct txqueue *q);

/* Any thread. 1 queued, 0 full. *wake is set to 1 when the consumer may be asleep waiting for
 * exactly this item (the queue was empty as far as it could see): the caller must wake it. */
int txq_push(struct txqueue *q, const struct txq_item *item, int *wake);

enum { TXQ_EMPTY, TXQ_TAKEN, TXQ_NOT_DUE };

/* Consumers (the reader; a thread flushing at shutdown): takes the oldest item into *out if it
 * ended at or before max_end_ns (TXQ_TAKEN); else TXQ_NOT_DUE with its end time in
 * *head_end_ns, or TXQ_EMPTY. Never waits. The cell is free again when this returns. */
int txq_take(struct txqueue *q, uint64_t max_end_ns, struct txq_item *out, uint64_t *head_end_ns);

#endif
