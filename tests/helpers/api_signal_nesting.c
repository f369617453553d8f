/* api_signal_nesting — a signal handler that calls the context API while it interrupted the same
 * thread inside the API (proflink.h: "any thread, at any time"), checked the profiler's way.
 *
 * The main thread loops setting context A1, A2, clearing, setting attributes. A timer signal
 * (SIGALRM, every few microseconds, aimed at this thread) runs a handler that sets context B:
 * half the time scoped (proflink_swap_context(B, &prev) ... proflink_swap_context(&prev)), half
 * the time left in place. A second signal (SIGPROF) plays the profiler: like an eBPF program it
 * interrupts the thread wherever it is and reads both records through the exported TLS
 * pointers. The SIGALRM handler raises it before returning while it is blocked there, so a
 * sample lands exactly where the interrupted call resumes; another timer adds samples at random
 * places, and the loop samples after every call too. A record marked valid must hold one whole
 * context: every byte of its trace id, span id and transaction id (apmint) or the transaction
 * id's hex attribute (OTel) from the same one of A1, A2, B.
 * usage: api_signal_nesting SECONDS
 * Prints "samples N nested M" and "ok", or "FAIL <what>" for the first bad sample; exit 0/1. */
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "proflink.h"

/* The contract's layouts (docs/formats.md), as the profiler knows them. */
struct apm_rec {
    uint16_t minor_version;
    uint8_t valid, trace_present, trace_flags;
    uint8_t trace_id[16], span_id[8], transaction_id[8];
} __attribute__((packed));

struct otel_rec {
    uint8_t trace_id[16], span_id[8];
    uint8_t valid, trace_flags;
    uint16_t attrs_size;
    uint8_t attrs[612];
} __attribute__((packed));

/* Each context's ids are one byte repeated: a mixed record shows at the first differing byte. */
static const uint8_t CTX_TAGS[3] = {0xa1, 0xa2, 0xb0};
#define SPAN_OF(t) ((uint8_t)((t) ^ 0x0f))
#define TXN_OF(t) ((uint8_t)((t) ^ 0xf0))

static void **apm_slot, **otel_slot; /* this thread's TLS pointers (the profiler's view) */
static volatile sig_atomic_t failed, samples, nested;
static char why[256];
static void (*swap_ctx_fn)(const proflink_context *, proflink_context *);
static void (*set_ctx_fn)(const proflink_context *);

static void make_ctx(proflink_context *c, uint8_t tag)
{
    memset(c, 0, sizeof *c);
    memset(c->trace_id, tag, 16);
    memset(c->span_id, SPAN_OF(tag), 8);
    memset(c->transaction_id, TXN_OF(tag), 8);
    c->trace_flags = 1;
}

static int all(const uint8_t *p, size_t n, uint8_t v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

static int known_tag(uint8_t t) { return t == CTX_TAGS[0] || t == CTX_TAGS[1] || t == CTX_TAGS[2]; }

static void fail(const char *what, uint8_t tag, const uint8_t *ids)
{
    if (failed)
        return;
    failed = 1;
    /* snprintf is not async-signal-safe in general, but this thread's only other writers of
     * `why` are these handlers, and the first failure ends the run */
    int n = snprintf(why, sizeof why, "%s (tag %02x):", what, tag);
    for (int i = 0; i < 32 && n < (int)sizeof why - 3; i++)
        n += snprintf(why + n, sizeof why - (size_t)n, " %02x", ids[i]);
}

#define WRITER_NS 29989
#define SAMPLER_NS 47017

static const char HEX[] = "0123456789abcdef";

/* The profiler's read of both records: whatever is marked valid must be one whole context. */
static void sample(void)
{
    samples++;
    const struct apm_rec *a = *apm_slot;
    if (a && a->valid && a->trace_present) {
        uint8_t t = a->trace_id[0];
        if (!known_tag(t) || !all(a->trace_id, 16, t) || !all(a->span_id, 8, SPAN_OF(t)) ||
            !all(a->transaction_id, 8, TXN_OF(t)))
            fail("apmint record valid with mixed ids", t, a->trace_id);
    }
    const struct otel_rec *o = *otel_slot;
    if (o && o->valid && !all(o->trace_id, 16, 0)) {
        uint8_t t = o->trace_id[0];
        if (!known_tag(t) || !all(o->trace_id, 16, t) || !all(o->span_id, 8, SPAN_OF(t)))
            fail("OTel record valid with mixed ids", t, o->trace_id);
        /* key 0 (local_root_span_id) leads the attributes: [0][16][hex of the transaction id] */
        uint8_t x = TXN_OF(t);
        if (o->attrs_size < 18 || o->attrs[0] != 0 || o->attrs[1] != 16)
            fail("OTel record valid without its transaction entry", t, o->attrs);
        for (int i = 0; i < 16; i += 2)
            if (o->attrs[2 + i] != HEX[x >> 4] || o->attrs[3 + i] != HEX[x & 15])
                fail("OTel transaction entry of another context", t, o->attrs);
    }
}

static void on_prof(int sig)
{
    (void)sig;
    sample();
}

static void on_alrm(int sig)
{
    (void)sig;
    static unsigned n;
    proflink_context b, prev;
    make_ctx(&b, CTX_TAGS[2]);
    nested++;
    if (n++ & 1) {
        swap_ctx_fn(&b, &prev);
        sample();
        swap_ctx_fn(&prev, NULL);
    } else {
        set_ctx_fn(&b);
    }
    /* SIGPROF is blocked in here: this sample lands where the interrupted call resumes */
    raise(SIGPROF);
}

static int thread_timer(int sig, long ns)
{
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = sig;
#ifdef sigev_notify_thread_id /* musl; glibc before 2.41 names it only inside its union */
    ev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
#else
    ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
#endif
    timer_t t;
    if (timer_create(CLOCK_MONOTONIC, &ev, &t) != 0)
        return -1;
    struct itimerspec it = {{0, ns}, {0, ns}};
    return timer_settime(t, 0, &it, NULL);
}

int main(int argc, char **argv)
{
    int seconds = argc > 1 ? atoi(argv[1]) : 2;
    swap_ctx_fn = (void (*)(const proflink_context *, proflink_context *))dlsym(
        RTLD_DEFAULT, "proflink_swap_context");
    set_ctx_fn = (void (*)(const proflink_context *))dlsym(RTLD_DEFAULT, "proflink_set_context");
    void (*clear)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "proflink_clear_trace");
    int (*set_attr)(const char *, const char *, size_t) =
        (int (*)(const char *, const char *, size_t))dlsym(RTLD_DEFAULT, "proflink_set_attribute");
    apm_slot = dlsym(RTLD_DEFAULT, "elastic_apm_profiling_correlation_tls_v1");
    otel_slot = dlsym(RTLD_DEFAULT, "otel_thread_ctx_v1");
    if (!swap_ctx_fn || !set_ctx_fn || !clear || !set_attr || !apm_slot || !otel_slot) {
        printf("FAIL proflink is not loaded\n");
        return 1;
    }
    proflink_context a[2];
    make_ctx(&a[0], CTX_TAGS[0]);
    make_ctx(&a[1], CTX_TAGS[1]);
    set_ctx_fn(&a[0]); /* this thread's record exists before any handler runs */
    if (!*apm_slot || !*otel_slot) {
        printf("FAIL no records (OTel context off?)\n");
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_prof;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGALRM); /* a sample is not interrupted by a writer */
    sigaction(SIGPROF, &sa, NULL);
    sa.sa_handler = on_alrm;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGPROF);
    sigaction(SIGALRM, &sa, NULL);
    /* Intervals of tens of microseconds, co-prime, so the writer lands everywhere in the loop;
     * long enough that a loaded machine still runs the loop between signals. */
    if (thread_timer(SIGALRM, WRITER_NS) != 0 || thread_timer(SIGPROF, SAMPLER_NS) != 0) {
        printf("FAIL timer_create\n");
        return 1;
    }
    sigset_t writer;
    sigemptyset(&writer);
    sigaddset(&writer, SIGALRM);
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (unsigned long i = 0; !failed; i++) {
        switch (i & 3) {
        case 0:
        case 1:
            set_ctx_fn(&a[i & 1]);
            break;
        case 2:
            set_attr("job", "nesting", 7);
            break;
        case 3:
            clear();
            break;
        }
        /* right after the call returns, the profiler may sample too; a sample sees the thread
         * stopped, so no writer may run in the middle of this one */
        sigprocmask(SIG_BLOCK, &writer, NULL);
        sample();
        sigprocmask(SIG_UNBLOCK, &writer, NULL);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec >= seconds)
            break;
    }
    sigset_t all_sigs;
    sigfillset(&all_sigs);
    sigprocmask(SIG_BLOCK, &all_sigs, NULL); /* no handler while we print */
    printf("samples %ld nested %ld\n", (long)samples, (long)nested);
    if (failed) {
        printf("FAIL %s\n", why);
        return 1;
    }
    printf("ok\n");
    return 0;
}
