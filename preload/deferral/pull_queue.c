/* pull_queue.c — see pull_queue.h.
 *
 * The pipe protocol ("readable while results wait"): a producer that finds the list empty when
 * it pushes writes one byte. A consumer that empties the queue drains the pipe and then looks at
 * the list once more: a push that raced with the drain either left its byte after the drain or
 * is seen by that second look, which writes a byte back (both sides sequentially consistent).
 * A consumer that leaves results behind makes sure a byte is there (the tracer may have read
 * and discarded the bytes itself). Bytes carry no data; a few extra are harmless. */
#include "pull_queue.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "leaves/fd_identity.h"
#include "leaves/fd_safe.h"
#include "leaves/lock_reset.h"
#include "leaves/stats.h"
#include "leaves/real_calls.h"
#include "leaves/raw_syscall.h"
#include "leaves/sys_calls.h"

/* Results are small (32 bytes + 20 per stack-trace id, at most 1024 ids) but a tracer that
 * stops taking must not grow the process without bound: besides the count the header names,
 * the bytes queued are capped (a full queue of large results would otherwise be 80 MiB). */
#define PULL_QUEUE_MAX_BYTES (4u << 20)

_Static_assert(sizeof(proflink_ended_transaction) == 32, "pull record header is 32 bytes");
_Static_assert(sizeof(proflink_stack_count) == 20, "a stack count is 20 bytes");

struct pull_item {
    struct pull_item *next;
    proflink_ended_transaction head;
    proflink_stack_count ids[];
};

static _Atomic(struct pull_item *) incoming; /* newest first; producers push here */
static _Atomic int64_t queued_items, queued_bytes;
static pthread_mutex_t take_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pull_item *taken_head, *taken_tail; /* oldest first; under take_lock */
static pthread_mutex_t fd_lock = PTHREAD_MUTEX_INITIALIZER; /* making the pipe, once */
static _Atomic int pipe_rd = -1, pipe_wr = -1;
static struct fd_identity rd_id, wr_id; /* written once before pipe_wr is published */

static size_t record_size(uint32_t n_ids)
{
    return sizeof(proflink_ended_transaction) + (size_t)n_ids * sizeof(proflink_stack_count);
}

static void signal_ready(void)
{
    int fd = atomic_load_explicit(&pipe_wr, memory_order_seq_cst);
    /* the program may have closed our pipe and reused the number: never write into its file */
    if (fd < 0 || !fd_identity_same(fd, &wr_id))
        return;
    int saved_errno = errno;
    ssize_t w = real_write(fd, "", 1); /* non-blocking; EAGAIN: bytes are there already */
    (void)w;
    errno = saved_errno;
}

int pull_queue_push(const uint8_t trace_id[16], const uint8_t transaction_id[8],
                    const proflink_stack_count *ids, size_t n_ids)
{
    size_t size = record_size((uint32_t)n_ids);
    int64_t n = atomic_fetch_add_explicit(&queued_items, 1, memory_order_relaxed);
    int64_t b = atomic_fetch_add_explicit(&queued_bytes, (int64_t)size, memory_order_relaxed);
    struct pull_item *it = NULL;
    if (n < PROFLINK_PULL_QUEUE_MAX && b + (int64_t)size <= PULL_QUEUE_MAX_BYTES)
        it = malloc(sizeof *it + n_ids * sizeof *ids);
    if (!it) {
        atomic_fetch_sub_explicit(&queued_items, 1, memory_order_relaxed);
        atomic_fetch_sub_explicit(&queued_bytes, (int64_t)size, memory_order_relaxed);
        stat_inc(STAT_PULL_OVERFLOWS);
        return -1;
    }
    memcpy(it->head.trace_id, trace_id, 16);
    memcpy(it->head.transaction_id, transaction_id, 8);
    it->head.n_ids = (uint32_t)n_ids;
    it->head.reserved = 0;
    if (n_ids)
        memcpy(it->ids, ids, n_ids * sizeof *ids);
    struct pull_item *old = atomic_load_explicit(&incoming, memory_order_relaxed);
    do
        it->next = old;
    while (!atomic_compare_exchange_weak_explicit(&incoming, &old, it, memory_order_seq_cst,
                                                  memory_order_relaxed));
    if (!old)
        signal_ready();
    return 0;
}

/* Under take_lock: moves what producers pushed to the end of the taken list, oldest first. */
static void collect(void)
{
    struct pull_item *l = atomic_exchange_explicit(&incoming, NULL, memory_order_seq_cst);
    struct pull_item *rev = NULL, *last = l;
    while (l) {
        struct pull_item *next = l->next;
        l->next = rev;
        rev = l;
        l = next;
    }
    if (!rev)
        return;
    if (taken_tail)
        taken_tail->next = rev;
    else
        taken_head = rev;
    taken_tail = last;
}

static void drain_pipe(int fd)
{
    char sink[64];
    while (real_read(fd, sink, sizeof sink) > 0)
        ;
}

/* Under take_lock, after a take: keep "readable while results wait" (see the top). */
static void settle_pipe(void)
{
    int rd = atomic_load_explicit(&pipe_rd, memory_order_seq_cst);
    if (rd < 0 || !fd_identity_same(rd, &rd_id))
        return;
    if (taken_head) {
        int avail = 0;
        if (raw_syscall6(SYS_ioctl, rd, FIONREAD, (long)&avail, 0, 0, 0) == 0 && avail == 0)
            signal_ready();
        return;
    }
    drain_pipe(rd);
    if (atomic_load_explicit(&incoming, memory_order_seq_cst))
        signal_ready();
}

long pull_queue_take(void *buf, size_t cap)
{
    int saved_errno = errno;
    int cancel_state; /* read/write below are cancellation points: none while the lock is held */
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
    pthread_mutex_lock(&take_lock);
    collect();
    long written = 0;
    if (taken_head && record_size(taken_head->head.n_ids) > cap) {
        written = -(long)record_size(taken_head->head.n_ids);
    } else {
        unsigned char *out = buf;
        while (taken_head) {
            struct pull_item *it = taken_head;
            size_t size = record_size(it->head.n_ids);
            if ((size_t)written + size > cap)
                break;
            memcpy(out + written, &it->head, sizeof it->head);
            memcpy(out + written + sizeof it->head, it->ids,
                   it->head.n_ids * sizeof(proflink_stack_count));
            written += (long)size;
            taken_head = it->next;
            if (!taken_head)
                taken_tail = NULL;
            free(it);
            atomic_fetch_sub_explicit(&queued_items, 1, memory_order_relaxed);
            atomic_fetch_sub_explicit(&queued_bytes, (int64_t)size, memory_order_relaxed);
        }
        settle_pipe();
    }
    pthread_mutex_unlock(&take_lock);
    pthread_setcancelstate(cancel_state, NULL);
    errno = saved_errno;
    return written;
}

int pull_queue_fd(void)
{
    int rd = atomic_load_explicit(&pipe_rd, memory_order_acquire);
    if (rd >= 0)
        return rd;
    int saved_errno = errno;
    /* none of the calls below is a cancellation point (real_close is the system call, not libc's
     * cancellable close); cancellation stays off while the lock is held so that one added later
     * cannot leave it taken */
    int cancel_state;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
    pthread_mutex_lock(&fd_lock);
    rd = atomic_load_explicit(&pipe_rd, memory_order_relaxed);
    if (rd < 0) {
        int p[2];
        if (sys_pipe2(p, O_NONBLOCK | O_CLOEXEC) == 0) {
            p[0] = fd_above_stdio(p[0]);
            p[1] = fd_above_stdio(p[1]);
            if (p[0] < 0 || p[1] < 0) {
                if (p[0] >= 0)
                    real_close(p[0]);
                if (p[1] >= 0)
                    real_close(p[1]);
            } else {
                fd_identity_record(p[0], &rd_id);
                fd_identity_record(p[1], &wr_id);
                atomic_store_explicit(&pipe_rd, p[0], memory_order_release);
                atomic_store_explicit(&pipe_wr, p[1], memory_order_seq_cst);
                rd = p[0];
                /* results queued before the pipe existed: readable at once (see the top) */
                if (atomic_load_explicit(&incoming, memory_order_seq_cst) || taken_head)
                    signal_ready();
            }
        }
    }
    pthread_mutex_unlock(&fd_lock);
    pthread_setcancelstate(cancel_state, NULL);
    errno = saved_errno;
    return rd;
}

void pull_queue_fork_prepare(void)
{
    pthread_mutex_lock(&fd_lock);
    pthread_mutex_lock(&take_lock);
}

void pull_queue_fork_parent(void)
{
    pthread_mutex_unlock(&take_lock);
    pthread_mutex_unlock(&fd_lock);
}

void pull_queue_fork_orphan(void)
{
    lock_reset(&fd_lock);
    lock_reset(&take_lock);
}

void pull_queue_fork_child(void)
{
    pthread_mutex_unlock(&take_lock);
    pthread_mutex_unlock(&fd_lock);
    collect();
    while (taken_head) {
        struct pull_item *it = taken_head;
        taken_head = it->next;
        free(it);
    }
    taken_tail = NULL;
    atomic_store_explicit(&queued_items, 0, memory_order_relaxed);
    atomic_store_explicit(&queued_bytes, 0, memory_order_relaxed);
    int rd = atomic_load_explicit(&pipe_rd, memory_order_relaxed);
    int wr = atomic_load_explicit(&pipe_wr, memory_order_relaxed);
    if (rd >= 0 && fd_identity_same(rd, &rd_id))
        real_close(rd);
    if (wr >= 0 && fd_identity_same(wr, &wr_id))
        real_close(wr);
    atomic_store_explicit(&pipe_rd, -1, memory_order_relaxed);
    atomic_store_explicit(&pipe_wr, -1, memory_order_relaxed);
}
