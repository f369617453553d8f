/* http_thread.c — puts a request's context read from HTTP on the calling thread's records,
 * through the same record writers as the API (thread_records.h). */
#include "http_thread.h"

#include "thread_records.h"

__thread uint8_t http_thread_api_owned __attribute__((tls_model("initial-exec")));
__thread int64_t http_thread_applied __attribute__((tls_model("initial-exec")));
static __thread uint32_t applied_gen __attribute__((tls_model("initial-exec")));

void http_thread_apply(int fd, uint32_t gen, const struct trace_ctx *ctx)
{
    if (http_thread_api_owned)
        return;
    if (http_thread_applied == (int64_t)fd + 1 && applied_gen == gen)
        return;
    struct thread_block *b = thread_block_self_or_create();
    if (!b)
        return;
    if (ctx->present)
        thread_block_set(b, ctx->trace_id, ctx->span_id, ctx->transaction_id, ctx->trace_flags);
    else
        thread_block_clear(b);
    http_thread_applied = (int64_t)fd + 1;
    applied_gen = gen;
}

void http_thread_end_slow(void)
{
    http_thread_applied = 0;
    if (http_thread_api_owned)
        return;
    struct thread_block *b = thread_block_self();
    if (b)
        thread_block_clear(b);
}
