/* deferral.c — see deferral.h. The held transactions are a lock-free ring (txqueue.h: why);
 * the gathered ids a table (accum.h) under acc_lock, which the reader holds for the table work
 * of one receive batch or one delivery, never across a callback or a system call. */
#include "deferral.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "accum.h"
#include "config.h"
#include "fifo.h"
#include "log.h"
#include "message_api.h"
#include "records.h"
#include "runtime.h"
#include "spin.h"
#include "stats.h"
#include "txqueue.h"

#define NS_PER_MS 1000000ull
#define NS_PER_S 1000000000ull
#define EXPIRE_EVERY_NS NS_PER_S
#define MIN_ID_AGE_NS (60 * NS_PER_S)
#define OVERFLOW_WARN_EVERY_NS (10 * NS_PER_S)
#define LOCAL_IDS 32 /* ids an application thread copies on its stack; more are malloc'd */

static struct txqueue queue;
static struct accum acc;
static pthread_mutex_t acc_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int ready; /* queue and table exist and the reader runs */
static void (*wake)(void);
static int pid;
static uint64_t last_expire_ns;
static _Atomic uint64_t overflow_warned_ns, overflows_unwarned;
static proflink_stack_count reader_ids[ACCUM_MAX_IDS_PER_KEY]; /* reader thread only */

uint64_t deferral_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

int deferral_init(uint32_t capacity, void (*wake_reader)(void))
{
    static const struct accum_limits lim = {ACCUM_MAX_KEYS, ACCUM_MAX_IDS, ACCUM_MAX_IDS_PER_KEY};
    if (accum_init(&acc, &lim) != 0)
        return -1;
    if (txq_init(&queue, capacity) != 0) {
        accum_free(&acc);
        return -1;
    }
    wake = wake_reader;
    pid = (int)getpid();
    last_expire_ns = deferral_now_ns();
    return 0;
}

void deferral_enable(void) { atomic_store_explicit(&ready, 1, memory_order_release); }
void deferral_disable(void) { atomic_store_explicit(&ready, 0, memory_order_relaxed); }

/* ---- Delivery ------------------------------------------------------------------------------ */
struct emit_ctx {
    int signals_blocked;
};

static void emit_record(const char *line, size_t len, void *ctx)
{
    fifo_write(line, len, 1, ((struct emit_ctx *)ctx)->signals_blocked);
}

static void deliver(const uint8_t trace_id[16], const uint8_t transaction_id[8],
                    proflink_transaction_fn fn, void *user, const proflink_stack_count *ids,
                    size_t n, int on_reader)
{
    fn(trace_id, transaction_id, ids, n, user);
    if (fifo_enabled()) {
        struct emit_ctx ctx = {on_reader};
        record_transaction(pid, trace_id, transaction_id, ids, n, emit_record, &ctx);
    }
}

/* The reader holds acc_lock for microseconds; an application thread tries a few times and
 * then goes without (deferral.h). */
static int acc_trylock(void)
{
    for (int attempt = 0; attempt < 4; attempt++) {
        if (pthread_mutex_trylock(&acc_lock) == 0)
            return 1;
        for (int i = 0; i < 64; i++)
            cpu_relax();
    }
    return 0;
}

static void deliver_now(const uint8_t trace_id[16], const uint8_t transaction_id[8],
                        proflink_transaction_fn fn, void *user)
{
    proflink_stack_count local[LOCAL_IDS], *ids = local;
    size_t n = 0;
    if (atomic_load_explicit(&ready, memory_order_acquire) && acc_trylock()) {
        size_t want = accum_count(&acc, trace_id, transaction_id);
        if (want > LOCAL_IDS) {
            ids = malloc(want * sizeof *ids);
            if (!ids) {
                ids = local;
                want = LOCAL_IDS;
            }
        }
        uint64_t evicted = 0;
        if (want)
            n = accum_take(&acc, trace_id, transaction_id, ids, want, &evicted);
        pthread_mutex_unlock(&acc_lock);
        if (evicted)
            stat_add(STAT_IDS_EVICTED, evicted);
    }
    deliver(trace_id, transaction_id, fn, user, ids, n, 0);
    if (ids != local)
        free(ids);
}

static void warn_overflow(void)
{
    atomic_fetch_add_explicit(&overflows_unwarned, 1, memory_order_relaxed);
    uint64_t now = deferral_now_ns();
    uint64_t last = atomic_load_explicit(&overflow_warned_ns, memory_order_relaxed);
    if (last && now - last < OVERFLOW_WARN_EVERY_NS)
        return;
    if (!atomic_compare_exchange_strong_explicit(&overflow_warned_ns, &last, now,
                                                 memory_order_relaxed, memory_order_relaxed))
        return; /* another thread warns */
    uint64_t n = atomic_exchange_explicit(&overflows_unwarned, 0, memory_order_relaxed);
    log_warn("deferral queue full (%u transactions held): %llu transaction(s) delivered without "
             "waiting for their profiling data, which may be incomplete; raise "
             "ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_BUFFER_SIZE",
             proflink_config.buffer_size, (unsigned long long)n);
}

int deferral_end(const uint8_t trace_id[16], const uint8_t transaction_id[8], uint8_t flags,
                 proflink_transaction_fn fn, void *user)
{
    if (!runtime_active()) { /* disabled: a no-op that hands the transaction straight back */
        proflink_stack_count none[1];
        fn(trace_id, transaction_id, none, 0, user);
        return PROFLINK_DELIVERED_NOW;
    }
    int hold = (flags & 1) && atomic_load_explicit(&ready, memory_order_acquire) &&
               (proflink_config.mode == MODE_TRUE || profiler_seen());
    if (hold) {
        struct txq_item it;
        memcpy(it.trace_id, trace_id, 16);
        memcpy(it.transaction_id, transaction_id, 8);
        it.fn = fn;
        it.user = user;
        it.end_ns = deferral_now_ns();
        int must_wake;
        if (txq_push(&queue, &it, &must_wake)) {
            stat_inc(STAT_TRANSACTIONS_DEFERRED);
            if (must_wake)
                wake();
            return PROFLINK_DEFERRED;
        }
        stat_inc(STAT_QUEUE_OVERFLOWS);
        warn_overflow();
    }
    stat_inc(STAT_TRANSACTIONS_IMMEDIATE);
    deliver_now(trace_id, transaction_id, fn, user);
    return PROFLINK_DELIVERED_NOW;
}

/* ---- Reader side --------------------------------------------------------------------------- */
void deferral_add_ids(const proflink_message *msgs, size_t n, uint64_t now_ns)
{
    if (!atomic_load_explicit(&ready, memory_order_relaxed) || n == 0)
        return;
    uint64_t evicted = 0;
    pthread_mutex_lock(&acc_lock);
    for (size_t i = 0; i < n; i++) {
        const proflink_message *m = &msgs[i];
        evicted += accum_add(&acc, m->u.correlation.trace_id, m->u.correlation.transaction_id,
                             m->u.correlation.stack_trace_id, m->u.correlation.count, now_ns);
    }
    pthread_mutex_unlock(&acc_lock);
    if (evicted)
        stat_add(STAT_IDS_EVICTED, evicted);
}

/* Ids of keys nobody asked for within max(60 s, 10 × delay) go (accum.h). */
static void expire(uint64_t now, uint64_t delay_ns)
{
    if (now - last_expire_ns < EXPIRE_EVERY_NS)
        return;
    last_expire_ns = now;
    uint64_t age = 10 * delay_ns > MIN_ID_AGE_NS ? 10 * delay_ns : MIN_ID_AGE_NS;
    if (now <= age)
        return;
    pthread_mutex_lock(&acc_lock);
    uint64_t evicted = accum_expire(&acc, now - age);
    pthread_mutex_unlock(&acc_lock);
    if (evicted)
        stat_add(STAT_IDS_EVICTED, evicted);
}

int64_t deferral_run(uint64_t now)
{
    if (!queue.cells) /* not `ready`: what is held still goes out after deferral_disable */
        return -1;
    uint64_t delay_ns = (uint64_t)profiler_delay_ms() * NS_PER_MS;
    const struct txq_item *head;
    while ((head = txq_peek(&queue)) != NULL) {
        uint64_t due = head->end_ns + delay_ns;
        if (due > now) {
            expire(now, delay_ns);
            return (int64_t)(due - now);
        }
        struct txq_item it = *head;
        txq_pop(&queue); /* the cell is free again before the callback runs */
        uint64_t evicted;
        pthread_mutex_lock(&acc_lock);
        size_t n = accum_take(&acc, it.trace_id, it.transaction_id, reader_ids,
                              ACCUM_MAX_IDS_PER_KEY, &evicted);
        pthread_mutex_unlock(&acc_lock);
        if (evicted)
            stat_add(STAT_IDS_EVICTED, evicted);
        deliver(it.trace_id, it.transaction_id, it.fn, it.user, reader_ids, n, 1);
        now = deferral_now_ns();
    }
    expire(now, delay_ns);
    return -1;
}

/* ---- fork ---------------------------------------------------------------------------------- */
void deferral_fork_prepare(void) { pthread_mutex_lock(&acc_lock); }
void deferral_fork_parent(void) { pthread_mutex_unlock(&acc_lock); }

void deferral_fork_child(void)
{
    pthread_mutex_unlock(&acc_lock);
    atomic_store_explicit(&ready, 0, memory_order_relaxed);
    if (queue.cells)
        txq_free(&queue);
    accum_free(&acc);
}
