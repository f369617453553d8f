/* thread_records.c — per-thread records and their TLS pointers (see thread_records.h). */
#include "thread_records.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "export.h"
#include "runtime.h"
#include "stats.h"

_Static_assert(sizeof(struct apm_record) == 37, "apmint thread record is 37 bytes");
_Static_assert(sizeof(struct otel_record) == 28 + OTEL_ATTR_TXN_SIZE, "OTel record layout");

/* The contract symbols. Default visibility and global-dynamic/TLSDESC (Makefile): the apmint
 * reader locates them through an R_*_TLSDESC relocation naming them, then reads the pointer at
 * fsbase/tpidr_el0 + the resolved static-TLS offset. */
PROFLINK_EXPORT __thread void *elastic_apm_profiling_correlation_tls_v1;
PROFLINK_EXPORT __thread void *otel_thread_ctx_v1;
__thread struct thread_block *thread_block_current;

/* Set once at init, read on every set/clear: whether OTel records are kept too. */
static int otel_on;
/* Frees a thread's block when it exits, whichever way it exits (return, pthread_exit, cancel). */
static pthread_key_t exit_key;
static int exit_key_ready;


static void block_destroy(void *p)
{
    struct thread_block *b = p;
    /* Unpublish before freeing: a sample taken between the two sees NULL, never freed memory. */
    if (elastic_apm_profiling_correlation_tls_v1 == b) {
        elastic_apm_profiling_correlation_tls_v1 = NULL;
        otel_thread_ctx_v1 = NULL;
        thread_block_current = NULL;
    }
    RECORD_ORDER();
    free(b);
}

int thread_records_init(int otel_enabled)
{
    otel_on = otel_enabled;
    if (exit_key_ready)
        return 0; /* a fork child keeps the key: it is process state that fork copied */
    if (pthread_key_create(&exit_key, block_destroy) != 0)
        return -1;
    exit_key_ready = 1;
    return 0;
}

void otel_record_set_txn(struct thread_block *b, const uint8_t transaction_id[8])
{
    struct otel_record *o = &b->otel;
    o->attrs_size = OTEL_ATTR_TXN_SIZE;
    o->attrs[0] = 0;  /* key index 0 = local_root_span_id (see the process context key map) */
    o->attrs[1] = 16; /* value length */
    hex_encode(transaction_id, 8, (char *)&o->attrs[2]);
    memcpy(b->otel_txn, transaction_id, 8);
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

struct thread_block *thread_block_new(const struct trace_ctx *ctx)
{
    struct thread_block *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->apm.minor_version = 1;
    b->apm.valid = 1;
    if (ctx && ctx->present) {
        /* Not yet published, so no reader can see it half-written: plain stores are enough. */
        b->apm.trace_present = 1;
        b->apm.trace_flags = ctx->trace_flags;
        memcpy(b->apm.trace_id, ctx->trace_id, 16);
        memcpy(b->apm.span_id, ctx->span_id, 8);
        memcpy(b->apm.transaction_id, ctx->transaction_id, 8);
        otel_record_fill(b, ctx->trace_id, ctx->span_id, ctx->transaction_id, ctx->trace_flags);
        b->otel.valid = 1;
    }
    stat_inc(STAT_THREADS_SEEN);
    return b;
}

void thread_block_free_unused(struct thread_block *b) { free(b); }

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
        free(b);
        return;
    }
    b->otel_slot = otel_on ? &otel_thread_ctx_v1 : NULL;
    RECORD_ORDER(); /* the block is complete before any reader can reach it */
    elastic_apm_profiling_correlation_tls_v1 = &b->apm;
    thread_block_current = b;
    if (b->otel_slot && b->apm.trace_present)
        otel_thread_ctx_v1 = &b->otel;
}

void thread_initial_context(struct trace_ctx *out)
{
    const struct thread_block *self = thread_block_self();
    if (proflink_config.inherit && self) {
        thread_block_get(self, out);
        return;
    }
    if (proflink_config.has_traceparent)
        *out = proflink_config.traceparent;
    else
        memset(out, 0, sizeof *out);
}

struct thread_block *thread_block_create_for_self(void)
{
    if (!runtime_active() || !exit_key_ready)
        return NULL;
    struct thread_block *b = thread_block_new(proflink_config.has_traceparent ? &proflink_config.traceparent : NULL);
    if (b)
        thread_block_install(b);
    return thread_block_self();
}
