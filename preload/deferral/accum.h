/* accum.h — stack-trace ids received for each {trace id, transaction id}, kept until the
 * transaction is delivered, in bounded memory whatever the profiler sends.
 *
 * Memory policy (paste-ready for the README):
 *   proflink keeps the stack-trace ids the profiler reports for each {trace id, transaction id}
 *   until the transaction is handed over (proflink_end_transaction, then its delay). Memory is
 *   bounded whatever the profiler sends:
 *   - at most 4096 {trace, transaction} keys and 16384 {key, stack-trace id} pairs in all
 *     (640 KiB at most, allocated when the reader starts, pages touched only as used); a
 *     count saturates at 2^32 - 1;
 *   - at most 1024 distinct stack-trace ids per transaction: samples of further new stacks of
 *     that transaction are dropped (the ones already known keep counting);
 *   - when a new key or pair does not fit, the key updated least recently is evicted whole,
 *     never the one being updated;
 *   - a key not updated for max(60 s, 10 x samples-delay-ms) is evicted: its transaction
 *     never ended, was not handed to proflink, or its samples came after it was delivered. The
 *     sweep runs at most once a second, and only when the reader is awake anyway (no timer);
 *   - every sample dropped or evicted is counted in ids_evicted (proflink_get_stats): an id
 *     held with count n counts n;
 *   - the deferral queue holds ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_BUFFER_SIZE
 *     transactions (default 8096, 56 bytes each: 443 KiB, touched as the ring turns); when it
 *     is full a transaction is delivered at once with what is known, never dropped.
 *
 * Not thread-safe: the caller serializes (deferral.c). */
#ifndef PROFLINK_ACCUM_H
#define PROFLINK_ACCUM_H

#include <stddef.h>
#include <stdint.h>

#include "proflink.h"

#define ACCUM_MAX_KEYS 4096
#define ACCUM_MAX_IDS 16384
#define ACCUM_MAX_IDS_PER_KEY 1024

struct accum_limits {
    uint32_t max_keys, max_ids, max_ids_per_key;
};

struct accum_entry;
struct accum_node;

struct accum {
    struct accum_limits lim;
    uint64_t seed;
    uint32_t mask;    /* hash slots - 1 */
    uint32_t *slots;  /* entry index + 1, 0 = empty (linear probing) */
    struct accum_entry *entries;
    struct accum_node *nodes;
    uint32_t entry_bump, entry_free; /* never-used prefix, free list (1-based, 0 = none) */
    uint32_t node_bump, node_free;
    uint32_t n_keys, n_nodes;
    uint32_t lru_head, lru_tail; /* 1-based entry indices, least recently updated first */
};

/* 0 ok, -1 out of memory. Memory is zero-filled and touched only as it is used. */
int accum_init(struct accum *a, const struct accum_limits *lim);
void accum_free(struct accum *a);

/* count samples of stack_id for {trace_id, transaction_id} at time now_ns. Returns the number
 * of samples dropped or evicted to stay within the limits (0 normally). */
uint64_t accum_add(struct accum *a, const uint8_t trace_id[16], const uint8_t transaction_id[8],
                   const uint8_t stack_id[16], uint32_t count, uint64_t now_ns);

/* How many distinct ids {trace_id, transaction_id} has (0 if unknown). */
size_t accum_count(const struct accum *a, const uint8_t trace_id[16],
                   const uint8_t transaction_id[8]);

/* Removes the key and copies its ids into out (cap entries; ids beyond cap are counted as
 * evicted in *evicted). Returns how many were copied. */
size_t accum_take(struct accum *a, const uint8_t trace_id[16], const uint8_t transaction_id[8],
                  proflink_stack_count *out, size_t cap, uint64_t *evicted);

/* Evicts every key last updated before cutoff_ns. Returns the samples evicted. */
uint64_t accum_expire(struct accum *a, uint64_t cutoff_ns);

#endif
