/* agent_report.c — see agent_report.h. */
#include "agent_report.h"

#include <stdlib.h>
#include <string.h>

#include "common/target_json.h"
#include "common/target_netns.h"
#include "common/target_util.h"

static void base64url(const uint8_t id[16], char out[23])
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t o = 0;
    for (size_t i = 0; i < 16; i += 3) {
        uint32_t v = (uint32_t)id[i] << 16;
        if (i + 1 < 16)
            v |= (uint32_t)id[i + 1] << 8;
        if (i + 2 < 16)
            v |= id[i + 2];
        out[o++] = a[(v >> 18) & 63];
        out[o++] = a[(v >> 12) & 63];
        if (i + 1 < 16)
            out[o++] = a[(v >> 6) & 63];
        if (i + 2 < 16)
            out[o++] = a[v & 63];
    }
    out[o] = '\0';
}

/* 1 when entry i is the first of its {trace, transaction}: each is listed once, there. */
static int first_of_txn(const struct agent_tally *t, size_t i)
{
    for (size_t k = 0; k < i; k++)
        if (agent_tally_same_txn(t, k, i))
            return 0;
    return 1;
}

static int cmp_stack_samples(const void *x, const void *y, void *ctx)
{
    const struct agent_tally *t = ctx;
    const struct agent_stack_info *p = &t->stacks[*(const size_t *)x], *q = &t->stacks[*(const size_t *)y];
    return (p->samples < q->samples) - (p->samples > q->samples);
}

static void print_stacks(const struct agent_tally *t)
{
    size_t *order = malloc((t->nstacks + 1) * sizeof *order);
    if (!order)
        return;
    for (size_t i = 0; i < t->nstacks; i++)
        order[i] = i;
    qsort_r(order, t->nstacks, sizeof *order, cmp_stack_samples, (void *)t);
    printf("\nStacks (stack-trace id, samples, frames from the innermost):\n");
    for (size_t k = 0; k < t->nstacks; k++) {
        const struct agent_stack_info *s = &t->stacks[order[k]];
        char b64[23];
        base64url(s->id, b64);
        printf("  %s %5lu  ", b64, s->samples);
        for (size_t f = 0; f < s->nframes && f < 8; f++)
            printf("%s%s", f ? " < " : "", s->frames[f]);
        printf("%s\n", s->nframes > 8 ? " < …" : "");
    }
    free(order);
}

static void print_txns(const struct agent_tally *t, size_t max_txns)
{
    printf("\nTransactions (trace id, transaction id: stack-trace id x count sent):\n");
    size_t shown = 0;
    for (size_t i = 0; i < t->ntxns; i++) {
        const struct agent_txn_entry *e = &t->txns[i];
        if (!first_of_txn(t, i))
            continue;
        if (max_txns && shown++ == max_txns) {
            printf("  … (--json lists all)\n");
            break;
        }
        char th[33], xh[17];
        target_hex(e->trace_id, 16, th);
        target_hex(e->transaction_id, 8, xh);
        printf("  %s %s:", th, xh);
        for (size_t j = i; j < t->ntxns; j++) {
            const struct agent_txn_entry *f = &t->txns[j];
            if (!agent_tally_same_txn(t, i, j))
                continue;
            char b64[23];
            base64url(t->stacks[f->stack].id, b64);
            printf(" %s x%lu", b64, f->sent);
            if (f->samples > f->sent)
                printf(" (+%lu dropped)", f->samples - f->sent);
        }
        printf("\n");
    }
}

void agent_report_text(const struct agent *a, const struct agent_options *o,
                       const struct agent_run *run)
{
    if (run->target_gone)
        printf("proflink-agent: pid %ld exited after %.1f s\n", (long)a->t.pid, run->elapsed);
    else if (run->interrupted)
        printf("proflink-agent: interrupted after %.1f s\n", run->elapsed);
    printf("proflink-agent: %lu samples of threads %s, %lu inside a trace\n", a->samples,
           a->all_threads ? "(all)" : "on a CPU", a->with_trace);
    if (a->unwind_failures)
        printf("proflink-agent: %lu of them could not be unwound (not sent)\n", a->unwind_failures);
    if (a->in_vdso)
        printf("proflink-agent: %lu more inside a trace were in the vDSO, which cannot be unwound "
               "from outside (left out)\n",
               a->in_vdso);
    printf("proflink-agent: %lu correlation messages sent in %lu bursts, %lu dropped (socket "
           "full), %lu failed%s%s\n",
           a->sender.sent, a->sender.bursts, a->sender.dropped, a->sender.failed,
           a->sender.failed ? ": " : "", a->sender.failed ? strerror(a->sender.last_errno) : "");
    if (a->reader == 0 && (a->sender.sent || a->sender.dropped))
        printf("proflink-agent: nothing in pid %ld reads its socket: proflink's reader threads are "
               "not running (they start at a tracer's first use of the message API: a callback, "
               "proflink_end_transaction; with PROFLINK_FIFO, at the program's first "
               "pthread_create or wait for work: accept, poll, epoll_wait, select); the socket kept the first messages and "
               "refused the rest, so no stack-trace id reaches the service, whatever "
               "net.unix.max_dgram_qlen is. The samples below are attributed to their traces all "
               "the same (a profiler does that on its side); for the ids to reach the service, "
               "set PROFLINK_FIFO=PATH or use a tracer\n",
               (long)a->t.pid);
    else if (a->sender.dropped) {
        char why[TARGET_QLEN_WHY_MAX] = "";
        int qlen = target_dgram_qlen(a->t.pid, why, sizeof why);
        printf("proflink-agent: (a unix datagram socket queues net.unix.max_dgram_qlen messages, "
               "10 by default, ");
        if (qlen >= 0)
            printf("%d in pid %ld's network namespace", qlen, (long)a->t.pid);
        else
            printf("unknown in pid %ld's network namespace: %s", (long)a->t.pid, why);
        printf("; the rest of a burst is dropped, as by the profiler)\n"
               "      fix: net.unix.max_dgram_qlen=%d in that namespace before the service starts "
               "(nsenter -t %ld -n sysctl -w ...; the Debian package sets it on the host, else "
               "proflink-system dgram-queue; a container: docker run --sysctl, a Kubernetes pod's "
               "securityContext.sysctls)\n",
               TARGET_QLEN_ADVISED, (long)a->t.pid);
    }
    print_stacks(&a->tally);
    print_txns(&a->tally, o->max_txns);
    if (a->by.name)
        agent_by_print_text(&a->by);
}

static void json_stacks(struct target_json *j, const struct agent_tally *t)
{
    target_json_object(j, "stacks");
    for (size_t i = 0; i < t->nstacks; i++) {
        const struct agent_stack_info *s = &t->stacks[i];
        char b64[23];
        base64url(s->id, b64);
        target_json_object(j, b64);
        target_json_uint(j, "samples", s->samples);
        target_json_uint(j, "sent", s->sent);
        target_json_array(j, "frames");
        for (size_t f = 0; f < s->nframes; f++)
            target_json_str(j, NULL, s->frames[f]);
        target_json_end_array(j);
        target_json_end_object(j);
    }
    target_json_end_object(j);
}

static void json_txns(struct target_json *j, const struct agent_tally *t)
{
    target_json_array(j, "transactions");
    for (size_t i = 0; i < t->ntxns; i++) {
        const struct agent_txn_entry *e = &t->txns[i];
        if (!first_of_txn(t, i))
            continue;
        char th[33], xh[17];
        target_hex(e->trace_id, 16, th);
        target_hex(e->transaction_id, 8, xh);
        target_json_object(j, NULL);
        target_json_str(j, "trace_id", th);
        target_json_str(j, "transaction_id", xh);
        unsigned long samples = 0;
        target_json_object(j, "stack_trace_ids");
        for (size_t k = i; k < t->ntxns; k++) {
            const struct agent_txn_entry *f = &t->txns[k];
            if (!agent_tally_same_txn(t, i, k))
                continue;
            samples += f->samples;
            if (!f->sent)
                continue;
            char b64[23];
            base64url(t->stacks[f->stack].id, b64);
            target_json_uint(j, b64, f->sent);
        }
        target_json_end_object(j);
        target_json_uint(j, "samples", samples);
        target_json_end_object(j);
    }
    target_json_end_array(j);
}

void agent_report_json(FILE *out, const struct agent *a, const struct agent_options *o,
                       const struct agent_run *run)
{
    struct target_json j;
    target_json_init(&j, out);
    target_json_object(&j, NULL);
    target_json_int(&j, "pid", a->t.pid);
    target_json_strn(&j, "service_name", a->t.storage.service_name.s, a->t.storage.service_name.len);
    target_json_str(&j, "socket", a->t.sock.proc_path);
    target_json_str(&j, "source", a->ctx.otel ? "otel" : "elastic");
    target_json_double(&j, "duration_s", run->elapsed);
    target_json_double(&j, "frequency_hz", o->hz);
    target_json_uint(&j, "threads", run->max_threads);
    if (o->registered) {
        target_json_object(&j, "registration");
        target_json_uint(&j, "samples_delay_ms", o->delay);
        target_json_str(&j, "host_id", o->host ? o->host : "");
        target_json_end_object(&j);
    } else {
        target_json_null(&j, "registration");
    }
    target_json_uint(&j, "samples", a->samples);
    target_json_uint(&j, "samples_with_trace", a->with_trace);
    target_json_uint(&j, "sent", a->sender.sent);
    target_json_uint(&j, "dropped", a->sender.dropped);
    target_json_uint(&j, "failed", a->sender.failed);
    target_json_uint(&j, "bursts", a->sender.bursts);
    target_json_uint(&j, "unwind_failures", a->unwind_failures);
    target_json_uint(&j, "in_vdso", a->in_vdso);
    if (a->reader >= 0)
        target_json_bool(&j, "socket_reader", a->reader);
    else
        target_json_null(&j, "socket_reader");
    json_stacks(&j, &a->tally);
    json_txns(&j, &a->tally);
    if (a->by.name)
        agent_by_json(&a->by, &j);
    target_json_end_object(&j);
    fputc('\n', out);
}
