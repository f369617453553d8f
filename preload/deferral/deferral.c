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
#include "leaves/clock.h"
#include "messages/fifo.h"
#include "leaves/lock_reset.h"
#include "leaves/log.h"
#include "messages/profiler_state.h"
#include "pull_queue.h"
#include "messages/json_lines.h"
#include "leaves/runtime_state.h"
#include "leaves/spin.h"
#include "leaves/stats.h"
#include "txqueue.h"
#include "leaves/raw_syscall.h"

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
static int pid; /* of the process whose reader called deferral_init; 0 before */
/* deferral_init's: read by application threads after the reader's start published `ready` */
static uint32_t queue_capacity;
static int always;
static uint64_t last_expire_ns;
static _Atomic uint64_t overflow_warned_ns, overflows_unwarned;
static proflink_stack_count reader_ids[ACCUM_MAX_IDS_PER_KEY]; /* reader thread only */

int deferral_init(uint32_t capacity, int hold_always, void (*wake_reader)(void))
{
    static const struct accum_limits lim = {ACCUM_MAX_KEYS, ACCUM_MAX_IDS, ACCUM_MAX_IDS_PER_KEY};
    if (accum_init(&acc, &lim) != 0)
        return -1;
    if (txq_init(&queue, capacity) != 0) {
        accum_free(&acc);
        return -1;
    }
    wake = wake_reader;
    queue_capacity = capacity;
    always = hold_always;
    pid = (int)raw_getpid();
    last_expire_ns = clock_monotonic_ns();
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

/* Returns 0, or -1 when a pull result was dropped (pull queue full). with_fifo is 0 only in a
 * process created without fork's handlers, where the FIFO's lock may be a copy held forever. */
static int deliver(const uint8_t trace_id[16], const uint8_t transaction_id[8],
                   proflink_transaction_fn fn, void *user, const proflink_stack_count *ids,
                   size_t n, int on_reader, int with_fifo)
{
    int rc = 0;
    if (fn)
        fn(trace_id, transaction_id, ids, n, user);
    else
        rc = pull_queue_push(trace_id, transaction_id, ids, n);
    if (with_fifo && fifo_enabled()) {
        struct emit_ctx ctx = {on_reader};
        record_transaction(pid, trace_id, transaction_id, ids, n, emit_record, &ctx);
    }
    return rc;
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

static int deliver_now(const uint8_t trace_id[16], const uint8_t transaction_id[8],
                       proflink_transaction_fn fn, void *user, int same_process)
{
    proflink_stack_count local[LOCAL_IDS], *ids = local;
    size_t n = 0;
    if (same_process && atomic_load_explicit(&ready, memory_order_acquire) && acc_trylock()) {
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
    int rc = deliver(trace_id, transaction_id, fn, user, ids, n, 0, same_process);
    if (ids != local)
        free(ids);
    return rc;
}

static void warn_overflow(void)
{
    atomic_fetch_add_explicit(&overflows_unwarned, 1, memory_order_relaxed);
    uint64_t now = clock_monotonic_ns();
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
             queue_capacity, (unsigned long long)n);
}

int deferral_end(const uint8_t trace_id[16], const uint8_t transaction_id[8], uint8_t flags,
                 proflink_transaction_fn fn, void *user)
{
    /* A process made by a raw clone() (no fork handlers ran) still has its parent's state: a
     * "running" reader that is not there, locks that may be copies held forever. Its pid
     * differs from the one recorded when the reader started: deliver at once, touching no lock
     * that could be such a copy. (A real fork child passed through deferral_fork_child.)
     * Sandboxed, getpid is a system call of ours that the program's allowlist may punish with
     * death, so the recorded pid is trusted: a raw clone of a sandboxed process that holds a
     * transaction loses it (no reader there), which is better than killing every process
     * whose reader started before its sandbox. */
    int same_process = pid == 0 || runtime_sandboxed() || /* 0: no reader ever started */
                       (pid_t)pid == raw_getpid();
    int hold = same_process && (flags & 1) && atomic_load_explicit(&ready, memory_order_acquire) &&
               (always || profiler_seen());
    if (hold) {
        struct txq_item it;
        memcpy(it.trace_id, trace_id, 16);
        memcpy(it.transaction_id, transaction_id, 8);
        it.fn = fn;
        it.user = user;
        it.end_ns = clock_monotonic_ns();
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
    return deliver_now(trace_id, transaction_id, fn, user, same_process) == 0 ? PROFLINK_DELIVERED_NOW
                                                                            : -1;
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

/* Takes the ids gathered for it and delivers one transaction taken from the queue. */
static void deliver_taken(const struct txq_item *it, proflink_stack_count *ids, int on_reader)
{
    uint64_t evicted;
    pthread_mutex_lock(&acc_lock);
    size_t n = accum_take(&acc, it->trace_id, it->transaction_id, ids, ACCUM_MAX_IDS_PER_KEY,
                          &evicted);
    pthread_mutex_unlock(&acc_lock);
    if (evicted)
        stat_add(STAT_IDS_EVICTED, evicted);
    deliver(it->trace_id, it->transaction_id, it->fn, it->user, ids, n, on_reader, 1);
}

int64_t deferral_run(uint64_t now, unsigned max)
{
    if (!queue.cells) /* not `ready`: what is held still goes out after deferral_disable */
        return -1;
    uint64_t delay_ns = (uint64_t)profiler_delay_ms() * NS_PER_MS;
    struct txq_item it;
    uint64_t head_end;
    for (;;) {
        /* the cell is free again before the callback runs */
        int r = txq_take(&queue, now >= delay_ns ? now - delay_ns : 0, &it, &head_end);
        if (r == TXQ_NOT_DUE) {
            expire(now, delay_ns);
            return (int64_t)(head_end + delay_ns - now);
        }
        if (r == TXQ_EMPTY)
            break;
        deliver_taken(&it, reader_ids, 1);
        now = clock_monotonic_ns();
        if (--max == 0)
            return 0; /* more may be due: the caller looks at its socket first */
    }
    expire(now, delay_ns);
    return -1;
}

int deferral_flush(void)
{
    if (!queue.cells || (pid_t)pid != raw_getpid())
        return 0;
    proflink_stack_count *ids = malloc(ACCUM_MAX_IDS_PER_KEY * sizeof *ids);
    proflink_stack_count none[1];
    int n = 0;
    struct txq_item it;
    uint64_t unused;
    while (txq_take(&queue, UINT64_MAX, &it, &unused) == TXQ_TAKEN) {
        if (ids) {
            deliver_taken(&it, ids, 0);
        } else { /* out of memory: still delivered, without ids */
            deliver(it.trace_id, it.transaction_id, it.fn, it.user, none, 0, 0, 1);
        }
        n++;
    }
    free(ids);
    return n;
}

/* ---- fork ---------------------------------------------------------------------------------- */
void deferral_fork_prepare(void) { pthread_mutex_lock(&acc_lock); }
void deferral_fork_parent(void) { pthread_mutex_unlock(&acc_lock); }
void deferral_fork_orphan(void) { lock_reset(&acc_lock); }

void deferral_fork_child(void)
{
    pthread_mutex_unlock(&acc_lock);
    atomic_store_explicit(&ready, 0, memory_order_relaxed);
    pid = 0; /* this child's own reader records its pid when it starts */
    if (queue.cells)
        txq_free(&queue);
    accum_free(&acc);
}
