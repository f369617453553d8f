/* intake — how many of the profiler's datagrams a process under proflink receives.
 * usage: intake LIB.so
 *
 * The eBPF profiler sends one 46-byte datagram per sample, sendto(MSG_DONTWAIT) from an
 * unbound socket to /proc/PID/root/<socket path>, in bursts, and drops a datagram when the
 * receiver's queue (net.unix.max_dgram_qlen, 10 by default) is full. So what a receiver does
 * not take in time is lost. This bench sends bursts of back-to-back datagrams every 250 ms the
 * same way, in the same run, to:
 *   proflink      this program re-run under LD_PRELOAD=LIB (its reader thread receives)
 *   blocking recv a bare loop blocked in recv(), one datagram per call: the practical limit
 *   poll+drain    a bare loop: poll, then recvmmsg until empty, back to poll (no spin)
 *   poll+spin     the same, spinning 200 us on an empty socket before going back to poll
 *   recvmmsg wait a bare loop blocked in recvmmsg(MSG_WAITFORONE) (proflink's way, bare)
 * taking turns, and prints the loss over 20 bursts of 1000 for three rounds, then the largest
 * burst proflink and blocking recv receive with less than 0.1% loss, and the ratios. Lines
 * starting with "intake" are the results. Takes about 40 s. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proflink.h"

#define BURSTS 20
#define BURST_SIZE 1000
#define BURST_GAP_MS 250
#define SPIN_US 200
#define ROUNDS 3

struct receiver {
    const char *name;
    pid_t pid;
    char path[80];
    FILE *to, *from;         /* proflink target's stdin/stdout */
    _Atomic uint64_t *count; /* bare receivers: shared counter */
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- target mode: runs under the preload, reports proflink's received count ---------------- */
static _Atomic uint64_t callbacks;

static void on_message(const proflink_message *m, void *user)
{
    (void)m;
    (void)user;
    atomic_fetch_add_explicit(&callbacks, 1, memory_order_relaxed);
}

static int target_main(void)
{
    int (*get)(proflink_stats *, size_t) =
        (int (*)(proflink_stats *, size_t))dlsym(RTLD_DEFAULT, "proflink_get_stats");
    void (*set_cb)(proflink_message_fn, void *) = (void (*)(proflink_message_fn, void *))dlsym(
        RTLD_DEFAULT, "proflink_set_message_callback");
    if (set_cb) /* a tracer that consumes messages (this also starts proflink's reader) */
        set_cb(on_message, NULL);
    printf("ready %d\n", get && set_cb ? 1 : 0);
    fflush(stdout);
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        proflink_stats s = {0};
        if (get)
            get(&s, sizeof s);
        printf("%llu\n", (unsigned long long)s.messages_received);
        fflush(stdout);
    }
    return 0;
}

/* ---- bare receivers ------------------------------------------------------------------------ */
static int bind_at(const char *path, int nonblock)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM | (nonblock ? SOCK_NONBLOCK : 0), 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    unlink(path);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        perror("intake: bind");
        exit(1);
    }
    return fd;
}

static void bare_blocking(const char *path, _Atomic uint64_t *count)
{
    int fd = bind_at(path, 0);
    char buf[1024];
    for (;;)
        if (recv(fd, buf, sizeof buf, 0) >= 0)
            atomic_fetch_add_explicit(count, 1, memory_order_relaxed);
}

static void setup_batch(struct mmsghdr *m, struct iovec *iov, char (*bufs)[1024])
{
    memset(m, 0, 32 * sizeof *m);
    for (int i = 0; i < 32; i++) {
        iov[i].iov_base = bufs[i];
        iov[i].iov_len = sizeof bufs[i];
        m[i].msg_hdr.msg_iov = &iov[i];
        m[i].msg_hdr.msg_iovlen = 1;
    }
}

/* Blocked inside recvmmsg(MSG_WAITFORONE): woken into the receive, takes what is queued. */
static void bare_recvmmsg(const char *path, _Atomic uint64_t *count)
{
    int fd = bind_at(path, 0);
    static char bufs[32][1024];
    struct iovec iov[32];
    struct mmsghdr m[32];
    setup_batch(m, iov, bufs);
    for (;;) {
        int n = recvmmsg(fd, m, 32, MSG_WAITFORONE, NULL);
        if (n > 0)
            atomic_fetch_add_explicit(count, (uint64_t)n, memory_order_relaxed);
    }
}

static void bare_poll(const char *path, _Atomic uint64_t *count, uint64_t spin_ns)
{
    int fd = bind_at(path, 1);
    static char bufs[32][1024];
    struct iovec iov[32];
    struct mmsghdr m[32];
    setup_batch(m, iov, bufs);
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, -1) <= 0)
            continue;
        uint64_t empty_since = 0;
        for (;;) {
            int n = recvmmsg(fd, m, 32, MSG_DONTWAIT, NULL);
            if (n > 0) {
                atomic_fetch_add_explicit(count, (uint64_t)n, memory_order_relaxed);
                empty_since = 0;
                continue;
            }
            if (!spin_ns)
                break;
            uint64_t t = now_ns();
            if (!empty_since)
                empty_since = t;
            else if (t - empty_since >= spin_ns)
                break;
        }
    }
}

static void start_bare(struct receiver *r, const char *name, int kind, const char *dir)
{
    r->name = name;
    r->count = mmap(NULL, sizeof *r->count, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                    -1, 0);
    snprintf(r->path, sizeof r->path, "%s/bare-%d.sock", dir, kind);
    r->pid = fork();
    if (r->pid == 0) {
        if (kind == 0)
            bare_blocking(r->path, r->count);
        if (kind == 3)
            bare_recvmmsg(r->path, r->count);
        bare_poll(r->path, r->count, kind == 2 ? SPIN_US * 1000ull : 0);
        _exit(0);
    }
    for (int i = 0; i < 200 && access(r->path, F_OK) != 0; i++)
        sleep_ms(5);
}

static void start_proflink(struct receiver *r, const char *self, const char *lib,
                           const char *dir)
{
    int in[2], out[2];
    if (pipe(in) || pipe(out))
        exit(1);
    r->name = "proflink";
    r->pid = fork();
    if (r->pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        setenv("LD_PRELOAD", lib, 1);
        setenv("ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR", dir, 1);
        unsetenv("PROFLINK_FIFO");
        execl(self, self, "--target", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    r->to = fdopen(in[1], "w");
    r->from = fdopen(out[0], "r");
    char line[64];
    if (!fgets(line, sizeof line, r->from) || strcmp(line, "ready 1\n") != 0) {
        fprintf(stderr, "intake: %s did not load proflink\n", lib);
        exit(1);
    }
    char pattern[256];
    snprintf(pattern, sizeof pattern, "%s/proflink-%d-*.sock", dir, (int)r->pid);
    glob_t g;
    if (glob(pattern, 0, NULL, &g) != 0 || g.gl_pathc != 1) {
        fprintf(stderr, "intake: no socket %s\n", pattern);
        exit(1);
    }
    snprintf(r->path, sizeof r->path, "%s", g.gl_pathv[0]);
    globfree(&g);
}

static uint64_t received(struct receiver *r)
{
    if (r->count)
        return atomic_load(r->count);
    char line[64];
    fputs("s\n", r->to);
    fflush(r->to);
    if (!fgets(line, sizeof line, r->from))
        return 0;
    return strtoull(line, NULL, 10);
}

/* Waits until the receiver's count stops moving. */
static uint64_t settled(struct receiver *r)
{
    uint64_t last = received(r), cur;
    for (;;) {
        sleep_ms(50);
        cur = received(r);
        if (cur == last)
            return cur;
        last = cur;
    }
}

static int open_to(struct receiver *r, struct sockaddr_un *a)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    if (snprintf(a->sun_path, sizeof a->sun_path, "/proc/%d/root%s", (int)r->pid, r->path) >=
        (int)sizeof a->sun_path) {
        fprintf(stderr, "intake: socket path too long\n");
        exit(1);
    }
    return socket(AF_UNIX, SOCK_DGRAM, 0);
}

/* Sends `bursts` bursts of `size` datagrams to each of the n receivers, taking turns (so that
 * the load of a shared machine falls on all alike), each receiver one burst every
 * BURST_GAP_MS. Fills lost[i] with attempted - received, returns attempted per receiver. */
static uint64_t run(struct receiver *rs, int n, int bursts, int size, uint64_t *lost)
{
    static const uint8_t msg[46] = {1, 0, 1, 0, 0x0a, 0xf7, 0x65, 0x19, [20] = 0xb7,
                                    [28] = 0x60, 0xb4, 0x20, 0xbb, [44] = 1, 0};
    struct sockaddr_un a[8];
    int fd[8];
    uint64_t before[8];
    for (int i = 0; i < n; i++) {
        fd[i] = open_to(&rs[i], &a[i]);
        before[i] = settled(&rs[i]);
    }
    for (int b = 0; b < bursts; b++) {
        for (int i = 0; i < n; i++) {
            for (int k = 0; k < size; k++)
                (void)sendto(fd[i], msg, sizeof msg, MSG_DONTWAIT, (struct sockaddr *)&a[i],
                             sizeof a[i]);
            sleep_ms(BURST_GAP_MS / n);
        }
    }
    uint64_t attempted = (uint64_t)bursts * (uint64_t)size;
    for (int i = 0; i < n; i++) {
        close(fd[i]);
        uint64_t got = settled(&rs[i]) - before[i];
        lost[i] = attempted > got ? attempted - got : 0;
    }
    return attempted;
}

/* The largest burst size each receiver takes with less than 0.1% loss (0: not even 10). */
static void largest_burst(struct receiver *rs, int n, int *best)
{
    static const int sizes[] = {10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000};
    int done[8] = {0};
    for (int i = 0; i < n; i++)
        best[i] = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        struct receiver live[8];
        int idx[8], m = 0;
        for (int i = 0; i < n; i++)
            if (!done[i]) {
                live[m] = rs[i];
                idx[m++] = i;
            }
        if (!m)
            return;
        uint64_t lost[8];
        uint64_t attempted = run(live, m, 4, sizes[s], lost);
        for (int j = 0; j < m; j++) {
            if ((double)lost[j] / (double)attempted >= 0.001)
                done[idx[j]] = 1;
            else
                best[idx[j]] = sizes[s];
        }
    }
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--target"))
        return target_main();
    if (argc != 2) {
        fprintf(stderr, "usage: intake LIB.so\n");
        return 2;
    }
    char dir[] = "/tmp/intake.XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 1;
    self[n] = 0;
    FILE *q = fopen("/proc/sys/net/unix/max_dgram_qlen", "r");
    int qlen = -1;
    if (q) {
        if (fscanf(q, "%d", &qlen) != 1)
            qlen = -1;
        fclose(q);
    }
    printf("bursts of %d datagrams of 46 bytes every %d ms, MSG_DONTWAIT, "
           "net.unix.max_dgram_qlen=%d, %ld CPUs\n",
           BURST_SIZE, BURST_GAP_MS, qlen, sysconf(_SC_NPROCESSORS_ONLN));

    struct receiver rs[5];
    memset(rs, 0, sizeof rs);
    start_proflink(&rs[0], self, argv[1], dir);
    start_bare(&rs[1], "blocking recv", 0, dir);
    start_bare(&rs[2], "recvmmsg wait", 3, dir);
    start_bare(&rs[3], "poll+drain", 1, dir);
    start_bare(&rs[4], "poll+spin", 2, dir);

    /* Three rounds: on a shared machine one round can be an outlier; each is printed. */
    uint64_t total_lost[5] = {0}, total = 0;
    for (int round = 1; round <= ROUNDS; round++) {
        uint64_t lost[5];
        uint64_t attempted = run(rs, 5, BURSTS, BURST_SIZE, lost);
        total += attempted;
        for (int i = 0; i < 5; i++) {
            total_lost[i] += lost[i];
            printf("intake round %d %-14s lost %6llu of %llu over %d bursts of %d (%.2f%%)\n",
                   round, rs[i].name, (unsigned long long)lost[i],
                   (unsigned long long)attempted, BURSTS, BURST_SIZE,
                   100.0 * (double)lost[i] / (double)attempted);
        }
        fflush(stdout);
    }
    for (int i = 0; i < 5; i++)
        printf("intake all rounds %-14s lost %.2f%%\n", rs[i].name,
               100.0 * (double)total_lost[i] / (double)total);
    int best[2];
    largest_burst(rs, 2, best);
    for (int i = 0; i < 2; i++)
        printf("intake %-14s largest burst with < 0.1%% loss: %d\n", rs[i].name, best[i]);
    double kept_p = (double)(total - total_lost[0]), kept_b = (double)(total - total_lost[1]);
    printf("intake ratio received proflink / blocking recv: %.2f (1.00 = the practical "
           "limit)\n", kept_b > 0 ? kept_p / kept_b : 0);
    printf("intake ratio largest clean burst proflink / blocking recv: %.2f\n",
           best[1] ? (double)best[0] / best[1] : 0);

    fclose(rs[0].to); /* EOF: the target exits */
    for (int i = 1; i < 5; i++)
        kill(rs[i].pid, SIGKILL);
    for (int i = 0; i < 5; i++)
        waitpid(rs[i].pid, NULL, 0);
    for (int i = 1; i < 5; i++)
        unlink(rs[i].path);
    rmdir(dir);
    return 0;
}
