/*
 * proflink-agent — a local stand-in for an eBPF profiler's apmint integration, to see the whole
 * correlation loop work without a profiler: it attaches to PID exactly where the profiler would
 * (same checks as proflink-inspect), samples the target's threads, reads each sampled thread's
 * trace context through its TLS pointer, unwinds the stack, names it with a 128-bit stack-trace
 * id and sends the profiler's correlation datagrams to the target's socket.
 *
 * Usage: proflink-agent [options] PID
 *   -d SECONDS   how long to sample (default 5)
 *   -f HZ        samples per second and thread (default 20)
 *   -n N         list at most N transactions in the text summary (default: all)
 *   --register DELAY_MS[,HOST_ID]
 *                first send a registration (type 2, minor 2) with that samples-delay-ms and
 *                host id, as Elastic's profiler does (the OTel profiler never registers)
 *   --otel       read the OpenTelemetry thread context (otel_thread_ctx_v1) instead of the
 *                Elastic record; the transaction id is its local_root_span_id attribute
 *   --by ATTR    (implies --otel) also count the samples per value of the OTel thread
 *                attribute ATTR (e.g. http.route), named through the process context key map
 *   --all-threads  also sample threads that are not on a CPU (a CPU profiler does not)
 *   --json       print the summary as one JSON object
 *   -o FILE      also write that JSON summary to FILE
 *
 * Sampling: every thread is seized once with PTRACE_SEIZE; each sample is PTRACE_INTERRUPT,
 * wait for the stop, read the record, unwind if it is valid and has a trace, PTRACE_CONT. At the
 * end every thread is detached and runs on as before; signals that arrive meanwhile are handed
 * back. The target is never killed nor left stopped (also on SIGINT/SIGTERM of the agent).
 *
 * Sending: one 46-byte correlation (type 1, minor 1, count 1) per sample with a trace, queued and
 * sent every 250 ms with sendto(MSG_DONTWAIT) to /proc/PID/root/<socket path>; a datagram the
 * socket cannot take is dropped and counted, as the profiler does.
 *
 * Output: per stack-trace id its frames (function names from the ELF symbol tables of the
 * target's files, else file+offset), per
 * {trace id, transaction id} the stack-trace ids sent with their counts. Stack-trace ids are
 * printed base64url without padding, as receivers render them.
 *
 * --json:
 * {"pid": 123, "service_name": "…", "socket": "/proc/123/root/…", "source": "elastic|otel",
 *  "duration_s": 4.0, "frequency_hz": 50, "threads": 4,
 *  "registration": {"samples_delay_ms": 200, "host_id": "…"} | null,
 *  "samples": 800, "samples_with_trace": 412, "sent": 412, "dropped": 0, "failed": 0,
 *  "bursts": 16, "unwind_failures": 0,
 *  "stacks": {"<id>": {"samples": 210, "sent": 210, "frames": ["compute_prices", …]}, …},
 *  "transactions": [{"trace_id": "<32 hex>", "transaction_id": "<16 hex>",
 *                    "stack_trace_ids": {"<id>": sent count, …}, "samples": 3}, …],
 *  "by": {"attribute": "http.route", "key_map_refreshes": 0, "without": 12,
 *         "groups": {"/r/1": 40, …}}}      ("by" only with --by)
 *
 * Exit status: 0 after sampling (also when PID exits meanwhile, or on SIGINT/SIGTERM: the summary
 * is printed all the same); 1 when the profiler would not attach to PID; 2 on usage errors, when
 * PID cannot be traced (no such process, ptrace not permitted) or -o FILE cannot be written.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proflink.h"
#include "agent_sample.h"
#include "agent_send.h"
#include "agent_symbolize.h"
#include "agent_unwind.h"
#include "target_attach.h"
#include "target_json.h"
#include "agent_by.h"
#include "target_otel.h"
#include "target_records.h"
#include "target_threads.h"
#include "target_util.h"

#define FLUSH_INTERVAL_NS 250000000LL

struct stack_info {
    uint8_t id[16];
    size_t nframes;
    const char *frames[AGENT_MAX_FRAMES];
    unsigned long samples, sent;
};

struct txn_entry {
    uint8_t trace_id[16], transaction_id[8];
    size_t stack; /* index into stacks */
    unsigned long samples, sent;
};

struct agent {
    struct target t;
    int otel;
    int otel_key; /* key index of local_root_span_id in the OTel attributes */
    struct agent_by by; /* --by ATTR */
    int all_threads;
    size_t max_txns; /* text output: transactions listed (0: all) */
    struct agent_sampler sampler;
    struct agent_unwinder unwinder;
    struct agent_symbols symbols;
    struct agent_sender sender;
    struct stack_info *stacks;
    size_t nstacks, cap_stacks;
    struct txn_entry *txns;
    size_t ntxns, cap_txns;
    unsigned long samples, with_trace, unwind_failures, record_errors;
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

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

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

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

/* ---- reading a thread's trace context ------------------------------------------------------ */

static int unhex8(const uint8_t *s, size_t n, uint8_t out[8])
{
    if (n != 16)
        return -1;
    for (size_t i = 0; i < 8; i++) {
        int v = 0;
        for (int k = 0; k < 2; k++) {
            int c = s[2 * i + k], d;
            if (c >= '0' && c <= '9')
                d = c - '0';
            else if (c >= 'a' && c <= 'f')
                d = c - 'a' + 10;
            else if (c >= 'A' && c <= 'F')
                d = c - 'A' + 10;
            else
                return -1;
            v = v * 16 + d;
        }
        out[i] = (uint8_t)v;
    }
    return 0;
}

static void load_key_map(struct agent *a);

/* 1: the thread runs inside a trace (ids filled), 0: it does not, -1: unreadable. */
static int read_context(struct agent *a, pid_t tid, uint8_t trace_id[16], uint8_t txn_id[8])
{
    struct target_stopped st = {.tid = tid, .pending_signal = 0};
    uint64_t tp, ptr;
    char err[TARGET_ERRLEN];
    int64_t off = a->otel ? a->t.otel_tls_offset : a->t.tls_offset;
    if (target_thread_tp(&st, &tp, err) != 0 || target_tls_pointer(&a->t.mem, tp, off, &ptr, err) != 0)
        return -1;
    if (ptr == 0) {
        if (a->by.name)
            agent_by_count(&a->by, NULL);
        return 0;
    }
    if (!a->otel) {
        struct target_apm_record r;
        if (target_read_apm_record(&a->t.mem, ptr, &r, err) != 0)
            return -1;
        if (!(r.valid && r.trace_present)) /* what the eBPF code checks */
            return 0;
        memcpy(trace_id, r.trace_id, 16);
        memcpy(txn_id, r.transaction_id, 8);
        return 1;
    }
    struct target_otel_record r;
    if (target_read_otel_record(&a->t.mem, ptr, &r, err) != 0)
        return -1;
    if (a->by.name) {
        if (r.valid == 1 && agent_by_needs_refresh(&a->by, &r)) {
            load_key_map(a); /* a key registered since: the map only grows */
            a->by.refreshes++;
        }
        agent_by_count(&a->by, r.valid == 1 ? &r : NULL);
    }
    if (r.valid != 1)
        return 0;
    memcpy(trace_id, r.trace_id, 16);
    memcpy(txn_id, r.span_id, 8); /* a span without a local root attribute is its own root */
    size_t pos = 0;
    struct target_otel_attr at;
    while (target_otel_attr_next(&r, &pos, &at) == 1)
        if (at.key == a->otel_key && unhex8(at.value, at.len, txn_id) == 0)
            break;
    static const uint8_t zero[16];
    return memcmp(trace_id, zero, 16) != 0;
}

/* ---- bookkeeping --------------------------------------------------------------------------- */

static size_t stack_index(struct agent *a, const struct agent_stack *s)
{
    for (size_t i = 0; i < a->nstacks; i++)
        if (memcmp(a->stacks[i].id, s->id, 16) == 0)
            return i;
    struct stack_info *ns = grow(a->stacks, &a->cap_stacks, a->nstacks, sizeof *ns);
    if (!ns)
        return (size_t)-1;
    a->stacks = ns;
    struct stack_info *si = &a->stacks[a->nstacks];
    memset(si, 0, sizeof *si);
    memcpy(si->id, s->id, 16);
    si->nframes = s->n;
    /* named now, while the target surely still exists */
    for (size_t f = 0; f < s->n; f++)
        si->frames[f] = agent_symbolize(&a->symbols, s->ip[f], f == 0);
    return a->nstacks++;
}

static size_t txn_index(struct agent *a, const uint8_t trace_id[16], const uint8_t txn_id[8],
                        size_t stack)
{
    for (size_t i = a->ntxns; i-- > 0;) {
        struct txn_entry *e = &a->txns[i];
        if (e->stack == stack && memcmp(e->trace_id, trace_id, 16) == 0 &&
            memcmp(e->transaction_id, txn_id, 8) == 0)
            return i;
    }
    struct txn_entry *nt = grow(a->txns, &a->cap_txns, a->ntxns, sizeof *nt);
    if (!nt)
        return (size_t)-1;
    a->txns = nt;
    struct txn_entry *e = &a->txns[a->ntxns];
    memset(e, 0, sizeof *e);
    memcpy(e->trace_id, trace_id, 16);
    memcpy(e->transaction_id, txn_id, 8);
    e->stack = stack;
    return a->ntxns++;
}

static void sent_done(void *user, size_t tag, int sent)
{
    struct agent *a = user;
    if (!sent || tag >= a->ntxns)
        return;
    a->txns[tag].sent++;
    a->stacks[a->txns[tag].stack].sent++;
}

static void sample_thread(struct agent *a, struct agent_thread *th)
{
    if (!a->all_threads && !agent_thread_running(a->t.pid, th->tid))
        return;
    if (!agent_sampler_stop(&a->sampler, th))
        return;
    a->samples++;
    uint8_t trace_id[16], txn_id[8];
    int rc = read_context(a, th->tid, trace_id, txn_id);
    struct agent_stack stack;
    int unwound = rc == 1 && agent_unwind(&a->unwinder, th->tid, &stack) == 0;
    size_t si = (size_t)-1, ti;
    if (unwound)
        si = stack_index(a, &stack); /* symbolizes while the thread is held */
    agent_sampler_resume(&a->sampler, th);
    if (rc < 0)
        a->record_errors++;
    if (rc != 1)
        return;
    a->with_trace++;
    if (!unwound || si == (size_t)-1) {
        a->unwind_failures++;
        return;
    }
    ti = txn_index(a, trace_id, txn_id, si);
    if (ti == (size_t)-1)
        return;
    a->txns[ti].samples++;
    a->stacks[si].samples++;
    agent_sender_queue(&a->sender, trace_id, txn_id, stack.id, 1, ti);
}

/* ---- output -------------------------------------------------------------------------------- */

static int cmp_stack_samples(const void *x, const void *y, void *ctx)
{
    const struct agent *a = ctx;
    const struct stack_info *p = &a->stacks[*(const size_t *)x], *q = &a->stacks[*(const size_t *)y];
    return (p->samples < q->samples) - (p->samples > q->samples);
}

static void print_text(struct agent *a)
{
    printf("proflink-agent: %lu samples of threads %s, %lu inside a trace\n", a->samples,
           a->all_threads ? "(all)" : "on a CPU", a->with_trace);
    if (a->unwind_failures)
        printf("proflink-agent: %lu of them could not be unwound (not sent)\n", a->unwind_failures);
    printf("proflink-agent: %lu correlation messages sent in %lu bursts, %lu dropped (socket "
           "full), %lu failed%s%s\n",
           a->sender.sent, a->sender.bursts, a->sender.dropped, a->sender.failed,
           a->sender.failed ? ": " : "", a->sender.failed ? strerror(a->sender.last_errno) : "");
    if (a->sender.dropped)
        printf("proflink-agent: (a unix datagram socket queues net.unix.max_dgram_qlen messages, "
               "10 by default; the rest of a burst is dropped, as by the profiler)\n");

    size_t *order = malloc((a->nstacks + 1) * sizeof *order);
    if (!order)
        return;
    for (size_t i = 0; i < a->nstacks; i++)
        order[i] = i;
    qsort_r(order, a->nstacks, sizeof *order, cmp_stack_samples, a);
    printf("\nStacks (stack-trace id, samples, frames from the innermost):\n");
    for (size_t k = 0; k < a->nstacks; k++) {
        const struct stack_info *s = &a->stacks[order[k]];
        char b64[23];
        base64url(s->id, b64);
        printf("  %s %5lu  ", b64, s->samples);
        for (size_t f = 0; f < s->nframes && f < 8; f++)
            printf("%s%s", f ? " < " : "", s->frames[f]);
        printf("%s\n", s->nframes > 8 ? " < …" : "");
    }
    free(order);

    printf("\nTransactions (trace id, transaction id: stack-trace id x count sent):\n");
    size_t shown = 0;
    for (size_t i = 0; i < a->ntxns; i++) {
        const struct txn_entry *e = &a->txns[i];
        size_t j;
        for (j = 0; j < i; j++) /* print each {trace, transaction} once, at its first entry */
            if (memcmp(a->txns[j].trace_id, e->trace_id, 16) == 0 &&
                memcmp(a->txns[j].transaction_id, e->transaction_id, 8) == 0)
                break;
        if (j < i)
            continue;
        if (a->max_txns && shown++ == a->max_txns) {
            printf("  … (--json lists all)\n");
            break;
        }
        char th[33], xh[17];
        target_hex(e->trace_id, 16, th);
        target_hex(e->transaction_id, 8, xh);
        printf("  %s %s:", th, xh);
        for (j = i; j < a->ntxns; j++) {
            const struct txn_entry *f = &a->txns[j];
            if (memcmp(f->trace_id, e->trace_id, 16) != 0 ||
                memcmp(f->transaction_id, e->transaction_id, 8) != 0)
                continue;
            char b64[23];
            base64url(a->stacks[f->stack].id, b64);
            printf(" %s x%lu", b64, f->sent);
            if (f->samples > f->sent)
                printf(" (+%lu dropped)", f->samples - f->sent);
        }
        printf("\n");
    }
}

static void print_json(FILE *out, struct agent *a, double secs, double hz, int registered,
                       uint32_t delay, const char *host, size_t threads)
{
    struct target_json j;
    target_json_init(&j, out);
    target_json_object(&j, NULL);
    target_json_int(&j, "pid", a->t.pid);
    target_json_strn(&j, "service_name", a->t.storage.service_name.s, a->t.storage.service_name.len);
    target_json_str(&j, "socket", a->t.sock.proc_path);
    target_json_str(&j, "source", a->otel ? "otel" : "elastic");
    target_json_double(&j, "duration_s", secs);
    target_json_double(&j, "frequency_hz", hz);
    target_json_uint(&j, "threads", threads);
    if (registered) {
        target_json_object(&j, "registration");
        target_json_uint(&j, "samples_delay_ms", delay);
        target_json_str(&j, "host_id", host ? host : "");
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
    target_json_object(&j, "stacks");
    for (size_t i = 0; i < a->nstacks; i++) {
        const struct stack_info *s = &a->stacks[i];
        char b64[23];
        base64url(s->id, b64);
        target_json_object(&j, b64);
        target_json_uint(&j, "samples", s->samples);
        target_json_uint(&j, "sent", s->sent);
        target_json_array(&j, "frames");
        for (size_t f = 0; f < s->nframes; f++)
            target_json_str(&j, NULL, s->frames[f]);
        target_json_end_array(&j);
        target_json_end_object(&j);
    }
    target_json_end_object(&j);
    target_json_array(&j, "transactions");
    for (size_t i = 0; i < a->ntxns; i++) {
        const struct txn_entry *e = &a->txns[i];
        size_t k;
        for (k = 0; k < i; k++)
            if (memcmp(a->txns[k].trace_id, e->trace_id, 16) == 0 &&
                memcmp(a->txns[k].transaction_id, e->transaction_id, 8) == 0)
                break;
        if (k < i)
            continue;
        char th[33], xh[17];
        target_hex(e->trace_id, 16, th);
        target_hex(e->transaction_id, 8, xh);
        target_json_object(&j, NULL);
        target_json_str(&j, "trace_id", th);
        target_json_str(&j, "transaction_id", xh);
        unsigned long samples = 0;
        target_json_object(&j, "stack_trace_ids");
        for (k = i; k < a->ntxns; k++) {
            const struct txn_entry *f = &a->txns[k];
            if (memcmp(f->trace_id, e->trace_id, 16) != 0 ||
                memcmp(f->transaction_id, e->transaction_id, 8) != 0)
                continue;
            samples += f->samples;
            if (!f->sent)
                continue;
            char b64[23];
            base64url(a->stacks[f->stack].id, b64);
            target_json_uint(&j, b64, f->sent);
        }
        target_json_end_object(&j);
        target_json_uint(&j, "samples", samples);
        target_json_end_object(&j);
    }
    target_json_end_array(&j);
    if (a->by.name)
        agent_by_json(&a->by, &j);
    target_json_end_object(&j);
    fputc('\n', out);
}

/* ---- main ---------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f, "usage: proflink-agent [-d SECONDS] [-f HZ] [-n N] [-o FILE] [--register DELAY_MS[,HOST_ID]] "
               "[--otel] [--by ATTR] [--all-threads] [--json] PID\n");
}

static void help(void)
{
    usage(stdout);
    fputs("A local stand-in for an eBPF profiler: attaches to PID where the profiler would, samples\n"
          "its threads, unwinds their stacks and sends the profiler's correlation messages to PID's\n"
          "socket; prints what it sent.\n"
          "\n"
          "  -d SECONDS      how long to sample (default 5, at most 3600)\n"
          "  -f HZ           samples per second and thread (default 20, 1..1000)\n"
          "  -n N            list at most N transactions in the text summary (default: all)\n"
          "  -o FILE         also write the JSON summary to FILE\n"
          "  --register DELAY_MS[,HOST_ID]\n"
          "                  first send a registration with that samples-delay-ms and host id,\n"
          "                  as Elastic's profiler does\n"
          "  --otel          read the OpenTelemetry thread context instead of the Elastic record\n"
          "  --by ATTR       group the samples by the thread attribute ATTR (OTel thread context)\n"
          "  --all-threads   also sample threads that are not on a CPU\n"
          "  --json          print the summary as one JSON object\n"
          "  -h, --help      this text\n"
          "  --version       print the version and exit\n"
          "\n"
          "Exit status: 0 after sampling, 1 when a profiler would not attach to PID, 2 on usage\n"
          "errors or when PID cannot be traced.\n",
          stdout);
}

/* Reads the key map: the index of local_root_span_id (0, the convention, when no map is
 * published) and, with --by, the grouped attribute's. */
static void load_key_map(struct agent *a)
{
    struct target_otel_ctx ctx;
    char err[TARGET_ERRLEN];
    a->otel_key = 0;
    if (target_otel_read(&a->t.mem, &a->t.maps, &ctx, err) != 0)
        return;
    const struct target_pb_value *km =
        target_pb_find(&ctx.pc.attributes, "threadlocal.attribute_key_map");
    if (km && km->kind == TARGET_PB_ARRAY)
        for (size_t i = 0; i < km->nitems && i < 256; i++)
            if (km->items[i].kind == TARGET_PB_STRING &&
                strcmp(km->items[i].s, "local_root_span_id") == 0)
                a->otel_key = (int)i;
    if (a->by.name)
        agent_by_set_map(&a->by, km);
    target_otel_free(&ctx);
}

int main(int argc, char **argv)
{
    double secs = 5, hz = 20;
    int json = 0, registered = 0;
    uint32_t delay = 0;
    char *host = NULL;
    const char *json_file = NULL;
    static struct agent a;
    enum { OPT_REGISTER = 256, OPT_OTEL, OPT_JSON, OPT_ALL, OPT_BY, OPT_VERSION };
    static const struct option opts[] = {
        {"register", required_argument, NULL, OPT_REGISTER},
        {"otel", no_argument, NULL, OPT_OTEL},
        {"by", required_argument, NULL, OPT_BY},
        {"json", no_argument, NULL, OPT_JSON},
        {"all-threads", no_argument, NULL, OPT_ALL},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "d:f:n:o:h", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'd':
            secs = strtod(optarg, &end);
            if (*end || !(secs > 0 && secs <= 3600)) {
                fprintf(stderr, "proflink-agent: -d wants seconds in (0, 3600]\n");
                return 2;
            }
            break;
        case 'f':
            hz = strtod(optarg, &end);
            if (*end || !(hz >= 1 && hz <= 1000)) {
                fprintf(stderr, "proflink-agent: -f wants a rate in [1, 1000] Hz\n");
                return 2;
            }
            break;
        case 'n':
            a.max_txns = strtoul(optarg, &end, 10);
            if (*end || end == optarg) {
                fprintf(stderr, "proflink-agent: -n wants a number of transactions\n");
                return 2;
            }
            break;
        case 'o':
            json_file = optarg;
            break;
        case OPT_REGISTER: {
            unsigned long v = strtoul(optarg, &end, 10);
            if (end == optarg || (*end && *end != ',') || v > UINT32_MAX) {
                fprintf(stderr, "proflink-agent: --register wants DELAY_MS[,HOST_ID]\n");
                return 2;
            }
            delay = (uint32_t)v;
            host = *end == ',' ? end + 1 : NULL;
            registered = 1;
            break;
        }
        case OPT_OTEL:
            a.otel = 1;
            break;
        case OPT_BY:
            a.otel = 1;
            agent_by_init(&a.by, optarg);
            break;
        case OPT_JSON:
            json = 1;
            break;
        case OPT_ALL:
            a.all_threads = 1;
            break;
        case 'h':
            help();
            return 0;
        case OPT_VERSION:
            printf("proflink-agent %s\n", PROFLINK_VERSION_STRING);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind + 1 != argc) {
        usage(stderr);
        return 2;
    }
    char *end;
    long pid = strtol(argv[optind], &end, 10);
    if (*end || pid <= 0 || pid > 0x3fffffff) {
        fprintf(stderr, "proflink-agent: not a process id: %s\n", argv[optind]);
        return 2;
    }
    if (pid == getpid()) {
        fprintf(stderr, "proflink-agent: will not sample itself\n");
        return 2;
    }

    char err[TARGET_ERRLEN];
    if (target_open(&a.t, (pid_t)pid, err) != 0) {
        fprintf(stderr, "proflink-agent: pid %ld: %s\n", pid, err);
        target_close(&a.t);
        return 2;
    }
    if (target_find_library(&a.t, err) != 0 || target_read_elf(&a.t, err) != 0 ||
        target_read_tls_offset(&a.t, err) != 0 || target_read_storage(&a.t, err) != 0 ||
        target_check_socket(&a.t, err) != 0) {
        fprintf(stderr, "proflink-agent: pid %ld is not attachable: %s\n", pid, err);
        fprintf(stderr, "proflink-agent: (proflink-inspect %ld shows every check)\n", pid);
        target_close(&a.t);
        return 1;
    }
    if (a.otel) {
        if (!a.t.has_otel_offset) {
            fprintf(stderr, "proflink-agent: pid %ld has no usable %s: %s\n", pid,
                    TARGET_OTEL_TLS_SYMBOL,
                    a.t.has_otel_reloc ? a.t.otel_offset_err : a.t.otel_reloc_err);
            target_close(&a.t);
            return 1;
        }
        load_key_map(&a);
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (agent_sender_open(&a.sender, a.t.sock.proc_path, err) != 0 ||
        agent_unwinder_init(&a.unwinder, err) != 0) {
        fprintf(stderr, "proflink-agent: %s\n", err);
        target_close(&a.t);
        return 2;
    }
    agent_symbols_init(&a.symbols, (pid_t)pid);
    agent_sampler_init(&a.sampler, (pid_t)pid);

    size_t threads = agent_sampler_refresh(&a.sampler);
    if (threads == 0) {
        fprintf(stderr, "proflink-agent: cannot ptrace pid %ld: %s\n", pid,
                a.sampler.last_error[0] ? a.sampler.last_error : "no threads");
        agent_sampler_detach_all(&a.sampler);
        target_close(&a.t);
        return 2;
    }
    if (!json)
        printf("proflink-agent: attached to pid %ld, service \"%s\", socket %s\n", pid,
               a.t.storage.service_name.s, a.t.sock.proc_path);
    if (registered && delay < FLUSH_INTERVAL_NS / 1000000)
        fprintf(stderr, "proflink-agent: warning: samples-delay-ms %" PRIu32 " is shorter than "
                        "this agent's reporting interval (%lld ms): transactions may be delivered "
                        "before their last samples arrive\n",
                delay, FLUSH_INTERVAL_NS / 1000000);
    if (registered) {
        if (agent_sender_register(&a.sender, delay, host, err) != 0)
            fprintf(stderr, "proflink-agent: %s\n", err);
        else if (!json)
            printf("proflink-agent: registration sent: samples-delay-ms %" PRIu32
                   ", host id \"%s\"\n",
                   delay, host ? host : "");
    }
    if (!json) {
        printf("proflink-agent: sampling %zu threads at %g Hz for %g s (%s thread records)\n",
               threads, hz, secs, a.otel ? "OpenTelemetry" : "Elastic");
        fflush(stdout);
    }

    int64_t period = (int64_t)(1e9 / hz), t0 = now_ns(), deadline = t0 + (int64_t)(secs * 1e9);
    int64_t next = t0, next_flush = t0 + FLUSH_INTERVAL_NS;
    size_t max_threads = threads;
    int target_gone = 0;
    while (!stop_requested) {
        size_t live = agent_sampler_refresh(&a.sampler);
        if (live == 0 || kill((pid_t)pid, 0) != 0) {
            target_gone = 1;
            break;
        }
        if (live > max_threads)
            max_threads = live;
        for (size_t i = 0; i < a.sampler.n && !stop_requested; i++)
            if (!a.sampler.v[i].gone)
                sample_thread(&a, &a.sampler.v[i]);
        int64_t now = now_ns();
        if (now >= next_flush) {
            agent_sender_flush(&a.sender, sent_done, &a);
            next_flush += FLUSH_INTERVAL_NS;
            if (next_flush <= now)
                next_flush = now + FLUSH_INTERVAL_NS;
        }
        if (now >= deadline)
            break;
        next += period;
        if (next <= now) /* fell behind: skip the missed ticks */
            next = now + period;
        struct timespec ts = {.tv_sec = next / 1000000000LL, .tv_nsec = next % 1000000000LL};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    }
    double elapsed = (double)(now_ns() - t0) / 1e9;
    agent_sampler_detach_all(&a.sampler);
    agent_sender_flush(&a.sender, sent_done, &a);

    int rc = 0;
    if (json_file) {
        FILE *f = fopen(json_file, "w");
        if (f) {
            print_json(f, &a, elapsed, hz, registered, delay, host, max_threads);
            if (fclose(f) != 0)
                f = NULL;
        }
        if (!f) {
            fprintf(stderr, "proflink-agent: cannot write %s: %s\n", json_file, strerror(errno));
            rc = 2;
        }
    }
    if (json) {
        print_json(stdout, &a, elapsed, hz, registered, delay, host, max_threads);
    } else {
        if (target_gone)
            printf("proflink-agent: pid %ld exited after %.1f s\n", pid, elapsed);
        else if (stop_requested)
            printf("proflink-agent: interrupted after %.1f s\n", elapsed);
        print_text(&a);
        if (a.by.name)
            agent_by_print_text(&a.by);
    }
    agent_by_free(&a.by);
    agent_sender_close(&a.sender);
    agent_symbols_free(&a.symbols);
    agent_unwinder_free(&a.unwinder);
    agent_sampler_free(&a.sampler);
    free(a.stacks);
    free(a.txns);
    target_close(&a.t);
    return rc;
}
