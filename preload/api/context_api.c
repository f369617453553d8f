/* context_api.c — the context half of the tracer API (include/proflink.h). The set/clear path
 * is one TLS load, a branch and the record stores: no allocation, no lock, no syscall once the
 * calling thread has its block. */
#include <string.h>

#include "leaves/export.h"
#include "http/http_thread.h"
#include "leaves/ids.h"
#include "proflink.h"
#include "leaves/runtime_state.h"
#include "context/thread_records.h"

/* A thread's first call: its block is made here, out of line, so that the functions below
 * reach it with a tail jump and their common path needs no stack frame (make bench). */
__attribute__((cold, noinline)) static void set_trace_first(const uint8_t trace_id[16],
                                                            const uint8_t span_id[8],
                                                            const uint8_t transaction_id[8],
                                                            uint8_t trace_flags)
{
    struct thread_block *b = thread_block_create_for_self();
    if (b)
        thread_block_set(b, trace_id, span_id, transaction_id, trace_flags);
}

PROFLINK_EXPORT void proflink_set_trace(const uint8_t trace_id[16], const uint8_t span_id[8],
                                        const uint8_t transaction_id[8], uint8_t trace_flags)
{
    if (__builtin_expect(!trace_id || !span_id, 0))
        return;
    http_thread_api_took();
    if (!transaction_id)
        transaction_id = span_id;
    struct thread_block *b = thread_block_self();
    if (__builtin_expect(!b, 0))
        set_trace_first(trace_id, span_id, transaction_id, trace_flags);
    else
        thread_block_set(b, trace_id, span_id, transaction_id, trace_flags);
}

PROFLINK_LOCAL_ALIAS(set_trace, proflink_set_trace);

_Static_assert(sizeof(proflink_context) == 40, "proflink_context is 40 bytes (FFI layout)");

/* All-zero test of an id without a loop: the id is copied into integers (memcpy: no alignment
 * is assumed of a buffer that came through an FFI). */
static inline int id16_zero(const uint8_t id[16])
{
    uint64_t a, b;
    memcpy(&a, id, 8);
    memcpy(&b, id + 8, 8);
    return (a | b) == 0;
}

static inline int id8_zero(const uint8_t id[8])
{
    uint64_t a;
    memcpy(&a, id, 8);
    return a == 0;
}

static inline void context_apply(struct thread_block *b, const proflink_context *ctx)
{
    http_thread_api_took();
    if (!ctx || id16_zero(ctx->trace_id)) {
        thread_block_clear(b);
        return;
    }
    thread_block_set(b, ctx->trace_id, ctx->span_id,
                     id8_zero(ctx->transaction_id) ? ctx->span_id : ctx->transaction_id,
                     ctx->trace_flags);
}

__attribute__((cold, noinline)) static void set_context_first(const proflink_context *ctx)
{
    struct thread_block *b = thread_block_create_for_self();
    if (b)
        context_apply(b, ctx);
}

PROFLINK_EXPORT void proflink_set_context(const proflink_context *ctx)
{
    struct thread_block *b = thread_block_self();
    if (__builtin_expect(!b, 0))
        set_context_first(ctx);
    else
        context_apply(b, ctx);
}

PROFLINK_EXPORT int proflink_swap_context(const proflink_context *next, proflink_context *prev)
{
    struct thread_block *b = thread_block_self_or_create();
    if (__builtin_expect(!b, 0)) { /* disabled (or out of memory for this thread's record) */
        if (prev)
            memset(prev, 0, sizeof *prev);
        return -1;
    }
    /* Read straight from the record (this thread is its only writer): the previous context is
     * exactly what the profiler saw, so restoring it republishes the same bytes. */
    int had = b->apm.trace_present;
    if (prev) {
        if (had) {
            memcpy(prev->trace_id, b->apm.trace_id, 16);
            memcpy(prev->span_id, b->apm.span_id, 8);
            memcpy(prev->transaction_id, b->apm.transaction_id, 8);
            prev->trace_flags = b->apm.trace_flags;
            memset(prev->reserved, 0, sizeof prev->reserved);
        } else {
            memset(prev, 0, sizeof *prev);
        }
    }
    context_apply(b, next);
    return had;
}

__attribute__((cold, noinline)) static void clear_trace_first(void)
{
    struct thread_block *b = thread_block_create_for_self();
    if (b)
        thread_block_clear(b);
}

PROFLINK_EXPORT void proflink_clear_trace(void)
{
    http_thread_api_took();
    struct thread_block *b = thread_block_self();
    if (__builtin_expect(!b, 0))
        clear_trace_first();
    else
        thread_block_clear(b);
}

PROFLINK_EXPORT int proflink_set_traceparent(const char *traceparent,
                                             const char *transaction_id_hex)
{
    struct trace_ctx ctx;
    if (traceparent_parse(traceparent, &ctx) != 0)
        return -1;
    if (transaction_id_hex) {
        if (strlen(transaction_id_hex) != 16 || hex_decode(transaction_id_hex, ctx.transaction_id, 8))
            return -1;
    }
    set_trace(ctx.trace_id, ctx.span_id, ctx.transaction_id, ctx.trace_flags);
    return 0;
}

PROFLINK_EXPORT int proflink_get_trace(uint8_t trace_id[16], uint8_t span_id[8],
                                       uint8_t transaction_id[8], uint8_t *trace_flags)
{
    if (!runtime_active())
        return -1;
    struct trace_ctx ctx;
    thread_block_get(thread_block_self_or_create(), &ctx);
    if (!ctx.present)
        return 0;
    if (trace_id)
        memcpy(trace_id, ctx.trace_id, 16);
    if (span_id)
        memcpy(span_id, ctx.span_id, 8);
    if (transaction_id)
        memcpy(transaction_id, ctx.transaction_id, 8);
    if (trace_flags)
        *trace_flags = ctx.trace_flags;
    return 1;
}

