/* http_thread.h — what HTTP reading (PROFLINK_HTTP=1) did to the calling thread's context: which
 * connection's request it shows, and whether the tracer API has taken the thread over. */
#ifndef PROFLINK_HTTP_THREAD_H
#define PROFLINK_HTTP_THREAD_H

#include <stdint.h>

#include "ids.h"

/* Set by every context call of the public API: from then on the tracer owns this thread's
 * context and HTTP reading never writes it again (a tracer knows the real span; proflink only
 * knows the caller's). Hidden, initial-exec: one %fs-relative store on the API's hot path. */
extern __thread uint8_t http_thread_api_owned
    __attribute__((tls_model("initial-exec"), visibility("hidden")));
/* 1 + the descriptor whose request context HTTP reading put on this thread, 0 if none. */
extern __thread int64_t http_thread_applied
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

static inline void http_thread_api_took(void) { http_thread_api_owned = 1; }

/* The thread read from connection fd: show ctx (present = 0: clear), unless it already shows
 * the same request (fd, gen). */
void http_thread_apply(int fd, uint32_t gen, const struct trace_ctx *ctx);

void http_thread_end_slow(void);
/* The thread waits for new work: the request context HTTP reading gave it ends. */
static inline void http_thread_end(void)
{
    if (__builtin_expect(http_thread_applied != 0, 0))
        http_thread_end_slow();
}
/* Connection fd closes: the context ends if it came from fd. */
static inline void http_thread_end_fd(int fd)
{
    if (http_thread_applied == (int64_t)fd + 1)
        http_thread_end_slow();
}
/* Connections lo..hi close: the context ends if it came from one of them. */
static inline void http_thread_end_fds(unsigned lo, unsigned hi)
{
    if (http_thread_applied >= (int64_t)lo + 1 && http_thread_applied <= (int64_t)hi + 1)
        http_thread_end_slow();
}

#endif
