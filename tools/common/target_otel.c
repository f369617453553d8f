/* target_otel.c — see target_otel.h. */
#include "target_otel.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "target_util.h"

#define ATTEMPTS 5
#define TIMESTAMP_OFFSET 16

enum { READ_OK, READ_RETRY, READ_BAD };

static int read_once(const struct target_mem *m, struct target_otel_ctx *c, char *err)
{
    uint64_t ts1, ts2;
    if (target_mem_u64(m, c->addr + TIMESTAMP_OFFSET, &ts1, err) != 0)
        return READ_BAD;
    if (ts1 == 0) {
        target_fail(err, "published_at_ns is 0 (update in progress)");
        return READ_RETRY;
    }
    uint8_t h[TARGET_OTEL_HEADER_BYTES];
    if (target_mem_read(m, c->addr, h, sizeof h, err) != 0)
        return READ_BAD;
    memcpy(&c->version, h + 8, 4);
    memcpy(&c->payload_size, h + 12, 4);
    memcpy(&c->published_at_ns, h + 16, 8);
    memcpy(&c->payload_ptr, h + 24, 8);
    if (memcmp(h, "OTEL_CTX", 8) != 0) {
        target_fail(err, "bad signature (want \"OTEL_CTX\")");
        return READ_BAD;
    }
    if (c->version != TARGET_OTEL_VERSION) {
        target_fail(err, "version %" PRIu32 ", readers want %d", c->version, TARGET_OTEL_VERSION);
        return READ_BAD;
    }
    if (c->payload_size == 0 || c->payload_size > TARGET_OTEL_MAX_PAYLOAD) {
        target_fail(err, "payload_size %" PRIu32 " not in 1..%d", c->payload_size,
                    TARGET_OTEL_MAX_PAYLOAD);
        return READ_BAD;
    }
    uint8_t *payload = malloc(c->payload_size);
    if (!payload) {
        target_fail(err, "out of memory");
        return READ_BAD;
    }
    /* Payload problems are judged only after the second timestamp read: a concurrent update
     * may have freed or half-written what the old pointer pointed to. */
    char perr[TARGET_ERRLEN] = "";
    int prc = target_mem_read(m, c->payload_ptr, payload, c->payload_size, perr);
    if (prc == 0)
        prc = target_pb_decode_process_context(payload, c->payload_size, &c->pc, perr);
    free(payload);
    if (target_mem_u64(m, c->addr + TIMESTAMP_OFFSET, &ts2, err) != 0) {
        target_pb_free_process_context(&c->pc);
        return READ_BAD;
    }
    if (ts2 != ts1) {
        target_pb_free_process_context(&c->pc);
        target_fail(err, "published_at_ns changed during the read (concurrent update)");
        return READ_RETRY;
    }
    if (prc != 0) {
        target_fail(err, "payload: %s", perr);
        return READ_BAD;
    }
    return READ_OK;
}

int target_otel_read(const struct target_mem *m, const struct target_maps *maps,
                     struct target_otel_ctx *out, char *err)
{
    memset(out, 0, sizeof *out);
    const struct target_mapping *map = target_maps_find_otel_ctx(maps);
    if (!map) {
        target_fail(err, "no OTEL_CTX mapping");
        return 1;
    }
    snprintf(out->mapping_name, sizeof out->mapping_name, "%s", map->path);
    out->addr = map->start;
    if (map->end - map->start < TARGET_OTEL_HEADER_BYTES)
        return target_fail(err, "OTEL_CTX mapping is smaller than its header");
    for (out->attempts = 1;; out->attempts++) {
        int r = read_once(m, out, err);
        if (r == READ_OK)
            return 0;
        if (r == READ_BAD || out->attempts == ATTEMPTS)
            return -1;
        struct timespec ts = {0, 2 * 1000 * 1000}; /* give the writer time to finish */
        nanosleep(&ts, NULL);
    }
}

void target_otel_free(struct target_otel_ctx *c) { target_pb_free_process_context(&c->pc); }
