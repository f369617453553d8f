/* agent_folded.h — the agent's samples as folded stacks, the text format flame graph tools read
 * (Brendan Gregg's stackcollapse output): one line per distinct stack, its frames from the
 * outermost to the innermost separated by ';', a space and its sample count. Each stack starts
 * with three frames of its own so a graph splits by them:
 *
 *   trace <32 hex>;<service> (pid <N>);transaction <16 hex>;main;serve;compute 12
 *
 * A frame's own ';' and control characters become '_' (they would split or end the line). */
#ifndef AGENT_FOLDED_H
#define AGENT_FOLDED_H

#include <stdio.h>

#include "agent_sampling.h"

/* Writes a's samples inside a trace (those with an unwound stack), one line per {trace,
 * transaction, stack}. */
void agent_folded_write(FILE *f, const struct agent *a);

#endif
