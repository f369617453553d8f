/* api_demo_service — a small multi-threaded "service" that reports its traces to proflink, for
 * the demo and the agent tests. It finds the API with dlsym, so it runs unchanged without proflink
 * (every call is then skipped).
 *
 * Usage: api_demo_service [-s SECONDS] [-t THREADS]     (defaults 10 s, 3 threads)
 *
 * Each worker thread serves "requests" until the time is up: a new random trace id and
 * transaction id, proflink_set_trace, CPU work in one of three functions with recognisable names
 * (compute_prices, render_report > format_row, hash_passwords > mix_round), proflink_clear_trace,
 * then proflink_end_transaction (sampled). At the end it waits for the deferred transactions to
 * be delivered (at most samples-delay-ms + 3 s) and exits 0.
 *
 * Output, one line per write() (so threads never mix lines):
 *   ready pid=P api=0|1 threads=N seconds=S
 *   registration delay_ms=D host_id=H          a profiler registered (message callback)
 *   txn trace=<32 hex> transaction=<16 hex> n=N ids=ID:C,…   a transaction delivered with its
 *                                              stack-trace ids (base64url, sorted; "-" if none)
 *   done requests=R deferred=D delivered=V correlations=C samples=S delay_ms=D
 * where correlations counts correlation messages and samples the sum of their counts. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "out_line.h"

#include "proflink.h"

static void (*api_set)(const uint8_t *, const uint8_t *, const uint8_t *, uint8_t);
static void (*api_clear)(void);
static int (*api_end)(const uint8_t *, const uint8_t *, uint8_t, proflink_transaction_fn, void *);
static void (*api_set_cb)(proflink_message_fn, void *);
static uint32_t (*api_delay)(void);

static _Atomic unsigned long requests, deferred, delivered, correlations, samples;
static struct timespec deadline;
static volatile uint64_t sink; /* keeps the work from being optimized away */


static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int past(const struct timespec *t)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec > t->tv_sec || (ts.tv_sec == t->tv_sec && ts.tv_nsec >= t->tv_nsec);
}

static void hex(const uint8_t *b, size_t n, char *o)
{
    for (size_t i = 0; i < n; i++)
        sprintf(o + 2 * i, "%02x", b[i]);
}

static void b64url(const uint8_t id[16], char out[23])
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t o = 0;
    for (size_t i = 0; i < 16; i += 3) {
        uint32_t v = (uint32_t)id[i] << 16 | (i + 1 < 16 ? (uint32_t)id[i + 1] << 8 : 0) |
                     (i + 2 < 16 ? id[i + 2] : 0);
        out[o++] = a[(v >> 18) & 63];
        out[o++] = a[(v >> 12) & 63];
        if (i + 1 < 16)
            out[o++] = a[(v >> 6) & 63];
        if (i + 2 < 16)
            out[o++] = a[v & 63];
    }
    out[o] = '\0';
}

/* ---- the "work": three recognisable CPU-bound functions ------------------------------------ */

__attribute__((noinline, noclone)) static uint64_t compute_prices(uint64_t seed, int64_t until)
{
    double price = (double)(seed % 1000) + 1.0;
    uint64_t n = 0;
    do {
        for (int i = 0; i < 20000; i++)
            price = price * 1.0000001 + 0.5 / (price + 1.0);
        n++;
    } while (now_ns() < until);
    return n + (uint64_t)price;
}

__attribute__((noinline, noclone)) static uint64_t format_row(uint64_t row)
{
    char buf[64];
    uint64_t h = 0;
    for (int i = 0; i < 400; i++) {
        int len = snprintf(buf, sizeof buf, "%llu|%d", (unsigned long long)row, i);
        for (int k = 0; k < len; k++)
            h = h * 31 + (uint8_t)buf[k];
    }
    return h;
}

__attribute__((noinline, noclone)) static uint64_t render_report(uint64_t seed, int64_t until)
{
    uint64_t h = seed;
    do
        h ^= format_row(h);
    while (now_ns() < until);
    return h;
}

__attribute__((noinline, noclone)) static uint64_t mix_round(uint64_t h)
{
    for (int i = 0; i < 50000; i++) {
        h ^= h >> 31;
        h *= 0x7fb5d329728ea185ULL;
        h ^= h >> 27;
    }
    return h;
}

__attribute__((noinline, noclone)) static uint64_t hash_passwords(uint64_t seed, int64_t until)
{
    uint64_t h = seed;
    do
        h = mix_round(h);
    while (now_ns() < until);
    return h;
}

/* ---- callbacks (reader thread, or the caller's thread when delivered at once) -------------- */

static void on_message(const proflink_message *m, void *user)
{
    (void)user;
    if (m->type == PROFLINK_MSG_CORRELATION) {
        correlations++;
        samples += m->u.correlation.count;
    } else if (m->type == PROFLINK_MSG_REGISTRATION) {
        out("registration delay_ms=%u host_id=%.*s", (unsigned)m->u.registration.samples_delay_ms,
            (int)m->u.registration.host_id_len,
            m->u.registration.host_id ? m->u.registration.host_id : "");
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

static void on_transaction(const uint8_t trace_id[16], const uint8_t transaction_id[8],
                           const proflink_stack_count *ids, size_t n, void *user)
{
    (void)user;
    char th[33], xh[17];
    hex(trace_id, 16, th);
    hex(transaction_id, 8, xh);
    static const size_t max = 128;
    char (*names)[40] = calloc(n < max ? n + 1 : max, sizeof *names);
    size_t shown = n < max ? n : max;
    char list[6000] = "-";
    if (names && shown) {
        for (size_t i = 0; i < shown; i++) {
            b64url(ids[i].stack_trace_id, names[i]);
            snprintf(names[i] + 22, sizeof names[i] - 22, ":%u", (unsigned)ids[i].count);
        }
        qsort(names, shown, sizeof *names, cmp_str);
        size_t o = 0;
        for (size_t i = 0; i < shown && o + 40 < sizeof list; i++)
            o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? "," : "", names[i]);
    }
    free(names);
    out("txn trace=%s transaction=%s n=%zu ids=%s", th, xh, n, list);
    delivered++;
}

/* ---- workers ------------------------------------------------------------------------------- */

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void *serve_requests(void *arg)
{
    uint64_t rng = (uint64_t)now_ns() ^ ((uint64_t)syscall(SYS_gettid) << 32) ^ (uintptr_t)arg;
    for (int i = 0; i < 8; i++)
        next_random(&rng);
    while (!past(&deadline)) {
        uint8_t trace_id[16], txn_id[8];
        uint64_t r1 = next_random(&rng), r2 = next_random(&rng), r3 = next_random(&rng);
        memcpy(trace_id, &r1, 8);
        memcpy(trace_id + 8, &r2, 8);
        memcpy(txn_id, &r3, 8);
        if (api_set)
            api_set(trace_id, txn_id, txn_id, 0x01);
        int64_t until = now_ns() + 20000000 + (int64_t)(next_random(&rng) % 40) * 1000000;
        switch (next_random(&rng) % 3) {
        case 0:
            sink += compute_prices(r1, until);
            break;
        case 1:
            sink += render_report(r2, until);
            break;
        default:
            sink += hash_passwords(r3, until);
            break;
        }
        if (api_clear)
            api_clear();
        requests++;
        if (api_end && api_end(trace_id, txn_id, 0x01, on_transaction, NULL) == PROFLINK_DEFERRED)
            deferred++;
        struct timespec pause = {0, 2000000};
        nanosleep(&pause, NULL);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int seconds = 10, threads = 3, c;
    while ((c = getopt(argc, argv, "s:t:")) != -1) {
        if (c == 's')
            seconds = atoi(optarg);
        else if (c == 't')
            threads = atoi(optarg);
        else {
            fprintf(stderr, "usage: api_demo_service [-s SECONDS] [-t THREADS]\n");
            return 2;
        }
    }
    if (seconds < 1 || threads < 1 || threads > 64) {
        fprintf(stderr, "api_demo_service: bad -s or -t\n");
        return 2;
    }
    api_set = (void (*)(const uint8_t *, const uint8_t *, const uint8_t *, uint8_t))dlsym(
        RTLD_DEFAULT, "proflink_set_trace");
    api_clear = (void (*)(void))dlsym(RTLD_DEFAULT, "proflink_clear_trace");
    api_end = (int (*)(const uint8_t *, const uint8_t *, uint8_t, proflink_transaction_fn,
                       void *))dlsym(RTLD_DEFAULT, "proflink_end_transaction");
    api_set_cb = (void (*)(proflink_message_fn, void *))dlsym(RTLD_DEFAULT,
                                                              "proflink_set_message_callback");
    api_delay = (uint32_t(*)(void))dlsym(RTLD_DEFAULT, "proflink_samples_delay_ms");
    if (api_set_cb)
        api_set_cb(on_message, NULL);

    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += seconds;
    out("ready pid=%d api=%d threads=%d seconds=%d", (int)getpid(), api_set != NULL, threads,
        seconds);

    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    if (!tids)
        return 1;
    for (int i = 0; i < threads; i++)
        if (pthread_create(&tids[i], NULL, serve_requests, (void *)(uintptr_t)(i + 1)) != 0) {
            fprintf(stderr, "api_demo_service: pthread_create failed\n");
            return 1;
        }
    for (int i = 0; i < threads; i++)
        pthread_join(tids[i], NULL);
    free(tids);

    /* deferred transactions are delivered samples-delay-ms after they ended */
    uint32_t delay = api_delay ? api_delay() : 0;
    int64_t give_up = now_ns() + (int64_t)(delay + 3000) * 1000000;
    while (api_end && delivered < requests && now_ns() < give_up) {
        struct timespec pause = {0, 10000000};
        nanosleep(&pause, NULL);
    }
    if (api_set_cb)
        api_set_cb(NULL, NULL);
    out("done requests=%lu deferred=%lu delivered=%lu correlations=%lu samples=%lu delay_ms=%u",
        (unsigned long)requests, (unsigned long)deferred, (unsigned long)delivered,
        (unsigned long)correlations, (unsigned long)samples, (unsigned)delay);
    return !api_end || delivered == requests ? 0 : 1;
}
