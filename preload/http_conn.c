/* http_conn.c — the table of accepted stream connections (see http_conn.h). */
#include "http_conn.h"

#include <sys/mman.h>

#include "export.h"
#include "stats.h"

PROFLINK_EXPORT _Atomic uint32_t proflink_http_reading;
_Atomic long http_conn_live;

/* Leaves are published with a release compare-and-swap and read with acquire loads, so a
 * thread that finds a leaf sees it zeroed (mmap) and never half-initialised. */
static struct http_conn *_Atomic leaves[HTTP_CONN_TOP];

#define LEAF_SLOTS (1u << HTTP_CONN_LEAF_BITS)
#define LEAF_MASK (LEAF_SLOTS - 1)

void http_conn_enable(void)
{
    atomic_store_explicit(&proflink_http_reading, 1, memory_order_release);
}

static struct http_conn *slot(int fd, int create)
{
    if (fd < 0)
        return 0;
    unsigned top = (unsigned)fd >> HTTP_CONN_LEAF_BITS;
    struct http_conn *leaf = atomic_load_explicit(&leaves[top], memory_order_acquire);
    if (!leaf && create) {
        /* mmap, not malloc: no lock inside the program's allocator from an accept() hook, and
         * MAP_NORESERVE: the pages of unused descriptors are never committed. */
        void *m = mmap(0, sizeof(struct http_conn) * LEAF_SLOTS, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            return 0;
        struct http_conn *expected = 0;
        if (atomic_compare_exchange_strong_explicit(&leaves[top], &expected, m,
                                                    memory_order_acq_rel, memory_order_acquire)) {
            leaf = m;
        } else {
            munmap(m, sizeof(struct http_conn) * LEAF_SLOTS);
            leaf = expected;
        }
    }
    return leaf ? &leaf[(unsigned)fd & LEAF_MASK] : 0;
}

struct http_conn *http_conn_find_slow(int fd)
{
    struct http_conn *c = slot(fd, 0);
    return c && atomic_load_explicit(&c->tracked, memory_order_acquire) ? c : 0;
}

void http_conn_open(int fd)
{
    if (!atomic_load_explicit(&proflink_http_reading, memory_order_relaxed))
        return;
    struct http_conn *c = slot(fd, 1);
    if (!c)
        return;
    /* A slot still marked tracked belonged to a descriptor closed behind our back (close_range,
     * a libc-internal close): the new connection replaces it. */
    if (atomic_exchange_explicit(&c->tracked, 0, memory_order_acq_rel))
        atomic_fetch_sub_explicit(&http_conn_live, 1, memory_order_relaxed);
    http_scan_init(&c->scan);
    c->ctx.present = 0;
    atomic_store_explicit(&c->idle, 1, memory_order_relaxed);
    atomic_store_explicit(&c->lost, 0, memory_order_relaxed);
    atomic_store_explicit(&c->busy, 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->gen, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&http_conn_live, 1, memory_order_relaxed);
    atomic_store_explicit(&c->tracked, 1, memory_order_release);
}

void http_conn_close(struct http_conn *c)
{
    if (atomic_exchange_explicit(&c->tracked, 0, memory_order_acq_rel))
        atomic_fetch_sub_explicit(&http_conn_live, 1, memory_order_relaxed);
}

void http_conn_close_range(unsigned lo, unsigned hi)
{
    if (hi > (unsigned)INT32_MAX)
        hi = (unsigned)INT32_MAX;
    for (unsigned fd = lo; fd <= hi;) {
        struct http_conn *leaf =
            atomic_load_explicit(&leaves[fd >> HTTP_CONN_LEAF_BITS], memory_order_acquire);
        unsigned leaf_end = (fd | LEAF_MASK) < hi ? (fd | LEAF_MASK) : hi;
        /* a load first: writing every slot would commit the leaf's untouched pages */
        for (; leaf && fd <= leaf_end; fd++)
            if (atomic_load_explicit(&leaf[fd & LEAF_MASK].tracked, memory_order_relaxed))
                http_conn_close(&leaf[fd & LEAF_MASK]);
        if (leaf_end == (unsigned)INT32_MAX)
            break;
        fd = leaf_end + 1;
    }
}

void http_conn_lost(struct http_conn *c) { atomic_store_explicit(&c->lost, 1, memory_order_relaxed); }

int http_conn_feed(struct http_conn *c, const uint8_t *p, size_t n, struct trace_ctx *ctx,
                   uint32_t *gen)
{
    /* acquire/release: the scanner state written by the previous reader is seen whole */
    if (atomic_exchange_explicit(&c->busy, 1, memory_order_acquire)) {
        http_conn_lost(c);
        return -1;
    }
    if (atomic_load_explicit(&c->lost, memory_order_relaxed))
        http_scan_kill(&c->scan);
    int heads_ended = 0, restarted = 0;
    while (n > 0 && !http_scan_dead(&c->scan)) {
        enum http_scan_event ev;
        struct trace_ctx got;
        size_t used = http_scan_feed(&c->scan, p, n, &ev, &got);
        p += used;
        n -= used;
        if (ev == HTTP_SCAN_HEAD_START) {
            c->ctx.present = 0;
            restarted |= heads_ended;
            atomic_fetch_add_explicit(&c->gen, 1, memory_order_relaxed);
        } else if (ev == HTTP_SCAN_HEAD_END) {
            stat_inc(got.present ? STAT_HTTP_REQUESTS_TRACED : STAT_HTTP_REQUESTS_UNTRACED);
            c->ctx = heads_ended ? (struct trace_ctx){0} : got;
            heads_ended++;
            atomic_fetch_add_explicit(&c->gen, 1, memory_order_relaxed);
        }
    }
    if (restarted)
        c->ctx.present = 0; /* parts of two requests in one read: which one runs is unknown */
    if (http_scan_dead(&c->scan) && c->ctx.present) {
        c->ctx.present = 0;
        atomic_fetch_add_explicit(&c->gen, 1, memory_order_relaxed);
    }
    atomic_store_explicit(&c->idle, (uint8_t)http_scan_idle(&c->scan), memory_order_relaxed);
    *ctx = c->ctx;
    *gen = atomic_load_explicit(&c->gen, memory_order_relaxed);
    atomic_store_explicit(&c->busy, 0, memory_order_release);
    return 0;
}
