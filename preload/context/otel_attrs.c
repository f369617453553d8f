/* otel_attrs.c — see otel_attrs.h. */
#include "otel_attrs.h"

#include <string.h>

/* Offset of key's entry, or -1. Stops at a truncated entry (never produced here). */
static long find(const uint8_t *attrs, size_t size, uint8_t key)
{
    for (size_t at = 0; at + OTEL_ATTR_ENTRY_OVERHEAD <= size;
         at += OTEL_ATTR_ENTRY_OVERHEAD + attrs[at + 1])
        if (attrs[at] == key)
            return (long)at;
    return -1;
}

int otel_attrs_remove(uint8_t *attrs, uint16_t *size, uint8_t key)
{
    long at = find(attrs, *size, key);
    if (at < 0)
        return 0;
    size_t len = OTEL_ATTR_ENTRY_OVERHEAD + (size_t)attrs[at + 1];
    if ((size_t)at + len > *size)
        len = *size - (size_t)at;
    memmove(attrs + at, attrs + at + len, *size - (size_t)at - len);
    *size = (uint16_t)(*size - len);
    return 1;
}

int otel_attrs_put(uint8_t *attrs, uint16_t *size, size_t cap, uint8_t key, const uint8_t *value,
                   size_t len)
{
    if (len > OTEL_ATTR_VALUE_MAX)
        return -1;
    long at = find(attrs, *size, key);
    size_t old = at < 0 ? 0 : OTEL_ATTR_ENTRY_OVERHEAD + (size_t)attrs[at + 1];
    /* Judged before anything moves: a refused value leaves the area exactly as it was. */
    if ((size_t)*size - old + OTEL_ATTR_ENTRY_OVERHEAD + len > cap)
        return -1;
    otel_attrs_remove(attrs, size, key);
    uint8_t *e = attrs + *size;
    e[0] = key;
    e[1] = (uint8_t)len;
    if (len)
        memcpy(e + OTEL_ATTR_ENTRY_OVERHEAD, value, len);
    *size = (uint16_t)(*size + OTEL_ATTR_ENTRY_OVERHEAD + len);
    return 0;
}

int otel_attrs_well_formed(const uint8_t *attrs, size_t size)
{
    uint8_t seen[256] = {0};
    size_t at = 0;
    while (at < size) {
        if (size - at < OTEL_ATTR_ENTRY_OVERHEAD ||
            (size_t)attrs[at + 1] > size - at - OTEL_ATTR_ENTRY_OVERHEAD || seen[attrs[at]]++)
            return 0;
        at += OTEL_ATTR_ENTRY_OVERHEAD + attrs[at + 1];
    }
    return 1;
}
