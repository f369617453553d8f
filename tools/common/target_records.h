/* target_records.h — the per-thread records a profiler reads through a thread's TLS pointer:
 * the Elastic apmint record (37 bytes) and the OpenTelemetry thread context record. */
#ifndef TARGET_RECORDS_H
#define TARGET_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "target_mem.h"

/* apmint record, native endian: u16 minor | u8 valid | u8 trace_present | u8 flags |
 * trace_id[16] | span_id[8] | transaction_id[8]. */
#define TARGET_APM_RECORD_SIZE 37
struct target_apm_record {
    uint16_t minor;
    uint8_t valid, trace_present, trace_flags;
    uint8_t trace_id[16], span_id[8], transaction_id[8];
};

/* OTel thread record: trace_id[16] | span_id[8] | u8 valid | u8 flags | u16 attrs_size |
 * attrs = repeated [u8 key index][u8 len][value]; at most 640 bytes in all. */
#define TARGET_OTEL_HEADER_SIZE 28
#define TARGET_OTEL_RECORD_MAX 640
struct target_otel_record {
    uint8_t trace_id[16], span_id[8];
    uint8_t valid, trace_flags;
    uint16_t attrs_size; /* as published */
    size_t attrs_read;   /* bytes actually read into attrs (attrs_size capped at the maximum) */
    uint8_t attrs[TARGET_OTEL_RECORD_MAX - TARGET_OTEL_HEADER_SIZE];
};

struct target_otel_attr {
    uint8_t key;
    uint8_t len;
    const uint8_t *value;
};

/* The pointer stored in a thread's TLS variable: the word at tp + tls_offset (the offset is
 * negative on x86_64, where static TLS sits below the thread pointer). */
int target_tls_pointer(const struct target_mem *m, uint64_t tp, int64_t tls_offset, uint64_t *ptr,
                       char *err);

int target_read_apm_record(const struct target_mem *m, uint64_t addr,
                           struct target_apm_record *out, char *err);
int target_read_otel_record(const struct target_mem *m, uint64_t addr,
                            struct target_otel_record *out, char *err);

/* Walks the attributes: 1 = *a filled and *pos advanced, 0 = end, -1 = an entry runs past
 * attrs_size (malformed). Start with *pos = 0. */
int target_otel_attr_next(const struct target_otel_record *r, size_t *pos,
                          struct target_otel_attr *a);

#endif
