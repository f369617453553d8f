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
 * wake-up. Measured in one run against bare loops (bursts of 1000; an earlier version of
 * bench/intake.c, which now compares proflink's deliveries with the blocking loop):
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
 * receive timeout (SO_RCVTIMEO); with none held there is none: no traffic, no wake-up.
 *
 * Receiving comes first. Delivery (the tracer's callbacks, FIFO lines whose write wakes their
 * consumer, the deferral's id table and releases, pull results) never sits between two
 * receives of a burst: a wake-up takes everything queued (recvmmsg, then MSG_DONTWAIT until
 * EAGAIN) into the `pending` ring, parsed but not delivered; only when the socket is empty is
 * one chunk delivered, and the socket is drained again before the next chunk. Measured in
 * bench/intake.c against a bare blocking recv() loop with callback, FIFO and pull delivery:
 * delivering between receives took 0.46x of what the bare loop took with FIFO delivery.
 * The ring is bounded (PENDING_MAX): when it is full, a chunk is delivered before receiving
 * more, and the kernel keeps what arrives meanwhile, as it would for any receiver.
 *
 * What this costs on an idle machine, and why it is still so (bench/intake.c with 12 rounds,
 * runs alternated on the 2-CPU VM; ratio of what each receives to a bare blocking recv() loop):
 *   - this loop: 0.6-0.85 (callback, FIFO and pull alike); with every CPU busy, 0.9-1.2;
 *   - the same thread running a bare recv() loop with no receive timeout: 0.94-1.07, also with
 *     an fstat identity check, recvmmsg and message_parse per datagram (so neither the check
 *     nor the parsing is the cost), and also while a second thread of the process sleeps with a
 *     20 ms timer;
 *   - that bare loop with SO_RCVTIMEO set to 0.5 ms or 20 ms: 0.64-0.77; set to 1 s: 1.05-1.13.
 * So the cost is this thread sleeping with a short receive timeout (QUIET_NS, MAX_HOLD_NS, the
 * deferral's release times) between the datagrams of a burst, not its work. Delivering in the
 * gaps instead, with no timeout, was worse (0.5-0.8: FIFO writes wake the consumer mid-burst).
 * Moving the timed work (the quiet wait, delivery, releases) to a second thread, so that the
 * receiving thread only ever blocks without a timeout, is the measured way to parity; it is not
 * done here.
 *
 * Descriptors: the program may close our socket and get its number back for a file of its
 * own at any moment (daemons, closefrom). Every system call on the number is preceded, with
 * nothing in between, by the identity check (fd_identity.h); delivery, which can take long,
 * never runs between a check and the call it guards. */
#include "reader.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "deferral.h"
#include "fd_identity.h"
#include "fd_safe.h"
#include "fifo.h"
#include "hooks.h"
#include "log.h"
#include "messages.h"
#include "profiler_state.h"
#include "reader_lazy.h"
#include "records.h"
#include "stats.h"

#define RECV_BATCH 32
/* Largest datagram accepted: a registration with a host id of 1012 bytes. Longer ones are
 * cut by the kernel (MSG_TRUNC) and counted as oversized. */
#define RECV_MAX 1024
/* A receive timeout may end this much after the transaction it waits for is due (it is not
 * re-armed for every datagram of a burst, which would double the system calls). */
#define TIMEOUT_SLACK_NS 1000000ull
#define READER_STACK_SIZE (1024 * 1024)
/* Parsed messages waiting for delivery: enough for a whole profiler burst drained while the
 * tracer's callback or FIFO consumer catches up (1000 in the bench), 48 KiB of bss touched only
 * as used. A power of two (ring indices). */
#define PENDING_MAX 1024
/* Messages delivered between two drains of the socket: large enough that the per-chunk costs
 * (one id-table lock, one FIFO write of up to 4 KiB) are shared, small enough that the socket
 * (11 datagrams by default) is looked at again within a few microseconds of delivery. */
#define DELIVER_CHUNK 32
/* Registrations carry a host id in the datagram itself; each pending one keeps its datagram
 * in a pool slot. One slot per datagram of a receive batch: a batch never lacks room. */
#define REG_POOL RECV_BATCH
/* Held transactions released per round, for the same reason as DELIVER_CHUNK. */
#define RELEASE_CHUNK 32
/* A burst is over when the socket stays empty this long. The profiler's sender is faster than
 * any receiver, so within a burst the socket is empty only for the few microseconds the
 * sender is preempted; delivering in those gaps (waking a FIFO consumer, running callbacks)
 * cost about a third of what was received in bench/intake.c. Delivery waits this much. */
#define QUIET_NS 500000
/* ... but never longer than this for a message already received: a steady stream with no
 * pause still gets delivered. The wait is a receive with this timeout (no spin, see the top). */
#define MAX_HOLD_NS 20000000ull

enum { IDLE, STARTING, RUNNING, UNAVAILABLE };
static _Atomic int state = UNAVAILABLE; /* of the thread; reader_lazy.h */
static int had_thread;                   /* fork child: the parent's reader was running */
static int sock = -1, wake_sock = -1;
static struct fd_identity sock_id, wake_id; /* fd_identity.h: never touch a reused number */
static struct sockaddr_un wake_addr; /* the wake socket's own (autobound) address */
static socklen_t wake_addr_len;
static int pid;
static char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* wake-up socket's peer */

/* Reader thread only. */
static uint8_t bufs[RECV_BATCH][RECV_MAX];
static struct sockaddr_un senders[RECV_BATCH];
static struct iovec iovs[RECV_BATCH];
static struct mmsghdr msgs[RECV_BATCH];
static proflink_message pending[PENDING_MAX]; /* ring: [pend_head, pend_tail) */
static unsigned pend_head, pend_tail;
static char reg_pool[REG_POOL][RECV_MAX]; /* host ids of pending registrations, a ring too */
static unsigned reg_head, reg_tail;
static proflink_message correlations[DELIVER_CHUNK];
static char fifo_batch[RECORD_MAX];
static size_t fifo_len;
static unsigned fifo_n;

_Static_assert((PENDING_MAX & (PENDING_MAX - 1)) == 0, "PENDING_MAX is a power of two");
_Static_assert(PENDING_MAX >= RECV_BATCH, "a receive batch fits the ring");

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
    int fd = fd_above_stdio(socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (fd < 0)
        return -1;
    struct sockaddr_un self = {.sun_family = AF_UNIX};
    const char *path = sock_path;
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

static unsigned pending_count(void) { return pend_tail - pend_head; }

/* Receiving: parse a batch into the pending ring and count it. Nothing here waits, writes or
 * takes a lock (the counters are relaxed atomics). */
static void intake(unsigned n)
{
    size_t received = 0;
    for (unsigned i = 0; i < n; i++) {
        if (from_wake_socket(&msgs[i].msg_hdr))
            continue;
        received++;
        if (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
            stat_inc(STAT_DISCARDED_OVERSIZED);
            continue;
        }
        proflink_message *m = &pending[pend_tail & (PENDING_MAX - 1)];
        switch (message_parse(bufs[i], msgs[i].msg_len, m)) {
        case MSG_VALID:
            if (m->type == PROFLINK_MSG_CORRELATION) {
                stat_inc(STAT_CORRELATIONS);
            } else {
                stat_inc(STAT_REGISTRATIONS);
                if (m->u.registration.host_id) { /* keep its bytes past this batch */
                    char *slot = reg_pool[reg_tail++ % REG_POOL];
                    memcpy(slot, m->u.registration.host_id, m->u.registration.host_id_len);
                    m->u.registration.host_id = slot;
                }
            }
            pend_tail++;
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
}

/* How many datagrams the next receive may take: the ring and the registration pool must hold
 * a whole batch. 0: deliver first. */
static unsigned receive_room(void)
{
    unsigned room = PENDING_MAX - pending_count();
    unsigned regs = REG_POOL - (reg_tail - reg_head);
    if (regs < room)
        room = regs;
    return room < RECV_BATCH ? room : RECV_BATCH;
}

/* Delivery: up to DELIVER_CHUNK pending messages, oldest first. */
static void deliver_chunk(void)
{
    unsigned n = pending_count();
    if (n > DELIVER_CHUNK)
        n = DELIVER_CHUNK;
    if (!n)
        return;
    uint64_t now = clock_monotonic_ns();
    if (profiler_mark_seen() && proflink_config.mode == MODE_AUTO)
        log_info("a profiler is sending: ended sampled transactions are held from now on");
    size_t ncorr = 0;
    for (unsigned i = 0; i < n; i++) {
        const proflink_message *m = &pending[(pend_head + i) & (PENDING_MAX - 1)];
        if (m->type == PROFLINK_MSG_CORRELATION)
            correlations[ncorr++] = *m;
        else
            on_registration(m);
    }
    deferral_add_ids(correlations, ncorr, now);
    for (unsigned i = 0; i < n; i++) {
        proflink_message_fn fn;
        void *user;
        message_callback_get(&fn, &user); /* per message: a replacement applies at once */
        if (fn)
            fn(&pending[(pend_head + i) & (PENDING_MAX - 1)], user);
    }
    if (fifo_enabled()) {
        for (unsigned i = 0; i < n; i++)
            fifo_add(&pending[(pend_head + i) & (PENDING_MAX - 1)]);
        fifo_flush();
    }
    for (unsigned i = 0; i < n; i++) {
        const proflink_message *m = &pending[(pend_head + i) & (PENDING_MAX - 1)];
        if (m->type == PROFLINK_MSG_REGISTRATION && m->u.registration.host_id)
            reg_head++; /* registrations leave the pool in the order they entered it */
    }
    pend_head += n;
}

/* ---- The loop ------------------------------------------------------------------------------ */
/* Our socket, checked right before the system call that uses it (see the top). */
static int sock_ours(void) { return fd_identity_same(sock, &sock_id); }

/* Arms the receive timeout for a wait of wait_ns (-1: none). *armed_ns is what is armed
 * (0 = no timeout); it is re-armed only when the armed one would end more than the slack after
 * the deadline, or far (2x) before it. -1 when the socket is not ours any more. */
static int arm_timeout(int64_t wait_ns, uint64_t *armed_ns)
{
    uint64_t want;
    if (wait_ns < 0)
        want = 0;
    else {
        want = (uint64_t)wait_ns < 1000 ? 1000 : (uint64_t)wait_ns; /* 0 would mean "never" */
        if (*armed_ns && *armed_ns <= want + TIMEOUT_SLACK_NS && *armed_ns * 2 >= want)
            return 0;
    }
    if (want == *armed_ns)
        return 0;
    struct timeval tv = {(time_t)(want / 1000000000), (suseconds_t)((want % 1000000000) / 1000)};
    if (!sock_ours())
        return -1;
    if (setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0)
        *armed_ns = want;
    return 0;
}

/* The socket is unusable (the program closed our descriptor, say): hold nothing more, deliver
 * what is held on time, then end the thread. */
static void *wind_down(int err)
{
    log_warn("profiler socket: %s; no more profiler messages in this process", strerror(err));
    while (pending_count())
        deliver_chunk();
    deferral_disable();
    int64_t wait;
    while ((wait = deferral_run(clock_monotonic_ns(), RELEASE_CHUNK)) >= 0) {
        struct timespec ts = {(time_t)(wait / 1000000000), (long)(wait % 1000000000)};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* One receive. flags: MSG_WAITFORONE (sleep until something arrives or the timeout) or
 * MSG_DONTWAIT. Returns how many were taken, 0 for "nothing now" (empty, timeout, signal,
 * transient memory shortage), -errno when the socket is unusable. */
static int receive(int flags, unsigned room)
{
    for (unsigned i = 0; i < room; i++)
        msgs[i].msg_hdr.msg_namelen = sizeof senders[i]; /* value-result */
    if (!sock_ours())
        return -EBADF;
    int n = recvmmsg(sock, msgs, room, flags, NULL);
    if (n > 0) {
        intake((unsigned)n);
        return n;
    }
    if (n == 0 || errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        return 0;
    if (errno == ENOMEM || errno == ENOBUFS) {
        struct timespec pause = {0, 10000000};
        nanosleep(&pause, NULL);
        return 0;
    }
    return -errno;
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
    uint64_t held_since = 0; /* when the oldest pending message was received */
    int empty = 0;           /* the last receive left the socket empty */
    int quiet = 0;           /* and nothing came for QUIET_NS after that */
    for (;;) {
        /* 1. Receive everything queued. */
        unsigned room;
        while (!empty && (room = receive_room()) > 0) {
            int n = receive(MSG_DONTWAIT, room);
            if (n < 0)
                return wind_down(-n);
            empty = (unsigned)n < room;
            if (n > 0)
                quiet = 0;
        }
        /* 2. Deliver one chunk once the burst is over, then look at the socket again. */
        if (pending_count()) {
            uint64_t now = clock_monotonic_ns();
            if (!held_since)
                held_since = now;
            if (!quiet && (room = receive_room()) > 0 && now - held_since < MAX_HOLD_NS) {
                /* asleep inside the receive, as in 4: a datagram wakes it straight in */
                if (arm_timeout(QUIET_NS, &armed_ns) != 0)
                    return wind_down(EBADF);
                int n = receive(MSG_WAITFORONE, room);
                if (n < 0)
                    return wind_down(-n);
                empty = (unsigned)n < room;
                quiet = n == 0;
                continue;
            }
            deliver_chunk();
            empty = 0;
            if (!pending_count())
                held_since = 0, quiet = 0;
            continue;
        }
        /* 3. Nothing received is waiting: release the held transactions that are due. */
        int64_t wait = deferral_run(clock_monotonic_ns(), RELEASE_CHUNK);
        if (wait == 0) { /* more are due: the socket first */
            empty = 0;
            continue;
        }
        /* 4. Sleep inside the receive until a datagram or the next release is due. */
        if (arm_timeout(wait, &armed_ns) != 0)
            return wind_down(EBADF);
        int n = receive(MSG_WAITFORONE, RECV_BATCH);
        if (n < 0)
            return wind_down(-n);
        /* MSG_WAITFORONE returns with fewer than asked once the queue is empty */
        empty = n > 0 && n < RECV_BATCH;
    }
}

/* Everything but the thread (reader_lazy.h). */
int reader_start(int sock_fd, const char *socket_path)
{
    if (sock_fd < 0)
        return -1;
    sock = sock_fd;
    snprintf(sock_path, sizeof sock_path, "%s", socket_path);
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

/* Single-threaded child (fork_sequence.c): the parent's reader does not exist here. */
void reader_fork_child(void)
{
    had_thread = atomic_load_explicit(&state, memory_order_relaxed) != IDLE &&
                 atomic_load_explicit(&state, memory_order_relaxed) != UNAVAILABLE;
    atomic_store_explicit(&state, UNAVAILABLE, memory_order_relaxed);
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
