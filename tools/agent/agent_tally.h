/* agent_tally.h — what the agent's samples found: each distinct stack (by stack-trace id, its
 * frames named while the target still existed) and, per {trace id, transaction id, stack}, how
 * many samples were taken and how many correlation messages for them were sent. */
#ifndef AGENT_TALLY_H
#define AGENT_TALLY_H

#include <stddef.h>
#include <stdint.h>

#include "agent_symbolize.h"
#include "agent_unwind.h"

struct agent_stack_info {
    uint8_t id[16];
    size_t nframes;
    const char *frames[AGENT_MAX_FRAMES];
    unsigned long samples, sent;
};

struct agent_txn_entry {
    uint8_t trace_id[16], transaction_id[8];
    size_t stack; /* index into stacks */
    unsigned long samples, sent;
};

struct agent_tally {
    struct agent_stack_info *stacks;
    size_t nstacks, cap_stacks;
    struct agent_txn_entry *txns;
    size_t ntxns, cap_txns;
};

/* The index of stack s, added (its frames named through symbols) when new; (size_t)-1 when out
 * of memory. */
size_t agent_tally_stack(struct agent_tally *t, struct agent_symbols *symbols,
                         const struct agent_stack *s);

/* The index of the {trace, transaction, stack} entry, added when new; (size_t)-1 when out of
 * memory. */
size_t agent_tally_txn(struct agent_tally *t, const uint8_t trace_id[16], const uint8_t txn_id[8],
                       size_t stack);

/* 1 when entries i and k are of the same {trace id, transaction id}. */
int agent_tally_same_txn(const struct agent_tally *t, size_t i, size_t k);

/* agent_sender_flush's callback (user: the tally, tag: a txn index): counts a sent message. */
void agent_tally_sent(void *user, size_t tag, int sent);

void agent_tally_free(struct agent_tally *t);

#endif
