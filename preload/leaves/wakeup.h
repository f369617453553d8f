/* wakeup.h — one thread sleeps until another says there is work, or until a deadline.
 *
 * A futex word that counts signals, plus a flag saying whether the waiter may be asleep, so
 * that a signal costs a system call only when it has someone to wake: the intake thread signals
 * the reader after every batch of a burst, and all but the first find it awake.
 *
 * Protocol (one waiter per wakeup):
 *     uint32_t seen = wakeup_prepare(&w);
 *     if (nothing to do)          re-check *after* prepare
 *         wakeup_wait(&w, seen, timeout_ns);
 *     else
 *         wakeup_cancel(&w);
 * and a signaller publishes its work first, then calls wakeup_signal(&w). Why nothing is
 * missed: prepare stores the flag and then loads the count, signal adds to the count and then
 * loads the flag, all sequentially consistent. If the signaller saw the flag clear, its add
 * comes before the waiter's load, so the waiter's re-check sees the work (the add releases it,
 * the load acquires it); otherwise the signaller wakes the futex, and a futex wait on a count
 * that has changed since `seen` returns at once.
 *
 * wakeup_signal is async-signal-safe (atomics and one system call) and keeps errno, so that
 * application threads may call it from anywhere, signal handlers included. */
#ifndef PROFLINK_WAKEUP_H
#define PROFLINK_WAKEUP_H

#include <stdatomic.h>
#include <stdint.h>

struct wakeup {
    _Atomic uint32_t count;    /* the futex word */
    _Atomic uint32_t sleeping; /* the waiter is between prepare and the end of its wait */
};

uint32_t wakeup_prepare(struct wakeup *w);
void wakeup_cancel(struct wakeup *w);
/* Sleeps until a signal after prepare, or timeout_ns (< 0: no timeout). Returns 0 when woken or
 * the count had changed already, -1 on timeout (or a spurious wake-up). */
int wakeup_wait(struct wakeup *w, uint32_t seen, int64_t timeout_ns);
void wakeup_signal(struct wakeup *w);
/* A fork child: nobody waits. */
void wakeup_reset(struct wakeup *w);

#endif
