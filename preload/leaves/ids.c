/* ids.c — hex and W3C traceparent text for trace ids (see ids.h). */
#include "ids.h"

#include <string.h>

int hex_digit_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int hex_decode(const char *hex, uint8_t *out, size_t n)
{
    uint8_t tmp[64];
    if (!hex || n > sizeof tmp)
        return -1;
    for (size_t i = 0; i < n; i++) {
        int hi = hex_digit_value(hex[2 * i]);
        int lo = hi < 0 ? -1 : hex_digit_value(hex[2 * i + 1]);
        if (lo < 0)
            return -1;
        tmp[i] = (uint8_t)(hi << 4 | lo);
    }
    memcpy(out, tmp, n);
    return 0;
}

void hex_encode(const uint8_t *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
}

int bytes_all_zero(const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return 0;
    return 1;
}

/* Field layout of version 00: "vv-" 3, trace id 32, "-" 1, parent id 16, "-" 1, flags 2 = 55. */
#define TP_LEN 55

/* hex_decode, or its lowercase-only twin below */
typedef int (*hex_fn)(const uint8_t *hex, uint8_t *out, size_t n);

static int any_hex_decode(const uint8_t *hex, uint8_t *out, size_t n)
{
    return hex_decode((const char *)hex, out, n);
}

/* n bytes from 2n lowercase hex digits; 0 ok, -1 otherwise. */
static int lower_hex_decode(const uint8_t *hex, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < 2 * n; i++) {
        uint8_t c = hex[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return -1;
        if (i % 2 == 0)
            out[i / 2] = (uint8_t)(d << 4);
        else
            out[i / 2] |= (uint8_t)d;
    }
    return 0;
}

/* The ids and flags of a traceparent whose separators are checked: 0 and *ctx filled, or -1. */
static int ids_parse(const uint8_t *t, hex_fn decode, struct trace_ctx *ctx)
{
    struct trace_ctx c = {0};
    if (decode(t + 3, c.trace_id, 16) || decode(t + 36, c.span_id, 8) ||
        decode(t + 53, &c.trace_flags, 1))
        return -1;
    if (bytes_all_zero(c.trace_id, 16) || bytes_all_zero(c.span_id, 8))
        return -1;
    memcpy(c.transaction_id, c.span_id, 8);
    c.present = 1;
    *ctx = c;
    return 0;
}

int traceparent_parse(const char *text, struct trace_ctx *ctx)
{
    if (!text)
        return -1;
    size_t len = strlen(text);
    if (len < TP_LEN || text[2] != '-' || text[35] != '-' || text[52] != '-')
        return -1;
    uint8_t version;
    if (hex_decode(text, &version, 1) || version == 0xff)
        return -1;
    /* Version 00 is exactly 55 characters; a later version may append "-..." fields. */
    if (len > TP_LEN && (version == 0 || text[TP_LEN] != '-'))
        return -1;
    return ids_parse((const uint8_t *)text, any_hex_decode, ctx);
}

int traceparent_parse_00(const uint8_t *v, size_t n, struct trace_ctx *ctx)
{
    if (n != TP_LEN || v[0] != '0' || v[1] != '0' || v[2] != '-' || v[35] != '-' || v[52] != '-')
        return -1;
    return ids_parse(v, lower_hex_decode, ctx);
}
