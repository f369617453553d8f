/* ids.h — a thread's trace context in raw bytes, and the hex/W3C text forms of its ids. */
#ifndef PROFLINK_IDS_H
#define PROFLINK_IDS_H

#include <stddef.h>
#include <stdint.h>

struct trace_ctx {
    uint8_t trace_id[16];
    uint8_t span_id[8];
    uint8_t transaction_id[8];
    uint8_t trace_flags;
    uint8_t present; /* 0: no trace active, the other fields mean nothing */
};

/* 0-15 for a hex digit (either case), -1 otherwise. */
int hex_digit_value(char c);
/* Parses exactly 2*n lowercase or uppercase hex digits into n bytes. 0 ok, -1 malformed. */
int hex_decode(const char *hex, uint8_t *out, size_t n);
/* Writes 2*n lowercase hex digits (no NUL). */
void hex_encode(const uint8_t *in, size_t n, char *out);
/* 1 if all n bytes are zero (W3C: an all-zero id is invalid). */
int bytes_all_zero(const uint8_t *b, size_t n);

/* W3C traceparent "vv-<32 hex>-<16 hex>-<2 hex>[-future]": fills trace id, span id (also as
 * transaction id) and flags, present = 1. 0 ok, -1 malformed (ctx untouched). */
int traceparent_parse(const char *text, struct trace_ctx *ctx);

/* A header's value as servers take it: version 00 only, exactly 55 bytes
 * "00-<32 hex>-<16 hex>-<2 hex>", lowercase hex, ids not all zero. 0 ok, -1 otherwise (ctx
 * untouched). */
int traceparent_parse_00(const uint8_t *v, size_t n, struct trace_ctx *ctx);

#endif
