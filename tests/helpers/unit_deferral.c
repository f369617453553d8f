/* unit_deferral — the deferral machinery (deferral.c, message_api.c, with the id table and the
 * ring) driven by real threads against a stand-in reader thread, the library's other parts
 * stubbed: many application threads end transactions while the "reader" adds ids and delivers;
 * every held transaction must come out exactly once, after its delay, with its ids; the message
 * callback pair must never tear. Built with ASan/UBSan by make test-helpers; for ThreadSanitizer:
 *   gcc -std=c11 -D_GNU_SOURCE -O1 -g -Iinclude -Ipreload -pthread -fsanitize=thread \
 *       -o unit_deferral_tsan tests/helpers/unit_deferral.c
 * usage: unit_deferral → "ok N checks" */
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../preload/deferral/accum.c"
#include "../../preload/leaves/base64url.c"
#include "../../preload/leaves/clock.c"
#include "../../preload/deferral/deferral.c"
#include "../../preload/leaves/fd_safe.c"
#include "../../preload/leaves/json.c"
#include "../../preload/api/message_api.c"
#include "../../preload/messages/profiler_state.c"
#include "../../preload/deferral/pull_queue.c"
#include "../../preload/leaves/random.c"
#include "../../preload/messages/json_lines.c"
#include "../../preload/deferral/txqueue.c"
#include "../../preload/leaves/utf8.c"

/* ---- stubs for the rest of the library ------------------------------------------------------ */
_Atomic uint64_t proflink_stat_counters[STAT_COUNT];
int runtime_active(void) { return 1; }
int runtime_sandboxed(void) { return 0; }
int log_enabled(enum log_level level) { return level != LOG_OFF; } /* arguments evaluated */
void log_msg(enum log_level level, const char *fmt, ...)
{
    (void)level;
    (void)fmt;
}
int fifo_enabled(void) { return 0; }
int reader_ensure_running(void) { return 0; }
void fork_sequence_check_process(void) {}
void fifo_write(const char *buf, size_t len, unsigned n, int signals_blocked)
{
    (void)buf, (void)len, (void)n, (void)signals_blocked;
}

#include "check.h"

/* ---- the stand-in reader ------------------------------------------------------------------- */
static sem_t wake_sem;
static _Atomic int stop_reader;
static pthread_t reader_thread;
static void test_wake(void) { sem_post(&wake_sem); }

#define THREADS 4
#define PER_THREAD 20000
static _Atomic unsigned delivered[THREADS * PER_THREAD];
static _Atomic unsigned long late_ids, early, total_delivered, immediate;

static void on_txn(const uint8_t trace_id[16], const uint8_t transaction_id[8],
                   const proflink_stack_count *ids, size_t n, void *user)
{
    (void)trace_id;
    uint32_t k;
    memcpy(&k, transaction_id, 4);
    uint64_t end_ns = (uint64_t)(uintptr_t)user;
    /* held ones (delivered on the reader) never before their delay */
    if (pthread_equal(pthread_self(), reader_thread) &&
        clock_monotonic_ns() < end_ns + (uint64_t)profiler_delay_ms() * 1000000ull)
        atomic_fetch_add(&early, 1);
    for (size_t i = 0; i < n; i++)
        if (ids[i].count != 2)
            atomic_fetch_add(&late_ids, 1);
    if (k < THREADS * PER_THREAD)
        atomic_fetch_add(&delivered[k], 1);
    atomic_fetch_add(&total_delivered, 1);
}

static void *reader(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop_reader)) {
        int64_t wait = deferral_run(clock_monotonic_ns(), 16);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t w = wait < 0 ? 20000000ull : (uint64_t)wait; /* stop flag every 20 ms */
        if (w > 20000000ull)
            w = 20000000ull;
        ts.tv_nsec += (long)w;
        ts.tv_sec += ts.tv_nsec / 1000000000;
        ts.tv_nsec %= 1000000000;
        sem_timedwait(&wake_sem, &ts);
    }
    return NULL;
}

/* ids for every transaction of thread t arrive "from the profiler" (added on another thread) */
static void *profiler(void *arg)
{
    (void)arg;
    proflink_message m[16];
    memset(m, 0, sizeof m);
    for (uint32_t k = 0; k < THREADS * PER_THREAD; k += 16) {
        for (int j = 0; j < 16; j++) {
            uint32_t key = k + (uint32_t)j;
            m[j].type = 1;
            memset(m[j].u.correlation.trace_id, 0x5a, 16);
            memset(m[j].u.correlation.transaction_id, 0, 8);
            memcpy(m[j].u.correlation.transaction_id, &key, 4);
            memset(m[j].u.correlation.stack_trace_id, (int)(key & 0xff), 16);
            m[j].u.correlation.count = 2;
        }
        deferral_add_ids(m, 16, clock_monotonic_ns());
    }
    return NULL;
}

static void *app(void *arg)
{
    uint32_t t = (uint32_t)(uintptr_t)arg;
    uint8_t trace[16], txn[8] = {0};
    memset(trace, 0x5a, 16);
    for (uint32_t i = 0; i < PER_THREAD; i++) {
        uint32_t k = t * PER_THREAD + i;
        memcpy(txn, &k, 4);
        int rc = deferral_end(trace, txn, 1, on_txn, (void *)(uintptr_t)clock_monotonic_ns());
        if (rc == PROFLINK_DELIVERED_NOW)
            atomic_fetch_add(&immediate, 1);
        if (i % 64 == 0) { /* pace a little, so that both paths are taken often */
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

/* ---- callback pairs ------------------------------------------------------------------------ */
static char ua[1], ub[1];
static _Atomic unsigned long torn, reads;
static void fa(const proflink_message *m, void *u) { (void)m, (void)u; }
static void fb(const proflink_message *m, void *u) { (void)m, (void)u; }
static _Atomic int stop_flip;

static void *flipper(void *arg)
{
    (void)arg;
    for (unsigned long i = 0; !atomic_load(&stop_flip); i++)
        proflink_set_message_callback(i & 1 ? fb : fa, i & 1 ? ub : ua);
    return NULL;
}

static void test_callback_pairs(void)
{
    pthread_t f[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&f[i], NULL, flipper, NULL);
    for (int i = 0; i < 2000000; i++) {
        proflink_message_fn fn;
        void *u;
        message_callback_get(&fn, &u);
        atomic_fetch_add(&reads, 1);
        if (!((fn == fa && u == ua) || (fn == fb && u == ub) || (!fn && !u)))
            atomic_fetch_add(&torn, 1);
    }
    atomic_store(&stop_flip, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(f[i], NULL);
    CHECK(atomic_load(&torn) == 0);
}

int main(void)
{
    sem_init(&wake_sem, 0, 0);
    /* 1000: smaller than what is in flight, so overflows happen; held from the start (mode true) */
    CHECK(deferral_init(1000, 1, test_wake) == 0);
    deferral_enable();
    profiler_registered(5, "h", 1);

    pthread_t p, a[THREADS];
    pthread_create(&reader_thread, NULL, reader, NULL);
    pthread_create(&p, NULL, profiler, NULL);
    for (uintptr_t t = 0; t < THREADS; t++)
        pthread_create(&a[t], NULL, app, (void *)t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(a[t], NULL);
    pthread_join(p, NULL);
    for (int i = 0; i < 500 && atomic_load(&total_delivered) < THREADS * PER_THREAD; i++) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    atomic_store(&stop_reader, 1);
    sem_post(&wake_sem);
    pthread_join(reader_thread, NULL);

    int once = 1;
    for (int k = 0; k < THREADS * PER_THREAD; k++)
        if (atomic_load(&delivered[k]) != 1)
            once = 0;
    CHECK(once);
    CHECK(atomic_load(&total_delivered) == THREADS * PER_THREAD);
    CHECK(atomic_load(&early) == 0);
    CHECK(atomic_load(&late_ids) == 0);
    CHECK(stat_get(STAT_TRANSACTIONS_DEFERRED) + stat_get(STAT_TRANSACTIONS_IMMEDIATE) ==
          THREADS * PER_THREAD);
    CHECK(stat_get(STAT_TRANSACTIONS_IMMEDIATE) == atomic_load(&immediate));
    CHECK(stat_get(STAT_QUEUE_OVERFLOWS) == atomic_load(&immediate));
    printf("deferred %llu, delivered at once (queue full) %lu\n",
           (unsigned long long)stat_get(STAT_TRANSACTIONS_DEFERRED), atomic_load(&immediate));

    test_callback_pairs();

    char host[8];
    CHECK(proflink_host_id(host, sizeof host) == 1 && !strcmp(host, "h"));
    CHECK(proflink_samples_delay_ms() == 5);
    if (failures) {
        printf("FAILED %d of %d checks\n", failures, checks);
        return 1;
    }
    printf("ok %d checks\n", checks);
    return 0;
}
