/* agent_sampling.h — the agent's sampling run: at each tick every thread on a CPU (or every
 * thread, --all-threads) is stopped for a moment, its trace context read, its stack unwound and
 * named, and a correlation for {trace, transaction, stack} queued; the queue is sent every
 * AGENT_FLUSH_INTERVAL_NS, as the profiler reports in bursts. */
#ifndef AGENT_SAMPLING_H
#define AGENT_SAMPLING_H

#include <signal.h>
#include <stddef.h>

#include "agent_by.h"
#include "agent_context.h"
#include "agent_sample.h"
#include "agent_send.h"
#include "agent_symbolize.h"
#include "agent_tally.h"
#include "agent_unwind.h"
#include "common/target_attach.h"

/* How often queued correlations are sent, in bursts as the profiler sends them; a registered
 * samples-delay-ms shorter than this lets transactions go out before their last samples come. */
#define AGENT_FLUSH_INTERVAL_NS 250000000LL

/* Everything one run of the agent holds. */
struct agent {
    struct target t;
    struct agent_context ctx;
    struct agent_by by; /* --by ATTR */
    int all_threads;
    struct agent_sampler sampler;
    struct agent_unwinder unwinder;
    struct agent_symbols symbols;
    struct agent_sender sender;
    struct agent_tally tally;
    unsigned long samples, with_trace, unwind_failures, record_errors;
    unsigned long in_vdso; /* samples inside a trace left out: the thread was in the vDSO */
    int reader; /* at the end: proflink's intake thread runs (1), not (0), unknown (-1) */
};

/* How the run ended. */
struct agent_run {
    double elapsed; /* seconds sampled */
    size_t max_threads; /* most threads seen at once */
    int target_gone;    /* the target exited */
    int interrupted;    /* *stop was set */
};

/* Samples at hz for secs seconds, until the target exits or *stop is set (a signal handler's
 * flag); threads are the ones seized by the first agent_sampler_refresh. Every thread is
 * detached and the last queue sent before it returns. */
void agent_sample_for(struct agent *a, double secs, double hz, size_t threads,
                      const volatile sig_atomic_t *stop, struct agent_run *out);

#endif
