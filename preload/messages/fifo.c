/* fifo.c — see fifo.h. One mutex guards the descriptor, so that a write never races with the
 * close of a broken pipe (and a reuse of its number); it is held for one non-blocking write()
 * (or, at most every REOPEN_INTERVAL_NS, one non-blocking open()), never across anything that
 * waits. */
#include "fifo.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "leaves/clock.h"
#include "leaves/fd_identity.h"
#include "leaves/fd_safe.h"
#include "leaves/lock_reset.h"
#include "leaves/log.h"
#include "json_lines.h"
#include "leaves/stats.h"
#include "leaves/real_calls.h"
#include "leaves/raw_syscall.h"
#include "leaves/sys_calls.h"

/* A consumer that opens the pipe after the program started misses at most this much: short
 * enough for tools started a moment later, long enough that a profiler burst with nobody
 * reading costs one failed open(), not a thousand. */
#define REOPEN_INTERVAL_NS 100000000ull
#define PIPE_SIZE_WANTED (256 * 1024) /* room for bursts while a consumer catches up */

static char path[PATH_MAX];
static int enabled;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int fd = -1;
static struct fd_identity fd_id; /* the program may close our fd and reuse the number */
static int refused; /* not a FIFO we may use (pipe_problem): never written */
static int create_warned;
static uint64_t next_try_ns;

/* Refuses the path for good, with one warning. */
static void refuse(const char *why)
{
    log_warn("PROFLINK_FIFO %.200s %s; no records written", path, why);
    refused = 1;
}

/* Why an existing pipe may not receive our records, or NULL. Another user's pipe (or one others
 * may write to) would hand that user the host id and trace ids, and let them inject fake lines
 * for the real consumer; a symlink could point anywhere. */
static const char *pipe_problem(const struct stat *st)
{
    if (S_ISLNK(st->st_mode))
        return "is a symbolic link";
    if (!S_ISFIFO(st->st_mode))
        return "exists and is not a named pipe";
    if (st->st_uid != raw_geteuid())
        return "is owned by another user";
    if (st->st_mode & (S_IWGRP | S_IWOTH))
        return "is writable by group or others";
    return NULL;
}

/* 0 if path is an acceptable FIFO or was made one, -1 if not (refused, warned once). */
static int ensure_fifo(void)
{
    struct stat st;
    if (sys_lstat(path, &st) == 0) {
        const char *why = pipe_problem(&st);
        if (why)
            refuse(why);
        return why ? -1 : 0;
    }
    if (errno == ENOENT && sys_mkfifo(path, 0600) != 0 && errno != EEXIST) {
        if (!create_warned) /* retried often: say it once */
            log_warn("PROFLINK_FIFO %.200s: cannot create it: %s", path, strerror(errno));
        create_warned = 1;
        return -1;
    }
    return 0;
}

/* Called with the lock held. A reader must have the pipe open, or open() fails with ENXIO. */
static void try_open(void)
{
    next_try_ns = clock_monotonic_ns() + REOPEN_INTERVAL_NS;
    if (refused || ensure_fifo() != 0)
        return;
    /* The path may have been swapped since the lstat: no symlink followed, and the checks
     * repeated on what was actually opened. */
    int f = fd_above_stdio(
        sys_open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW));
    if (f < 0) {
        if (errno == ELOOP)
            refuse("is a symbolic link");
        return; /* ENXIO: nobody reads yet */
    }
    struct stat st;
    const char *why = sys_fstat(f, &st) != 0 ? "cannot be checked" : pipe_problem(&st);
    if (why) {
        real_close(f);
        refuse(why);
        return;
    }
#ifdef F_SETPIPE_SZ
    if (sys_fcntl(f, F_GETPIPE_SZ, 0) < PIPE_SIZE_WANTED)
        (void)sys_fcntl(f, F_SETPIPE_SZ, PIPE_SIZE_WANTED); /* best effort */
#endif
    fd = f;
    fd_identity_record(fd, &fd_id);
    log_debug("PROFLINK_FIFO %.200s: a reader is there, writing records", path);
}

void fifo_init(const char *p)
{
    size_t n = p ? strlen(p) : 0;
    if (enabled || !n || n >= sizeof path)
        return; /* a fork child keeps its parent's */
    memcpy(path, p, n + 1);
    enabled = 1;
    pthread_mutex_lock(&lock);
    try_open();
    pthread_mutex_unlock(&lock);
}

int fifo_enabled(void) { return enabled; }

/* Consumes the SIGPIPE our write raised in this thread, unless one was already pending before
 * (that one is the program's). */
static void consume_sigpipe(void)
{
    sigset_t set;
    sys_sigemptyset(&set);
    sys_sigaddset(&set, SIGPIPE);
    struct timespec zero = {0, 0};
    while (sys_sigtimedwait(&set, NULL, &zero) < 0 && errno == EINTR)
        ;
}

void fifo_write(const char *buf, size_t len, unsigned n, int signals_blocked)
{
    if (!enabled || len == 0)
        return;
    if (len > RECORD_MAX) { /* a caller bug; never split a record */
        stat_add(STAT_FIFO_DROPS, n);
        return;
    }
    int saved_errno = errno;
    /* none of the calls below is a cancellation point (the open and the writes are the system
     * calls, not libc's cancellable ones); cancellation stays off while the lock is held so that
     * one added later cannot leave it held, and every later fork() hang in our prepare handler */
    int cancel_state;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
    pthread_mutex_lock(&lock);
    if (fd >= 0 && !fd_identity_same(fd, &fd_id))
        fd = -1; /* not ours any more: forget the number, never write or close it */
    if (fd < 0 && !refused && clock_monotonic_ns() >= next_try_ns)
        try_open();
    if (fd < 0) {
        pthread_mutex_unlock(&lock);
        pthread_setcancelstate(cancel_state, NULL);
        stat_add(STAT_FIFO_DROPS, n);
        errno = saved_errno;
        return;
    }
    sigset_t pipe_set, old;
    int was_pending = 0;
    if (!signals_blocked) {
        sys_sigemptyset(&pipe_set);
        sys_sigaddset(&pipe_set, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
        sigset_t pending;
        if (sys_sigpending(&pending) == 0)
            was_pending = sys_sigismember(&pending, SIGPIPE);
    }
    ssize_t w;
    do
        w = real_write(fd, buf, len);
    while (w < 0 && errno == EINTR);
    int err = w < 0 ? errno : 0;
    if (err == EPIPE && !was_pending)
        consume_sigpipe();
    if (!signals_blocked)
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (w == (ssize_t)len) {
        stat_add(STAT_FIFO_RECORDS, n);
    } else {
        /* w >= 0 cannot be short for len <= PIPE_BUF; EAGAIN: full, keep the pipe */
        stat_add(STAT_FIFO_DROPS, n);
        if (err && err != EAGAIN) {
            real_close(fd);
            fd = -1;
            next_try_ns = clock_monotonic_ns() + REOPEN_INTERVAL_NS;
            log_debug("PROFLINK_FIFO %.200s: %s; reopening later", path, strerror(err));
        }
    }
    pthread_mutex_unlock(&lock);
    pthread_setcancelstate(cancel_state, NULL);
    errno = saved_errno;
}

void fifo_batch_flush(struct fifo_batch *b)
{
    if (b->n)
        fifo_write(b->buf, b->len, b->n, 1);
    b->len = 0;
    b->n = 0;
}

void fifo_batch_add(struct fifo_batch *b, const char *record, size_t len)
{
    if (b->len + len > sizeof b->buf)
        fifo_batch_flush(b);
    memcpy(b->buf + b->len, record, len);
    b->len += len;
    b->n++;
}

void fifo_fork_prepare(void) { pthread_mutex_lock(&lock); }
void fifo_fork_parent(void) { pthread_mutex_unlock(&lock); }
/* The child shares the pipe (its records carry its own pid). */
void fifo_fork_child(void) { pthread_mutex_unlock(&lock); }
void fifo_fork_orphan(void) { lock_reset(&lock); }
