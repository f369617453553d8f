/* agent_context.h — the trace context of a thread held in a ptrace stop, read where the
 * profiler reads it: the Elastic record (what the eBPF code checks: valid and trace present) or,
 * with otel, the OpenTelemetry thread record, whose transaction id is its local_root_span_id
 * attribute (named through the process context key map). */
#ifndef AGENT_CONTEXT_H
#define AGENT_CONTEXT_H

#include <stdint.h>
#include <sys/types.h>

#include "agent_by.h"
#include "common/target_attach.h"

struct agent_context {
    const struct target *t; /* attached: TLS offsets found */
    int otel;               /* read otel_thread_ctx_v1 instead of the Elastic record */
    int otel_key;           /* key index of local_root_span_id in the OTel attributes */
    struct agent_by *by;    /* --by grouping (by->name NULL: none) */
};

/* Reads the key map: the index of local_root_span_id (0, the convention, when no map is
 * published) and, with --by, the grouped attribute's. */
void agent_context_load_key_map(struct agent_context *c);

/* 1: the thread runs inside a trace (ids filled), 0: it does not, -1: unreadable. With --by,
 * also counts the sample by the attribute's value (re-reading the map for a key it lacks). */
int agent_context_read(struct agent_context *c, pid_t tid, uint8_t trace_id[16], uint8_t txn_id[8]);

#endif
