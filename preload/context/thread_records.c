/* thread_records.c — per-thread records and their TLS pointers (see thread_records.h). */
#include "thread_records.h"

#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "leaves/export.h"
#include "leaves/runtime_state.h"
#include "leaves/stats.h"

_Static_assert(sizeof(struct apm_record) == 37, "apmint thread record is 37 bytes");
_Static_assert(sizeof(struct otel_record) == OTEL_RECORD_MAX, "OTel record: 640 bytes");
_Static_assert(offsetof(struct otel_record, attrs_size) == 26, "OTel attrs-data-size at 26");
_Static_assert(offsetof(struct otel_record, attrs) == OTEL_RECORD_HEADER, "OTel header: 28");
_Static_assert(offsetof(struct thread_block, otel) == 0, "the OTel record leads the block");
_Static_assert(_Alignof(struct otel_record) >= 2, "OTEP 4947: 2-byte aligned record");

/* The contract symbols. Default visibility and global-dynamic/TLSDESC (Makefile): the apmint
 * reader locates them through an R_*_TLSDESC relocation naming them, then reads the pointer at
 * fsbase/tpidr_el0 + the resolved static-TLS offset. */
PROFLINK_EXPORT __thread void *elastic_apm_profiling_correlation_tls_v1;
PROFLINK_EXPORT __thread void *otel_thread_ctx_v1;
/* This library's own instance of it, whoever exports the name first (copies.c compares). */
extern __thread void *thread_records_own_otel_ctx
    __attribute__((alias("otel_thread_ctx_v1"), visibility("hidden")));
__thread struct thread_block *thread_block_current;

/* Set once at init (thread_records_init): whether OTel records are kept too (copied into each
 * block), whether a new thread inherits its creator's context, and the process's own context
 * (TRACEPARENT) that new threads start with otherwise. */
static int otel_on; /* read and cleared atomically: thread_records_otel_off may come later */
static int inherit;
static struct trace_ctx process_ctx;
uint8_t otel_fixed_attrs[OTEL_FIXED_MAX];
uint16_t otel_fixed_len;
/* Frees a thread's block when it exits, whichever way it exits (return, pthread_exit, cancel). */
static pthread_key_t exit_key;
static int exit_key_ready;
/* The main thread's block, in static storage rather than malloc'd: in a program that has not
 * called malloc yet (a short command), the first malloc would set up libc's allocator at start
 * (a getrandom, two brk and a fresh heap page), all for one block. Aligned as malloc would, so
 * the records' layout is the same whichever storage holds them. Used once per process image
 * (start.c calls thread_block_new_main once) and never freed: block_free leaves it alone. */
static _Alignas(16) struct thread_block main_block;

static void block_free(struct thread_block *b)
{
    if (b != &main_block)
        free(b);
}


static void block_destroy(void *p)
{
    struct thread_block *b = p;
    /* Unpublish before freeing: a sample taken between the two sees NULL, never freed memory. */
    if (thread_block_current == b) {
        elastic_apm_profiling_correlation_tls_v1 = NULL;
        otel_thread_ctx_v1 = NULL;
        thread_block_current = NULL;
    }
    RECORD_ORDER();
    block_free(b);
}

int thread_records_init(int otel_enabled, int inherit_creator, const struct trace_ctx *process)
{
    otel_on = otel_enabled;
    inherit = inherit_creator;
    if (process)
        process_ctx = *process;
    else
        memset(&process_ctx, 0, sizeof process_ctx);
    if (exit_key_ready)
        return 0; /* a fork child keeps the key: it is process state that fork copied */
    if (pthread_key_create(&exit_key, block_destroy) != 0)
        return -1;
    exit_key_ready = 1;
    return 0;
}

void thread_records_set_fixed(const uint8_t *attrs, size_t len)
{
    if (len > OTEL_FIXED_MAX)
        len = 0; /* the caller checks; never publish a cut entry */
    memcpy(otel_fixed_attrs, attrs, len);
    otel_fixed_len = (uint16_t)len;
}

void otel_record_new_txn(struct thread_block *b, const uint8_t transaction_id[8])
{
    struct otel_record *o = &b->otel;
    if (b->otel_custom || !b->otel_has_txn)
        memcpy(o->attrs, otel_fixed_attrs, otel_fixed_len);
    uint8_t *e = o->attrs + otel_fixed_len;
    e[0] = OTEL_KEY_LOCAL_ROOT; /* index 0 of the process context's key map */
    e[1] = 16;                  /* value length */
    hex_encode(transaction_id, 8, (char *)&e[2]);
    o->attrs_size = (uint16_t)(otel_fixed_len + OTEL_ATTR_TXN_SIZE);
    memcpy(b->otel_txn, transaction_id, 8);
    b->otel_has_txn = 1;
    b->otel_custom = 0;
}

void otel_record_untraced(struct thread_block *b)
{
    struct otel_record *o = &b->otel;
    memset(o->trace_id, 0, sizeof o->trace_id);
    memset(o->span_id, 0, sizeof o->span_id);
    o->trace_flags = 0;
    if (b->otel_custom)
        memcpy(o->attrs, otel_fixed_attrs, otel_fixed_len);
    o->attrs_size = otel_fixed_len;
    b->otel_has_txn = 0;
    b->otel_custom = 0;
}

uint8_t otel_record_settle(struct thread_block *b)
{
    if (!b->apm.trace_present && (b->otel_has_txn || b->otel.trace_id[0] || b->otel.span_id[0]))
        otel_record_untraced(b);
    return b->apm.trace_present || b->otel.attrs_size != 0;
}

void otel_record_rebase(struct thread_block *b)
{
    if (b->apm.trace_present)
        otel_record_new_txn(b, b->apm.transaction_id);
    else
        otel_record_untraced(b);
}

void thread_block_set_full(struct thread_block *b, const uint8_t trace_id[16],
                           const uint8_t span_id[8], const uint8_t transaction_id[8],
                           uint8_t flags, unsigned how)
{
    int nested = how & WRITE_FULL_NESTED, again = (how & WRITE_FULL_AGAIN) != 0;
    do {
        do {
            record_hide(b, nested);
            record_store_ids(b, trace_id, span_id, transaction_id, flags);
            if (b->otel_on) {
                /* Spans of one transaction share its hex entry and keep the API's attributes;
                 * a new transaction (a new request) starts from the fixed attributes. Again
                 * after a nested write: it may have left its entry half overwritten by ours
                 * (and the attributes it dropped are gone anyway). */
                if (again || !b->otel_has_txn || memcmp(b->otel_txn, transaction_id, 8) != 0)
                    otel_record_new_txn(b, transaction_id);
            }
            again = 1;
        } while (record_publish(b, nested, 1));
    } while (record_write_end(b, nested));
}

void thread_block_clear_full(struct thread_block *b, int nested)
{
    uint8_t otel_valid;
    do {
        do {
            record_hide(b, nested); /* OTel: detached; stale fields stay hidden until a set */
            b->apm.trace_present = 0;
            otel_valid = 0;
            /* Attributes outlive the trace only when there are fixed ones: then the record
             * stays valid with no trace. API attributes are dropped with the trace
             * (proflink.h). */
            if (b->otel_on && (b->otel_custom || otel_fixed_len)) {
                otel_record_untraced(b);
                otel_valid = b->otel.attrs_size != 0;
            }
        } while (record_publish(b, nested, otel_valid));
    } while (record_write_end(b, nested));
}

void thread_block_get(const struct thread_block *b, struct trace_ctx *out)
{
    memset(out, 0, sizeof *out);
    if (!b || !b->apm.trace_present)
        return;
    memcpy(out->trace_id, b->apm.trace_id, 16);
    memcpy(out->span_id, b->apm.span_id, 8);
    memcpy(out->transaction_id, b->apm.transaction_id, 8);
    out->trace_flags = b->apm.trace_flags;
    out->present = 1;
}

/* Fills b, zeroed and not yet published, with ctx and from's attributes (thread_block_new). */
static struct thread_block *block_fill(struct thread_block *b, const struct trace_ctx *ctx,
                                       const struct thread_block *from)
{
    b->apm.minor_version = 1;
    b->apm.valid = 1;
    b->otel_on = (uint8_t)__atomic_load_n(&otel_on, __ATOMIC_RELAXED);
    /* Not yet published, so no reader can see it half-written: plain stores are enough. */
    if (ctx && ctx->present) {
        b->apm.trace_present = 1;
        b->apm.trace_flags = ctx->trace_flags;
        memcpy(b->apm.trace_id, ctx->trace_id, 16);
        memcpy(b->apm.span_id, ctx->span_id, 8);
        memcpy(b->apm.transaction_id, ctx->transaction_id, 8);
    }
    if (from && from->otel_on) {
        /* Inherited: the creator's record as it is, attributes included. */
        memcpy(&b->otel, &from->otel, sizeof b->otel);
        b->otel_has_txn = from->otel_has_txn;
        b->otel_custom = from->otel_custom;
        memcpy(b->otel_txn, from->otel_txn, 8);
    } else {
        b->otel_custom = 1; /* attrs are empty, not yet the fixed layout */
        otel_record_untraced(b);
        if (ctx && ctx->present) {
            memcpy(b->otel.trace_id, ctx->trace_id, 16);
            memcpy(b->otel.span_id, ctx->span_id, 8);
            b->otel.trace_flags = ctx->trace_flags;
            otel_record_new_txn(b, ctx->transaction_id);
        }
        b->otel.valid = (ctx && ctx->present) || b->otel.attrs_size != 0;
    }
    stat_inc(STAT_THREADS_SEEN);
    return b;
}

struct thread_block *thread_block_new(const struct trace_ctx *ctx, const struct thread_block *from)
{
    struct thread_block *b = calloc(1, sizeof *b);
    return b ? block_fill(b, ctx, from) : NULL;
}

struct thread_block *thread_block_new_main(const struct trace_ctx *ctx)
{
    return block_fill(&main_block, ctx, NULL);
}

void thread_block_free_unused(struct thread_block *b) { block_free(b); }

void thread_block_release_self(void)
{
    struct thread_block *b = thread_block_current;
    if (!b)
        return;
    pthread_setspecific(exit_key, NULL);
    block_destroy(b);
}

void thread_block_install(struct thread_block *b)
{
    /* The exit key goes first: if it cannot be set, publishing would leak b at thread exit. */
    if (pthread_setspecific(exit_key, b) != 0) {
        block_free(b);
        return;
    }
    RECORD_ORDER(); /* the block is complete before any reader can reach it */
    elastic_apm_profiling_correlation_tls_v1 = &b->apm;
    thread_block_current = b;
    /* Set once, for the thread's life: updates use the valid byte (struct otel_record). */
    if (b->otel_on)
        otel_thread_ctx_v1 = &b->otel;
}

const struct thread_block *thread_initial_context(struct trace_ctx *out)
{
    const struct thread_block *self = thread_block_self();
    if (inherit && self) {
        thread_block_get(self, out);
        return self;
    }
    *out = process_ctx; /* present = 0 without TRACEPARENT */
    return NULL;
}

struct thread_block *thread_block_create_for_self(void)
{
    if (!runtime_active() || !exit_key_ready)
        return NULL;
    struct thread_block *b = thread_block_new(&process_ctx, NULL);
    if (b)
        thread_block_install(b);
    return thread_block_self();
}

void thread_records_otel_off(void) { __atomic_store_n(&otel_on, 0, __ATOMIC_RELAXED); }
