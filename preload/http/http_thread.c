/* http_thread.c — the calling thread's notes on open requests (see http_thread.h), and the
 * context they give it, put on the thread's records through the same record writers as the API
 * (thread_records.h). */
#include "http_thread.h"

#include "context/thread_records.h"

__thread uint8_t http_thread_api_owned __attribute__((tls_model("initial-exec")));
__thread uint8_t http_thread_notes __attribute__((tls_model("initial-exec")));
__thread uint8_t http_thread_unsure __attribute__((tls_model("initial-exec")));
__thread uint32_t http_thread_heads_before __attribute__((tls_model("initial-exec")));

/* One connection on which the thread read a request (or adopted one): open while request
 * `last` of generation gen is (the connection answers in order, so the earlier ones are open
 * too, or answered). */
struct note {
    struct http_conn *c;
    uint32_t gen;
    uint32_t last;
};

/* The default TLS model, not initial-exec: half a kilobyte that the static TLS block of a
 * program that dlopens proflink may not have room for; only the slow path touches it. Where
 * the hooks run at all (preloaded, hence loaded at start), the block is in static TLS anyway:
 * reaching it allocates nothing, even from a signal handler's write(). */
static __thread struct note notes[HTTP_THREAD_CONNS];

/* What the thread's records show from HTTP: the request (c, gen, seq), c = NULL for nothing
 * written since the last clear. */
static __thread struct http_conn *shown_c;
static __thread uint32_t shown_gen, shown_seq;

static void show_none(void)
{
    if (!shown_c)
        return;
    shown_c = 0;
    struct thread_block *b = thread_block_self();
    if (b)
        thread_block_clear(b);
}

/* Exactly one connection has requests of the thread open: show the one it answers next. */
static void show_one(const struct note *n)
{
    /* already shown (most calls: the thread's request is still the connection's oldest) */
    if (shown_c == n->c && shown_gen == n->gen &&
        shown_seq == atomic_load_explicit(&n->c->dones, memory_order_acquire) + 1)
        return;
    struct trace_ctx ctx;
    uint32_t seq;
    if (http_conn_current(n->c, n->gen, &ctx, &seq) != 0) {
        show_none();
        return;
    }
    if (shown_c == n->c && shown_gen == n->gen && shown_seq == seq)
        return;
    struct thread_block *b = thread_block_self_or_create();
    if (!b)
        return;
    if (ctx.present)
        thread_block_set(b, ctx.trace_id, ctx.span_id, ctx.transaction_id, ctx.trace_flags);
    else
        thread_block_clear(b);
    shown_c = n->c;
    shown_gen = n->gen;
    shown_seq = seq;
}

void http_thread_refresh(void)
{
    unsigned kept = 0;
    for (unsigned i = 0; i < http_thread_notes; i++)
        if (http_conn_open_req(notes[i].c, notes[i].gen, notes[i].last))
            notes[kept++] = notes[i];
    http_thread_notes = (uint8_t)kept;
    if (http_thread_api_owned)
        return;
    if (kept == 1 && !http_thread_unsure)
        show_one(&notes[0]);
    else
        show_none();
}

static void note(struct http_conn *c, uint32_t gen, uint32_t seq)
{
    for (unsigned i = 0; i < http_thread_notes; i++)
        if (notes[i].c == c) {
            notes[i].gen = gen;
            notes[i].last = seq;
            return;
        }
    if (http_thread_notes == HTTP_THREAD_CONNS)
        http_thread_refresh();
    if (http_thread_notes == HTTP_THREAD_CONNS) {
        /* no room for the note: the request must not stay open unnoted, and this thread,
         * working on it, must not show one of those it has notes on */
        http_conn_lost(c);
        http_thread_lost_touched();
        return;
    }
    notes[http_thread_notes++] = (struct note){c, gen, seq};
}

void http_thread_read(struct http_conn *c, uint32_t gen, uint32_t seq)
{
    note(c, gen, seq);
    http_thread_refresh();
}

void http_thread_lost_touched(void)
{
    http_thread_unsure = 1;
    if (!http_thread_api_owned)
        show_none();
}

void http_thread_waited(void)
{
    if (http_thread_notes)
        http_thread_refresh();
    if (http_thread_unsure && !http_thread_notes)
        http_thread_unsure = 0;
}

static uint32_t adoptable(struct http_conn *c, uint32_t *gen)
{
    uint32_t h = atomic_load_explicit(&c->heads, memory_order_acquire);
    http_thread_heads_before = h;
    if (http_thread_notes) /* notes of ended requests are dropped after the write */
        return 0;
    *gen = atomic_load_explicit(&c->gen, memory_order_acquire);
    return h - atomic_load_explicit(&c->dones, memory_order_acquire) == 1 ? h : 0;
}

/* A TLS connection's own writes carry ciphertext (and TLS's own records: alerts, tickets, key
 * updates), not the response: only SSL_write adopts (http_thread_adoptable_tls). */
uint32_t http_thread_adoptable(struct http_conn *c, uint32_t *gen)
{
    if (atomic_load_explicit(&c->tls, memory_order_relaxed)) {
        http_thread_heads_before = atomic_load_explicit(&c->heads, memory_order_acquire);
        return 0;
    }
    return adoptable(c, gen);
}

uint32_t http_thread_adoptable_tls(struct http_conn *c, uint32_t *gen)
{
    return adoptable(c, gen);
}

void http_thread_wrote(struct http_conn *c, uint32_t gen, uint32_t adopt, int between)
{
    http_thread_touched(c);
    /* the adopted response still going on (not between responses): a response that ended,
     * or framing gone out of step, ends the adoption */
    if (adopt && !between && http_conn_open_req(c, gen, adopt))
        note(c, gen, adopt);
    if (http_thread_notes)
        http_thread_refresh();
}
