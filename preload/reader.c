/* reader.c — the "proflink-reader" thread (reader.h).
 *
 * One thread per process, created with every signal blocked (none is ever delivered to it)
 * and without a thread record (real_pthread_create), once something consumes what it
 * receives (reader_lazy.h: a process that consumes nothing stays single-threaded).
 *
 * Intake speed is message loss. The profiler sends one datagram per sample with MSG_DONTWAIT,
 * in bursts, and the kernel queues at most net.unix.max_dgram_qlen (10 by default) + 1
 * datagrams per receiving socket: what arrives while they wait is dropped by the sender. So
 * the reader sleeps *inside* recvmmsg(MSG_WAITFORONE) on the socket, made blocking for this
 * (the fd is the reader's alone): a datagram wakes it straight into the receive, which then
 * takes everything queued (up to RECV_BATCH) in the same system call, one system call per
 * wake-up. bench/intake.c measures it in one run against bare loops (bursts of 1000):
 *   - proflink loses as much as a bare loop blocked in recv() — the practical limit, since a
 *     sender that never waits outpaces any receiver that has to be woken (ratio 0.97-1.08
 *     over several runs on a 2-CPU VM, where every receiver lost about 40% of such bursts);
 *   - ppoll on the socket + an eventfd, then recvmmsg(MSG_DONTWAIT) until empty (two more
 *     system calls per wake-up) lost a few percent more;
 *   - a busy-drain (spinning 50-1000 us on the empty socket before sleeping again) lost
 *     *more*, 60-80% instead of about 40%, in every run: a spinning thread uses up its fair
 *     share and is preempted mid-burst where a sleeper is woken with priority, and a sender
 *     that no longer has to wake the receiver outpaces it. It only helped with sender and
 *     receiver pinned to CPUs of their own, so there is no spin.
 * A thread blocked in recvmmsg cannot also wait on an eventfd, so an application thread that
 * needs the reader (the deferral queue was empty: the reader may be asleep with no timeout)
 * wakes it with a zero-length datagram from a private socket connected to ours; the reader
 * tells it from the profiler's by its sender address. The delay of held transactions is the
 * receive timeout (SO_RCVTIMEO); with none held there is none: no traffic, no wake-up. */
#include "reader.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "deferral.h"
#include "fd_identity.h"
#include "fifo.h"
#include "hooks.h"
#include "log.h"
#include "message_api.h"
#include "messages.h"
#include "reader_lazy.h"
#include "records.h"
#include "runtime.h"
#include "stats.h"

#define RECV_BATCH 32
/* Largest datagram accepted: a registration with a host id of 1012 bytes. Longer ones are
 * cut by the kernel (MSG_TRUNC) and counted as oversized. */
#define RECV_MAX 1024
/* A receive timeout may end this much after the transaction it waits for is due (it is not
 * re-armed for every datagram of a burst, which would double the system calls). */
#define TIMEOUT_SLACK_NS 1000000ull
#define READER_STACK_SIZE (1024 * 1024)

enum { IDLE, STARTING, RUNNING, UNAVAILABLE };
static _Atomic int state = UNAVAILABLE; /* of the thread; reader_lazy.h */
static int had_thread;                   /* fork child: the parent's reader was running */
static int sock = -1, wake_sock = -1;
static struct fd_identity sock_id, wake_id; /* fd_identity.h: never touch a reused number */
static struct sockaddr_un wake_addr; /* the wake socket's own (autobound) address */
static socklen_t wake_addr_len;
static int pid;

/* Reader thread only. */
static uint8_t bufs[RECV_BATCH][RECV_MAX];
static struct sockaddr_un senders[RECV_BATCH];
static struct iovec iovs[RECV_BATCH];
static struct mmsghdr msgs[RECV_BATCH];
static proflink_message parsed[RECV_BATCH];
static proflink_message correlations[RECV_BATCH];
static char fifo_batch[RECORD_MAX];
static size_t fifo_len;
static unsigned fifo_n;

/* ---- Waking the reader (any thread) -------------------------------------------------------- */
static void wake_reader(void)
{
    int saved_errno = errno;
    /* EAGAIN (socket queue full) is fine: then the reader has datagrams to wake up for, and it
     * looks at the deferral queue after each batch. */
    if (fd_identity_same(wake_sock, &wake_id)) {
        ssize_t w = send(wake_sock, "", 0, MSG_DONTWAIT | MSG_NOSIGNAL);
        (void)w;
    }
    errno = saved_errno;
}

static int open_wake_socket(void)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_un self = {.sun_family = AF_UNIX};
    const char *path = runtime_socket_path();
    size_t n = strlen(path);
    /* autobind (an abstract name of the kernel's choosing) gives our datagrams a sender
     * address nobody else can have; then connect, so that waking needs no path lookup */
    wake_addr_len = sizeof wake_addr;
    if (n == 0 || n >= sizeof self.sun_path ||
        bind(fd, (struct sockaddr *)&self, sizeof(sa_family_t)) != 0 ||
        getsockname(fd, (struct sockaddr *)&wake_addr, &wake_addr_len) != 0) {
        close(fd);
        return -1;
    }
    memcpy(self.sun_path, path, n + 1);
    if (connect(fd, (struct sockaddr *)&self, sizeof self) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int from_wake_socket(const struct msghdr *h)
{
    return h->msg_namelen == wake_addr_len && memcmp(h->msg_name, &wake_addr, wake_addr_len) == 0;
}

/* ---- Messages ------------------------------------------------------------------------------ */
static void fifo_flush(void)
{
    if (fifo_n)
        fifo_write(fifo_batch, fifo_len, fifo_n, 1);
    fifo_len = 0;
    fifo_n = 0;
}

/* Several records share one write() when they fit in RECORD_MAX together. */
static void fifo_add(const proflink_message *m)
{
    char line[RECORD_MAX];
    size_t n = record_message(line, pid, m);
    if (fifo_len + n > sizeof fifo_batch)
        fifo_flush();
    memcpy(fifo_batch + fifo_len, line, n);
    fifo_len += n;
    fifo_n++;
}

static void on_registration(const proflink_message *m)
{
    const char *host = m->u.registration.host_id;
    size_t len = m->u.registration.host_id_len;
    profiler_registered(m->u.registration.samples_delay_ms, host, len);
    log_info("profiler registration: samples-delay-ms %u, host id \"%.*s\"",
             m->u.registration.samples_delay_ms, (int)(len > 64 ? 64 : len), host ? host : "");
}

static void handle_batch(unsigned n)
{
    uint64_t now = deferral_now_ns();
    size_t valid = 0, ncorr = 0, received = 0;
    for (unsigned i = 0; i < n; i++) {
        if (from_wake_socket(&msgs[i].msg_hdr))
            continue;
        received++;
        if (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
            stat_inc(STAT_DISCARDED_OVERSIZED);
            continue;
        }
        switch (message_parse(bufs[i], msgs[i].msg_len, &parsed[valid])) {
        case MSG_VALID:
            valid++;
            break;
        case MSG_TRUNCATED:
            stat_inc(STAT_DISCARDED_TRUNCATED);
            break;
        case MSG_UNKNOWN:
            stat_inc(STAT_IGNORED_UNKNOWN_TYPE);
            break;
        }
    }
    stat_add(STAT_MESSAGES_RECEIVED, received);
    if (!valid)
        return;
    if (profiler_mark_seen() && proflink_config.mode == MODE_AUTO)
        log_info("a profiler is sending: ended sampled transactions are held from now on");
    for (size_t i = 0; i < valid; i++) {
        if (parsed[i].type == PROFLINK_MSG_CORRELATION) {
            stat_inc(STAT_CORRELATIONS);
            correlations[ncorr++] = parsed[i];
        } else {
            stat_inc(STAT_REGISTRATIONS);
            on_registration(&parsed[i]);
        }
    }
    deferral_add_ids(correlations, ncorr, now);
    for (size_t i = 0; i < valid; i++) {
        proflink_message_fn fn;
        void *user;
        message_callback_get(&fn, &user); /* per message: a replacement applies at once */
        if (fn)
            fn(&parsed[i], user);
    }
    if (fifo_enabled()) {
        for (size_t i = 0; i < valid; i++)
            fifo_add(&parsed[i]);
        fifo_flush();
    }
}

/* ---- The loop ------------------------------------------------------------------------------ */
/* Arms the receive timeout for a wait of wait_ns (-1: none). *armed_ns is what is armed
 * (0 = no timeout); it is re-armed only when the armed one would end more than the slack after
 * the deadline, or far (2x) before it. */
static void arm_timeout(int64_t wait_ns, uint64_t *armed_ns)
{
    uint64_t want;
    if (wait_ns < 0)
        want = 0;
    else {
        want = (uint64_t)wait_ns < 1000 ? 1000 : (uint64_t)wait_ns; /* 0 would mean "never" */
        if (*armed_ns && *armed_ns <= want + TIMEOUT_SLACK_NS && *armed_ns * 2 >= want)
            return;
    }
    if (want == *armed_ns)
        return;
    struct timeval tv = {(time_t)(want / 1000000000), (suseconds_t)((want % 1000000000) / 1000)};
    if (setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0)
        *armed_ns = want;
}

/* The socket is unusable (the program closed our descriptor, say): hold nothing more, deliver
 * what is held on time, then end the thread. */
static void *wind_down(int err)
{
    log_warn("profiler socket: %s; no more profiler messages in this process", strerror(err));
    deferral_disable();
    int64_t wait;
    while ((wait = deferral_run(deferral_now_ns())) >= 0) {
        struct timespec ts = {(time_t)(wait / 1000000000), (long)(wait % 1000000000)};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void *reader_main(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "proflink-reader", 0, 0, 0);
    for (unsigned i = 0; i < RECV_BATCH; i++) {
        iovs[i].iov_base = bufs[i];
        iovs[i].iov_len = RECV_MAX;
        memset(&msgs[i].msg_hdr, 0, sizeof msgs[i].msg_hdr);
        msgs[i].msg_hdr.msg_iov = &iovs[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_hdr.msg_name = &senders[i];
    }
    uint64_t armed_ns = 0;
    for (;;) {
        /* One fstat per wake-up: if the program closed our socket and reused the number, a
         * receive (or the timeout's setsockopt) would touch its file (fd_identity.h). */
        if (!fd_identity_same(sock, &sock_id))
            return wind_down(EBADF);
        arm_timeout(deferral_run(deferral_now_ns()), &armed_ns);
        for (unsigned i = 0; i < RECV_BATCH; i++)
            msgs[i].msg_hdr.msg_namelen = sizeof senders[i]; /* value-result */
        int n = recvmmsg(sock, msgs, RECV_BATCH, MSG_WAITFORONE, NULL);
        if (n >= 0) {
            handle_batch((unsigned)n);
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            continue; /* the timeout: something is due */
        if (n < 0 && (errno == ENOMEM || errno == ENOBUFS)) {
            struct timespec pause = {0, 10000000};
            nanosleep(&pause, NULL);
            continue;
        }
        return wind_down(errno);
    }
}

/* Everything but the thread (reader_lazy.h). */
int reader_start(int sock_fd)
{
    if (sock_fd < 0)
        return -1;
    sock = sock_fd;
    pid = (int)getpid();
    fifo_init(proflink_config.fifo_path);
    /* blocking: the reader sleeps in recvmmsg (see the top); the fd is the reader's alone */
    int fl = fcntl(sock, F_GETFL);
    if (fl >= 0 && (fl & O_NONBLOCK))
        fcntl(sock, F_SETFL, fl & ~O_NONBLOCK);
    fd_identity_record(sock, &sock_id);
    wake_sock = open_wake_socket();
    fd_identity_record(wake_sock, &wake_id);
    if (wake_sock < 0)
        log_warn("cannot make the reader's wake-up socket (%s); ended transactions are "
                 "delivered at once", strerror(errno));
    atomic_store_explicit(&state, IDLE, memory_order_release);
    if (fifo_enabled() || had_thread)
        return reader_ensure_running();
    return 0;
}

int reader_ensure_running(void)
{
    int s = atomic_load_explicit(&state, memory_order_acquire);
    if (s != IDLE)
        return s == UNAVAILABLE ? -1 : 0;
    if (!atomic_compare_exchange_strong(&state, &s, STARTING))
        return s == UNAVAILABLE ? -1 : 0; /* another thread starts it: do not wait */
    int saved_errno = errno; /* called from the program's threads through the API */
    int can_hold = wake_sock >= 0 &&
                   deferral_init(proflink_config.buffer_size, wake_reader) == 0;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* the tracer's callbacks run on this stack: musl's default (128 KiB) is small for them,
     * glibc's (RLIMIT_STACK, often 8 MiB) more than needed; pages are touched only as used */
    pthread_attr_setstacksize(&attr, READER_STACK_SIZE);
    sigset_t all, old;
    sigfillset(&all);
    /* the new thread inherits this mask: no signal can reach it, not even before it runs */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t thread;
    int rc = real_pthread_create(&thread, &attr, reader_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        log_error("cannot start the reader thread (%s); no profiler messages in this process",
                  strerror(rc));
        atomic_store_explicit(&state, UNAVAILABLE, memory_order_release);
        errno = saved_errno;
        return -1;
    }
    if (can_hold)
        deferral_enable();
    atomic_store_explicit(&state, RUNNING, memory_order_release);
    errno = saved_errno;
    return 0;
}

void reader_fork_prepare(void)
{
    deferral_fork_prepare();
    fifo_fork_prepare();
    message_api_fork_prepare();
}

void reader_fork_parent(void)
{
    message_api_fork_parent();
    fifo_fork_parent();
    deferral_fork_parent();
}

/* Single-threaded child: the parent's reader does not exist here. */
void reader_fork_child(void)
{
    had_thread = atomic_load_explicit(&state, memory_order_relaxed) != IDLE &&
                 atomic_load_explicit(&state, memory_order_relaxed) != UNAVAILABLE;
    atomic_store_explicit(&state, UNAVAILABLE, memory_order_relaxed);
    message_api_fork_child();
    fifo_fork_child();
    deferral_fork_child();
    /* the parent's sockets: the child gets its own (unless the program reused the numbers) */
    if (fd_identity_same(sock, &sock_id))
        close(sock);
    if (fd_identity_same(wake_sock, &wake_id))
        close(wake_sock);
    sock = wake_sock = -1;
}

/* A failed exec: the program runs on with a new socket (runtime_exec_failed). Only while the
 * thread has not started: a running thread is blocked in a receive on the old descriptor, and
 * swapping the number under it would race its identity check. */
int reader_replace_socket(int sock_fd)
{
    int s = IDLE;
    if (!atomic_compare_exchange_strong(&state, &s, STARTING))
        return -1;
    if (fd_identity_same(sock, &sock_id))
        close(sock);
    if (fd_identity_same(wake_sock, &wake_id))
        close(wake_sock);
    int fl = fcntl(sock_fd, F_GETFL);
    if (fl >= 0 && (fl & O_NONBLOCK))
        fcntl(sock_fd, F_SETFL, fl & ~O_NONBLOCK);
    sock = sock_fd;
    fd_identity_record(sock, &sock_id);
    wake_sock = open_wake_socket(); /* connected to the new path (runtime_socket_path) */
    fd_identity_record(wake_sock, &wake_id);
    atomic_store_explicit(&state, IDLE, memory_order_release);
    return 0;
}
