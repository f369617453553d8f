/* api_attrs — a "tracer" publishing thread attributes through the API found with dlsym.
 * usage: api_attrs SCENARIO [N]
 *   many N     main thread: a trace, then keys k.0..k.N-1 (values of growing length), one
 *              unicode value; prints each result "set k.I RC", then "ready".
 *   limit      main thread: fills the record to exactly 640 bytes, with refusals on the way;
 *              prints "rc NAME RC" lines and "refused N" (proflink_stats.attributes_refused).
 *   threads N  N threads from pthread_create (records at creation) and N from C11 thrd_create
 *              (libc creates them internally, unseen by the preload: records made lazily on the
 *              first call); each sets its own trace and worker=<kind><i>, http.route=/r/<i>.
 *   grow N     N threads keep rewriting attribute "w" (1 ms apart); on SIGUSR1 the main thread
 *              registers "late.key" and the threads start setting it too: prints "added".
 *   inherit    main thread: a trace and req=r1, then one pthread that makes no call itself.
 * Every scenario prints "ready" when published, then serves signals until killed. SIGUSR2 forks
 * a child that sets k.0=child and a new key child.only, prints "child PID RC RC", and sleeps. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#include "proflink.h"

typedef int (*set_attr_fn)(const char *, const char *, size_t);
typedef int (*set_tp_fn)(const char *, const char *);
typedef int (*stats_fn)(void *, size_t);

static set_attr_fn set_attr;
static set_tp_fn set_tp;
static volatile sig_atomic_t want_add, want_fork;
static atomic_int late_added, started;

static void on_usr1(int s) { (void)s; want_add = 1; }
static void on_usr2(int s) { (void)s; want_fork = 1; }

static int put(const char *k, const char *v) { return set_attr(k, v, strlen(v)); }

/* 00-<trace>-<span>-01 where the span id ends with n (distinct per thread) */
static void trace_for(unsigned n)
{
    char tp[64];
    snprintf(tp, sizeof tp, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b71692%05x-01", n & 0xfffff);
    set_tp(tp, NULL);
}

static void many(int n)
{
    trace_for(0);
    char key[32], val[256];
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "k.%d", i);
        int len = (i * 5) % 40 + 1;
        for (int j = 0; j < len; j++)
            val[j] = (char)('a' + (i + j) % 26);
        val[len] = 0;
        printf("set %s %d\n", key, put(key, val));
    }
    printf("set unicode %d\n", put("unicode.ключ", "héllo wörld ✓ 日本語 🎉"));
}

static void limit(void)
{
    char v[256];
    trace_for(1);
    memset(v, 'a', 255);
    printf("rc big.a %d\n", set_attr("big.a", v, 255)); /* 28 + 18 + 257 = 303 */
    memset(v, 'b', 255);
    printf("rc big.b %d\n", set_attr("big.b", v, 255)); /* 560 */
    memset(v, 'c', 255);
    printf("rc big.c %d\n", set_attr("big.c", v, 255)); /* 817: refused */
    /* 80 bytes left: 50 two-byte characters (100 bytes) do not fit and are not cut */
    for (int i = 0; i < 50; i++)
        memcpy(v + 2 * i, "\xc3\xa9", 2);
    printf("rc uni %d\n", set_attr("uni", v, 100));
    printf("rc toolong %d\n", set_attr("toolong", v, 256));
    printf("rc badutf8 %d\n", set_attr("bad", "\xc3", 1));
    printf("rc reserved %d\n", put("local_root_span_id", "x"));
    /* exactly the 78 bytes left: the record is then 640 bytes */
    printf("rc uni %d\n", set_attr("uni", v, 78));
    proflink_stats st;
    stats_fn stats = (stats_fn)dlsym(RTLD_DEFAULT, "proflink_get_stats");
    stats(&st, sizeof st);
    printf("refused %llu\n", (unsigned long long)st.attributes_refused);
}

static pthread_barrier_t all_set;
struct worker { char kind; int i; };

static void worker_body(struct worker *w)
{
    char v[32];
    trace_for((unsigned)(w->kind == 'p' ? 0x100 : 0x200) + (unsigned)w->i);
    snprintf(v, sizeof v, "%c%d", w->kind, w->i);
    put("worker", v);
    snprintf(v, sizeof v, "/r/%d", w->i);
    put("http.route", v);
    pthread_barrier_wait(&all_set);
    for (;;)
        pause();
}

static void *pthread_worker(void *p) { worker_body(p); return NULL; }
static int thrd_worker(void *p) { worker_body(p); return 0; }

static void *idle(void *p)
{
    (void)p;
    for (;;)
        pause();
    return NULL;
}

static void *grow_worker(void *p)
{
    int i = *(int *)p;
    char v[32];
    trace_for(0x300 + (unsigned)i);
    atomic_fetch_add(&started, 1);
    for (unsigned n = 0;; n++) {
        snprintf(v, sizeof v, "%d-%u", i, n);
        put("w", v);
        if (atomic_load(&late_added))
            put("late.key", v);
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void do_fork(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        int a = put("k.0", "child"), b = put("child.only", "yes");
        printf("child %d %d %d\n", (int)getpid(), a, b);
        fflush(stdout);
        for (;;)
            pause();
    }
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *what = argc > 1 ? argv[1] : "many";
    int n = argc > 2 ? atoi(argv[2]) : 4;
    set_attr = (set_attr_fn)dlsym(RTLD_DEFAULT, "proflink_set_attribute");
    set_tp = (set_tp_fn)dlsym(RTLD_DEFAULT, "proflink_set_traceparent");
    if (!set_attr || !set_tp) {
        puts("no proflink");
        return 1;
    }
    signal(SIGUSR1, on_usr1);
    signal(SIGUSR2, on_usr2);
    static struct worker ws[128];
    static int ids[128];
    if (n > 64)
        n = 64;
    if (!strcmp(what, "many")) {
        many(n);
    } else if (!strcmp(what, "limit")) {
        limit();
    } else if (!strcmp(what, "threads")) {
        pthread_barrier_init(&all_set, NULL, (unsigned)(2 * n + 1));
        for (int i = 0; i < n; i++) {
            pthread_t t;
            thrd_t c;
            ws[i] = (struct worker){'p', i};
            ws[n + i] = (struct worker){'t', i};
            pthread_create(&t, NULL, pthread_worker, &ws[i]);
            thrd_create(&c, thrd_worker, &ws[n + i]);
        }
        pthread_barrier_wait(&all_set);
    } else if (!strcmp(what, "inherit")) {
        pthread_t t;
        trace_for(0x400);
        put("req", "r1");
        pthread_create(&t, NULL, idle, NULL);
    } else if (!strcmp(what, "grow")) {
        trace_for(0x2ff);
        put("a", "main");
        for (int i = 0; i < n; i++) {
            pthread_t t;
            ids[i] = i;
            pthread_create(&t, NULL, grow_worker, &ids[i]);
        }
        while (atomic_load(&started) < n)
            usleep(1000);
    }
    puts("ready");
    for (;;) {
        if (want_add) {
            want_add = 0;
            printf("added %d\n", put("late.key", "main"));
            atomic_store(&late_added, 1);
        }
        if (want_fork) {
            want_fork = 0;
            do_fork();
        }
        usleep(10000);
    }
}
