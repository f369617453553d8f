/* profiler_state.c — see profiler_state.h. */
#include "profiler_state.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "leaves/lock_reset.h"
#include "leaves/spin.h"
#include "leaves/utf8.h"

/* ---- The callback: {fn, user} as one pair --------------------------------------------------
 * A sequence lock. Writers (any thread, rarely) serialize on a mutex held for four stores; the
 * reader thread reads without a lock and retries if a write overlapped, so it never calls a fn
 * with another fn's user pointer, and a writer never waits for a callback to return (it may be
 * called from inside the callback). A callback call that read the old pair just before
 * proflink_set_message_callback returned may still run once after it. */
static pthread_mutex_t cb_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic unsigned cb_seq;
static _Atomic(proflink_message_fn) cb_fn;
static _Atomic(void *) cb_user;

void message_callback_set(proflink_message_fn fn, void *user)
{
    pthread_mutex_lock(&cb_lock);
    unsigned s = atomic_load_explicit(&cb_seq, memory_order_relaxed);
    atomic_store_explicit(&cb_seq, s + 1, memory_order_relaxed); /* odd: being written */
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&cb_fn, fn, memory_order_relaxed);
    atomic_store_explicit(&cb_user, user, memory_order_relaxed);
    atomic_store_explicit(&cb_seq, s + 2, memory_order_release);
    pthread_mutex_unlock(&cb_lock);
}

void message_callback_get(proflink_message_fn *fn, void **user)
{
    for (;;) {
        unsigned s1 = atomic_load_explicit(&cb_seq, memory_order_acquire);
        if (s1 & 1) {
            cpu_relax();
            continue;
        }
        proflink_message_fn f = atomic_load_explicit(&cb_fn, memory_order_relaxed);
        void *u = atomic_load_explicit(&cb_user, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&cb_seq, memory_order_relaxed) == s1) {
            *fn = f;
            *user = u;
            return;
        }
    }
}

/* ---- What the profiler told us ------------------------------------------------------------- */
static _Atomic uint32_t delay_ms = DEFAULT_SAMPLES_DELAY_MS;
static _Atomic int seen;
/* The host id is read by application threads and written by the reader, both rarely: a mutex
 * held for a copy of at most 256 bytes, never across anything that can wait. */
static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;
static char host_id[HOST_ID_MAX + 1];
static size_t host_id_len;

void profiler_registered(uint32_t samples_delay_ms, const char *id, size_t len)
{
    if (samples_delay_ms > SAMPLES_DELAY_MAX_MS)
        samples_delay_ms = SAMPLES_DELAY_MAX_MS;
    atomic_store_explicit(&delay_ms, samples_delay_ms, memory_order_relaxed);
    if (!id)
        return; /* minor 1 carries no host id: the last one known stays */
    len = utf8_prefix(id, len, HOST_ID_MAX); /* do not split a UTF-8 sequence */
    pthread_mutex_lock(&host_lock);
    memcpy(host_id, id, len);
    host_id[len] = 0;
    host_id_len = len;
    pthread_mutex_unlock(&host_lock);
}

int profiler_mark_seen(void)
{
    if (atomic_load_explicit(&seen, memory_order_relaxed))
        return 0;
    return atomic_exchange_explicit(&seen, 1, memory_order_relaxed) == 0;
}

int profiler_seen(void) { return atomic_load_explicit(&seen, memory_order_relaxed); }

uint32_t profiler_delay_ms(void) { return atomic_load_explicit(&delay_ms, memory_order_relaxed); }

size_t profiler_host_id(char *buf, size_t cap)
{
    pthread_mutex_lock(&host_lock);
    size_t n = host_id_len;
    if (buf && cap) {
        size_t c = n < cap - 1 ? n : cap - 1;
        memcpy(buf, host_id, c);
        buf[c] = 0;
    }
    pthread_mutex_unlock(&host_lock);
    return n;
}

/* ---- fork ---------------------------------------------------------------------------------- */
void profiler_state_fork_prepare(void)
{
    pthread_mutex_lock(&cb_lock);
    pthread_mutex_lock(&host_lock);
}

void profiler_state_fork_parent(void)
{
    pthread_mutex_unlock(&host_lock);
    pthread_mutex_unlock(&cb_lock);
}

void profiler_state_fork_orphan(void)
{
    lock_reset(&cb_lock);
    lock_reset(&host_lock);
}

void profiler_state_fork_child(void)
{
    pthread_mutex_unlock(&host_lock);
    pthread_mutex_unlock(&cb_lock);
}
