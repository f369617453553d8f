/* h2_conn.c — an accepted connection followed as HTTP/2 (see h2_conn.h): the set of its open
 * streams and their mapping onto the connection's request numbers. */
#include "h2_conn.h"

#include <string.h>
#include <sys/mman.h>

#include "leaves/stats.h"
#include "leaves/sys_calls.h"

static const uint8_t preface[H2_PREFACE_LEN + 1] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

#define T_SETTINGS 4
#define H2_FRAME_TYPE_AT 3 /* the type's byte in a frame header */
#define SETTING_LEN 6

static void none_open(struct http_conn *c);

int h2_conn_is_preface(const uint8_t *p, size_t n)
{
    return n > 0 && memcmp(p, preface, n < H2_PREFACE_LEN ? n : H2_PREFACE_LEN) == 0;
}

int h2_conn_is_server_first(const uint8_t *p, size_t n)
{
    if (n < H2_FRAME_HEADER_LEN)
        return 0;
    uint32_t len = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
    return p[3] == T_SETTINGS && p[4] == 0 && !(p[5] | p[6] | p[7] | p[8]) &&
           len % SETTING_LEN == 0;
}

int h2_conn_start(struct http_conn *c)
{
    struct h2_conn *h = c->h2state;
    if (!h) {
        /* mmap, not malloc, as the connection table: no allocator lock from a hook. The
         * response reader's HPACK half is never touched, so never committed. Kept for the
         * next connection of the same descriptor: at most one per descriptor. */
        void *m = sys_mmap(0, sizeof *h, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            return -1;
        h = c->h2state = m;
    }
    atomic_store_explicit(&h->lock, 0, memory_order_relaxed);
    h->nopen = 0;
    h->settings_due = 0;
    h->written = 0;
    atomic_store_explicit(&h->table_limit, 0, memory_order_relaxed);
    h2_frames_init(&h->req, H2_REQUESTS);
    h2_frames_init(&h->resp, H2_RESPONSES);
    return 0;
}

void h2_conn_upgraded(struct http_conn *c)
{
    struct h2_conn *h = c->h2state;
    h->open[0] = 1; /* the open request, its number kept: shown as before */
    h->nopen = 1;
    h->req.last_request = 1; /* the client's next stream is 3 */
    h->settings_due = 1;
}

/* The open-stream set is changed by the reading and the writing thread: a try-lock held for a
 * few instructions; a thread that finds it taken gives the connection up (never waits: a hook
 * may run in a signal handler that interrupted the holder). */
static int lock(struct h2_conn *h)
{
    return atomic_exchange_explicit(&h->lock, 1, memory_order_acquire) ? -1 : 0;
}

static void unlock(struct h2_conn *h) { atomic_store_explicit(&h->lock, 0, memory_order_release); }

/* Streams open but not shown on c: 1, 0 if none, -1 if another thread holds the set. */
static int hidden_open(struct http_conn *c, struct h2_conn *h)
{
    if (lock(h) != 0)
        return -1;
    int hidden = h->nopen && atomic_load_explicit(&c->heads, memory_order_relaxed) ==
                                 atomic_load_explicit(&c->dones, memory_order_relaxed);
    unlock(h);
    return hidden;
}

/* No stream (or several, or one not shown) open: no request of c is open for any thread. */
static void none_open(struct http_conn *c)
{
    uint32_t heads = atomic_load_explicit(&c->heads, memory_order_relaxed);
    if (atomic_load_explicit(&c->dones, memory_order_relaxed) != heads)
        atomic_store_explicit(&c->dones, heads, memory_order_release);
}

/* Stream s is over (its response complete, reset, refused by GOAWAY): 1, or 0 if it was not
 * open. */
static int stream_end(struct http_conn *c, struct h2_conn *h, uint32_t s)
{
    for (uint32_t i = 0; i < h->nopen; i++)
        if (h->open[i] == s) {
            h->open[i] = h->open[--h->nopen];
            if (h->nopen == 0)
                none_open(c);
            return 1;
        }
    return 0;
}

/* GOAWAY: the streams above last are not processed. */
static void streams_above(struct http_conn *c, struct h2_conn *h, uint32_t last)
{
    for (uint32_t i = 0; i < h->nopen;)
        if (h->open[i] > last)
            h->open[i] = h->open[--h->nopen];
        else
            i++;
    if (h->nopen == 0)
        none_open(c);
}

struct read_state {
    struct http_conn *c;
    int failed;
    int ambiguous;
    uint32_t newest;
};

/* A stream's request headers: it opens; it is the connection's request only if no other
 * stream is open. */
static void stream_open(struct read_state *st, struct h2_conn *h, const struct h2_event *ev)
{
    struct http_conn *c = st->c;
    stat_inc(ev->ctx.present ? STAT_HTTP_REQUESTS_TRACED : STAT_HTTP_REQUESTS_UNTRACED);
    if (h->nopen == H2_CONN_STREAMS) {
        st->failed = 1;
        return;
    }
    h->open[h->nopen++] = ev->stream;
    if (h->nopen == 1) {
        uint32_t n = atomic_load_explicit(&c->heads, memory_order_relaxed) + 1;
        struct http_req *r = &c->reqs[n % HTTP_CONN_QUEUE];
        r->ctx = ev->ctx;
        r->no_body = 0;
        /* release: whoever sees the new number sees the request written (http_conn_current) */
        atomic_store_explicit(&c->heads, n, memory_order_release);
        st->newest = n;
    } else {
        /* two streams open: which one a thread works on is unknown, the first one included */
        none_open(c);
        st->newest = 0;
        st->ambiguous = 1;
    }
}

static void on_read_event(void *arg, const struct h2_event *ev)
{
    struct read_state *st = arg;
    struct h2_conn *h = st->c->h2state;
    if (st->failed)
        return;
    if (ev->type != H2_EV_REQUEST && ev->type != H2_EV_RESET)
        return; /* a client's GOAWAY names the server's streams (pushes): none followed */
    if (lock(h) != 0) {
        st->failed = 1;
        return;
    }
    if (ev->type == H2_EV_REQUEST)
        stream_open(st, h, ev);
    else if (stream_end(st->c, h, ev->stream))
        st->ambiguous = 1; /* the server may still work on the stream the client reset */
    unlock(h);
}

int h2_conn_read(struct http_conn *c, const uint8_t *p, size_t n, uint32_t *newest)
{
    struct h2_conn *h = c->h2state;
    uint32_t limit = atomic_exchange_explicit(&h->table_limit, 0, memory_order_acquire);
    if (limit)
        h2_frames_table_limit(&h->req, limit - 1);
    struct read_state st = {c, 0, 0, 0};
    *newest = 0;
    /* a desynchronised HPACK table, a block too large, anything not HTTP/2: c is given up */
    if (h2_frames_feed(&h->req, p, n, on_read_event, &st) != 0 || st.failed)
        return -1;
    /* Streams open but not shown (opened beside another; the upgraded one): bytes of theirs may
     * be what the thread now works on (a body, a window update that lets it write), while a
     * stream of another connection would be shown. */
    int hidden = hidden_open(c, h);
    if (hidden < 0)
        return -1;
    *newest = st.newest;
    return st.ambiguous | hidden;
}

struct write_state {
    struct http_conn *c;
    int failed;
};

static void on_write_event(void *arg, const struct h2_event *ev)
{
    struct write_state *st = arg;
    struct h2_conn *h = st->c->h2state;
    if (st->failed)
        return;
    if (ev->type == H2_EV_TABLE_LIMIT) {
        /* for the reader, which applies it from the client's acknowledgement on */
        uint32_t v = ev->value < HPACK_INT_MAX ? ev->value : HPACK_INT_MAX;
        atomic_store_explicit(&h->table_limit, v + 1, memory_order_release);
        return;
    }
    if (lock(h) != 0) {
        st->failed = 1;
        return;
    }
    if (ev->type == H2_EV_GOAWAY)
        streams_above(st->c, h, ev->stream);
    else if (ev->type == H2_EV_STREAM_END || ev->type == H2_EV_RESET)
        stream_end(st->c, h, ev->stream);
    unlock(h);
}

int h2_conn_wrote(struct http_conn *c, const uint8_t *p, size_t n)
{
    struct h2_conn *h = c->h2state;
    struct write_state st = {c, 0};
    /* writing for a stream not shown (before or after the write: it may end it) is working on
     * it, whatever another connection's stream says */
    int before = hidden_open(c, h);
    if (before < 0)
        return -1;
    /* after a 101, the server's first frame is its SETTINGS (RFC 9113 3.4): anything else is
     * another protocol (WebSocket), which ends the upgraded request */
    for (size_t i = 0; h->settings_due && i < n && h->written < H2_FRAME_TYPE_AT + 1; i++)
        if (h->written++ == H2_FRAME_TYPE_AT && p[i] != T_SETTINGS)
            return -1;
    if (h2_frames_feed(&h->resp, p, n, on_write_event, &st) != 0 || st.failed)
        return -1;
    int after = hidden_open(c, h);
    return after < 0 ? -1 : before | after;
}
