/* target_otel.h — the OpenTelemetry process context (OTEP 4719) of a target: a mapping named
 * OTEL_CTX whose first 32 bytes are
 *   "OTEL_CTX"[8] | u32 version (2) | u32 payload_size (1..65536) |
 *   u64 published_at_ns (CLOCK_BOOTTIME; 0 while being written) | u64 payload pointer
 * and whose payload is a protobuf ProcessContext. Read like the profiler does: timestamp,
 * header, payload, timestamp again; a zero or changed timestamp means a concurrent update, so
 * the read is retried a few times instead of returning a torn payload. */
#ifndef TARGET_OTEL_H
#define TARGET_OTEL_H

#include <stdint.h>

#include "target_maps.h"
#include "target_mem.h"
#include "target_pb.h"

#define TARGET_OTEL_HEADER_BYTES 32
#define TARGET_OTEL_VERSION 2
#define TARGET_OTEL_MAX_PAYLOAD 65536

struct target_otel_ctx {
    char mapping_name[64];
    uint64_t addr;
    uint32_t version, payload_size;
    uint64_t published_at_ns, payload_ptr;
    int attempts; /* reads it took (more than 1: an update was in progress) */
    struct target_process_context pc;
};

/* 0: found and decoded; 1: the process has no OTEL_CTX mapping; -1: found but unusable (err
 * says why; the header fields read so far are filled in). */
int target_otel_read(const struct target_mem *m, const struct target_maps *maps,
                     struct target_otel_ctx *out, char *err);
void target_otel_free(struct target_otel_ctx *c);

#endif
