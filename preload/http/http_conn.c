/* http_conn.c — the table of accepted stream connections (see http_conn.h). */
#include "http_conn.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#include "h2_conn.h"
#include "leaves/runtime_state.h"

#include "leaves/export.h"
#include "leaves/stats.h"
#include "leaves/sys_calls.h"

PROFLINK_EXPORT _Atomic uint32_t proflink_http_reading;
PROFLINK_LOCAL_ALIAS(http_reading, proflink_http_reading);
_Atomic long http_conn_live;
__thread uint8_t http_conn_unsure __attribute__((tls_model("initial-exec")));
_Atomic uint8_t http_conn_tls_detached;

/* Leaves are published with a release compare-and-swap and read with acquire loads, so a
 * thread that finds a leaf sees it zeroed (mmap) and never half-initialised. */
static struct http_conn *_Atomic leaves[HTTP_CONN_TOP];

#define LEAF_SLOTS (1u << HTTP_CONN_LEAF_BITS)
#define LEAF_MASK (LEAF_SLOTS - 1)

void http_conn_enable(void)
{
    atomic_store_explicit(&http_reading, 1, memory_order_release);
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
        void *m = sys_mmap(0, sizeof(struct http_conn) * LEAF_SLOTS, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            return 0;
        struct http_conn *expected = 0;
        if (atomic_compare_exchange_strong_explicit(&leaves[top], &expected, m,
                                                    memory_order_acq_rel, memory_order_acquire)) {
            leaf = m;
        } else {
            sys_munmap(m, sizeof(struct http_conn) * LEAF_SLOTS);
            leaf = expected;
        }
    }
    return leaf ? &leaf[(unsigned)fd & LEAF_MASK] : 0;
}

/* Every hooked read and write of any descriptor comes here while a connection is tracked:
 * the table walk is written out rather than through slot() (a call less: 24 instructions per
 * lookup instead of 38, callgrind on bench/http_io.c write). */
struct http_conn *http_conn_find_slow(int fd)
{
    if (fd < 0)
        return 0;
    struct http_conn *leaf = atomic_load_explicit(&leaves[(unsigned)fd >> HTTP_CONN_LEAF_BITS],
                                                  memory_order_acquire);
    struct http_conn *c = leaf ? &leaf[(unsigned)fd & LEAF_MASK] : 0;
    return c && atomic_load_explicit(&c->tracked, memory_order_acquire) ? c : 0;
}

void http_conn_open(int fd, uint64_t ino)
{
    if (!atomic_load_explicit(&http_reading, memory_order_relaxed))
        return;
    struct http_conn *c = slot(fd, 1);
    if (c)
        http_conn_start(c, ino);
}

void http_conn_start(struct http_conn *c, uint64_t ino)
{
    /* A slot still marked tracked belonged to a descriptor closed behind our back (close_range,
     * a libc-internal close): the new connection replaces it. */
    if (atomic_exchange_explicit(&c->tracked, 0, memory_order_acq_rel))
        atomic_fetch_sub_explicit(&http_conn_live, 1, memory_order_relaxed);
    http_scan_init(&c->scan);
    http_scan_init_response(&c->resp);
    c->ino = ino;
    c->checked_ns = INT64_MIN / 2; /* the first head is checked */
    c->reads = c->head_read = 0;
    /* numbers go on across connections: a thread's note "request n of this slot" is never
     * mistaken for a request of the next connection (gen changes too) */
    atomic_store_explicit(&c->dones, atomic_load_explicit(&c->heads, memory_order_relaxed),
                          memory_order_relaxed);
    atomic_store_explicit(&c->lost, 0, memory_order_relaxed);
    atomic_store_explicit(&c->tls, 0, memory_order_relaxed);
    atomic_store_explicit(&c->busy, 0, memory_order_relaxed);
    atomic_store_explicit(&c->wbusy, 0, memory_order_relaxed);
    atomic_store_explicit(&c->h2, H2_MODE_UNDECIDED, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->gen, 1, memory_order_release);
    atomic_fetch_add_explicit(&http_conn_live, 1, memory_order_relaxed);
    atomic_store_explicit(&c->tracked, 1, memory_order_release);
}

void http_conn_close(struct http_conn *c)
{
    /* gen first: a thread that still finds the slot tracked already sees its requests ended */
    atomic_fetch_add_explicit(&c->gen, 1, memory_order_release);
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

void http_conn_lost(struct http_conn *c) { atomic_store_explicit(&c->lost, 1, memory_order_release); }

/* How long a connection's identity check holds: a keep-alive connection's heads within one
 * tick of the coarse clock (1 to 4 ms, the kernel's HZ) share one fstat. Checking every head
 * cost a quarter of a microsecond per request, 2% of a loopback keep-alive request's CPU
 * (bench/http_io.c). */
#define HTTP_CONN_RECHECK_NS 1000000

/* Is fd still the socket accepted on this slot? A connection closed where proflink cannot see
 * it (a raw system call, io_uring) leaves its slot tracked, and a file that gets the number
 * must not be read as HTTP: neither its traceparent applied nor its heads queued as requests
 * (an untraced one would show the connection's older open request). One fstat at most per
 * HTTP_CONN_RECHECK_NS and connection, made where the reads brought a head: a number closed
 * unseen and given to another file within that time of the previous check is not caught. None
 * in a sandboxed process (no system call of proflink's own there: the slot is trusted as it
 * is). */
static int same_socket(struct http_conn *c, int fd)
{
    if (!c->ino || runtime_sandboxed())
        return 1;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts); /* the vDSO: no system call */
    int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    if (now - c->checked_ns < HTTP_CONN_RECHECK_NS && now >= c->checked_ns)
        return 1;
    struct stat st;
    if (sys_fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) || (uint64_t)st.st_ino != c->ino)
        return 0;
    c->checked_ns = now;
    return 1;
}

/* A head ended with context got: queue its request. 0, or -1 when c stops being followed. */
static int queue_request(struct http_conn *c, int fd, const struct trace_ctx *got)
{
    if (!same_socket(c, fd)) {
        http_conn_close(c);
        return -1;
    }
    uint32_t h = atomic_load_explicit(&c->heads, memory_order_relaxed);
    uint32_t open = h - atomic_load_explicit(&c->dones, memory_order_acquire);
    /* A head that comes in a later read than an unanswered one: a client that waits for its
     * answers (nearly all) got an answer proflink did not see (written through another
     * number, io_uring, another process), or one pipelining slowly. Queued, it would show the
     * unanswered request during this one's work: not followed any more instead. Too many
     * pipelined requests: the same. */
    if (open >= HTTP_CONN_QUEUE || (open && c->head_read != c->reads)) {
        http_conn_lost(c);
        return -1;
    }
    c->head_read = c->reads;
    stat_inc(got->present ? STAT_HTTP_REQUESTS_TRACED : STAT_HTTP_REQUESTS_UNTRACED);
    struct http_req *r = &c->reqs[(h + 1) % HTTP_CONN_QUEUE];
    r->ctx = *got;
    r->no_body = c->scan.method_head;
    /* release: whoever sees the new number sees the request written (http_conn_current) */
    atomic_store_explicit(&c->heads, h + 1, memory_order_release);
    return 0;
}

/* The connection's first bytes in either direction decide its protocol, once; h2: they are
 * HTTP/2's. Returns the mode; H2_MODE_CLAIMED when another thread is deciding at the same time
 * (the caller then gives c up). */
static uint8_t decide(struct http_conn *c, int h2)
{
    uint8_t mode = H2_MODE_UNDECIDED;
    if (!atomic_compare_exchange_strong_explicit(&c->h2, &mode, H2_MODE_CLAIMED,
                                                 memory_order_acq_rel, memory_order_acquire))
        return mode;
    mode = h2 && h2_conn_start(c) == 0 ? H2_MODE_H2 : H2_MODE_HTTP1;
    /* release: whoever sees H2 sees c->h2state set up */
    atomic_store_explicit(&c->h2, mode, memory_order_release);
    return mode;
}

/* Bytes read on an HTTP/2 connection: the number of the request this read opened, 0 if none. */
static uint32_t h2_read(struct http_conn *c, int fd, const uint8_t *p, size_t n)
{
    uint32_t newest;
    int r = h2_conn_read(c, p, n, &newest);
    if (r < 0) {
        http_conn_lost(c);
        return 0;
    }
    http_conn_unsure |= (uint8_t)r;
    /* the number names another file now: not this connection's bytes (as queue_request) */
    if (newest && !same_socket(c, fd)) {
        http_conn_close(c);
        return 0;
    }
    return newest;
}

/* The first byte of a TLS handshake record (ContentType 22): no HTTP/1.x request starts so. */
#define TLS_HANDSHAKE 0x16

static uint32_t feed(struct http_conn *c, int fd, const uint8_t *p, size_t n, int more,
                     uint32_t *gen, int tls)
{
    /* acquire/release: the scanner state written by the previous reader is seen whole */
    if (atomic_exchange_explicit(&c->busy, 1, memory_order_acquire)) {
        http_conn_lost(c);
        return 0;
    }
    if (!tls && !more && c->reads == 0 && n > 0 && p[0] == TLS_HANDSHAKE &&
        !atomic_load_explicit(&c->lost, memory_order_relaxed)) {
        /* the connection's first bytes are a TLS record: from now on its plaintext is what
         * the SSL hooks see, and its own bytes are never scanned */
        *gen = atomic_load_explicit(&c->gen, memory_order_relaxed);
        atomic_store_explicit(&c->tls, 1, memory_order_release);
        atomic_store_explicit(&c->busy, 0, memory_order_release);
        return 0;
    }
    c->reads += !more;
    *gen = atomic_load_explicit(&c->gen, memory_order_relaxed);
    if (atomic_load_explicit(&c->lost, memory_order_acquire))
        http_scan_kill(&c->scan);
    uint32_t newest = 0;
    uint8_t mode = atomic_load_explicit(&c->h2, memory_order_acquire);
    if (__builtin_expect(mode != H2_MODE_HTTP1, 0)) {
        if (mode == H2_MODE_UNDECIDED)
            mode = decide(c, h2_conn_is_preface(p, n));
        if (mode == H2_MODE_CLAIMED)
            http_conn_lost(c);
        else if (mode == H2_MODE_H2 && !atomic_load_explicit(&c->lost, memory_order_acquire))
            newest = h2_read(c, fd, p, n);
        if (mode != H2_MODE_HTTP1) {
            atomic_store_explicit(&c->busy, 0, memory_order_release);
            return newest;
        }
    }
    while (n > 0 && !http_scan_dead(&c->scan)) {
        enum http_scan_event ev;
        struct trace_ctx got;
        size_t used = http_scan_feed(&c->scan, p, n, &ev, &got);
        p += used;
        n -= used;
        if (ev == HTTP_SCAN_HEAD_END) {
            if (queue_request(c, fd, &got) != 0) {
                http_scan_kill(&c->scan);
                newest = 0;
                break;
            }
            newest = atomic_load_explicit(&c->heads, memory_order_relaxed);
        }
    }
    /* not HTTP/1.x any more (or not followable): what comes next cannot be known */
    if (http_scan_dead(&c->scan)) {
        http_conn_lost(c);
        newest = 0;
    }
    atomic_store_explicit(&c->busy, 0, memory_order_release);
    return newest;
}

uint32_t http_conn_feed(struct http_conn *c, int fd, const uint8_t *p, size_t n, int more,
                        uint32_t *gen)
{
    if (atomic_load_explicit(&c->tls, memory_order_acquire)) {
        *gen = atomic_load_explicit(&c->gen, memory_order_relaxed);
        return 0;
    }
    return feed(c, fd, p, n, more, gen, 0);
}

uint32_t http_conn_feed_tls(struct http_conn *c, int fd, const uint8_t *p, size_t n,
                            uint32_t *gen)
{
    if (!atomic_load_explicit(&c->tls, memory_order_acquire)) {
        *gen = atomic_load_explicit(&c->gen, memory_order_relaxed);
        return 0;
    }
    if (atomic_load_explicit(&c->tls, memory_order_relaxed) == 1)
        atomic_store_explicit(&c->tls, 2, memory_order_relaxed); /* followed through SSL_read */
    return feed(c, fd, p, n, 0, gen, 1);
}

/* Takes a write; 0 when c can be followed, -1 when it is lost or another thread writes. */
static int write_begin(struct http_conn *c)
{
    if (atomic_load_explicit(&c->lost, memory_order_acquire))
        return -1;
    if (atomic_exchange_explicit(&c->wbusy, 1, memory_order_acquire)) {
        http_conn_lost(c); /* two writers at once: neither sees the whole stream */
        return -1;
    }
    return 0;
}

/* Returns 1 when c is between responses (or lost), 0 inside one. */
static int write_end(struct http_conn *c)
{
    int between = http_scan_idle(&c->resp);
    if (http_scan_dead(&c->resp)) {
        http_conn_lost(c);
        between = 1;
    }
    atomic_store_explicit(&c->wbusy, 0, memory_order_release);
    return between;
}

/* Bytes written on an HTTP/2 connection. */
static void h2_wrote(struct http_conn *c, const uint8_t *p, size_t n)
{
    int r = h2_conn_wrote(c, p, n);
    if (r < 0)
        http_conn_lost(c);
    else
        http_conn_unsure |= (uint8_t)r;
}

/* A 101 answer to the one open request: c becomes an HTTP/2 connection whose stream 1 is that
 * request. 0, or -1 (c to be given up). */
static int upgrade(struct http_conn *c)
{
    uint8_t mode = H2_MODE_HTTP1;
    if (atomic_load_explicit(&c->heads, memory_order_relaxed) -
                atomic_load_explicit(&c->dones, memory_order_relaxed) != 1 ||
        !atomic_compare_exchange_strong_explicit(&c->h2, &mode, H2_MODE_CLAIMED,
                                                 memory_order_acq_rel, memory_order_acquire))
        return -1;
    if (h2_conn_start(c) != 0) {
        atomic_store_explicit(&c->h2, H2_MODE_HTTP1, memory_order_release);
        return -1;
    }
    h2_conn_upgraded(c);
    atomic_store_explicit(&c->h2, H2_MODE_H2, memory_order_release);
    return 0;
}

/* The final response of the oldest open request is complete (a response head with no request
 * open made the connection lost before its end). */
static void response_done(struct http_conn *c)
{
    uint32_t d = atomic_load_explicit(&c->dones, memory_order_relaxed);
    if ((int32_t)(atomic_load_explicit(&c->heads, memory_order_acquire) - d) > 0)
        atomic_store_explicit(&c->dones, d + 1, memory_order_release);
}

static int wrote(struct http_conn *c, const uint8_t *p, size_t n, uint32_t heads_before)
{
    if (write_begin(c) != 0)
        return 1;
    uint8_t mode = atomic_load_explicit(&c->h2, memory_order_acquire);
    if (__builtin_expect(mode != H2_MODE_HTTP1, 0)) {
        /* an HTTP/2 server writes its SETTINGS before it reads the client's preface */
        if (mode == H2_MODE_UNDECIDED && h2_conn_is_server_first(p, n))
            mode = decide(c, 1);
        if (mode == H2_MODE_CLAIMED)
            http_conn_lost(c);
        else if (mode == H2_MODE_H2)
            h2_wrote(c, p, n);
        if (mode == H2_MODE_CLAIMED || mode == H2_MODE_H2) {
            /* streams end by their frames, never by a write's end: nothing to adopt */
            atomic_store_explicit(&c->wbusy, 0, memory_order_release);
            return 1;
        }
    }
    while (n > 0 && !http_scan_dead(&c->resp)) {
        enum http_scan_event ev;
        struct trace_ctx unused;
        size_t used = http_scan_feed(&c->resp, p, n, &ev, &unused);
        p += used;
        n -= used;
        if (ev == HTTP_SCAN_HEAD_START) {
            /* A response with no request open when its write began answers one proflink did
             * not see (smuggled in a body the server did not read, an early error answer): its
             * framing, and that of every answer after it, cannot be known (a HEAD's answer
             * would be taken to have a body and eat the next answer). A head read while the
             * write was under way cannot be what it answers: the client may send its next
             * request as soon as the bytes arrive, before this hook sees them. Otherwise:
             * whether the request it answers was a HEAD (the answer then has no body). */
            uint32_t d = atomic_load_explicit(&c->dones, memory_order_relaxed);
            if ((int32_t)(heads_before - d) <= 0) {
                http_scan_kill(&c->resp);
                break;
            }
            c->resp.no_body = c->reqs[(d + 1) % HTTP_CONN_QUEUE].no_body;
        } else if (ev == HTTP_SCAN_MESSAGE_END) {
            response_done(c);
        } else if (ev == HTTP_SCAN_HEAD_END && c->resp.status == 101) {
            /* Switching Protocols: HTTP/2 (Upgrade: h2c) from the next byte on, the rest of
             * this write included; another protocol fails the HTTP/2 readers (lost) */
            if (upgrade(c) != 0)
                break;
            h2_wrote(c, p, n);
            atomic_store_explicit(&c->wbusy, 0, memory_order_release);
            return 1;
        }
    }
    return write_end(c);
}

static int wrote_unseen(struct http_conn *c, uint64_t n)
{
    if (write_begin(c) != 0)
        return 1;
    if (atomic_load_explicit(&c->h2, memory_order_acquire) == H2_MODE_H2)
        http_conn_lost(c); /* frames proflink cannot see */
    else if (http_scan_skip(&c->resp, n) == 1)
        response_done(c);
    return write_end(c);
}

static int is_tls(struct http_conn *c) { return atomic_load_explicit(&c->tls, memory_order_acquire); }

int http_conn_wrote(struct http_conn *c, const uint8_t *p, size_t n, uint32_t heads_before)
{
    return is_tls(c) ? 1 : wrote(c, p, n, heads_before);
}

int http_conn_wrote_unseen(struct http_conn *c, uint64_t n)
{
    return is_tls(c) ? 1 : wrote_unseen(c, n);
}

int http_conn_wrote_tls(struct http_conn *c, const uint8_t *p, size_t n, uint32_t heads_before)
{
    return is_tls(c) ? wrote(c, p, n, heads_before) : 1;
}

int http_conn_wrote_unseen_tls(struct http_conn *c, uint64_t n)
{
    return is_tls(c) ? wrote_unseen(c, n) : 1;
}

int http_conn_current(struct http_conn *c, uint32_t gen, struct trace_ctx *ctx, uint32_t *seq)
{
    uint32_t d = atomic_load_explicit(&c->dones, memory_order_acquire);
    if (atomic_load_explicit(&c->gen, memory_order_acquire) != gen ||
        (int32_t)(atomic_load_explicit(&c->heads, memory_order_acquire) - d) <= 0)
        return -1;
    /* The slot of request d + 1 is rewritten only once d + 1 is answered (queue_request keeps
     * at most HTTP_CONN_QUEUE open): the copy is whole if dones still says d after it. */
    *ctx = c->reqs[(d + 1) % HTTP_CONN_QUEUE].ctx;
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&c->dones, memory_order_relaxed) != d ||
        atomic_load_explicit(&c->gen, memory_order_relaxed) != gen ||
        atomic_load_explicit(&c->lost, memory_order_relaxed))
        return -1;
    *seq = d + 1;
    return 0;
}
