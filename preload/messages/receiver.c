/* receiver.c — the "proflink-intake" thread (receiver.h): receives the profiler's datagrams on
 * the process's socket into the pending ring (pending.h) for the reader (deliverer.c), and does
 * nothing else.
 *
 * Intake speed is message loss. The profiler sends one datagram per sample with MSG_DONTWAIT,
 * in bursts, and the kernel queues at most net.unix.max_dgram_qlen (10 by default) + 1
 * datagrams per socket: what arrives while they wait is dropped by the sender. So this thread
 * sleeps *inside* a receive on the socket, made blocking for this, with no receive timeout; a
 * datagram wakes it straight into that receive, non-blocking receives then take what is queued
 * (up to RECV_BATCH, one recvfrom each), it parses them into the ring and goes back to sleep in
 * the next receive. All timed work (the end of a burst, delivery, held transactions) is the
 * reader's. Why this shape and not a receive timeout, a spin on the empty socket, ppoll or
 * recvmmsg: measured with bench/intake.c, docs/speed.md (The receiving thread).
 *
 * Nothing here waits for anything but the socket and, when the ring is full, room in it; no
 * lock, no write, no callback. The only system calls: the receives (one per datagram and one
 * that finds the queue empty), each after an fstat (see Descriptors), and a futex wake when the
 * reader sleeps with nothing pending (the first batch of a burst).
 *
 * Descriptors: the program may close our socket and get its number back for a file of its own
 * at any moment (daemons, closefrom, fclose's internal close, io_uring, an inline system call:
 * not every close passes a hook), and a receive on that number would steal its data. So the
 * thread checks, right before each receive, that the number still names the socket it was given
 * (fd_identity.h: device and inode), with nothing in between; a number that names another file
 * ends the intake (the reader says so once). A receive already blocked is safe either way: the
 * kernel holds the original file for that call. What is left is the instant between the check
 * and the receive that follows it, two consecutive system calls of this thread: the kernel
 * offers no receive that names a file rather than a number. Not a descriptor table of its own
 * (close_range(CLOSE_RANGE_UNSHARE)): the kernel makes one by copying the program's table, and
 * each copy closed is a close of the program's file (a FUSE or NFS file gets a FLUSH, a pipe's
 * reader waits for its EOF until the copy is gone). proflink never duplicates or closes a
 * descriptor it did not open.
 *
 * Sandboxes: a seccomp filter installed for every thread (TSYNC) would judge this thread's
 * calls by the program's allowlist; intake_stop ends it before (hooks/seccomp.c). */
#include "receiver.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "leaves/fd_identity.h"
#include "messages.h"
#include "pending.h"
#include "leaves/raw_syscall.h"
#include "provider_relay.h"
#include "leaves/stats.h"
#include "leaves/real_calls.h"
#include "leaves/sys_calls.h"

#define RECV_BATCH 32
/* Largest datagram accepted: a registration with a host id of 1012 bytes. Longer ones are
 * cut by the kernel (MSG_TRUNC) and counted as oversized. */
#define RECV_MAX 1024
/* After ENOMEM/ENOBUFS from the receive: the kernel is short of memory; try again later. */
#define MEMORY_SHORTAGE_PAUSE_NS 10000000

_Static_assert(PENDING_HOSTS >= RECV_BATCH, "a receive batch never lacks host id slots");
_Static_assert(PENDING_HOST_MAX >= RECV_MAX, "a host id always fits its slot");

static int sock = -1;
static struct fd_identity sock_id;
static _Atomic int ended;
static _Atomic int stop_asked; /* intake_stop */
static _Atomic int thread_id;  /* the thread's, once it runs */

/* This thread only. */
static uint8_t bufs[RECV_BATCH][RECV_MAX];
static long lens[RECV_BATCH]; /* each datagram's whole length (MSG_TRUNC) */

void intake_set_socket(int sock_fd)
{
    sock = sock_fd;
    int fl = sys_fcntl(sock, F_GETFL, 0);
    if (fl >= 0 && (fl & O_NONBLOCK))
        sys_fcntl(sock, F_SETFL, fl & ~O_NONBLOCK);
    fd_identity_record(sock, &sock_id);
}

void intake_close_socket(void)
{
    if (fd_identity_same(sock, &sock_id))
        real_close(sock);
    sock = -1;
    sock_id.valid = 0;
}

/* Parses n received datagrams into the ring and hands them to the reader. Nothing here waits,
 * writes or takes a lock (the counters are relaxed atomics). */
static void take(unsigned n)
{
    unsigned kept = 0;
    for (unsigned i = 0; i < n; i++) {
        if (lens[i] > RECV_MAX) {
            stat_inc(STAT_DISCARDED_OVERSIZED);
            continue;
        }
        proflink_message *m = pending_slot(kept);
        switch (message_parse(bufs[i], (size_t)lens[i], m)) {
        case MSG_VALID:
            if (m->type == PROFLINK_MSG_CORRELATION) {
                stat_inc(STAT_CORRELATIONS);
            } else {
                stat_inc(STAT_REGISTRATIONS);
                if (m->u.registration.host_id) /* its bytes are in bufs[i], reused next batch */
                    m->u.registration.host_id = pending_keep_host(
                        m->u.registration.host_id, m->u.registration.host_id_len);
            }
            kept++;
            break;
        case MSG_TRUNCATED:
            stat_inc(STAT_DISCARDED_TRUNCATED);
            break;
        case MSG_UNKNOWN:
            stat_inc(STAT_IGNORED_UNKNOWN_TYPE);
            break;
        }
    }
    stat_add(STAT_MESSAGES_RECEIVED, n);
    pending_publish(kept);
}

static void *end(int err)
{
    atomic_store_explicit(&ended, err ? err : EIO, memory_order_release);
    pending_wake_reader();
    return NULL;
}

/* Receives up to max datagrams into bufs and lens: the first waits (with no timeout), the
 * others take only what is queued already. How many, or -1 with errno when the first failed (a
 * later failure, EAGAIN at the end of the queue, ends the batch and recurs on the next call if
 * it was anything else). One recvfrom per datagram, made with the instruction itself: the
 * project's own recv is an interposer (hooks/http_io.c), and per datagram recvfrom costs the
 * kernel less than recvmmsg (docs/speed.md). */
static int receive(unsigned max)
{
    unsigned n = 0;
    long flags = MSG_TRUNC; /* the whole length, so that a cut datagram shows */
    while (n < max) {
        long r = -ECANCELED;
        /* the number still names our socket, right before each receive (see the top) */
        if (!atomic_load_explicit(&stop_asked, memory_order_acquire))
            r = fd_identity_same(sock, &sock_id)
                    ? raw_syscall6(SYS_recvfrom, sock, (long)bufs[n], RECV_MAX, flags, 0, 0)
                    : -EBADF;
        /* intake_stop's shutdown woke it (0: not a datagram) */
        if (r == 0 && atomic_load_explicit(&stop_asked, memory_order_acquire))
            r = -ECANCELED;
        if (r < 0) {
            if (!n) {
                errno = (int)-r;
                return -1;
            }
            break;
        }
        lens[n++] = r;
        flags = MSG_TRUNC | MSG_DONTWAIT;
    }
    return (int)n;
}

void *intake_main(void *arg)
{
    (void)arg;
    atomic_store_explicit(&thread_id, (int)raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0),
                          memory_order_release);
    prctl(PR_SET_NAME, "proflink-intake", 0, 0, 0);
    for (;;) {
        unsigned room = pending_room(RECV_BATCH);
        if (!room) {
            pending_wait_room();
            continue;
        }
        int n = receive(room);
        if (n > 0 && provider_relaying()) { /* another provider owns the format (provider_relay.h) */
            for (int i = 0; i < n; i++)
                provider_relay(bufs[i], lens[i] > RECV_MAX ? RECV_MAX : (size_t)lens[i]);
            continue;
        }
        if (n > 0) {
            take((unsigned)n);
            continue;
        }
        if (n == 0 || errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            continue;
        if (errno == ENOMEM || errno == ENOBUFS) {
            struct timespec pause = {0, MEMORY_SHORTAGE_PAUSE_NS};
            raw_nanosleep(&pause);
            continue;
        }
        return end(errno);
    }
}

void intake_not_started(int err) { end(err); }

/* A receive blocked on the socket returns 0 at once after shutdown(SHUT_RD), and so does every
 * later one: the thread sees the request before its next receive whichever came first. The
 * socket receives nothing more (a sender gets EPIPE), which is what ending means. */
void intake_stop(void)
{
    atomic_store_explicit(&stop_asked, 1, memory_order_release);
    if (fd_identity_same(sock, &sock_id))
        raw_syscall6(SYS_shutdown, sock, SHUT_RD, 0, 0, 0, 0);
}

int intake_thread_id(void) { return atomic_load_explicit(&thread_id, memory_order_acquire); }

int intake_ended(void) { return atomic_load_explicit(&ended, memory_order_acquire); }

void intake_fork_child(void)
{
    intake_close_socket();
    atomic_store_explicit(&ended, 0, memory_order_relaxed);
    atomic_store_explicit(&stop_asked, 0, memory_order_relaxed);
    atomic_store_explicit(&thread_id, 0, memory_order_relaxed);
}
