/* otel_ctx_driver — drives the OTel process-context publisher directly, without the rest of
 * proflink, so its tests do not depend on the constructor (and can republish at will).
 *
 * usage: otel_ctx_driver publish SECONDS        publish, print "ready PID RC", sleep
 *        otel_ctx_driver fork SECONDS           publish, fork (the child republishes from a
 *                                               pthread_atfork child handler, as proflink does);
 *                                               prints "parent PID RC" and "child PID RC"
 *        otel_ctx_driver update COUNT SECONDS   publish, then COUNT updates, each adding
 *                                               test.seq=N to OTEL_RESOURCE_ATTRIBUTES; prints
 *                                               "update N RC TIMESTAMP" for each, then sleeps
 *        otel_ctx_driver churn SECONDS LOG      publish, print "ready PID RC", then republish in
 *                                               a loop for SECONDS; each payload carries
 *                                               test.seq, test.fill (size varies) and test.tail;
 *                                               LOG gets "SEQ TIMESTAMP" per publication
 * The configuration comes from the environment exactly as in the library (config_load). Exit
 * status 0, or 2 on bad usage. */

/* One translation unit with the modules it needs (the test helper build compiles one file). */
#include "config.c"
#include "ids.c"
#include "log.c"
#include "otel_process_ctx.c"
#include "protobuf_writer.c"
#include "resource_attrs.c"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

static struct config cfg;

/* Our own header, found the way a reader would (by name in /proc/self/maps); NULL if unnamed. */
static volatile struct ctx_header *own_header(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    void *found = NULL;
    if (!f)
        return NULL;
    while (!found && fgets(line, sizeof line, f))
        if (strstr(line, "OTEL_CTX"))
            found = (void *)(uintptr_t)strtoull(line, NULL, 16);
    fclose(f);
    return found;
}

static uint64_t own_timestamp(volatile struct ctx_header *h)
{
    return h ? atomic_load(&h->published_at_ns) : 0;
}

static void child_handler(void) { otel_process_ctx_after_fork(&cfg); }

static int do_fork(unsigned seconds)
{
    int rc = otel_process_ctx_publish(&cfg);
    printf("parent %d %d\n", (int)getpid(), rc);
    fflush(stdout);
    pthread_atfork(NULL, NULL, child_handler);
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        printf("child %d %d\n", (int)getpid(), own_header() ? 0 : -1);
        fflush(stdout);
        sleep(seconds);
        _exit(0);
    }
    sleep(seconds);
    waitpid(pid, NULL, 0);
    return 0;
}

/* OTEL_RESOURCE_ATTRIBUTES as started, plus `extra`. */
static void set_attrs(const char *base, const char *extra)
{
    static char buf[200000];
    snprintf(buf, sizeof buf, "%s%s%s", base ? base : "", base && base[0] ? "," : "", extra);
    setenv("OTEL_RESOURCE_ATTRIBUTES", buf, 1);
}

static int do_update(int count, unsigned seconds)
{
    const char *env_base = getenv("OTEL_RESOURCE_ATTRIBUTES");
    char *base = env_base ? strdup(env_base) : NULL;
    printf("ready %d %d\n", (int)getpid(), otel_process_ctx_publish(&cfg));
    volatile struct ctx_header *h = own_header();
    for (int i = 1; i <= count; i++) {
        char extra[64];
        snprintf(extra, sizeof extra, "test.seq=%d", i);
        set_attrs(base, extra);
        int rc = otel_process_ctx_update(&cfg);
        printf("update %d %d %" PRIu64 "\n", i, rc, own_timestamp(h));
    }
    fflush(stdout);
    sleep(seconds);
    free(base);
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The fill value's length changes with every publication (so a torn copy would mix sizes) and
 * is derived from the sequence number (so a reader can check a copy is self-consistent). */
static int do_churn(double seconds, const char *log_path)
{
    static char extra[8192];
    FILE *log = fopen(log_path, "w");
    if (!log)
        return 1;
    printf("ready %d %d\n", (int)getpid(), otel_process_ctx_publish(&cfg));
    fflush(stdout);
    volatile struct ctx_header *h = own_header();
    double end = now_s() + seconds;
    for (unsigned seq = 1; now_s() < end; seq++) {
        int n = snprintf(extra, sizeof extra, "test.seq=%u,test.fill=", seq);
        size_t fill = 1 + (seq * 37u) % 3000u;
        memset(extra + n, 'a' + (int)(seq % 26), fill);
        snprintf(extra + n + fill, sizeof extra - (size_t)n - fill, ",test.tail=%u", seq);
        setenv("OTEL_RESOURCE_ATTRIBUTES", extra, 1);
        if (otel_process_ctx_update(&cfg) == 0)
            fprintf(log, "%u %" PRIu64 "\n", seq, own_timestamp(h));
        if (seq % 8 == 0)
            usleep(200); /* let some reads through whole, most still overlap an update */
    }
    fclose(log);
    return 0;
}

int main(int argc, char **argv)
{
    config_load(&cfg);
    cfg.otel_context = parse_bool("PROFLINK_OTEL_CONTEXT", 1); /* config_load skips it when off */
    if (argc >= 3 && !strcmp(argv[1], "publish")) {
        printf("ready %d %d\n", (int)getpid(), otel_process_ctx_publish(&cfg));
        fflush(stdout);
        sleep((unsigned)atoi(argv[2]));
        return 0;
    }
    if (argc >= 3 && !strcmp(argv[1], "fork"))
        return do_fork((unsigned)atoi(argv[2]));
    if (argc >= 4 && !strcmp(argv[1], "update"))
        return do_update(atoi(argv[2]), (unsigned)atoi(argv[3]));
    if (argc >= 4 && !strcmp(argv[1], "churn"))
        return do_churn(atof(argv[2]), argv[3]);
    fprintf(stderr, "usage: otel_ctx_driver publish|fork SECONDS | update COUNT SECONDS | churn SECONDS LOG\n");
    return 2;
}
