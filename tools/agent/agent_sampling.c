/* agent_sampling.c — see agent_sampling.h. */
#include "agent_sampling.h"

#include <signal.h>
#include <stdint.h>
#include <time.h>

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sample_thread(struct agent *a, struct agent_thread *th)
{
    if (!a->all_threads && !agent_thread_running(a->t.pid, th->tid))
        return;
    if (!agent_sampler_stop(&a->sampler, th))
        return;
    a->samples++;
    uint8_t trace_id[16], txn_id[8];
    int rc = agent_context_read(&a->ctx, th->tid, trace_id, txn_id);
    struct agent_stack stack;
    int u = rc == 1 ? agent_unwind(&a->unwinder, th->tid, &stack) : -1;
    if (u == AGENT_UNWIND_IN_VDSO) {
        /* not unwindable from outside (agent_unwind.h): left out, counted, not a failure */
        agent_sampler_resume(&a->sampler, th);
        a->in_vdso++;
        return;
    }
    int unwound = u == 0;
    size_t si = (size_t)-1, ti;
    if (unwound)
        si = agent_tally_stack(&a->tally, &a->symbols, &stack); /* symbolizes while the thread is held */
    agent_sampler_resume(&a->sampler, th);
    if (rc < 0)
        a->record_errors++;
    if (rc != 1)
        return;
    a->with_trace++;
    if (!unwound || si == (size_t)-1) {
        a->unwind_failures++;
        return;
    }
    ti = agent_tally_txn(&a->tally, trace_id, txn_id, si);
    if (ti == (size_t)-1)
        return;
    a->tally.txns[ti].samples++;
    a->tally.stacks[si].samples++;
    agent_sender_queue(&a->sender, trace_id, txn_id, stack.id, 1, ti);
}

void agent_sample_for(struct agent *a, double secs, double hz, size_t threads,
                      const volatile sig_atomic_t *stop, struct agent_run *out)
{
    int64_t period = (int64_t)(1e9 / hz), t0 = now_ns(), deadline = t0 + (int64_t)(secs * 1e9);
    int64_t next = t0, next_flush = t0 + AGENT_FLUSH_INTERVAL_NS;
    out->max_threads = threads;
    out->target_gone = 0;
    while (!*stop) {
        size_t live = agent_sampler_refresh(&a->sampler);
        if (live == 0 || kill(a->t.pid, 0) != 0) {
            out->target_gone = 1;
            break;
        }
        if (live > out->max_threads)
            out->max_threads = live;
        for (size_t i = 0; i < a->sampler.n && !*stop; i++)
            if (!a->sampler.v[i].gone)
                sample_thread(a, &a->sampler.v[i]);
        int64_t now = now_ns();
        if (now >= next_flush) {
            agent_sender_flush(&a->sender, agent_tally_sent, &a->tally);
            next_flush += AGENT_FLUSH_INTERVAL_NS;
            if (next_flush <= now)
                next_flush = now + AGENT_FLUSH_INTERVAL_NS;
        }
        if (now >= deadline)
            break;
        next += period;
        if (next <= now) /* fell behind: skip the missed ticks */
            next = now + period;
        struct timespec ts = {.tv_sec = next / 1000000000LL, .tv_nsec = next % 1000000000LL};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    }
    out->elapsed = (double)(now_ns() - t0) / 1e9;
    agent_sampler_detach_all(&a->sampler);
    agent_sender_flush(&a->sender, agent_tally_sent, &a->tally);
    out->interrupted = *stop != 0;
}
