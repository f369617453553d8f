/* api_stepped_writes — the publication protocols checked at every instruction, the way a profiler
 * sample sees them. A profiler reads a thread's records while the thread is stopped wherever it
 * happened to be (eBPF on its CPU, ptrace), and reads the OTel process context while the process
 * runs; a sample landing inside a write must find the record hidden or whole, and the process
 * context's header either "being written" (timestamp 0) or pointing at the payload that goes
 * with its timestamp. Sampling by signals or polling almost never lands in a window of a few
 * stores; single-stepping lands in every one of them, in the library as built (so a compiler
 * that reordered or merged the stores is caught too).
 *
 * The process forks: the child writes in a loop through the API (run it under LD_PRELOAD, with
 * PROFLINK_OTEL_CONTEXT=1 for both records and for process; without it the apmint record alone
 * is checked), the parent attaches to it with ptrace, single-steps it STEPS times
 * and after every instruction reads its memory with process_vm_readv:
 *   records   the child loops over contexts k = 1..8 (set, attribute edits, clear, swap). Every
 *             field of context k is derived from k (trace id bytes k, span id bytes k^0x40,
 *             transaction id bytes 0x80|g with g = (k+1)/2, flags k&1, attribute values
 *             "a<g>" / "bb<g>"), so a record mixing two contexts is told apart from a whole
 *             one. Checked: the apmint record and the OTel record, each either hidden (valid 0)
 *             or wholly one context (or, OTel, the fixed attributes alone with no trace).
 *   nested    the same loop without attribute edits, and a signal handler opening a scope of
 *             its own context (k = 9: swap, then restore) injected 1..61 instructions of the
 *             library after the records were last seen published, so that over the rounds it
 *             interrupts each write at each of its points (proflink.h: the API may be called
 *             from a handler that interrupted it). Checked as in records.
 *   plain     sets and clears (no attribute edits), and a handler making a plain write of its
 *             own, no restore: a set of context 9 (proflink_set_trace or proflink_set_context)
 *             or a clear, injected at each instruction of a span's set and of a clear in turn.
 *             Checked as in records, and once each call returned: the records published are
 *             those of the call (proflink.h: the interrupted call ends last), unless the
 *             handler's write was not nested in the call's (it published its own whole).
 *   process   the child republishes its resource in a loop (proflink_set_resource). Checked:
 *             while the header's timestamp is a given non-zero value, its payload pointer, size
 *             and payload bytes stay those first seen with it; timestamps only grow.
 * usage: api_stepped_writes records|nested|plain|process STEPS
 * Prints "steps N hidden H whole W contexts C nested I rounds R" (records, nested, plain:
 * samples with a record hidden, samples with both whole, contexts seen published, handlers
 * injected, rounds of the loop stepped through), in plain mode followed by "ended E late L
 * set_swept S clear_swept C" (calls that ended last after a handler's write nested in them,
 * calls that left the context of a handler that landed outside their write, and sweeps of the
 * handler over a span's set and over a clear), or "steps N writing Z publications P" (process: samples with
 * timestamp 0, publications seen) and "ok", or "FAIL step N pc 0x…: what" for the first bad
 * sample (with the records' bytes); exit 0/1 (2: could not set up; 77: ptrace is not allowed
 * here, e.g. Yama's ptrace_scope 3). */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proflink.h"

/* The contract's layouts (docs/formats.md), as the profiler knows them. */
struct apm_rec {
    uint16_t minor_version;
    uint8_t valid, trace_present, trace_flags;
    uint8_t trace_id[16], span_id[8], transaction_id[8];
} __attribute__((packed));

#define OTEL_ATTRS_CAP 612
struct otel_rec {
    uint8_t trace_id[16], span_id[8];
    uint8_t valid, trace_flags;
    uint16_t attrs_size;
    uint8_t attrs[OTEL_ATTRS_CAP];
} __attribute__((packed));

struct ctx_header {
    char signature[8];
    uint32_t version, payload_size;
    uint64_t published_at_ns, payload;
};

#define PAYLOAD_MAX 65536 /* otel_payload.h: OTEL_PAYLOAD_MAX */
#define CONTEXTS 8
#define NESTED_K 9 /* the signal handler's context */
#define NO_PTRACE 77

static pid_t child;
static long step;

/* The API, found with dlsym in the preloaded library (this program does not link it). */
static void (*set_trace)(const uint8_t *, const uint8_t *, const uint8_t *, uint8_t);
static void (*clear_trace)(void);
static int (*set_attribute)(const char *, const char *, size_t);
static int (*clear_attribute)(const char *);
static void (*set_context)(const proflink_context *);
static int (*swap_context)(const proflink_context *, proflink_context *);
static int (*set_resource)(const char *);

static int find_api(void)
{
#define FIND(var, name) (*(void **)&var = dlsym(RTLD_DEFAULT, name)) != NULL
    return FIND(set_trace, "proflink_set_trace") && FIND(clear_trace, "proflink_clear_trace") &&
           FIND(set_attribute, "proflink_set_attribute") &&
           FIND(clear_attribute, "proflink_clear_attribute") &&
           FIND(set_context, "proflink_set_context") &&
           FIND(swap_context, "proflink_swap_context") &&
           FIND(set_resource, "proflink_set_resource");
#undef FIND
}

/* ---- the writer (child) ------------------------------------------------------------------ */

static void context_of(int k, uint8_t trace[16], uint8_t span[8], uint8_t txn[8])
{
    memset(trace, k, 16);
    memset(span, k ^ 0x40, 8);
    memset(txn, 0x80 | ((k + 1) / 2), 8);
}

static void attr(const char *key, const char *prefix, int g)
{
    char v[16];
    int n = snprintf(v, sizeof v, "%s%02x", prefix, g);
    set_attribute(key, v, (size_t)n);
}

/* A scope inside the interrupted thread, as a tracer's signal handler may open one: it lands
 * wherever the thread was, inside a write too (proflink.h: "any thread, at any time"). */
static volatile sig_atomic_t in_handler, run_fast; /* same addresses in both processes (fork) */
static volatile long rounds;

static void nested_scope(int sig)
{
    (void)sig;
    in_handler = 1;
    proflink_context b, prev;
    context_of(NESTED_K, b.trace_id, b.span_id, b.transaction_id);
    b.trace_flags = NESTED_K & 1;
    memset(b.reserved, 0, sizeof b.reserved);
    swap_context(&b, &prev);
    set_context(&prev);
    in_handler = 0;
    /* a stop for the reader, which ran this handler at full speed (see single_step) */
    if (run_fast)
        raise(SIGTRAP);
}

/* plain mode: the writer says which call it is in (same addresses in both processes, fork),
 * and the reader which write the next handler makes. */
enum { CALL_NEW_TXN, CALL_SAME_TXN, CALL_CLEAR, CALL_CLASSES };
enum { HANDLER_SET_TRACE, HANDLER_SET_CONTEXT, HANDLER_CLEAR };
static volatile struct {
    sig_atomic_t calling; /* 1 from just before an API call to just after it returned */
    sig_atomic_t call_k;  /* the context that call publishes (0: none) */
    sig_atomic_t call_class;
    sig_atomic_t handler; /* HANDLER_… */
} plain;

/* A plain write of the handler's own context (or a clear), no restore: what the thread shows
 * once the call it interrupted has returned tells whether that call ended last. */
static void plain_write(int sig)
{
    (void)sig;
    in_handler = 1;
    uint8_t trace[16], span[8], txn[8];
    context_of(NESTED_K, trace, span, txn);
    if (plain.handler == HANDLER_SET_TRACE) {
        set_trace(trace, span, txn, NESTED_K & 1);
    } else if (plain.handler == HANDLER_SET_CONTEXT) {
        proflink_context b;
        memcpy(b.trace_id, trace, 16);
        memcpy(b.span_id, span, 8);
        memcpy(b.transaction_id, txn, 8);
        b.trace_flags = NESTED_K & 1;
        memset(b.reserved, 0, sizeof b.reserved);
        set_context(&b);
    } else {
        clear_trace();
    }
    in_handler = 2; /* its write returned: the reader sees whether it was left hidden */
    if (run_fast)
        raise(SIGTRAP);
    in_handler = 0;
}

static void plain_call_begin(int cls, int k)
{
    plain.call_k = k;
    plain.call_class = cls;
    plain.calling = 1;
}

static struct { uint8_t trace[16], span[8], txn[8]; } plain_ids[CONTEXTS + 1];

static void plain_set(int cls, int k)
{
    plain_call_begin(cls, k);
    set_trace(plain_ids[k].trace, plain_ids[k].span, plain_ids[k].txn, (uint8_t)(k & 1));
    plain.calling = 0;
}

static void plain_clear(void)
{
    plain_call_begin(CALL_CLEAR, 0);
    clear_trace();
    plain.calling = 0;
}

/* Each transaction's first context (odd k), then spans of it (the inline path while OTel
 * records are on; a clear keeps the transaction's entry for them) and clears: two sets to a
 * clear, which has half as many points to interrupt. The ids are made beforehand: the steps
 * between the calls are few. */
static void write_plain(void)
{
    for (int k = 1; k <= CONTEXTS; k++)
        context_of(k, plain_ids[k].trace, plain_ids[k].span, plain_ids[k].txn);
    for (;;) {
        for (int k = 1; k < CONTEXTS; k += 2) {
            plain_set(CALL_NEW_TXN, k);
            plain_set(CALL_SAME_TXN, k + 1);
            plain_set(CALL_SAME_TXN, k);
            plain_clear();
            plain_set(CALL_SAME_TXN, k + 1);
            plain_set(CALL_SAME_TXN, k);
            plain_clear();
        }
        rounds++;
    }
}

static int with_attrs; /* records mode: attribute edits between the sets and clears */

static void write_round(void)
{
    uint8_t trace[16], span[8], txn[8];
    proflink_context c;
        for (int k = 1; k <= CONTEXTS; k++) {
            int g = (k + 1) / 2;
            context_of(k, trace, span, txn);
            set_trace(trace, span, txn, (uint8_t)(k & 1)); /* odd k: a new transaction */
            if (with_attrs && k % 2 == 1)
                attr("test.a", "a", g);
            if (with_attrs && k % 4 == 2) {
                attr("test.b", "bb", g);
                clear_attribute("test.a");
            }
            if (k % 4 == 0)
                clear_trace();
            if (k == CONTEXTS) {
                context_of(1, c.trace_id, c.span_id, c.transaction_id);
                c.trace_flags = 1;
                memset(c.reserved, 0, sizeof c.reserved);
                proflink_context prev;
                swap_context(&c, &prev);
                set_context(&prev);
            }
        }
        rounds++;
}

static void write_records(void)
{
    for (;;)
        write_round();
}

static void write_process(void)
{
    char attrs[64];
    for (unsigned i = 0;; i++) {
        /* sizes vary, so pointer and size both change from one publication to the next */
        snprintf(attrs, sizeof attrs, "test.seq=%u,test.fill=%.*s", i, (int)(i % 20),
                 "xxxxxxxxxxxxxxxxxxxx");
        set_resource(attrs);
    }
}

/* The addresses the profiler would find through the TLSDESC relocations (tests/cross.bats
 * checks that way): here the thread asks the dynamic linker for its own copy of each. */
static void *tls_slot(const char *name)
{
    return dlsym(RTLD_DEFAULT, name);
}

/* ---- the reader (parent) ----------------------------------------------------------------- */

static int peek(uint64_t addr, void *buf, size_t len)
{
    struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
    return process_vm_readv(child, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

static unsigned long pc(void)
{
    struct user_regs_struct r;
    struct iovec io = {&r, sizeof r};
    if (ptrace(PTRACE_GETREGSET, child, (void *)1 /* NT_PRSTATUS */, &io) != 0)
        return 0;
#if defined(__x86_64__)
    return r.rip;
#elif defined(__aarch64__)
    return r.pc;
#else
    return 0;
#endif
}

static uint64_t lib_lo, lib_hi, lib_base;
static int records_mode;
/* STEP_TRACE=1: a failure also prints the last 256 steps (where, both valid bytes, the 2nd
 * hex digit of the transaction entry, and where a nested write was injected) */
static int step_trace;
static struct { long step; unsigned long off; int av, ov, e, inj; } ring[256];
static uint8_t last_apm[37], last_otel[28 + 18];

static void print_records(void);

static void fail(const char *fmt, const char *what)
{
    unsigned long at = pc();
    printf("FAIL step %ld pc 0x%lx", step, at);
    if (at >= lib_lo && at < lib_hi)
        printf(" (library +0x%lx)", (unsigned long)(at - lib_base));
    printf(": ");
    printf(fmt, what);
    printf("\n");
    if (records_mode)
        print_records();
    kill(child, SIGKILL);
    exit(1);
}

static void print_records(void)
{
    printf("  apmint record:");
    for (size_t i = 0; i < sizeof last_apm; i++)
        printf(" %02x", last_apm[i]);
    printf("\n  OTel record:  ");
    for (size_t i = 0; i < sizeof last_otel; i++)
        printf(" %02x", last_otel[i]);
    printf("\n");
    if (step_trace)
        for (int i = 0; i < 256; i++) {
            long j = (step + 1 + i) % 256;
            printf("  trace %ld +0x%lx apm %d otel %d entry %02x%s\n", ring[j].step, ring[j].off,
                   ring[j].av, ring[j].ov, ring[j].e, ring[j].inj ? " <- signal" : "");
        }
}

static int all(const uint8_t *p, size_t n, int v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (uint8_t)v)
            return 0;
    return 1;
}

/* The k of a whole context's ids, or 0 when they mix contexts. */
static int whole_k(const uint8_t trace[16], const uint8_t span[8], const uint8_t *txn,
                   uint8_t flags)
{
    int k = trace[0];
    if (k < 1 || k > NESTED_K || !all(trace, 16, k) || !all(span, 8, k ^ 0x40) ||
        flags != (k & 1))
        return 0;
    if (txn && !all(txn, 8, 0x80 | ((k + 1) / 2)))
        return 0;
    return k;
}

static uint8_t fixed[OTEL_ATTRS_CAP];
static uint16_t fixed_len;
static int last_published; /* the last sample saw both records published */
static int apm_k, otel_k;   /* the last sample's context in each record: k, 0 none, -1 hidden */
static long hidden, whole, seen_k[NESTED_K + 1], injected;
/* the library's code: where a signal is injected (so that it interrupts a write) */

static void find_library(void)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)child);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[8];
        unsigned long off;
        /* every executable part of it: once the storage is published, one page of the text
         * loses PROT_EXEC (preload/start/mapping_renew.c) and the code lies on both sides of it */
        if (strstr(line, "elastic-jvmti-linux-") &&
            sscanf(line, "%lx-%lx %7s %lx", &lo, &hi, perms, &off) == 4 && perms[2] == 'x') {
            if (!lib_lo || lo < lib_lo)
                lib_lo = lo, lib_base = lo - off;
            if (hi > lib_hi)
                lib_hi = hi;
        }
    }
    if (f)
        fclose(f);
}

/* OTel attributes of context k: [fixed][0][16][hex of its transaction id][API entries, each
 * "a<g>" or "bb<g>"]; with no trace (k 0): [fixed] alone. */
static const char *otel_attrs_bad(const struct otel_rec *o, int k)
{
    size_t n = o->attrs_size, at = fixed_len;
    if (n > OTEL_ATTRS_CAP || n < fixed_len || memcmp(o->attrs, fixed, fixed_len) != 0)
        return "attributes do not start with the fixed ones";
    if (k == 0)
        return n == fixed_len ? NULL : "attributes beyond the fixed ones without a trace";
    char hex[17];
    snprintf(hex, sizeof hex, "%02x%02x%02x%02x%02x%02x%02x%02x", 0x80 | ((k + 1) / 2),
             0x80 | ((k + 1) / 2), 0x80 | ((k + 1) / 2), 0x80 | ((k + 1) / 2),
             0x80 | ((k + 1) / 2), 0x80 | ((k + 1) / 2), 0x80 | ((k + 1) / 2),
             0x80 | ((k + 1) / 2));
    if (n < at + 18 || o->attrs[at] != 0 || o->attrs[at + 1] != 16 ||
        memcmp(o->attrs + at + 2, hex, 16) != 0)
        return "no local_root_span_id entry of the record's own transaction";
    at += 18;
    char a[8], b[8];
    snprintf(a, sizeof a, "a%02x", (k + 1) / 2);
    snprintf(b, sizeof b, "bb%02x", (k + 1) / 2);
    while (at < n) {
        if (at + 2 > n || at + 2 + o->attrs[at + 1] > n)
            return "an attribute entry runs past attrs_size";
        const char *v = (const char *)o->attrs + at + 2;
        size_t len = o->attrs[at + 1];
        if (!(len == strlen(a) && memcmp(v, a, len) == 0) &&
            !(len == strlen(b) && memcmp(v, b, len) == 0))
            return "an attribute value of another transaction";
        at += 2 + len;
    }
    return NULL;
}

static void check_records(uint64_t apm_slot, uint64_t otel_slot, uint64_t apm_at,
                          uint64_t otel_at)
{
    uint64_t p;
    if (peek(apm_slot, &p, sizeof p) || p != apm_at)
        fail("%s", "the apmint TLS pointer changed");
    if (peek(otel_slot, &p, sizeof p) || p != otel_at)
        fail("%s", "the OTel TLS pointer changed (updates use the valid byte)");
    struct apm_rec r;
    struct otel_rec o = {.valid = 0}; /* OTel records off (otel_at 0): the apmint one alone */
    if (peek(apm_at, &r, sizeof r) || (otel_at && peek(otel_at, &o, sizeof o)))
        fail("%s", "a record cannot be read");
    memcpy(last_apm, &r, sizeof last_apm);
    memcpy(last_otel, &o, sizeof last_otel);
    if (step_trace)
        ring[step % 256].step = step, ring[step % 256].off = pc() - lib_base,
        ring[step % 256].av = r.valid, ring[step % 256].ov = o.valid,
        ring[step % 256].e = o.attrs[fixed_len + 3], ring[step % 256].inj = 0;
    if (r.valid > 1 || o.valid > 1)
        fail("%s", "a valid byte other than 0 or 1");
    int any_hidden = 0;
    apm_k = otel_k = -1;
    if (!r.valid) {
        any_hidden = 1;
    } else if (!r.trace_present) {
        apm_k = 0;
    } else {
        int k = whole_k(r.trace_id, r.span_id, r.transaction_id, r.trace_flags);
        if (!k)
            fail("%s", "apmint record marked valid mixes two contexts");
        seen_k[k]++;
        apm_k = k;
    }
    if (!otel_at) {
        /* nothing to read */
    } else if (!o.valid) {
        any_hidden = 1;
    } else {
        int k = 0;
        if (!all(o.trace_id, 16, 0) || !all(o.span_id, 8, 0) || o.trace_flags) {
            k = whole_k(o.trace_id, o.span_id, NULL, o.trace_flags);
            if (!k)
                fail("%s", "OTel record marked valid mixes two contexts");
        }
        const char *why = otel_attrs_bad(&o, k);
        if (why)
            fail("OTel record marked valid: %s", why);
        otel_k = k;
    }
    last_published = !any_hidden;
    if (any_hidden)
        hidden++;
    else
        whole++;
}

/* Where the process context's header is mapped (found by name, as readers do); 0 if none. */
static uint64_t find_header(void)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)child);
    FILE *f = fopen(path, "r");
    uint64_t at = 0;
    while (f && !at && fgets(line, sizeof line, f))
        if (strstr(line, "OTEL_CTX"))
            at = strtoull(line, NULL, 16);
    if (f)
        fclose(f);
    return at;
}

static uint8_t payload[PAYLOAD_MAX], first_payload[PAYLOAD_MAX];
static struct ctx_header first; /* the header as first seen with the current timestamp */
static long writing, publications;

static void check_process(uint64_t hdr_at)
{
    struct ctx_header h;
    if (peek(hdr_at, &h, sizeof h))
        fail("%s", "the header cannot be read");
    if (memcmp(h.signature, "OTEL_CTX", 8) != 0 || h.version != 2)
        fail("%s", "the header lost its signature or version");
    if (h.published_at_ns == 0) {
        writing++;
        return;
    }
    if (h.payload_size == 0 || h.payload_size > PAYLOAD_MAX || peek(h.payload, payload, h.payload_size))
        fail("%s", "a header with a timestamp points at no readable payload");
    if (h.published_at_ns != first.published_at_ns) {
        if (h.published_at_ns < first.published_at_ns)
            fail("%s", "the timestamp went back");
        first = h;
        memcpy(first_payload, payload, h.payload_size);
        publications++;
        return;
    }
    if (h.payload != first.payload || h.payload_size != first.payload_size)
        fail("%s", "payload pointer or size changed under the same timestamp");
    if (memcmp(payload, first_payload, h.payload_size) != 0)
        fail("%s", "payload bytes changed under the same timestamp");
}

static int peek_flag(const volatile sig_atomic_t *p)
{
    sig_atomic_t v = 0;
    peek((uintptr_t)p, &v, sizeof v);
    return v;
}

static void poke_flag(volatile sig_atomic_t *p, sig_atomic_t v)
{
    struct iovec local = {&v, sizeof v}, remote = {(void *)p, sizeof v};
    process_vm_writev(child, &local, 1, &remote, 1, 0);
}

/* How often a nested write is stepped through too (checked at each of its instructions); the
 * others run at full speed, which keeps the run short: what matters most is what the
 * interrupted write publishes afterwards, and that is stepped every time. */
#define STEP_HANDLER_EVERY 16
/* A nested write is injected 1..INJECT_SPREAD instructions of the library after the records
 * were last seen published (the gap cycles, so that over the rounds each write is interrupted
 * at each of its points), and never again before they are published again: a signal every few
 * instructions would have the interrupted write start over forever. */
#define INJECT_SPREAD 61

/* plain mode: each class of call is interrupted at each of its library instructions in turn
 * (a call at instruction n of its own, n one more than at the class's last call), with one
 * handler write for a whole sweep; a sweep ends at the first call of its class that returned
 * before its turn came. A class's calls run the same instructions, so two sweeps put a set and
 * a clear at every point of them. */
static const int sweep_handler[4] = {HANDLER_SET_TRACE, HANDLER_CLEAR, HANDLER_SET_CONTEXT,
                                     HANDLER_CLEAR};
static long target[CALL_CLASSES] = {1, 1, 1}, swept[CALL_CLASSES], ended, late;
/* the call last seen beginning: its context is peeked then (between two calls the writer
 * already holds the next one's); -1: none yet */
static int call_k = -1, call_class, in_call, call_partial, call_counted;
static long call_steps;
static enum { H_NONE, H_SENT, H_NESTED, H_OUTERMOST } handler_state;
static int handler_k; /* the context the handler's write publishes (0: a clear) */

/* Once the call returned (and no handler runs), its context is published in both records. A
 * handler's write nested in the call's (it left the records hidden) must not outlive it; one
 * that was not (it landed before the call's write began or after it ended, and published its
 * own whole) may leave its context, which counts as late. */
static void check_after_call(int otel_on)
{
    int k = call_k;
    int otel_seen = !otel_on ? apm_k : otel_k < 0 ? 0 : otel_k; /* OTel hidden: detached */
    if (apm_k < 0)
        fail("%s", "the apmint record is hidden after the call returned");
    char what[160];
    int ok = apm_k == k && otel_seen == k;
    if (!ok && !(handler_state == H_OUTERMOST && apm_k == handler_k && otel_seen == handler_k)) {
        snprintf(what, sizeof what, "the call of context %d returned, a %s handler's write in it "
                 "(context %d): records show %d and %d", k,
                 handler_state == H_NESTED ? "nested" : handler_state == H_OUTERMOST ? "whole"
                                                                                      : "no",
                 handler_k, apm_k, otel_seen);
        fail("%s", what);
    }
    if (call_counted)
        return;
    call_counted = 1;
    if (handler_state == H_NESTED)
        ended++;
    if (!ok)
        late++;
}

/* After each instruction in plain mode: follows the writer's calls, checks what each leaves,
 * and says when to inject the handler (*sig). */
static void plain_step(int *sig, unsigned long at, int otel_on)
{
    int calling = peek_flag(&plain.calling), h = peek_flag(&in_handler);
    if (h == 2 && handler_state == H_SENT)
        handler_state = apm_k < 0 ? H_NESTED : H_OUTERMOST;
    if (calling && !in_call) {
        in_call = 1;
        call_class = peek_flag(&plain.call_class);
        call_k = peek_flag(&plain.call_k);
        call_partial = step == 0; /* stepping began inside it: its count would be off */
        call_steps = 0;
        call_counted = 0;
        handler_state = H_NONE;
    } else if (!calling && in_call) {
        in_call = 0;
        if (handler_state == H_SENT)
            fail("%s", "the handler's write was never seen returning");
        if (handler_state != H_NONE)
            target[call_class]++;
        else if (!call_partial && call_class != CALL_NEW_TXN)
            target[call_class] = 1, swept[call_class]++;
    }
    if (!calling && !h && call_k >= 0)
        check_after_call(otel_on);
    /* not in a new transaction's set: its hex entry makes it long, and sweeping it would take
     * most of the run (the handlers' own sets and the calls starting over run that path) */
    if (in_call && !call_partial && call_class != CALL_NEW_TXN && handler_state == H_NONE &&
        !h && !*sig && at >= lib_lo && at < lib_hi && ++call_steps == target[call_class]) {
        int kind = sweep_handler[swept[call_class] % 4];
        poke_flag(&plain.handler, kind);
        handler_k = kind == HANDLER_CLEAR ? 0 : NESTED_K;
        handler_state = H_SENT;
        *sig = SIGUSR1;
        injected++;
        ring[step % 256].inj = 1;
    }
}

static void writer_gone(int status)
{
    printf("FAIL step %ld: the writer is gone (status 0x%x: %s)\n", step, status,
           WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exited");
    exit(1);
}

static void single_step(long steps, int mode, const uint64_t addr[4])
{
    int sig = 0, status;
    long next_inject = 1;
    int armed = 1;
    for (step = 0; step < steps; step++) {
        int fast = sig == SIGUSR1 && injected % STEP_HANDLER_EVERY != 0;
        if (sig == SIGUSR1)
            poke_flag(&run_fast, fast);
        if (ptrace(fast ? PTRACE_CONT : PTRACE_SINGLESTEP, child, NULL, (void *)(intptr_t)sig) != 0 ||
            waitpid(child, &status, __WALL) != child || !WIFSTOPPED(status))
            writer_gone(status);
        /* at full speed: until the handler's own SIGTRAP (any other signal goes on to it) */
        while (fast && WSTOPSIG(status) != SIGTRAP)
            if (ptrace(PTRACE_CONT, child, NULL, (void *)(intptr_t)WSTOPSIG(status)) != 0 ||
                waitpid(child, &status, __WALL) != child || !WIFSTOPPED(status))
                writer_gone(status);
        /* a signal for the writer (not a trap of ours) is delivered with the next step */
        sig = WSTOPSIG(status) == SIGTRAP ? 0 : WSTOPSIG(status);
        if (mode == 'p') {
            check_process(addr[0]);
            continue;
        }
        check_records(addr[0], addr[1], addr[2], addr[3]);
        if (mode == 'l') {
            plain_step(&sig, pc(), addr[3] != 0);
            continue;
        }
        if (mode != 'n')
            continue;
        if (!armed && last_published && !peek_flag(&in_handler))
            armed = 1;
        unsigned long at = pc();
        if (armed && !sig && at >= lib_lo && at < lib_hi && !peek_flag(&in_handler) &&
            --next_inject <= 0) {
            sig = SIGUSR1;
            injected++;
            next_inject = 1 + injected % INJECT_SPREAD;
            armed = 0;
            ring[step % 256].inj = 1;
        }
    }
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "records") != 0 && strcmp(argv[1], "nested") != 0 &&
                      strcmp(argv[1], "plain") != 0 && strcmp(argv[1], "process") != 0)) {
        fprintf(stderr, "usage: api_stepped_writes records|nested|plain|process STEPS\n");
        return 2;
    }
    int mode = strcmp(argv[1], "plain") == 0 ? 'l' : argv[1][0]; /* 'p' is process */
    with_attrs = mode == 'r';
    step_trace = getenv("STEP_TRACE") != NULL;
    records_mode = mode != 'p';
    long steps = atol(argv[2]);
    int pfd[2];
    if (pipe(pfd) != 0)
        return 2;
    pid_t reader = getpid();
    child = fork();
    if (child < 0)
        return 2;
    if (child == 0) {
        /* the writer loops forever: it must not outlive its reader, however that ends */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != reader)
            _exit(2);
        close(pfd[0]);
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = mode == 'l' ? plain_write : nested_scope;
        sa.sa_flags = SA_RESTART;
        sigaction(SIGUSR1, &sa, NULL);
        /* the records as they stand with no trace: the fixed attributes alone */
        if (!find_api())
            _exit(2);
        /* a first round registers the attribute keys (each a republication of the process
         * context, long to single-step) */
        write_round();
        clear_trace();
        set_resource("test.seq=start");
        uint64_t addr[4] = {0};
        void **apm = tls_slot("elastic_apm_profiling_correlation_tls_v1");
        void **otel = tls_slot("otel_thread_ctx_v1");
        if (apm && otel) {
            addr[0] = (uintptr_t)apm, addr[1] = (uintptr_t)otel;
            addr[2] = (uintptr_t)*apm, addr[3] = (uintptr_t)*otel;
        }
        uint16_t n = 0;
        const struct otel_rec *o = *otel;
        if (o && o->valid) {
            n = o->attrs_size;
            memcpy(fixed, o->attrs, n);
        }
        if (write(pfd[1], addr, sizeof addr) != sizeof addr || write(pfd[1], &n, sizeof n) != sizeof n ||
            write(pfd[1], fixed, n) != n)
            _exit(2);
        close(pfd[1]);
        if (mode == 'l')
            write_plain();
        if (mode != 'p')
            write_records();
        write_process();
    }
    close(pfd[1]);
    uint64_t addr[4];
    if (read(pfd[0], addr, sizeof addr) != sizeof addr || read(pfd[0], &fixed_len, 2) != 2 ||
        (fixed_len && read(pfd[0], fixed, fixed_len) != fixed_len)) {
        printf("FAIL: the writer did not start\n");
        return 2;
    }
    if (!addr[2] || (mode == 'p' && !addr[3])) {
        printf("FAIL: no records published (is the library preloaded, PROFLINK_OTEL_CONTEXT=1?)\n");
        kill(child, SIGKILL);
        return 2;
    }
    find_library();
    if (mode == 'p') {
        addr[0] = find_header();
        if (!addr[0]) {
            printf("FAIL: no OTEL_CTX mapping\n");
            kill(child, SIGKILL);
            return 2;
        }
    }
    int status;
    if (ptrace(PTRACE_SEIZE, child, NULL, NULL) != 0 || ptrace(PTRACE_INTERRUPT, child, NULL, NULL) != 0 ||
        waitpid(child, &status, __WALL) != child) {
        printf("cannot trace the writer: %s\n", strerror(errno));
        kill(child, SIGKILL);
        return NO_PTRACE;
    }
    long r0 = 0, r = 0;
    peek((uintptr_t)&rounds, &r0, sizeof r0);
    single_step(steps, mode, addr);
    peek((uintptr_t)&rounds, &r, sizeof r);
    r -= r0;
    kill(child, SIGKILL);
    waitpid(child, &status, __WALL);
    if (mode != 'p') {
        int contexts = 0;
        for (int k = 1; k <= NESTED_K; k++)
            contexts += seen_k[k] > 0;
        printf("steps %ld hidden %ld whole %ld contexts %d nested %ld rounds %ld", steps, hidden,
               whole, contexts, injected, r);
        if (mode == 'l')
            printf(" ended %ld late %ld set_swept %ld clear_swept %ld", ended, late,
                   swept[CALL_SAME_TXN], swept[CALL_CLEAR]);
        printf("\n");
    } else {
        printf("steps %ld writing %ld publications %ld\n", steps, writing, publications);
    }
    printf("ok\n");
    return 0;
}
