/* api_thread_exit — a thread's records must be unpublished before their memory is freed: a
 * profiler sample taken while the thread exits reads through the TLS pointers, so a pointer
 * left set to a freed block makes it read whatever the allocator put there since.
 *
 * Each of NTHREADS threads sets a context (so that it has records), then exits (half return,
 * half call pthread_exit). A thread-specific key created by main, after proflink's own (made by
 * its constructor), has a destructor that runs after proflink's at thread exit (both C
 * libraries run them in key order): it reads the thread's two exported TLS pointers, which must
 * be NULL by then. When one is still set, it allocates blocks of the records' size to see
 * whether the allocator hands out the very memory the pointer still publishes.
 * With "main-exits", the main thread then exits the same way (pthread_exit, the process lives
 * on in a last thread): its records, which proflink made at start-up, go the same way.
 * usage: api_thread_exit NTHREADS [main-exits]
 * Prints "threads N cleared C published P reused R" (published: a pointer still set after
 * proflink's exit handler; reused: and its memory handed out again) and exits 0 when C == N. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BLOCK_GUESS_MIN 640  /* the OTel record alone; the block holds both records and more */
#define BLOCK_GUESS_MAX 1024
#define PROBES 4 /* per size: the allocator hands the last freed block of a size out first */

static void (*set_trace)(const uint8_t *, const uint8_t *, const uint8_t *, uint8_t);
static pthread_key_t after_key;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static long cleared, published, reused;

/* Whether memory at p is handed out again by malloc (p is inside one of the new blocks). */
static int reallocated(uintptr_t p)
{
    void *probe[PROBES * 25];
    int n = 0, hit = 0;
    for (size_t size = BLOCK_GUESS_MIN; size <= BLOCK_GUESS_MAX && n < PROBES * 25; size += 16)
        for (int i = 0; i < PROBES && n < PROBES * 25; i++) {
            probe[n] = malloc(size);
            if (probe[n] && p >= (uintptr_t)probe[n] && p < (uintptr_t)probe[n] + size)
                hit = 1;
            n++;
        }
    while (n > 0)
        free(probe[--n]);
    return hit;
}

static void after_proflink(void *arg)
{
    (void)arg;
    void **apm = dlsym(RTLD_DEFAULT, "elastic_apm_profiling_correlation_tls_v1");
    void **otel = dlsym(RTLD_DEFAULT, "otel_thread_ctx_v1");
    uintptr_t a = apm ? (uintptr_t)*apm : 0, o = otel ? (uintptr_t)*otel : 0;
    int re = 0;
    if (a || o)
        re = (a && reallocated(a)) || (o && reallocated(o));
    pthread_mutex_lock(&lock);
    if (!a && !o)
        cleared++;
    else
        published++;
    reused += re;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
}

static void *body(void *arg)
{
    long i = (long)arg;
    uint8_t trace[16], span[8];
    memset(trace, (int)(i % 250) + 1, sizeof trace);
    memset(span, 0x40, sizeof span);
    set_trace(trace, span, NULL, 1);
    pthread_setspecific(after_key, (void *)1); /* a value: the destructor runs only then */
    if (i % 2)
        pthread_exit(NULL);
    return NULL;
}

/* main-exits: the process's last thread, once the main thread's exit handlers have run (or
 * after a bound, a failure then). */
static void *report_after_main(void *arg)
{
    long n = (long)arg;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    pthread_mutex_lock(&lock);
    while (cleared + published < n + 1 &&
           pthread_cond_timedwait(&changed, &lock, &until) == 0)
        ;
    printf("threads %ld cleared %ld published %ld reused %ld\n", n + 1, cleared, published,
           reused);
    fflush(stdout);
    exit(cleared == n + 1 ? 0 : 1);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 64;
    *(void **)&set_trace = dlsym(RTLD_DEFAULT, "proflink_set_trace");
    if (!set_trace) {
        printf("FAIL: proflink_set_trace not found (is the library preloaded?)\n");
        return 2;
    }
    if (pthread_key_create(&after_key, after_proflink) != 0)
        return 2;
    for (long i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, body, (void *)i) != 0)
            return 2;
        pthread_join(t, NULL);
    }
    if (argc > 2 && !strcmp(argv[2], "main-exits")) {
        pthread_t t;
        uint8_t trace[16] = {1}, span[8] = {2};
        set_trace(trace, span, NULL, 1);
        pthread_setspecific(after_key, (void *)1);
        if (pthread_create(&t, NULL, report_after_main, (void *)n) != 0)
            return 2;
        pthread_exit(NULL);
    }
    printf("threads %ld cleared %ld published %ld reused %ld\n", n, cleared, published, reused);
    return cleared == n ? 0 : 1;
}
