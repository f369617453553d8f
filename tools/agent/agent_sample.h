/* agent_sample.h — holding a target's threads under ptrace for sampling, the way a profiler's
 * timer interrupt would catch them: every thread is seized once (PTRACE_SEIZE sends no signal),
 * then each sample is PTRACE_INTERRUPT → wait for the stop → look → PTRACE_CONT.
 *
 * While seized, a signal sent to a thread stops it until we look (signal-delivery-stop); every
 * call here first hands such signals back (PTRACE_CONT with the signal), so a thread is never
 * held for longer than one sampling period. Threads that exit are noticed and forgotten; new
 * threads are seized on the next refresh. agent_sampler_detach_all lets every thread run on
 * exactly as before. Nothing here ever kills or signals the target. */
#ifndef AGENT_SAMPLE_H
#define AGENT_SAMPLE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct agent_thread {
    pid_t tid;
    int gone;        /* exited (or could not be seized): never touched again */
    int group_stop;  /* stopped by job control (SIGSTOP…): resume with PTRACE_LISTEN */
};

struct agent_sampler {
    pid_t pid;
    struct agent_thread *v;
    size_t n, cap;
    unsigned long seized, seize_failures, exited, signals_passed;
    char last_error[256]; /* the last seize failure, for the report */
};

void agent_sampler_init(struct agent_sampler *s, pid_t pid);
void agent_sampler_free(struct agent_sampler *s);

/* Seizes the threads not yet seized, forgets those that exited, and resumes any thread a signal
 * stopped. Returns the number of live seized threads (0: the process is gone or nothing could be
 * seized). */
size_t agent_sampler_refresh(struct agent_sampler *s);

/* Whether the thread is on a CPU or runnable (state R in /proc), as a CPU profiler samples. */
int agent_thread_running(pid_t pid, pid_t tid);

/* Stops one seized thread. 1: stopped, the caller must call agent_sampler_resume; 0: it exited
 * (it is marked gone). */
int agent_sampler_stop(struct agent_sampler *s, struct agent_thread *th);
void agent_sampler_resume(struct agent_sampler *s, struct agent_thread *th);

/* Detaches from every thread (stopping each for a moment, as PTRACE_DETACH requires). */
void agent_sampler_detach_all(struct agent_sampler *s);

#endif
