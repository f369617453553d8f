/* agent_report.h — the agent's summary of a run: per stack-trace id its frames, per
 * {trace id, transaction id} the stack-trace ids sent with their counts, as text or as the JSON
 * object documented in proflink-agent.c. Stack-trace ids are printed base64url without padding,
 * as receivers render them. */
#ifndef AGENT_REPORT_H
#define AGENT_REPORT_H

#include <stdio.h>

#include "agent_options.h"
#include "agent_sampling.h"

/* Text on stdout: how the run ended, the counts, the stacks (most sampled first) and the
 * transactions (at most o->max_txns, 0: all), then the --by groups. */
void agent_report_text(const struct agent *a, const struct agent_options *o,
                       const struct agent_run *run);

/* One JSON object and a newline on out. */
void agent_report_json(FILE *out, const struct agent *a, const struct agent_options *o,
                       const struct agent_run *run);

#endif
