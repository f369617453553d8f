/* deliverer.c — the "proflink-reader" thread (deliverer.h), and the start of the intake thread
 * that feeds it (receiver.h).
 *
 * Two threads per process, each created with every signal blocked (none is ever delivered to
 * them) and without a thread record (real_pthread_create), once something consumes what they
 * receive (deliverer_lazy.h: a process that consumes nothing stays single-threaded). The intake
 * thread only receives, blocked in the receive with no timeout (receiver.c says why,
 * docs/speed.md has the measurements); this one does everything that takes time or needs a
 * timer: it waits for the end of a burst, delivers (the tracer's callbacks, FIFO lines, the
 * deferral's id table, pull results) and releases held transactions when they are due.
 *
 * Receiving comes first. Delivery never competes with a burst: a FIFO write wakes its consumer,
 * a callback runs the tracer's code, and on a 2-CPU machine either takes the CPU that the
 * sender or the intake needed (delivering while a burst was still arriving took 0.46x of what
 * a bare receiver took with FIFO delivery). So the reader waits until no message has arrived for
 * QUIET_NS, at most MAX_HOLD_NS after it first saw one waiting, or until the ring is half full;
 * the wait is a plain sleep that nobody interrupts (the intake would otherwise make a system
 * call per batch to wake it). It then delivers in chunks of DELIVER_CHUNK and goes back to
 * waiting as soon as new messages arrive.
 *
 * Sleeping: with nothing pending and nothing held, the reader sleeps on a futex with no timeout
 * (an idle process sees no wake-up at all); with transactions held, until the next is due. The
 * intake wakes it when it hands over the first messages of a burst; application threads wake it
 * when the deferral queue goes from empty to non-empty (pending_wake_reader: a futex wake,
 * async-signal-safe). */
#include "deliverer.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "leaves/clock.h"
#include "deferral/deferral.h"
#include "messages/fifo.h"
#include "leaves/pthread_real.h"
#include "messages/receiver.h"
#include "leaves/log.h"
#include "messages/pending.h"
#include "messages/profiler_state.h"
#include "deliverer_lazy.h"
#include "messages/json_lines.h"
#include "leaves/runtime_state.h"
#include "leaves/raw_syscall.h"
#include "leaves/sys_calls.h"

/* The tracer's callbacks run on this stack: musl's default (128 KiB) is small for them,
 * glibc's (RLIMIT_STACK, often 8 MiB) more than needed; pages are touched only as used. */
#define READER_STACK_SIZE (1024 * 1024)
/* The intake runs no foreign code and would need little, but glibc carves the program's static
 * TLS out of each thread's stack and refuses a stack that cannot hold it: the reader's size
 * serves both (pages touched only as used). */
#define INTAKE_STACK_SIZE READER_STACK_SIZE
/* Messages delivered per chunk, and held transactions released per round: large enough that
 * the per-chunk costs (one id-table lock, one FIFO write of up to 4 KiB) are shared, small
 * enough that a new burst is noticed within a few microseconds of delivery. */
#define DELIVER_CHUNK 32
#define RELEASE_CHUNK 32
/* A burst is over when no message has arrived for this long. The profiler's sender is faster
 * than any receiver, so within a burst the intake is idle only for the few microseconds the
 * sender is preempted; delivering in those gaps cost about a third of what was received in
 * bench/intake.c. */
#define QUIET_NS 500000
/* ... but a message waits no longer than this: a steady stream with no pause still gets
 * delivered. */
#define MAX_HOLD_NS 20000000ull
/* A held transaction is released up to this long after it is due, with every other one due by
 * then: a tracer that ends a sampled transaction every millisecond would otherwise wake this
 * thread for each (measured: 909 wake-ups a second in bench/intake.c's pull target), taking a
 * CPU from the intake and the program each time; with this, about 100. Small against the delay
 * it adds to (1 s by default; a release is never early, and the registration's delay is a
 * lower bound). */
#define RELEASE_LATE_NS 10000000
/* ... nor once the ring is this full: the intake must never run out of room mid-burst. */
#define DELIVER_AT_ONCE (PENDING_MAX / 2)
/* reader_stop_threads waits at most this long for both threads to end (the reader may be in a
 * tracer's callback); the filter is installed after it either way. */
#define STOP_WAIT_NS 2000000000ull

enum { IDLE, STARTING, RUNNING, UNAVAILABLE };
static _Atomic int state = UNAVAILABLE; /* of the threads; deliverer_lazy.h */
static int had_thread;                   /* fork child: the parent's reader was running */
static _Atomic int reader_tid;           /* the reader thread's id, once it runs */
static _Atomic int intake_started;       /* the intake thread was created */
static int pid;
/* reader_configure: set once, before any thread */
static const char *fifo_path = "";
static uint32_t buffer_size;
static int mode_auto, hold_always;

/* This thread only. */
static proflink_message correlations[DELIVER_CHUNK];
static struct fifo_batch fifo_lines;

static void on_registration(const proflink_message *m)
{
    const char *host = m->u.registration.host_id;
    size_t len = m->u.registration.host_id_len;
    profiler_registered(m->u.registration.samples_delay_ms, host, len);
    log_info("profiler registration: samples-delay-ms %u, host id \"%.*s\"",
             m->u.registration.samples_delay_ms, (int)(len > 64 ? 64 : len), host ? host : "");
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
    if (profiler_mark_seen() && mode_auto)
        log_info("a profiler is sending: ended sampled transactions are held from now on");
    size_t ncorr = 0;
    for (unsigned i = 0; i < n; i++) {
        const proflink_message *m = pending_at(i);
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
            fn(pending_at(i), user);
    }
    if (fifo_enabled()) {
        for (unsigned i = 0; i < n; i++) {
            char line[RECORD_MAX];
            fifo_batch_add(&fifo_lines, line, record_message(line, pid, pending_at(i)));
        }
        fifo_batch_flush(&fifo_lines);
    }
    pending_consume(n);
}

static void sleep_ns(int64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
    raw_nanosleep(&ts);
}

/* The intake ended (the program closed our socket, say): hold nothing more, deliver what is
 * held on time, then end the thread. */
static void *wind_down(int err)
{
    if (err == ECANCELED) { /* reader_stop_threads: everything now, on this thread */
        while (pending_count())
            deliver_chunk();
        deferral_disable();
        deferral_flush();
        return NULL;
    }
    log_warn("profiler socket: %s; no more profiler messages in this process", strerror(err));
    while (pending_count())
        deliver_chunk();
    deferral_disable();
    int64_t wait;
    while ((wait = deferral_run(clock_monotonic_ns(), RELEASE_CHUNK)) >= 0)
        sleep_ns(wait);
    return NULL;
}

static void *reader_main(void *arg)
{
    (void)arg;
    atomic_store_explicit(&reader_tid, (int)raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0),
                          memory_order_release);
    prctl(PR_SET_NAME, "proflink-reader", 0, 0, 0);
    uint64_t held_since = 0; /* when a message was first seen waiting (0: none waits) */
    for (;;) {
        unsigned n = pending_count();
        if (n) {
            /* 1. Wait for the burst to end, then deliver one chunk. */
            uint64_t now = clock_monotonic_ns();
            if (!held_since)
                held_since = now;
            if (n < DELIVER_AT_ONCE && now - held_since < MAX_HOLD_NS && !intake_ended()) {
                uint32_t before = pending_published();
                sleep_ns(QUIET_NS);
                if (pending_published() != before)
                    continue; /* still arriving */
            }
            deliver_chunk();
            if (!pending_count())
                held_since = 0;
            continue;
        }
        int err = intake_ended();
        if (err)
            return wind_down(err);
        /* 2. Nothing received is waiting: release the held transactions that are due. */
        int64_t wait = deferral_run(clock_monotonic_ns(), RELEASE_CHUNK);
        if (wait == 0)
            continue; /* more are due: look at the ring first */
        /* 3. Sleep until messages arrive, a transaction is held, or the next one is due. */
        uint32_t seen = pending_reader_prepare();
        if (pending_count() || intake_ended())
            pending_reader_cancel();
        else
            pending_reader_wait(seen, wait < 0 ? -1 : wait + RELEASE_LATE_NS);
    }
}

void reader_configure(const char *fifo, uint32_t capacity, int is_auto, int always)
{
    fifo_path = fifo ? fifo : "";
    buffer_size = capacity;
    mode_auto = is_auto;
    hold_always = always;
}

/* Everything but the threads (deliverer_lazy.h). pid: the process this socket is for. */
int reader_start(int sock_fd)
{
    if (sock_fd < 0)
        return -1;
    intake_set_socket(sock_fd);
    pid = (int)raw_getpid();
    fifo_init(fifo_path);
    atomic_store_explicit(&state, IDLE, memory_order_release);
    /* something consumes already: the threads start at the program's first thread or wait */
    if (fifo_enabled() || had_thread)
        atomic_store_explicit(&reader_kick_pending, 1, memory_order_relaxed);
    return 0;
}

_Atomic int reader_kick_pending;

void reader_kick_slow(void)
{
    if (runtime_sandboxed() || !atomic_exchange_explicit(&reader_kick_pending, 0,
                                                         memory_order_relaxed))
        return;
    int saved_errno = errno; /* the program's call: errno is its own */
    /* a raw clone copy not set up yet: its socket descriptor is its parent's (deliverer_lazy.h) */
    if ((int)raw_getpid() == pid)
        reader_ensure_running();
    errno = saved_errno;
}

/* Whether this thread may be running a signal handler: a signal that has a handler is blocked
 * (the kernel blocks the signal it delivers until the handler returns, unless SA_NODEFER). A
 * program that keeps such a signal blocked outside its handler (waiting with pselect or ppoll)
 * is taken for one too: its start waits for a thread creation or the API. A few system calls,
 * at a wait while something consumes messages and the threads have not started. */
static int maybe_in_signal_handler(void)
{
    uint64_t blocked = 0;
    if (raw_syscall4(SYS_rt_sigprocmask, SIG_BLOCK, 0, (long)&blocked, SYS_SIGSET_BYTES) != 0)
        return 1;
    for (int sig = 1; sig <= 64; sig++) {
        if (!(blocked >> (sig - 1) & 1))
            continue;
        struct {
            unsigned long handler, flags, restorer;
            uint64_t mask;
        } act = {0};
        if (raw_syscall4(SYS_rt_sigaction, sig, 0, (long)&act, SYS_SIGSET_BYTES) == 0 &&
            act.handler != (unsigned long)SIG_DFL && act.handler != (unsigned long)SIG_IGN)
            return 1;
    }
    return 0;
}

/* A wait looks (maybe_in_signal_handler) at most once per LOOK_EVERY_NS: a program that keeps a
 * handled signal blocked around every wait (pselect, ppoll) would otherwise pay these calls at
 * each of its waits, and a server waits again soon enough. The coarse clock is the vDSO's: no
 * system call, and async-signal-safe. */
#define LOOK_EVERY_NS 5000000ull
static _Atomic uint64_t next_look_ns;

void reader_kick_wait_slow(void)
{
    /* sandboxed: no call of ours at all (reader_kick_slow would refuse anyway) */
    if (runtime_sandboxed())
        return;
    int saved_errno = errno;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    uint64_t next = atomic_load_explicit(&next_look_ns, memory_order_relaxed);
    if (now < next || !atomic_compare_exchange_strong_explicit(&next_look_ns, &next,
                                                               now + LOOK_EVERY_NS,
                                                               memory_order_relaxed,
                                                               memory_order_relaxed)) {
        errno = saved_errno;
        return;
    }
    int in_handler = maybe_in_signal_handler();
    errno = saved_errno;
    if (!in_handler)
        reader_kick_slow();
}

static int start_thread(void *(*fn)(void *), size_t stack_size)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, stack_size);
    sigset_t all, old;
    sys_sigfillset(&all);
    /* the new thread inherits this mask: no signal can reach it, not even before it runs */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t thread;
    int rc = real_pthread_create(&thread, &attr, fn, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    return rc;
}

int reader_ensure_running(void)
{
    /* Sandboxed (the program installed a seccomp filter): starting the threads would be system
     * calls of ours (clone, then theirs) that an allowlist written for the program may punish
     * with death; the message side stays off, and held transactions are delivered at once. */
    if (runtime_sandboxed())
        return -1;
    int s = atomic_load_explicit(&state, memory_order_acquire);
    if (s != IDLE)
        return s == UNAVAILABLE ? -1 : 0;
    if (!atomic_compare_exchange_strong(&state, &s, STARTING))
        return s == UNAVAILABLE ? -1 : 0; /* another thread starts it: do not wait */
    int saved_errno = errno; /* called from the program's threads through the API */
    int can_hold = deferral_init(buffer_size, hold_always, pending_wake_reader) == 0;
    /* the reader first: an intake without it would fill the ring and wait for room forever,
     * while a reader without an intake winds down and ends */
    int rc = start_thread(reader_main, READER_STACK_SIZE);
    if (rc != 0) {
        log_error("cannot start the reader thread (%s); no profiler messages in this process",
                  strerror(rc));
        atomic_store_explicit(&state, UNAVAILABLE, memory_order_release);
        errno = saved_errno;
        return -1;
    }
    if (can_hold)
        deferral_enable();
    rc = start_thread(intake_main, INTAKE_STACK_SIZE);
    if (rc != 0)
        intake_not_started(rc); /* the reader delivers what is held, then ends */
    else
        atomic_store_explicit(&intake_started, 1, memory_order_release);
    atomic_store_explicit(&state, RUNNING, memory_order_release);
    errno = saved_errno;
    return 0;
}

/* Whether thread id has ended: it ran (its id is known) and the kernel no longer knows it
 * (tgkill's signal 0 only checks). A detached thread's last system calls (the C library's
 * cleanup, exit) come after anything it could tell us, so only the kernel knows. */
static int thread_gone(int id)
{
    return id && raw_syscall6(SYS_tgkill, raw_getpid(), id, 0, 0, 0, 0) == -ESRCH;
}

void reader_stop_threads(void)
{
    uint64_t deadline = clock_monotonic_ns() + STOP_WAIT_NS;
    int s;
    /* another thread is creating them (it checked for the sandbox just before it began) */
    while ((s = atomic_load_explicit(&state, memory_order_acquire)) == STARTING &&
           clock_monotonic_ns() < deadline)
        raw_sched_yield();
    if (s != RUNNING || !atomic_compare_exchange_strong(&state, &s, UNAVAILABLE))
        return;
    intake_stop();
    pending_wake_reader();
    int intake = atomic_load_explicit(&intake_started, memory_order_acquire);
    /* a tracer's callback on the reader that installs the filter: that thread cannot end */
    int self = (int)raw_syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0);
    int reader = atomic_load_explicit(&reader_tid, memory_order_acquire);
    while (!((reader == self || thread_gone(reader)) &&
             (!intake || thread_gone(intake_thread_id()))) &&
           clock_monotonic_ns() < deadline) {
        struct timespec pause = {0, 1000000};
        raw_nanosleep(&pause);
        reader = atomic_load_explicit(&reader_tid, memory_order_acquire);
    }
}

/* Single-threaded child (fork_sequence.c): the parent's threads do not exist here. */
void reader_fork_child(void)
{
    had_thread = atomic_load_explicit(&state, memory_order_relaxed) != IDLE &&
                 atomic_load_explicit(&state, memory_order_relaxed) != UNAVAILABLE;
    atomic_store_explicit(&state, UNAVAILABLE, memory_order_relaxed);
    atomic_store_explicit(&reader_tid, 0, memory_order_relaxed);
    atomic_store_explicit(&intake_started, 0, memory_order_relaxed);
    /* the parent's socket: the child gets its own (unless the program reused the number) */
    intake_fork_child();
    pending_reset(); /* the parent delivers what it had received */
}

/* A failed exec: the program runs on with a new socket (runtime_exec_failed). Only while the
 * threads have not started: a running intake checks the number before each receive against
 * the old socket, and a number changed under it would end it. */
int reader_replace_socket(int sock_fd)
{
    int s = IDLE;
    if (!atomic_compare_exchange_strong(&state, &s, STARTING))
        return -1;
    intake_close_socket();
    intake_set_socket(sock_fd);
    atomic_store_explicit(&state, IDLE, memory_order_release);
    return 0;
}
