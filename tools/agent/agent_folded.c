/* agent_folded.c — see agent_folded.h. */
#include "agent_folded.h"

#include "common/target_util.h"

static void frame(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n && s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        fputc(c == ';' || c < 0x20 || c == 0x7f ? '_' : c, f);
    }
}

void agent_folded_write(FILE *f, const struct agent *a)
{
    const struct agent_tally *t = &a->tally;
    const struct target_str *svc = &a->t.storage.service_name;
    for (size_t i = 0; i < t->ntxns; i++) {
        const struct agent_txn_entry *e = &t->txns[i];
        const struct agent_stack_info *s = &t->stacks[e->stack];
        if (!e->samples)
            continue;
        char th[33], xh[17];
        target_hex(e->trace_id, 16, th);
        target_hex(e->transaction_id, 8, xh);
        fprintf(f, "trace %s;", th);
        frame(f, svc->s, svc->len);
        fprintf(f, " (pid %ld);transaction %s", (long)a->t.pid, xh);
        for (size_t k = s->nframes; k-- > 0;) {
            fputc(';', f);
            frame(f, s->frames[k], (size_t)-1);
        }
        fprintf(f, " %lu\n", e->samples);
    }
}
