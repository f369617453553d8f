/* thread_records.h — each thread's published context: the Elastic apmint record (37 bytes, via
 * the exported TLS pointer elastic_apm_profiling_correlation_tls_v1) and the OpenTelemetry
 * thread-context record (via otel_thread_ctx_v1). Both live in one per-thread block, allocated
 * once per thread and freed at thread exit (pointers cleared first). Both pointers are set once,
 * when the block is installed; updates use each record's valid byte.
 *
 * Readers sample a thread while it is stopped on its own CPU (eBPF perf event, or ptrace), so a
 * record is never read concurrently from another CPU while the thread runs: ordering the stores
 * against the compiler (atomic_signal_fence) is all the valid-byte protocol needs. */
#ifndef PROFLINK_THREAD_RECORDS_H
#define PROFLINK_THREAD_RECORDS_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "leaves/ids.h"

/* Elastic apmint thread record, docs/formats.md. Packed, native endian. */
struct apm_record {
    uint16_t minor_version; /* 1 */
    uint8_t valid;
    uint8_t trace_present;
    uint8_t trace_flags;
    uint8_t trace_id[16];
    uint8_t span_id[8];
    uint8_t transaction_id[8];
} __attribute__((packed));

/* OpenTelemetry thread record, OTEP 4947 (docs/formats.md). Packed, native endian, and 2-byte
 * aligned as the OTEP requires (readers load attrs_size, a u16, in place): aligned(8) here, and
 * it is the first member of a malloc'ed block. Fixed size: the OTEP's recommended maximum
 * (640 bytes, the OpenTelemetry eBPF profiler's limit), so setting attributes never allocates.
 *
 * Hiding during an update: the VALID BYTE, never the pointer. proflink keeps one fixed record
 * per thread and rewrites it in place, which is the case the OTEP gives the valid byte for
 * (pointer swapping suits writers that keep a record per request or coroutine); it says to use
 * one method, not both. So otel_thread_ctx_v1 is set once when the thread's block is installed
 * and stays until the thread exits, and every update is valid=0, fields, valid=1. valid=0 also
 * means "no context" (detached); a thread with attributes but no trace has valid=1 and a zero
 * trace id and span id, as the OTEP allows.
 *
 * Attribute area layout: [fixed attributes (PROFLINK_THREAD_ATTRIBUTES)] then, while a trace
 * is active, [key 0 = local_root_span_id, 16 lowercase hex] then what the API set. Keeping the
 * fixed part first and the transaction entry right after it lets a set or clear of the trace
 * touch only that entry and attrs_size. */
#define OTEL_RECORD_MAX 640
#define OTEL_RECORD_HEADER 28
#define OTEL_ATTRS_CAP (OTEL_RECORD_MAX - OTEL_RECORD_HEADER)
#define OTEL_KEY_LOCAL_ROOT 0
#define OTEL_ATTR_TXN_SIZE 18 /* [0][16][16 hex] */
/* The fixed attributes always leave room for the transaction entry. */
#define OTEL_FIXED_MAX (OTEL_ATTRS_CAP - OTEL_ATTR_TXN_SIZE)

struct otel_record {
    uint8_t trace_id[16];
    uint8_t span_id[8];
    uint8_t valid;
    uint8_t trace_flags;
    uint16_t attrs_size;
    uint8_t attrs[OTEL_ATTRS_CAP];
} __attribute__((packed, aligned(8)));

struct thread_block {
    struct otel_record otel; /* first: the block's malloc alignment is the record's */
    struct apm_record apm;
    uint8_t otel_on;      /* OTel records are kept (PROFLINK_OTEL_CONTEXT) */
    uint8_t otel_has_txn; /* attrs hold the key-0 entry right after the fixed attributes */
    uint8_t otel_custom;  /* the API changed attrs: they differ from the fixed layout */
    uint8_t otel_txn[8];  /* transaction id whose hex is in the key-0 entry */
    /* Signal safety of the writes (see "Signal safety" below): only this thread and the signal
     * handlers that interrupt it touch it. */
    uint8_t write_state; /* WRITE_IDLE, WRITE_BUSY, WRITE_INTERRUPTED */
    /* pthread_create trampoline: the start routine to run once the records are installed */
    void *(*start_fn)(void *);
    void *start_arg;
};

/* The fixed attributes of every thread (PROFLINK_THREAD_ATTRIBUTES), encoded once at start-up
 * (thread_records_set_fixed) and read-only afterwards. */
extern uint8_t otel_fixed_attrs[OTEL_FIXED_MAX] __attribute__((visibility("hidden")));
extern uint16_t otel_fixed_len __attribute__((visibility("hidden")));

/* The contract's TLS pointers (defined in thread_records.c). */
extern __thread void *elastic_apm_profiling_correlation_tls_v1;
extern __thread void *otel_thread_ctx_v1;

/* proflink's own copy of the block pointer, for the hot path. Hidden and initial-exec: read with
 * one %fs-relative load instead of a TLS descriptor call. Initial-exec needs static TLS, which is
 * exactly what the profiler's reader already requires of the library (preloaded or DT_NEEDED,
 * never a late dlopen); the exported pointers themselves stay global-dynamic/TLSDESC, which is
 * how the profiler finds them. Always equal to elastic_apm_profiling_correlation_tls_v1. */
extern __thread struct thread_block *thread_block_current
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* Which context a new thread starts with: the creator's when PROFLINK_INHERIT=1, else (the
 * default) the process-wide TRACEPARENT context, else none (config.c says why). Returns the
 * creator's block when the new thread inherits it (its attributes come along, the same rule as
 * its trace), else NULL. */
const struct thread_block *thread_initial_context(struct trace_ctx *out);

/* A block for a thread about to be created, holding ctx and, when from is not NULL, from's
 * OTel attributes. NULL when out of memory. */
struct thread_block *thread_block_new(const struct trace_ctx *ctx, const struct thread_block *from);
/* The same for the main thread at start-up (start.c, once per process image), in static
 * storage: never NULL, and no malloc (thread_records.c says why). */
struct thread_block *thread_block_new_main(const struct trace_ctx *ctx);
void thread_block_free_unused(struct thread_block *b);
/* Publish b as the calling thread's block (called first thing in a new thread). */
void thread_block_install(struct thread_block *b);
/* Unpublishes and frees the calling thread's block (start failed after it was installed). */
void thread_block_release_self(void);
/* Creates and installs a block for a thread proflink did not see start (TRACEPARENT context).
 * NULL when disabled or out of memory. */
struct thread_block *thread_block_create_for_self(void) __attribute__((cold));
/* Reads b's context back (present = 0 when none). */
void thread_block_get(const struct thread_block *b, struct trace_ctx *out);
/* Cold halves of the OTel updates (the record is hidden, valid = 0, when they run):
 * a new transaction: attrs = [fixed][key 0 = transaction hex]; API attributes dropped; */
void otel_record_new_txn(struct thread_block *b, const uint8_t transaction_id[8])
    __attribute__((cold));
/* no trace any more: attrs = [fixed], trace fields zeroed; API attributes dropped. */
void otel_record_untraced(struct thread_block *b) __attribute__((cold));

/* ---- The hot path, inline in the API functions ------------------------------------------ */

/* The store-ordering primitive of the valid-byte protocol: readers interrupt this very thread
 * (eBPF on its CPU, or ptrace after stopping it), so only the compiler can reorder what they
 * observe; no CPU fence is needed. */
#define RECORD_ORDER() atomic_signal_fence(memory_order_seq_cst)

/* This thread's block, or NULL before its first use: one TLS load. */
static inline struct thread_block *thread_block_self(void) { return thread_block_current; }

static inline struct thread_block *thread_block_self_or_create(void)
{
    struct thread_block *b = thread_block_self();
    return __builtin_expect(b != NULL, 1) ? b : thread_block_create_for_self();
}

/* ---- Signal safety of the writes -----------------------------------------------------------
 * The API may be called from a signal handler that interrupted this very thread inside the API
 * (proflink.h: "any thread, at any time"). Hiding with the valid byte alone is not enough: the
 * handler's write would end with valid = 1 while the write it interrupted, once resumed, still
 * stores its bytes, so a sample taken then sees a record marked valid that mixes both. Hence
 * every write of a thread's records (set, clear, attribute edit) is
 *     nested = b->write_state;
 *     do {
 *         do { record_hide(b, nested); store the fields; } while (record_publish(b, nested, v));
 *     } while (record_write_end(b, nested));
 *  - a write that finds another in progress (a handler's: nested) hides both records, stores
 *    its fields, never publishes, and marks the write it interrupted WRITE_INTERRUPTED;
 *  - the interrupted (outermost) write then hides and stores its own fields again, so what it
 *    publishes is wholly its own (record_publish looks for that before publishing, and after):
 *    it ends last, so its context is the newest (a set after a
 *    nested write rewrites its transaction entry whole; an attribute edit restarts from the
 *    fixed attributes, otel_record_rebase);
 *  - a nested write that lands after the outermost one's last look at the state leaves the
 *    records hidden: seen by the valid byte after WRITE_IDLE, and the outermost write then
 *    stores its own fields again (publishing the nested write's instead showed the handler's
 *    context once the interrupted call had returned: tests/protocols.bats, plain writes).
 * A sample during a handler's nested write sees the thread without context, never mixed. Only
 * this thread and its handlers write, so compiler ordering (RECORD_ORDER) is all it needs, like
 * the records. The common set and clear run inline without the loop and call the full write
 * only when interrupted (or for OTel attribute work); the state byte's stores and looks cost
 * about 0.5 ns per set+clear pair (a copy of these paths with and without it, timed side by
 * side), about a tenth of the pair. */
enum { WRITE_IDLE, WRITE_BUSY, WRITE_INTERRUPTED };

/* The state first: a handler landing between the hide and the state would find no write in
 * progress, publish its own context whole, and leave the records marked valid while this write
 * goes on storing its fields (a sample then sees a mix; tests/protocols.bats found it). */
static inline void record_hide(struct thread_block *b, int nested)
{
    if (!nested)
        b->write_state = WRITE_BUSY;
    RECORD_ORDER();
    b->apm.valid = 0;
    b->otel.valid = 0; /* harmless when OTel records are off: nobody reads it then */
    RECORD_ORDER();
}

/* Publishes (outermost write only); 1 when a nested write came in between: store again.
 * The state is looked at before publishing as well as after: a nested write that came in while
 * this one stored its fields may have left them mixed (say a handler's set between a clear's
 * zeroing of the OTel ids and its new attribute size), and publishing first and looking after
 * showed that mix to a sample landing in between (seen once in make check). One that comes in
 * after the first look finds the fields whole and leaves its own whole, so what is published
 * then is one context; the outermost write still stores again, so that it ends last. */
static inline int record_publish(struct thread_block *b, int nested, uint8_t otel_valid)
{
    RECORD_ORDER();
    if (__builtin_expect(nested, 0))
        return 0;
    if (__builtin_expect(b->write_state == WRITE_INTERRUPTED, 0))
        return 1;
    b->apm.valid = 1;
    b->otel.valid = otel_valid;
    RECORD_ORDER();
    return __builtin_expect(b->write_state == WRITE_INTERRUPTED, 0);
}

/* Ends the write; 1 when a nested write came in after record_publish's last look (it left the
 * records hidden): the outermost write then starts over, so that it still ends last. */
static inline int record_write_end(struct thread_block *b, int nested)
{
    if (__builtin_expect(nested, 0)) {
        b->write_state = WRITE_INTERRUPTED;
        return 0;
    }
    b->write_state = WRITE_IDLE;
    RECORD_ORDER();
    return __builtin_expect(b->apm.valid == 0, 0);
}

/* Before an edit of the OTel attributes: a clear on the fast path left the last transaction's
 * entry and ids behind (hidden); they must not come back. Returns the valid byte the record
 * then deserves. Within a write. */
uint8_t otel_record_settle(struct thread_block *b);
/* An attribute edit that a nested write interrupted may have left the attributes half edited:
 * they restart from the fixed ones (and the transaction entry, while a trace is active). */
void otel_record_rebase(struct thread_block *b) __attribute__((cold));

/* The writes below in full (thread_records.c): a nested one (WRITE_FULL_NESTED), a new
 * transaction or the OTel attributes' work, and the outermost write again after a nested one
 * (WRITE_FULL_AGAIN). Out of line, so that the common case inline holds nothing across a call;
 * the two flags share one argument so that all six travel in registers and the inline paths
 * reach the full write with a tail jump, without a stack frame of their own. */
enum { WRITE_FULL_NESTED = 1, WRITE_FULL_AGAIN = 2 };
void thread_block_set_full(struct thread_block *b, const uint8_t trace_id[16],
                           const uint8_t span_id[8], const uint8_t transaction_id[8],
                           uint8_t flags, unsigned how) __attribute__((cold));
void thread_block_clear_full(struct thread_block *b, int nested) __attribute__((cold));

/* A set's fields in both records, all but the OTel transaction entry. Within a write. */
static inline void record_store_ids(struct thread_block *b, const uint8_t trace_id[16],
                                    const uint8_t span_id[8], const uint8_t transaction_id[8],
                                    uint8_t flags)
{
    struct apm_record *r = &b->apm;
    r->trace_present = 1;
    r->trace_flags = flags;
    memcpy(r->trace_id, trace_id, 16);
    memcpy(r->span_id, span_id, 8);
    memcpy(r->transaction_id, transaction_id, 8);
    /* OTel: the valid byte hides the record (see struct otel_record); the pointer stays. */
    if (b->otel_on) {
        memcpy(b->otel.trace_id, trace_id, 16);
        memcpy(b->otel.span_id, span_id, 8);
        b->otel.trace_flags = flags;
    }
}

/* The common case: no write in progress, OTel off or a span of the transaction already in the
 * record (its hex entry stays). */
static inline __attribute__((always_inline)) void thread_block_set(struct thread_block *b, const uint8_t trace_id[16],
                                    const uint8_t span_id[8], const uint8_t transaction_id[8],
                                    uint8_t flags)
{
    if (__builtin_expect(b->write_state != WRITE_IDLE, 0)) {
        thread_block_set_full(b, trace_id, span_id, transaction_id, flags, WRITE_FULL_NESTED);
        return;
    }
    record_hide(b, 0);
    /* The record's transaction is looked at only once the write is marked in progress: a
     * handler landing before that writes whole, and may leave another transaction's entry (a
     * fast path chosen before it would then publish that entry with our ids). */
    if (__builtin_expect(b->otel_on && (!b->otel_has_txn ||
                                        memcmp(b->otel_txn, transaction_id, 8) != 0),
                         0)) {
        thread_block_set_full(b, trace_id, span_id, transaction_id, flags, 0);
        return;
    }
    record_store_ids(b, trace_id, span_id, transaction_id, flags);
    if (__builtin_expect(record_publish(b, 0, 1) || record_write_end(b, 0), 0))
        thread_block_set_full(b, trace_id, span_id, transaction_id, flags, WRITE_FULL_AGAIN);
}

/* The common case: no write in progress, no attributes to keep (API or fixed ones). Each
 * record changes by one byte store here (the Elastic record's trace_present, the OTel record's
 * valid), and a one-byte store is seen whole by a sample of this thread, so neither record is
 * hidden first: the state byte alone orders this write against a handler's, as in every write.
 * A nested write that lands in between hides both records and marks this one interrupted; it
 * then runs in full (after the last look too, record_write_end). */
static inline __attribute__((always_inline)) void thread_block_clear(struct thread_block *b)
{
    if (__builtin_expect(b->write_state != WRITE_IDLE, 0)) {
        thread_block_clear_full(b, 1);
        return;
    }
    b->write_state = WRITE_BUSY;
    RECORD_ORDER();
    /* looked at once the write is marked in progress (see thread_block_set) */
    if (__builtin_expect(b->otel_on && (b->otel_custom || otel_fixed_len), 0)) {
        thread_block_clear_full(b, 0);
        return;
    }
    b->apm.trace_present = 0;
    b->otel.valid = 0; /* detached; its stale fields stay hidden until a set */
    RECORD_ORDER();
    if (__builtin_expect(b->write_state == WRITE_INTERRUPTED || record_write_end(b, 0), 0))
        thread_block_clear_full(b, 0);
}

/* Called once per process image (and in a fork child) before any block is made: whether OTel
 * records are kept, whether new threads inherit their creator's context (PROFLINK_INHERIT),
 * and the process's context new threads start with otherwise (TRACEPARENT; NULL: none). 0 ok. */
int thread_records_init(int otel_enabled, int inherit_creator, const struct trace_ctx *process);
/* The fixed attributes, already encoded (len <= OTEL_FIXED_MAX), before any block is made. */
void thread_records_set_fixed(const uint8_t *attrs, size_t len);

/* Another publisher took the OTel format (otel_ctx_watch.c): threads created from now on get no
 * OTel record of ours (their otel_thread_ctx_v1 is left to it); existing ones keep theirs. */
void thread_records_otel_off(void);

#endif
