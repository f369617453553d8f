/* agent_tally.c — see agent_tally.h. */
#include "agent_tally.h"

#include <stdlib.h>
#include <string.h>

static void *grow(void *p, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return p;
    size_t nc = *cap ? *cap * 2 : 64;
    void *np = realloc(p, nc * size);
    if (np)
        *cap = nc;
    return np;
}

size_t agent_tally_stack(struct agent_tally *t, struct agent_symbols *symbols,
                         const struct agent_stack *s)
{
    for (size_t i = 0; i < t->nstacks; i++)
        if (memcmp(t->stacks[i].id, s->id, 16) == 0)
            return i;
    struct agent_stack_info *ns = grow(t->stacks, &t->cap_stacks, t->nstacks, sizeof *ns);
    if (!ns)
        return (size_t)-1;
    t->stacks = ns;
    struct agent_stack_info *si = &t->stacks[t->nstacks];
    memset(si, 0, sizeof *si);
    memcpy(si->id, s->id, 16);
    si->nframes = s->n;
    /* named now, while the target surely still exists */
    for (size_t f = 0; f < s->n; f++)
        si->frames[f] = agent_symbolize(symbols, s->ip[f], f == 0);
    return t->nstacks++;
}

size_t agent_tally_txn(struct agent_tally *t, const uint8_t trace_id[16], const uint8_t txn_id[8],
                       size_t stack)
{
    for (size_t i = t->ntxns; i-- > 0;) {
        struct agent_txn_entry *e = &t->txns[i];
        if (e->stack == stack && memcmp(e->trace_id, trace_id, 16) == 0 &&
            memcmp(e->transaction_id, txn_id, 8) == 0)
            return i;
    }
    struct agent_txn_entry *nt = grow(t->txns, &t->cap_txns, t->ntxns, sizeof *nt);
    if (!nt)
        return (size_t)-1;
    t->txns = nt;
    struct agent_txn_entry *e = &t->txns[t->ntxns];
    memset(e, 0, sizeof *e);
    memcpy(e->trace_id, trace_id, 16);
    memcpy(e->transaction_id, txn_id, 8);
    e->stack = stack;
    return t->ntxns++;
}

int agent_tally_same_txn(const struct agent_tally *t, size_t i, size_t k)
{
    const struct agent_txn_entry *a = &t->txns[i], *b = &t->txns[k];
    return memcmp(a->trace_id, b->trace_id, 16) == 0 &&
           memcmp(a->transaction_id, b->transaction_id, 8) == 0;
}

void agent_tally_sent(void *user, size_t tag, int sent)
{
    struct agent_tally *t = user;
    if (!sent || tag >= t->ntxns)
        return;
    t->txns[tag].sent++;
    t->stacks[t->txns[tag].stack].sent++;
}

void agent_tally_free(struct agent_tally *t)
{
    free(t->stacks);
    free(t->txns);
    *t = (struct agent_tally){0};
}
