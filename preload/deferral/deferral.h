/* deferral.h — the spec's "APM Agent output of correlation data": ended transactions wait
 * samples-delay-ms for their late correlation messages, then get every stack-trace id the
 * profiler reported for their {trace id, transaction id}, counts preserved.
 *
 * Decision for a transaction handed over with proflink_end_transaction:
 *   - proflink disabled, or the reader is not running: fn at once, with nothing;
 *   - unsampled (flags bit 0 clear): fn at once, in the caller's thread, with what is known;
 *   - mode auto and no valid profiler message yet: at once, likewise;
 *   - queue full (ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_BUFFER_SIZE held): at once,
 *     likewise, counted in queue_overflows, with a warning at most every 10 s;
 *   - otherwise held (mode true from the start, mode auto once a profiler spoke), and
 *     delivered on the reader thread once end time + the delay in force has passed.
 * "At once with what is known" takes the ids gathered so far if the table's lock is free
 * within a few tries (the reader holds it for a few microseconds per batch); otherwise the
 * transaction goes without them rather than wait, and its ids expire (accum.h).
 * With fn == NULL (pull delivery) "deliver" means: queue the result for
 * proflink_take_transactions (pull_queue.h); otherwise the decision above is the same.
 * A process whose pid is not the one the reader started in (a raw clone() child the fork
 * sequence could not set up: sandboxed) delivers at once, without ids.
 * Every delivered transaction is also written to PROFLINK_FIFO as "transaction" record(s). */
#ifndef PROFLINK_DEFERRAL_H
#define PROFLINK_DEFERRAL_H

#include <stddef.h>
#include <stdint.h>

#include "proflink.h"

/* Reader start: capacity (held transactions at most); hold_always: sampled transactions are
 * held from the start (mode true), not only once a profiler has spoken (auto); and how to wake
 * the reader when the queue stops being empty (any thread, must not block). 0 ok, -1 out of
 * memory (transactions are then delivered at once). */
int deferral_init(uint32_t capacity, int hold_always, void (*wake_reader)(void));
/* Transactions are held from now on (the reader runs) / no longer (its intake ended);
 * what is already held is still delivered on time. */
void deferral_enable(void);
void deferral_disable(void);

/* proflink_end_transaction (arguments checked, proflink active). */
int deferral_end(const uint8_t trace_id[16], const uint8_t transaction_id[8], uint8_t flags,
                 proflink_transaction_fn fn, void *user);

/* Reader thread: record the ids of n valid correlation messages received at now_ns. */
void deferral_add_ids(const proflink_message *msgs, size_t n, uint64_t now_ns);

/* Reader thread: delivers held transactions that are due, at most max (>= 1) of them. Returns
 * the nanoseconds until the next one is due, 0 when one may be due now (max reached), or -1
 * when none is held. */
int64_t deferral_run(uint64_t now_ns, unsigned max);

/* proflink_flush_transactions: delivers every held transaction now, on the calling thread (the
 * reader may deliver others concurrently: each goes out once). Returns how many. */
int deferral_flush(void);

void deferral_fork_prepare(void);
/* A copy made without fork handlers (fork_sequence_orphan_child): the locks, new again. */
void deferral_fork_orphan(void);
void deferral_fork_parent(void);
/* Child: drops the parent's held transactions (the parent delivers them) and gathered ids. */
void deferral_fork_child(void);

#endif
