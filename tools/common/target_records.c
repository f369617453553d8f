/* target_records.c — see target_records.h. Fields are copied out of a byte buffer one by one:
 * the records are packed, so no C struct with natural alignment may overlay them. */
#include "target_records.h"

#include <string.h>

#include "target_util.h"

int target_tls_pointer(const struct target_mem *m, uint64_t tp, int64_t tls_offset, uint64_t *ptr,
                       char *err)
{
    return target_mem_u64(m, tp + (uint64_t)tls_offset, ptr, err);
}

int target_read_apm_record(const struct target_mem *m, uint64_t addr,
                           struct target_apm_record *out, char *err)
{
    uint8_t b[TARGET_APM_RECORD_SIZE];
    if (target_mem_read(m, addr, b, sizeof b, err) != 0)
        return -1;
    memcpy(&out->minor, b, 2);
    out->valid = b[2];
    out->trace_present = b[3];
    out->trace_flags = b[4];
    memcpy(out->trace_id, b + 5, 16);
    memcpy(out->span_id, b + 21, 8);
    memcpy(out->transaction_id, b + 29, 8);
    return 0;
}

int target_read_otel_record(const struct target_mem *m, uint64_t addr,
                            struct target_otel_record *out, char *err)
{
    uint8_t b[TARGET_OTEL_HEADER_SIZE];
    if (target_mem_read(m, addr, b, sizeof b, err) != 0)
        return -1;
    memcpy(out->trace_id, b, 16);
    memcpy(out->span_id, b + 16, 8);
    out->valid = b[24];
    out->trace_flags = b[25];
    memcpy(&out->attrs_size, b + 26, 2);
    out->attrs_read = out->attrs_size;
    if (out->attrs_read > sizeof out->attrs)
        out->attrs_read = sizeof out->attrs; /* readers stop at the 640-byte maximum */
    if (out->attrs_read == 0)
        return 0;
    return target_mem_read(m, addr + TARGET_OTEL_HEADER_SIZE, out->attrs, out->attrs_read, err);
}

int target_otel_attr_next(const struct target_otel_record *r, size_t *pos,
                          struct target_otel_attr *a)
{
    if (*pos >= r->attrs_read)
        return 0;
    if (r->attrs_read - *pos < 2)
        return -1;
    a->key = r->attrs[*pos];
    a->len = r->attrs[*pos + 1];
    if ((size_t)a->len > r->attrs_read - *pos - 2)
        return -1;
    a->value = &r->attrs[*pos + 2];
    *pos += 2 + (size_t)a->len;
    return 1;
}
