/* thread_records.h — each thread's published context: the Elastic apmint record (37 bytes, via
 * the exported TLS pointer elastic_apm_profiling_correlation_tls_v1) and the OpenTelemetry
 * thread-context record (via otel_thread_ctx_v1). Both live in one per-thread block, allocated
 * once per thread and freed at thread exit (pointers cleared first).
 *
 * Readers sample a thread while it is stopped on its own CPU (eBPF perf event, or ptrace), so a
 * record is never read concurrently from another CPU while the thread runs: ordering the stores
 * against the compiler (atomic_signal_fence) is all the valid-byte protocol needs. */
#ifndef PROFLINK_THREAD_RECORDS_H
#define PROFLINK_THREAD_RECORDS_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "ids.h"

/* Elastic apmint thread record, README: formats. Packed, native endian. */
struct apm_record {
    uint16_t minor_version; /* 1 */
    uint8_t valid;
    uint8_t trace_present;
    uint8_t trace_flags;
    uint8_t trace_id[16];
    uint8_t span_id[8];
    uint8_t transaction_id[8];
} __attribute__((packed));

/* OTel thread context key 0 (local_root_span_id): [u8 key][u8 len=16][16 lowercase hex]. */
#define OTEL_ATTR_TXN_SIZE 18

/* OpenTelemetry thread record, README: formats. Packed, native endian. */
struct otel_record {
    uint8_t trace_id[16];
    uint8_t span_id[8];
    uint8_t valid;
    uint8_t trace_flags;
    uint16_t attrs_size;
    uint8_t attrs[OTEL_ATTR_TXN_SIZE];
} __attribute__((packed));

struct thread_block {
    struct apm_record apm; /* first: the exported pointer doubles as the block pointer */
    struct otel_record otel;
    /* This thread's otel_thread_ctx_v1 slot, NULL when OTel records are off. Cached at install
     * so that the hot path pays for one TLS descriptor call (finding the block), not two. */
    void **otel_slot;
    uint8_t otel_txn[8]; /* transaction id whose hex is in otel.attrs (skips re-encoding) */
    /* pthread_create trampoline: the start routine to run once the records are installed */
    void *(*start_fn)(void *);
    void *start_arg;
};

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
 * default) the process-wide TRACEPARENT context, else none (config.c says why). */
void thread_initial_context(struct trace_ctx *out);

/* A block for a thread about to be created, holding ctx. NULL when out of memory. */
struct thread_block *thread_block_new(const struct trace_ctx *ctx);
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
/* Writes the OTel record's transaction-id attribute (key 0, 16 lowercase hex). */
void otel_record_set_txn(struct thread_block *b, const uint8_t transaction_id[8]);

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

/* Fills the OTel record's fields (not valid, not the pointer). The hex of the transaction id
 * is re-encoded only when it changes: spans of one transaction share it. */
static inline void otel_record_fill(struct thread_block *b, const uint8_t trace_id[16],
                                    const uint8_t span_id[8], const uint8_t transaction_id[8],
                                    uint8_t flags)
{
    struct otel_record *o = &b->otel;
    memcpy(o->trace_id, trace_id, 16);
    memcpy(o->span_id, span_id, 8);
    o->trace_flags = flags;
    if (__builtin_expect(memcmp(b->otel_txn, transaction_id, 8) != 0 ||
                             o->attrs_size != OTEL_ATTR_TXN_SIZE, 0))
        otel_record_set_txn(b, transaction_id);
}

static inline void thread_block_set(struct thread_block *b, const uint8_t trace_id[16],
                                    const uint8_t span_id[8], const uint8_t transaction_id[8],
                                    uint8_t flags)
{
    struct apm_record *r = &b->apm;
    r->valid = 0;
    RECORD_ORDER();
    r->trace_present = 1;
    r->trace_flags = flags;
    memcpy(r->trace_id, trace_id, 16);
    memcpy(r->span_id, span_id, 8);
    memcpy(r->transaction_id, transaction_id, 8);
    RECORD_ORDER();
    r->valid = 1;
    void **slot = b->otel_slot;
    if (!slot)
        return;
    /* OTel: NULL pointer = no context. Hide the record while it is rewritten, then publish. */
    *slot = NULL;
    b->otel.valid = 0;
    RECORD_ORDER();
    otel_record_fill(b, trace_id, span_id, transaction_id, flags);
    RECORD_ORDER();
    b->otel.valid = 1;
    RECORD_ORDER();
    *slot = &b->otel;
}

static inline void thread_block_clear(struct thread_block *b)
{
    if (b->otel_slot)
        *b->otel_slot = NULL;
    RECORD_ORDER();
    b->apm.valid = 0;
    RECORD_ORDER();
    b->apm.trace_present = 0;
    RECORD_ORDER();
    b->apm.valid = 1;
}

/* Called once per process image (and in a fork child) before any block is made. 0 ok. */
int thread_records_init(int otel_enabled);

#endif
