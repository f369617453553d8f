/* switcher — a tiny tracer for the end-to-end tests: one thread switches its context through
 * proflink's API between two traces and none, in CPU sections of known length, while a second
 * thread spins without ever setting a context. The API is found with dlsym.
 * usage: switcher SECONDS STATS_FILE
 * Rounds of: trace A for 20 ms of CPU, trace B for 40 ms, no context for 20 ms (thread CPU time),
 * for SECONDS of wall time. Then prints "cpu_ms a=… b=… none=…" (the CPU the switching thread
 * spent in each section), and rewrites STATS_FILE every 100 ms with proflink's counters
 * ("received=N correlations=N discarded=N a=N b=N other=N": proflink's counters, then the
 * correlation counts its callback got per transaction) until SIGTERM or SIGINT, so that the test can wait
 * for the profiler's last datagrams. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proflink.h"

typedef int (*set_trace_fn)(const uint8_t *, const uint8_t *, const uint8_t *, uint8_t);
typedef void (*clear_fn)(void);
typedef int (*stats_fn)(proflink_stats *, size_t);
typedef void (*set_callback_fn)(proflink_message_fn, void *);

static const uint8_t TRACE_A[16] = {0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
                                    0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36};
static const uint8_t SPAN_A[8] = {0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7};
static const uint8_t TXN_A[8] = {0x5a, 0x5a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a};
static const uint8_t TRACE_B[16] = {0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd,
                                    0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c};
static const uint8_t SPAN_B[8] = {0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31};
static const uint8_t TXN_B[8] = {0x5a, 0x5a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0b};

static _Atomic int stop;
/* correlation messages received per transaction (the callback runs on proflink's reader) */
static _Atomic unsigned long got_a, got_b, got_other;

static void on_message(const proflink_message *m, void *user)
{
    (void)user;
    if (m->type != PROFLINK_MSG_CORRELATION)
        return;
    const uint8_t *txn = m->u.correlation.transaction_id;
    unsigned long n = m->u.correlation.count;
    if (!memcmp(txn, TXN_A, 8))
        atomic_fetch_add(&got_a, n);
    else if (!memcmp(txn, TXN_B, 8))
        atomic_fetch_add(&got_b, n);
    else
        atomic_fetch_add(&got_other, n);
}

static double ts(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* burns `ms` of this thread's CPU time; returns what it really burned */
static double spin_cpu(double ms)
{
    volatile unsigned long x = 0;
    double start = ts(CLOCK_THREAD_CPUTIME_ID), now;
    while ((now = ts(CLOCK_THREAD_CPUTIME_ID)) - start < ms)
        for (int i = 0; i < 5000; i++)
            x += (unsigned long)i;
    return now - start;
}

static void *bystander(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "no-context");
    while (!atomic_load(&stop))
        spin_cpu(10);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: switcher SECONDS STATS_FILE\n");
        return 2;
    }
    double seconds = atof(argv[1]);
    set_trace_fn set_trace = (set_trace_fn)dlsym(RTLD_DEFAULT, "proflink_set_trace");
    clear_fn clear = (clear_fn)dlsym(RTLD_DEFAULT, "proflink_clear_trace");
    stats_fn get_stats = (stats_fn)dlsym(RTLD_DEFAULT, "proflink_get_stats");
    set_callback_fn set_callback =
        (set_callback_fn)dlsym(RTLD_DEFAULT, "proflink_set_message_callback");
    if (!set_trace || !clear || !get_stats || !set_callback) {
        fprintf(stderr, "switcher: proflink is not loaded\n");
        return 1;
    }
    /* a consumer: without one proflink starts no reader and the datagrams stay in the socket */
    set_callback(on_message, NULL);
    pthread_setname_np(pthread_self(), "switcher");
    pthread_t t;
    pthread_create(&t, NULL, bystander, NULL);
    double a = 0, b = 0, none = 0, end = ts(CLOCK_MONOTONIC) + seconds * 1e3;
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    while (ts(CLOCK_MONOTONIC) < end) {
        set_trace(TRACE_A, SPAN_A, TXN_A, 1);
        a += spin_cpu(20);
        set_trace(TRACE_B, SPAN_B, TXN_B, 1);
        b += spin_cpu(40);
        clear();
        none += spin_cpu(20);
    }
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    printf("cpu_ms a=%.0f b=%.0f none=%.0f\n", a, b, none);
    fflush(stdout);

    /* blocked only now: until here SIGTERM ends the program as usual */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    struct timespec tick = {0, 100 * 1000 * 1000};
    siginfo_t si;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[2]);
    do {
        proflink_stats s;
        get_stats(&s, sizeof s);
        FILE *f = fopen(tmp, "w");
        if (!f)
            return 1;
        fprintf(f, "received=%llu correlations=%llu discarded=%llu a=%lu b=%lu other=%lu\n",
                (unsigned long long)s.messages_received, (unsigned long long)s.correlations,
                (unsigned long long)(s.discarded_truncated + s.discarded_oversized +
                                     s.ignored_unknown_type),
                atomic_load(&got_a), atomic_load(&got_b), atomic_load(&got_other));
        fclose(f);
        rename(tmp, argv[2]);
    } while (sigtimedwait(&sigs, &si, &tick) < 0);
    return 0;
}
