/* wakeup.c — futex-based wake-ups between proflink's threads (wakeup.h). */
#include "wakeup.h"

#include <errno.h>
#include <limits.h>
#include <sys/syscall.h>
#include <time.h>

#include "raw_syscall.h"

/* The kernel's ABI values (linux/futex.h), spelled out: musl's toolchain has no kernel headers.
 * PRIVATE: the word is never shared with another process. */
#define FUTEX_WAIT_PRIVATE 128
#define FUTEX_WAKE_PRIVATE 129

uint32_t wakeup_prepare(struct wakeup *w)
{
    atomic_store(&w->sleeping, 1);
    return atomic_load(&w->count);
}

void wakeup_cancel(struct wakeup *w) { atomic_store_explicit(&w->sleeping, 0, memory_order_relaxed); }

int wakeup_wait(struct wakeup *w, uint32_t seen, int64_t timeout_ns)
{
    struct timespec ts, *tp = NULL;
    if (timeout_ns >= 0) {
        ts.tv_sec = (time_t)(timeout_ns / 1000000000);
        ts.tv_nsec = (long)(timeout_ns % 1000000000);
        tp = &ts;
    }
    /* a relative timeout (FUTEX_WAIT measures it on CLOCK_MONOTONIC) */
    long rc = raw_syscall4(SYS_futex, (long)&w->count, FUTEX_WAIT_PRIVATE, (long)seen, (long)tp);
    int woken = rc == 0 || rc == -EAGAIN;
    atomic_store_explicit(&w->sleeping, 0, memory_order_relaxed);
    return woken ? 0 : -1;
}

void wakeup_signal(struct wakeup *w)
{
    atomic_fetch_add(&w->count, 1);
    if (atomic_load(&w->sleeping)) /* errno untouched: the raw call returns -errno */
        raw_syscall4(SYS_futex, (long)&w->count, FUTEX_WAKE_PRIVATE, INT_MAX, 0);
}

void wakeup_reset(struct wakeup *w)
{
    atomic_store_explicit(&w->count, 0, memory_order_relaxed);
    atomic_store_explicit(&w->sleeping, 0, memory_order_relaxed);
}
