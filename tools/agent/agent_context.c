/* agent_context.c — see agent_context.h. */
#include "agent_context.h"

#include <string.h>

#include "common/target_otel.h"
#include "common/target_records.h"
#include "common/target_threads.h"
#include "common/target_util.h"

/* The key map is an array of at most this many names (OTEP 4947 key indexes are one byte). */
#define KEY_MAP_MAX 256

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

void agent_context_load_key_map(struct agent_context *c)
{
    struct target_otel_ctx ctx;
    char err[TARGET_ERRLEN];
    c->otel_key = 0;
    if (target_otel_read(&c->t->mem, &c->t->maps, &ctx, err) != 0)
        return;
    const struct target_pb_value *km =
        target_pb_find(&ctx.pc.attributes, "threadlocal.attribute_key_map");
    if (km && km->kind == TARGET_PB_ARRAY)
        for (size_t i = 0; i < km->nitems && i < KEY_MAP_MAX; i++)
            if (km->items[i].kind == TARGET_PB_STRING &&
                strcmp(km->items[i].s, "local_root_span_id") == 0)
                c->otel_key = (int)i;
    if (c->by->name)
        agent_by_set_map(c->by, km);
    target_otel_free(&ctx);
}

int agent_context_read(struct agent_context *c, pid_t tid, uint8_t trace_id[16], uint8_t txn_id[8])
{
    struct target_stopped st = {.tid = tid, .pending_signal = 0};
    uint64_t tp, ptr;
    char err[TARGET_ERRLEN];
    int64_t off = c->otel ? c->t->otel_tls_offset : c->t->tls_offset;
    if (target_thread_tp(&st, &tp, err) != 0 || target_tls_pointer(&c->t->mem, tp, off, &ptr, err) != 0)
        return -1;
    if (ptr == 0) {
        if (c->by->name)
            agent_by_count(c->by, NULL);
        return 0;
    }
    if (!c->otel) {
        struct target_apm_record r;
        if (target_read_apm_record(&c->t->mem, ptr, &r, err) != 0)
            return -1;
        if (!(r.valid && r.trace_present)) /* what the eBPF code checks */
            return 0;
        memcpy(trace_id, r.trace_id, 16);
        memcpy(txn_id, r.transaction_id, 8);
        return 1;
    }
    struct target_otel_record r;
    if (target_read_otel_record(&c->t->mem, ptr, &r, err) != 0)
        return -1;
    if (c->by->name) {
        if (r.valid == 1 && agent_by_needs_refresh(c->by, &r)) {
            agent_context_load_key_map(c); /* a key registered since: the map only grows */
            c->by->refreshes++;
        }
        agent_by_count(c->by, r.valid == 1 ? &r : NULL);
    }
    if (r.valid != 1)
        return 0;
    memcpy(trace_id, r.trace_id, 16);
    memcpy(txn_id, r.span_id, 8); /* a span without a local root attribute is its own root */
    size_t pos = 0;
    struct target_otel_attr at;
    while (target_otel_attr_next(&r, &pos, &at) == 1)
        if (at.key == c->otel_key && unhex8(at.value, at.len, txn_id) == 0)
            break;
    static const uint8_t zero[16];
    return memcmp(trace_id, zero, 16) != 0;
}
