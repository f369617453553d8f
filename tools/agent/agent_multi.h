/* agent_multi.h — several processes sampled at the same time (PIDs, --pidof, --children): the
 * workers of a pre-fork server, any of which may get the request. Each process gets its own
 * child of the agent that runs the whole single-process agent on it (attach, sample, report),
 * so they are sampled in parallel and one failing does not stop the others; their reports are
 * then printed one after the other, each whole, with a header naming the process, and a line
 * counting how each ended. --json and -o FILE get {"processes": [one object per process]}, a
 * process that could not be sampled as {"pid": N, "status": 1|2, "error": "…"}. */
#ifndef AGENT_MULTI_H
#define AGENT_MULTI_H

#include <stdio.h>
#include <sys/types.h>

#include "agent_options.h"

/* At most this many processes at once: the profiler itself keeps state for 128, and each costs
 * a child with three temporary files here. */
#define AGENT_MULTI_MAX 128

/* What samples one process: prints its report on stdout (errors on stderr), writes -o FILE,
 * appends its folded stacks to folded (if not NULL); returns its exit status. */
typedef int (*agent_run_one_fn)(const struct agent_options *o, pid_t pid, FILE *folded);

/* Runs run_one on every process of o->pids at once; returns the worst exit status. */
int agent_multi(const struct agent_options *o, agent_run_one_fn run_one, FILE *folded);

#endif
