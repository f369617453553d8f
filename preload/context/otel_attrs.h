/* otel_attrs.h — the attribute area of an OpenTelemetry thread record (OTEP 4947):
 * entries [u8 key index][u8 value length][value bytes], packed, `size` bytes in all. proflink
 * keeps at most one entry per key index, so a reader's "the last occurrence wins" and "the only
 * occurrence" agree. Pure functions on a caller's buffer: no locks, no allocation, so that they
 * can run on a tracer's hot path and under a fuzzer. */
#ifndef PROFLINK_OTEL_ATTRS_H
#define PROFLINK_OTEL_ATTRS_H

#include <stddef.h>
#include <stdint.h>

/* The u8 length field bounds a value. */
#define OTEL_ATTR_VALUE_MAX 255
#define OTEL_ATTR_ENTRY_OVERHEAD 2

/* Removes key's entry, if any, closing the gap. Returns 1 if one was removed. */
int otel_attrs_remove(uint8_t *attrs, uint16_t *size, uint8_t key);

/* Makes value (len <= OTEL_ATTR_VALUE_MAX bytes) key's value, as the last entry. Refuses, with
 * the area untouched, when the result would pass cap bytes: -1. 0 ok. */
int otel_attrs_put(uint8_t *attrs, uint16_t *size, size_t cap, uint8_t key, const uint8_t *value,
                   size_t len);

/* 1 when the entries tile exactly `size` bytes and no key index appears twice. */
int otel_attrs_well_formed(const uint8_t *attrs, size_t size);

#endif
