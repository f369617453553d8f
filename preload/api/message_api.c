/* message_api.c — the message side of the tracer API (include/proflink.h): the message
 * callback, proflink_end_transaction and pull delivery, the registered delay and host id. The
 * state lives in profiler_state.c, deferral.c and pull_queue.c; these are the entry points.
 * Each may be the first use of the library in a copy of the process made by a raw clone, so
 * each begins with fork_sequence_check_process (one getpid; proflink_end_transaction makes
 * that system call already, deferral.c). */
#include <stddef.h>
#include <stdint.h>

#include "deferral/deferral.h"
#include "leaves/export.h"
#include "start/fork_sequence.h"
#include "messages/profiler_state.h"
#include "deferral/pull_queue.h"
#include "delivery/deliverer_lazy.h"
#include "leaves/runtime_state.h"

PROFLINK_EXPORT void proflink_set_message_callback(proflink_message_fn fn, void *user)
{
    fork_sequence_check_process();
    message_callback_set(fn, user);
    /* after the store: what waited in the socket goes to this callback */
    if (fn && runtime_active())
        reader_ensure_running();
}

/* Disabled: nothing is ever held, so the delay in force is 0. */
PROFLINK_EXPORT uint32_t proflink_samples_delay_ms(void)
{
    fork_sequence_check_process();
    if (!runtime_active())
        return 0;
    reader_ensure_running(); /* a registration is what changes it */
    return profiler_delay_ms();
}

PROFLINK_EXPORT size_t proflink_host_id(char *buf, size_t cap)
{
    fork_sequence_check_process();
    if (!runtime_active()) {
        if (buf && cap)
            buf[0] = 0;
        return 0;
    }
    reader_ensure_running(); /* a registration is what sets it */
    return profiler_host_id(buf, cap);
}

/* ---- Ended transactions -------------------------------------------------------------------- */
PROFLINK_EXPORT int proflink_end_transaction(const uint8_t trace_id[16],
                                             const uint8_t transaction_id[8],
                                             uint8_t trace_flags, proflink_transaction_fn fn,
                                             void *user)
{
    fork_sequence_check_process();
    if (!trace_id || !transaction_id)
        return -1;
    if (!runtime_active()) { /* disabled: a no-op that hands the transaction straight back */
        if (!fn)
            return -1; /* pull: nothing will ever be queued */
        proflink_stack_count none[1];
        fn(trace_id, transaction_id, none, 0, user);
        return PROFLINK_DELIVERED_NOW;
    }
    reader_ensure_running(); /* the first one goes out at once if the start is racing */
    return deferral_end(trace_id, transaction_id, trace_flags, fn, user); /* fn NULL: pull */
}

/* ---- Pull delivery (pull_queue.h) ---------------------------------------------------------- */
PROFLINK_EXPORT long proflink_take_transactions(void *buf, size_t cap)
{
    fork_sequence_check_process();
    if (!runtime_active() || (!buf && cap))
        return 0;
    return pull_queue_take(buf, cap);
}

PROFLINK_EXPORT int proflink_transactions_fd(void)
{
    fork_sequence_check_process();
    if (!runtime_active())
        return -1;
    reader_ensure_running(); /* the pipe is for results the reader releases */
    return pull_queue_fd();
}

PROFLINK_EXPORT int proflink_flush_transactions(void)
{
    fork_sequence_check_process();
    if (!runtime_active())
        return -1;
    return deferral_flush();
}
