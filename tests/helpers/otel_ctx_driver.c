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
 *        otel_ctx_driver pbcheck                the protobuf writer at every capacity: writes
 *                                               the reference message to stdout, prints errors
 *                                               to stderr, exits 1 on any
 * The configuration comes from the environment exactly as in the library (config_load). Exit
 * status 0, or 2 on bad usage. */

/* One translation unit with the modules it needs (the test helper build compiles one file). */
#include "leaves/clock.c"
#include "config/config.c"
#include "config/exe_path.c"
#include "config/config_file.c"
#include "leaves/fd_safe.c"
#include "leaves/ids.c"
#include "leaves/log.c"
#include "publish/otel_payload.c"
#include "publish/otel_process_ctx.c"
#include "publish/protobuf_writer.c"
#include "leaves/random.c"
#include "config/resource_attrs.c"
#include "leaves/utf8.c"

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

/* A message exercising 1-, 2- and 3-byte lengths, nesting four deep and a rolled-back field. */
static void pb_sample(struct pb_writer *w, const char *big)
{
    pb_msg outer = pb_begin(w, 1);
    for (size_t n = 120; n <= 130; n++)
        pb_put_bytes_field(w, 1, big, n);
    pb_msg a = pb_begin(w, 2);
    pb_msg b = pb_begin(w, 3);
    pb_msg c = pb_begin(w, 4);
    pb_put_bytes_field(w, 5, big, 16383);
    pb_put_bytes_field(w, 5, big, 16384);
    pb_put_uint64_field(w, 6, UINT64_MAX);
    pb_end(w, c);
    pb_end(w, b);
    pb_end(w, a);
    size_t mark = pb_mark(w);
    pb_put_string_field(w, 7, "dropped");
    pb_rollback(w, mark);
    pb_end(w, outer);
    pb_put_string_field(w, 2, "tail");
}

static int do_pbcheck(void)
{
    static char big[20000];
    memset(big, 'b', sizeof big);
    static uint8_t full[40000];
    struct pb_writer w;
    pb_init(&w, full, sizeof full);
    pb_sample(&w, big);
    if (pb_status(&w) != 0)
        return 1;
    size_t len = w.len;
    int bad = 0;
    /* Every capacity around the interesting sizes, each in an exact-size heap block so that
     * AddressSanitizer catches a write one byte past it. */
    for (size_t cap = 0; cap <= len + 8; cap += (cap < 300 || cap + 300 > len) ? 1 : 97) {
        uint8_t *buf = malloc(cap ? cap : 1);
        pb_init(&w, buf, cap);
        pb_sample(&w, big);
        int fits = cap >= len + PB_LEN_RESERVE * 4; /* room for the reservations while open */
        if (cap < len && pb_status(&w) == 0)
            bad += fprintf(stderr, "cap %zu: no overflow reported\n", cap) > 0;
        if (fits && (pb_status(&w) != 0 || w.len != len || memcmp(buf, full, len)))
            bad += fprintf(stderr, "cap %zu: wrong output\n", cap) > 0;
        if (pb_status(&w) == 0 && (w.len != len || memcmp(buf, full, len)))
            bad += fprintf(stderr, "cap %zu: success with wrong output\n", cap) > 0;
        free(buf);
    }
    fwrite(full, 1, len, stdout);
    return bad ? 1 : 0;
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
    if (argc >= 2 && !strcmp(argv[1], "pbcheck"))
        return do_pbcheck();
    fprintf(stderr, "usage: otel_ctx_driver publish|fork SECONDS | update COUNT SECONDS |"
                    " churn SECONDS LOG | pbcheck\n");
    return 2;
}
