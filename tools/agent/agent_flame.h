/* agent_flame.h — flame graphs of the agent's folded stacks (agent_folded.h): one self-contained
 * SVG per trace, and one per transaction of a trace that has several, that any browser opens
 * (no external file). The trace is the bottom frame, then the process, then the
 * transaction, then the sampled stacks from the outermost frame up; a frame's width is its
 * share of the samples, and hovering a frame shows its name, samples and share; a click zooms
 * into a frame (a small inline script; without it the drawing is the same). The trace id is
 * the document's title and its heading. */
#ifndef AGENT_FLAME_H
#define AGENT_FLAME_H

#include <stdio.h>

/* Files and limits of one rendering: a graph is wide enough to read names at a glance and a
 * frame narrower than a tenth of a pixel is left out (with everything above it). */
#define AGENT_FLAME_WIDTH 1200
#define AGENT_FLAME_MIN_PX 0.1
/* A demo's run holds a hundred traces: the report names the most sampled, index.html all. */
#define AGENT_FLAME_LISTED 8

/* Reads the folded lines of in (from its start) and writes DIR/trace-<id>.svg per trace, and
 * DIR/trace-<id>-txn-<id>-pid-<pid>.svg per transaction of a trace with several (a trace that
 * crossed processes, or several local roots in one), and DIR/index.html
 * linking them all, most samples first; DIR is created when missing. The most sampled graphs'
 * paths, made absolute, are printed on report as "proflink-agent: flame graph of trace
 * <id>[ transaction <id> (pid <pid>)] (N samples): <path>", then the index's. Returns the number of graphs
 * written, or -1 with err. */
int agent_flame_write(FILE *in, const char *dir, FILE *report, char *err, size_t cap);

#endif
