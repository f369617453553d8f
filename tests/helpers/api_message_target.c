/* api_message_target — a "tracer" driving the message side of the API through dlsym (so it
 * also runs without proflink), one command per line on stdin, one result per line on stdout.
 * Every line is written with one write(), so lines from the reader thread and the main thread
 * never mix. Times are milliseconds since start on CLOCK_MONOTONIC.
 *
 *   cb | nocb | cb-count          print each message / remove the callback / only count them
 *   end TRACE32 TXN16 FLAGS TAG   proflink_end_transaction: "ended TAG rc=R t=T"; then, when
 *                                 delivered: "txn TAG t=T thread=NAME caller=0|1 n=N ids=ID:C,…"
 *                                 (ids sorted, base64url)
 *   endn N FLAGS PREFIX           N transactions (trace id from PREFIX's index): "endn PREFIX
 *                                 deferred=D now=I"; each delivery prints a txn line PREFIX-i
 *   stats | delay | host | count  proflink_get_stats / _samples_delay_ms / _host_id / callbacks
 *   fork SECS                     fork; the child prints "child pid=P", serves no commands,
 *                                 waits for work once (poll, 0 ms: a worker's first wait),
 *                                 lives SECS seconds, prints "child-stats …" and exits 0; the
 *                                 parent prints "forked child=P"
 *   poll                          waits for work once, as a server does (poll, no descriptor,
 *                                 0 ms): "polled"
 *   waitchild                     "child-exit status=S"
 *   flip MS                       a thread replaces the callback for MS ms, alternating two
 *                                 {fn, user} pairs, while messages flow: "flipped"
 *   pairs                         "pairs ok=N bad=M": callback calls whose user pointer was
 *                                 not their own fn's (must stay 0)
 *   cbsleep MS                    a message callback that sleeps MS on its first call (a tracer
 *                                 whose callback waits for a busy event loop)
 *   pend TRACE32 TXN16 FLAGS      proflink_end_transaction with fn NULL (pull): "pended rc=R"
 *   pendn N FLAGS [US]            N pull ends (ids as endn), one every US microseconds (0, the
 *                                 default: back to back): "pendn deferred=D now=I failed=F"
 *   take CAP                      one proflink_take_transactions(buf, CAP): "take rc=R", then
 *                                 per record "pulled trace=T txn=X n=N ids=ID:C,…" (sorted)
 *   takeall                       take (64 KiB) until 0: "took records=N bytes=B"
 *   fd | readable                 proflink_transactions_fd: "fd F" / "readable 0|1" (poll, 0 ms)
 *   flush                         proflink_flush_transactions: "flushed N"
 *   rawclone TRACE32 TXN16 FLAGS  a child made with syscall(SYS_clone, SIGCHLD) (no fork
 *                                 handlers) ends the transaction with the callback, prints its
 *                                 "ended"/"txn" lines (tag "raw"), exits once it was delivered
 *                                 (10 s at most): "rawclone-exit S"
 *   cancelend TRACE32 TXN16       a thread ends the (unsampled) transaction; its callback
 *                                 cancels the thread (deferred: it stops at the next
 *                                 cancellation point); then fork(): "cancel-fork status=S"
 *   resource ATTRS                proflink_set_resource(ATTRS) ("-" = NULL): "resource rc=R"
 *   fdreuse TRACE32 TXN16         ends a sampled transaction whose callback (on the reader) waits
 *                                 until this thread has closed proflink's socket, got its number
 *                                 back from socketpair() and queued 10 datagrams of its own on
 *                                 it; then reads them: "fdreuse reused=0|1 got=N of 10"
 *   forkpull TRACE32 TXN16        fork(); the child takes what it inherited ("child-inherited
 *                                 records=N"), queues one unsampled pull result and takes it
 *                                 ("child-took records=N fd=F parentfd=P") and exits; the parent
 *                                 prints "forkpull-exit S"
 *   sleep MS | quit
 * At start: "ready pid=P api=0|1". At EOF or quit: "bye" and exit 0. SIGPIPE is reset to its
 * default action (death) so that a SIGPIPE leaking from proflink would show. */
#include <signal.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "out_line.h"

#include "proflink.h"

static void (*set_cb)(proflink_message_fn, void *);
static int (*end_txn)(const uint8_t *, const uint8_t *, uint8_t, proflink_transaction_fn,
                      void *);
static int (*get_stats)(proflink_stats *, size_t);
static uint32_t (*delay_ms)(void);
static size_t (*host_id)(char *, size_t);
static long (*take_txns)(void *, size_t);
static int (*txns_fd)(void);
static int (*flush_txns)(void);
static int (*set_resource)(const char *);

static struct timespec t0;
static pthread_t main_thread;
static _Atomic unsigned long cb_count;
static pid_t child;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (ts.tv_sec - t0.tv_sec) * 1e3 + (ts.tv_nsec - t0.tv_nsec) / 1e6;
}


static void hex(const uint8_t *b, size_t n, char *o)
{
    for (size_t i = 0; i < n; i++)
        sprintf(o + 2 * i, "%02x", b[i]);
}

static int unhex(const char *s, uint8_t *b, size_t n)
{
    if (!s || strlen(s) != 2 * n)
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            return -1;
        b[i] = (uint8_t)v;
    }
    return 0;
}

static void b64url(const uint8_t *in, char *o) /* 16 bytes → 22 chars + NUL */
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t k = 0;
    for (int i = 0; i < 15; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        o[k++] = a[v >> 18], o[k++] = a[(v >> 12) & 63], o[k++] = a[(v >> 6) & 63],
        o[k++] = a[v & 63];
    }
    o[k++] = a[in[15] >> 2];
    o[k++] = a[(in[15] & 3) << 4];
    o[k] = 0;
}

static void print_message(const proflink_message *m, void *user)
{
    (void)user;
    atomic_fetch_add(&cb_count, 1);
    char name[32] = "";
    prctl(PR_GET_NAME, name, 0, 0, 0);
    if (m->type == PROFLINK_MSG_CORRELATION) {
        char t[33], x[17], s[23];
        hex(m->u.correlation.trace_id, 16, t);
        hex(m->u.correlation.transaction_id, 8, x);
        b64url(m->u.correlation.stack_trace_id, s);
        out("msg correlation pid=%d minor=%u trace=%s txn=%s stack=%s count=%u thread=%s",
            (int)getpid(), m->minor, t, x, s, m->u.correlation.count, name);
    } else {
        char h[2048];
        size_t n = m->u.registration.host_id_len;
        if (n > sizeof h / 2 - 1)
            n = sizeof h / 2 - 1;
        if (m->u.registration.host_id)
            hex((const uint8_t *)m->u.registration.host_id, n, h);
        else
            strcpy(h, "-");
        out("msg registration pid=%d minor=%u delay=%u host_len=%zu host_hex=%s thread=%s",
            (int)getpid(), m->minor, m->u.registration.samples_delay_ms,
            m->u.registration.host_id_len, n ? h : m->u.registration.host_id ? "" : "-", name);
    }
}

static void count_message(const proflink_message *m, void *user)
{
    (void)m;
    (void)user;
    atomic_fetch_add(&cb_count, 1);
}

static _Atomic long cb_sleep_ms;

static void sleepy_message(const proflink_message *m, void *user)
{
    (void)m;
    (void)user;
    atomic_fetch_add(&cb_count, 1);
    long ms = atomic_exchange(&cb_sleep_ms, 0);
    if (ms > 0)
        usleep((useconds_t)ms * 1000);
}

static char tag_a[] = "a", tag_b[] = "b";
static _Atomic unsigned long pairs_ok, pairs_bad;

static void cb_a(const proflink_message *m, void *user)
{
    (void)m;
    atomic_fetch_add(user == tag_a ? &pairs_ok : &pairs_bad, 1);
}

static void cb_b(const proflink_message *m, void *user)
{
    (void)m;
    atomic_fetch_add(user == tag_b ? &pairs_ok : &pairs_bad, 1);
}

static void *flipper(void *arg)
{
    double until = now_ms() + (double)(long)arg;
    for (long i = 0; now_ms() < until; i++) {
        if (i & 1)
            set_cb(cb_b, tag_b);
        else
            set_cb(cb_a, tag_a);
    }
    out("flipped");
    return NULL;
}

static int cmp_ids(const void *a, const void *b)
{
    return memcmp(a, b, 16);
}

/* transactions delivered to on_txn in this process */
static _Atomic int txns_delivered;

static void on_txn(const uint8_t trace_id[16], const uint8_t transaction_id[8],
                   const proflink_stack_count *ids, size_t n, void *user)
{
    (void)trace_id;
    (void)transaction_id;
    char name[32] = "";
    prctl(PR_GET_NAME, name, 0, 0, 0);
    proflink_stack_count *sorted = malloc((n ? n : 1) * sizeof *sorted);
    char *list = malloc(n * 40 + 2);
    size_t k = 0;
    if (!sorted || !list)
        abort();
    memcpy(sorted, ids, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_ids);
    list[0] = 0;
    for (size_t i = 0; i < n; i++) {
        char s[23];
        b64url(sorted[i].stack_trace_id, s);
        k += (size_t)sprintf(list + k, "%s%s:%u", i ? "," : "", s, sorted[i].count);
    }
    out("txn %s pid=%d t=%.3f thread=%s caller=%d n=%zu ids=%s", (const char *)user,
        (int)getpid(), now_ms(), name,
        pthread_equal(pthread_self(), main_thread) ? 1 : 0, n, list);
    /* counted once its line is out: a raw-clone child exits as soon as it sees the count, and
     * its line was lost when the count came first (seen under ASan on a loaded machine) */
    atomic_fetch_add(&txns_delivered, 1);
    free(sorted);
    free(list);
    free(user); /* the tag, strdup'ed by end_one */
}

static void print_stats(const char *prefix)
{
    proflink_stats s;
    int rc = get_stats ? get_stats(&s, sizeof s) : -2;
    if (rc == -2) {
        out("%s noapi", prefix);
        return;
    }
    out("%s rc=%d messages_received=%llu correlations=%llu registrations=%llu "
        "discarded_truncated=%llu discarded_oversized=%llu ignored_unknown_type=%llu "
        "fifo_records=%llu fifo_drops=%llu transactions_deferred=%llu "
        "transactions_immediate=%llu queue_overflows=%llu ids_evicted=%llu pull_overflows=%llu "
        "callbacks=%lu",
        prefix, rc, (unsigned long long)s.messages_received, (unsigned long long)s.correlations,
        (unsigned long long)s.registrations, (unsigned long long)s.discarded_truncated,
        (unsigned long long)s.discarded_oversized, (unsigned long long)s.ignored_unknown_type,
        (unsigned long long)s.fifo_records, (unsigned long long)s.fifo_drops,
        (unsigned long long)s.transactions_deferred, (unsigned long long)s.transactions_immediate,
        (unsigned long long)s.queue_overflows, (unsigned long long)s.ids_evicted,
        (unsigned long long)s.pull_overflows, atomic_load(&cb_count));
}

static void end_one(const uint8_t *t, const uint8_t *x, unsigned flags, const char *tag,
                    int quiet, int *rc_out)
{
    char *copy = strdup(tag);
    double t_end = now_ms();
    int rc = end_txn ? end_txn(t, x, (uint8_t)flags, on_txn, copy) : -2;
    if (rc == -2)
        on_txn(t, x, NULL, 0, copy); /* no proflink: what a tracer would do */
    if (!quiet)
        out("ended %s rc=%d t=%.3f", tag, rc, t_end);
    if (rc_out)
        *rc_out = rc;
}

static void print_ids(char *list, const proflink_stack_count *ids, size_t n)
{
    proflink_stack_count *sorted = malloc((n ? n : 1) * sizeof *sorted);
    if (!sorted)
        abort();
    memcpy(sorted, ids, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_ids);
    size_t k = 0;
    list[0] = 0;
    for (size_t i = 0; i < n; i++) {
        char s[23];
        b64url(sorted[i].stack_trace_id, s);
        k += (size_t)sprintf(list + k, "%s%s:%u", i ? "," : "", s, sorted[i].count);
    }
    free(sorted);
}

/* Parses what proflink_take_transactions wrote, as a foreign runtime would: byte offsets,
 * no alignment assumed. Prints one line per record; returns how many. */
static long print_pulled(const unsigned char *buf, long len, int quiet)
{
    long off = 0, n = 0;
    while (off < len) {
        proflink_ended_transaction h;
        memcpy(&h, buf + off, sizeof h);
        off += (long)sizeof h;
        proflink_stack_count *ids = malloc((h.n_ids ? h.n_ids : 1) * sizeof *ids);
        char *list = malloc(h.n_ids * 40 + 2);
        if (!ids || !list)
            abort();
        memcpy(ids, buf + off, h.n_ids * sizeof *ids);
        off += (long)(h.n_ids * sizeof *ids);
        if (!quiet) {
            char t[33], x[17];
            hex(h.trace_id, 16, t);
            hex(h.transaction_id, 8, x);
            print_ids(list, ids, h.n_ids);
            out("pulled trace=%s txn=%s n=%u reserved=%u ids=%s", t, x, h.n_ids, h.reserved, list);
        }
        free(ids);
        free(list);
        n++;
    }
    if (off != len)
        out("error take: %ld bytes left over", len - off);
    return n;
}

static void cancel_self(const uint8_t trace_id[16], const uint8_t transaction_id[8],
                        const proflink_stack_count *ids, size_t n, void *user)
{
    (void)trace_id, (void)transaction_id, (void)ids, (void)n, (void)user;
    pthread_cancel(pthread_self()); /* acts at the next cancellation point */
}

static void *cancel_ender(void *arg)
{
    uint8_t **ids = arg;
    if (end_txn)
        end_txn(ids[0], ids[1], 0, cancel_self, NULL);
    /* not reached when a cancellation point inside proflink acted on the request */
    pthread_testcancel();
    return NULL;
}

/* fdreuse: the callback holds the reader until the program has taken the number over. */
static _Atomic int reuse_stage; /* 1: callback running, 2: number taken over, 3: timed out */

static void hold_reader(const uint8_t trace_id[16], const uint8_t transaction_id[8],
                        const proflink_stack_count *ids, size_t n, void *user)
{
    (void)trace_id, (void)transaction_id, (void)ids, (void)n, (void)user;
    atomic_store(&reuse_stage, 1);
    for (int i = 0; i < 500 && atomic_load(&reuse_stage) != 2; i++)
        usleep(10000);
}

/* proflink's socket: the descriptor bound to a path named proflink-<pid>-*.sock */
static int find_proflink_socket(void)
{
    char want[64];
    snprintf(want, sizeof want, "proflink-%d-", (int)getpid());
    for (int fd = 3; fd < 1024; fd++) {
        struct sockaddr_un a;
        socklen_t len = sizeof a;
        if (getsockname(fd, (struct sockaddr *)&a, &len) == 0 && a.sun_family == AF_UNIX &&
            len > sizeof(sa_family_t) && a.sun_path[0] && strstr(a.sun_path, want))
            return fd;
    }
    return -1;
}

static void fd_reuse(const uint8_t *t, const uint8_t *x)
{
    int theirs = find_proflink_socket();
    atomic_store(&reuse_stage, 0);
    if (theirs < 0 || !end_txn) {
        out("error fdreuse: no proflink socket");
        return;
    }
    end_txn(t, x, 1, hold_reader, NULL);
    for (int i = 0; i < 500 && atomic_load(&reuse_stage) != 1; i++)
        usleep(10000);
    close(theirs);
    int pair[2];
    socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair);
    int mine = pair[0] == theirs ? pair[0] : pair[1] == theirs ? pair[1] : -1;
    int peer = mine == pair[0] ? pair[1] : pair[0];
    for (int i = 0; mine >= 0 && i < 10; i++)
        send(peer, "mine", 4, MSG_DONTWAIT);
    atomic_store(&reuse_stage, 2); /* the reader goes on now */
    usleep(300000);
    int got = 0;
    char buf[16];
    while (mine >= 0 && recv(mine, buf, sizeof buf, MSG_DONTWAIT) > 0)
        got++;
    out("fdreuse reused=%d got=%d of 10", mine >= 0, got);
    close(pair[0]);
    close(pair[1]);
}

static void run_child(unsigned secs)
{
    out("child pid=%d", (int)getpid());
    poll(NULL, 0, 0);
    struct timespec ts = {secs, 0};
    nanosleep(&ts, NULL);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "child-stats pid=%d", (int)getpid());
    print_stats(prefix);
    _exit(0);
}

int main(void)
{
    clock_gettime(CLOCK_MONOTONIC, &t0);
    signal(SIGPIPE, SIG_DFL);
    main_thread = pthread_self();
    set_cb = (void (*)(proflink_message_fn, void *))dlsym(RTLD_DEFAULT,
                                                          "proflink_set_message_callback");
    end_txn = (int (*)(const uint8_t *, const uint8_t *, uint8_t, proflink_transaction_fn,
                       void *))dlsym(RTLD_DEFAULT, "proflink_end_transaction");
    get_stats = (int (*)(proflink_stats *, size_t))dlsym(RTLD_DEFAULT, "proflink_get_stats");
    delay_ms = (uint32_t(*)(void))dlsym(RTLD_DEFAULT, "proflink_samples_delay_ms");
    host_id = (size_t(*)(char *, size_t))dlsym(RTLD_DEFAULT, "proflink_host_id");
    take_txns = (long (*)(void *, size_t))dlsym(RTLD_DEFAULT, "proflink_take_transactions");
    txns_fd = (int (*)(void))dlsym(RTLD_DEFAULT, "proflink_transactions_fd");
    flush_txns = (int (*)(void))dlsym(RTLD_DEFAULT, "proflink_flush_transactions");
    set_resource = (int (*)(const char *))dlsym(RTLD_DEFAULT, "proflink_set_resource");
    out("ready pid=%d api=%d", (int)getpid(), set_cb && end_txn ? 1 : 0);

    char line[1024];
    while (fgets(line, sizeof line, stdin)) {
        char *argv[8] = {0};
        int argc = 0;
        for (char *tok = strtok(line, " \t\n"); tok && argc < 8; tok = strtok(NULL, " \t\n"))
            argv[argc++] = tok;
        if (!argc)
            continue;
        const char *c = argv[0];
        if (!strcmp(c, "cb") || !strcmp(c, "cb-count") || !strcmp(c, "nocb")) {
            if (set_cb)
                set_cb(!strcmp(c, "cb") ? print_message : !strcmp(c, "nocb") ? NULL
                                                                               : count_message,
                       NULL);
            out("ok %s", c);
        } else if (!strcmp(c, "end") && argc == 5) {
            uint8_t t[16], x[8];
            if (unhex(argv[1], t, 16) || unhex(argv[2], x, 8)) {
                out("error bad ids");
                continue;
            }
            end_one(t, x, (unsigned)strtoul(argv[3], NULL, 0), argv[4], 0, NULL);
        } else if (!strcmp(c, "endn") && argc == 4) {
            long n = atol(argv[1]);
            unsigned flags = (unsigned)strtoul(argv[2], NULL, 0);
            int deferred = 0, now = 0;
            for (long i = 0; i < n; i++) {
                uint8_t t[16] = {0xAB}, x[8] = {0xCD};
                memcpy(t + 8, &i, sizeof i);
                memcpy(x, &i, sizeof i < 8 ? sizeof i : 8);
                char tag[96];
                snprintf(tag, sizeof tag, "%s-%ld", argv[3], i);
                int rc;
                end_one(t, x, flags, tag, 1, &rc);
                if (rc == PROFLINK_DEFERRED)
                    deferred++;
                else
                    now++;
            }
            out("endn %s deferred=%d now=%d", argv[3], deferred, now);
        } else if (!strcmp(c, "stats")) {
            print_stats("stats");
        } else if (!strcmp(c, "count")) {
            out("count %lu", atomic_load(&cb_count));
        } else if (!strcmp(c, "delay")) {
            out("delay %d", delay_ms ? (int)delay_ms() : -2);
        } else if (!strcmp(c, "host")) {
            char h[300];
            size_t n = host_id ? host_id(h, sizeof h) : 0;
            out("host len=%zu id=%s", n, host_id ? h : "");
        } else if (!strcmp(c, "fork") && argc == 2) {
            pid_t p = fork();
            if (p == 0)
                run_child((unsigned)atoi(argv[1]));
            child = p;
            out("forked child=%d", (int)p);
        } else if (!strcmp(c, "waitchild")) {
            int status = 0;
            waitpid(child, &status, 0);
            out("child-exit status=%d", status);
        } else if (!strcmp(c, "flip") && argc == 2 && set_cb) {
            pthread_t th;
            pthread_create(&th, NULL, flipper, (void *)atol(argv[1]));
            pthread_detach(th);
        } else if (!strcmp(c, "pairs")) {
            out("pairs ok=%lu bad=%lu", atomic_load(&pairs_ok), atomic_load(&pairs_bad));
        } else if (!strcmp(c, "cbsleep") && argc == 2 && set_cb) {
            atomic_store(&cb_sleep_ms, atol(argv[1]));
            set_cb(sleepy_message, NULL);
            out("ok cbsleep");
        } else if (!strcmp(c, "pend") && argc == 4 && end_txn) {
            uint8_t t[16], x[8];
            if (unhex(argv[1], t, 16) || unhex(argv[2], x, 8)) {
                out("error bad ids");
                continue;
            }
            out("pended rc=%d", end_txn(t, x, (uint8_t)strtoul(argv[3], NULL, 0), NULL, NULL));
        } else if (!strcmp(c, "pendn") && (argc == 3 || argc == 4) && end_txn) {
            long n = atol(argv[1]);
            long spacing_us = argc == 4 ? atol(argv[3]) : 0;
            int deferred = 0, now = 0, failed = 0;
            for (long i = 0; i < n; i++) {
                uint8_t t[16] = {0xAB}, x[8] = {0xCD};
                memcpy(t + 8, &i, sizeof i);
                memcpy(x, &i, sizeof i < 8 ? sizeof i : 8);
                int rc = end_txn(t, x, (uint8_t)strtoul(argv[2], NULL, 0), NULL, NULL);
                rc == PROFLINK_DEFERRED ? deferred++ : rc == 0 ? now++ : failed++;
                if (spacing_us)
                    usleep((useconds_t)spacing_us);
            }
            out("pendn deferred=%d now=%d failed=%d", deferred, now, failed);
        } else if (!strcmp(c, "take") && argc == 2 && take_txns) {
            size_t cap = (size_t)atol(argv[1]);
            unsigned char *buf = malloc(cap ? cap : 1);
            long rc = take_txns(buf, cap);
            out("take rc=%ld", rc);
            if (rc > 0)
                print_pulled(buf, rc, 0);
            free(buf);
        } else if (!strcmp(c, "takeall") && take_txns) {
            static unsigned char buf[65536];
            long rc, records = 0, bytes = 0;
            while ((rc = take_txns(buf, sizeof buf)) > 0) {
                records += print_pulled(buf, rc, 1);
                bytes += rc;
            }
            out("took records=%ld bytes=%ld last=%ld", records, bytes, rc);
        } else if (!strcmp(c, "fd") && txns_fd) {
            out("fd %d", txns_fd());
        } else if (!strcmp(c, "readable") && txns_fd) {
            struct pollfd p = {.fd = txns_fd(), .events = POLLIN};
            out("readable %d", poll(&p, 1, 0) == 1 && (p.revents & POLLIN) ? 1 : 0);
        } else if (!strcmp(c, "flush") && flush_txns) {
            out("flushed %d", flush_txns());
        } else if (!strcmp(c, "rawclone") && argc == 4) {
            uint8_t t[16], x[8];
            if (unhex(argv[1], t, 16) || unhex(argv[2], x, 8)) {
                out("error bad ids");
                continue;
            }
            long p = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
            if (p == 0) {
                int before = atomic_load(&txns_delivered);
                end_one(t, x, (unsigned)strtoul(argv[3], NULL, 0), "raw", 0, NULL);
                /* held like a fork child's: its own reader delivers it after the delay */
                for (int ms = 0; ms < 10000 && atomic_load(&txns_delivered) == before; ms += 10)
                    usleep(10000);
                _exit(0);
            }
            int status = -1;
            waitpid((pid_t)p, &status, 0);
            out("rawclone-exit %d", status);
        } else if (!strcmp(c, "cancelend") && argc == 3) {
            static uint8_t t[16], x[8];
            if (unhex(argv[1], t, 16) || unhex(argv[2], x, 8)) {
                out("error bad ids");
                continue;
            }
            uint8_t *args[2] = {t, x};
            pthread_t th;
            pthread_create(&th, NULL, cancel_ender, args);
            void *res;
            pthread_join(th, &res);
            out("cancelled %d", res == PTHREAD_CANCELED);
            pid_t p = fork();
            if (p == 0)
                _exit(0);
            int status = -1;
            waitpid(p, &status, 0);
            out("cancel-fork status=%d", status);
        } else if (!strcmp(c, "resource") && argc == 2 && set_resource) {
            out("resource rc=%d", set_resource(strcmp(argv[1], "-") ? argv[1] : NULL));
        } else if (!strcmp(c, "fdreuse") && argc == 3) {
            uint8_t t[16], x[8];
            if (unhex(argv[1], t, 16) || unhex(argv[2], x, 8)) {
                out("error bad ids");
                continue;
            }
            fd_reuse(t, x);
        } else if (!strcmp(c, "forkpull") && argc == 3 && take_txns && txns_fd) {
            uint8_t t[16], x[8];
            if (unhex(argv[1], t, 16) || unhex(argv[2], x, 8)) {
                out("error bad ids");
                continue;
            }
            int parent_fd = txns_fd();
            pid_t p = fork();
            if (p == 0) {
                static unsigned char buf[4096];
                long n = take_txns(buf, sizeof buf);
                out("child-inherited records=%ld", n > 0 ? print_pulled(buf, n, 1) : 0);
                int fd = txns_fd();
                end_txn(t, x, 0, NULL, NULL);
                struct pollfd pf = {.fd = fd, .events = POLLIN};
                int readable = poll(&pf, 1, 1000) == 1;
                n = take_txns(buf, sizeof buf);
                out("child-took records=%ld readable=%d fd=%d parentfd=%d",
                    n > 0 ? print_pulled(buf, n, 1) : 0, readable, fd, parent_fd);
                _exit(0);
            }
            int status = -1;
            waitpid(p, &status, 0);
            out("forkpull-exit %d", status);
        } else if (!strcmp(c, "poll")) {
            poll(NULL, 0, 0);
            out("polled");
        } else if (!strcmp(c, "sleep") && argc == 2) {
            usleep((useconds_t)atoi(argv[1]) * 1000);
            out("slept");
        } else if (!strcmp(c, "quit")) {
            break;
        } else {
            out("error unknown command %s", c);
        }
    }
    out("bye");
    return 0;
}
