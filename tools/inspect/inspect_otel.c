/* inspect_otel.c — see inspect_otel.h. */
#include "inspect_otel.h"

#include <inttypes.h>

void inspect_check_otel(struct inspect_report *r)
{
    struct inspect_check *c = &r->c[C_OTEL];
    r->key_map = NULL; /* a re-read must not keep pointing into the freed previous one */
    r->otel_rc = target_otel_read(&r->t.mem, &r->t.maps, &r->otel, r->otel_err);
    if (r->otel_rc == 1) {
        inspect_set(c, ST_WARN, "no OTEL_CTX mapping (OpenTelemetry process context not published)");
        return;
    }
    if (r->otel_rc != 0) {
        inspect_set(c, ST_WARN, "%s at 0x%" PRIx64 ": %s", r->otel.mapping_name, r->otel.addr,
                    r->otel_err);
        return;
    }
    const struct target_process_context *pc = &r->otel.pc;
    r->key_map = target_pb_find(&pc->attributes, "threadlocal.attribute_key_map");
    inspect_set(c, ST_PASS,
                "%s at 0x%" PRIx64 ": version %" PRIu32 ", %" PRIu32 " payload bytes, published at %" PRIu64
                " ns; %zu resource attributes, %zu attributes",
                r->otel.mapping_name, r->otel.addr, r->otel.version, r->otel.payload_size,
                r->otel.published_at_ns, pc->resource.n, pc->attributes.n);
    if (r->otel.attempts > 1)
        inspect_add(c, " (read %d times: it was being updated)", r->otel.attempts);
}
