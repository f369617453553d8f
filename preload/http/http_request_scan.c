/* http_request_scan.c — the request half of the HTTP/1.x scanner (http_scan.h): the request
 * line (method, target, version), the request's context from its traceparent header, and what
 * follows a request head (its body by Content-Length or chunked, none, or an unreadable
 * framing). Anything that is not a well-formed HTTP/1.x request ends the scanning of the
 * connection ("dead"): a server speaking another protocol, TLS or HTTP/2 is never misread as
 * carrying a trace. The machine itself is http_scan_machine.h. */
#include "http_scan_machine.h"

/* Lowercase hex digits, by table (value + 1; 0 = not one): the 50 digits of a traceparent are
 * decoded on every traced request; comparisons instead were a sixth of the scanner's time. */
static const uint8_t hex_lower_plus1[256] = {
    ['0'] = 1,  ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,
    ['6'] = 7,  ['7'] = 8,  ['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12,
    ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
};

static int hex_lower(char c) { return hex_lower_plus1[(uint8_t)c] - 1; }

/* n bytes from 2n lowercase hex digits; 0 ok, -1 otherwise. */
static int decode_lower(const char *hex, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int hi = hex_lower(hex[2 * i]), lo = hex_lower(hex[2 * i + 1]);
        if ((hi | lo) < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

/* W3C trace-context, version 00 only: exactly 55 bytes "00-<32>-<16>-<2>", lowercase hex, ids
 * not all zero. Decoded here rather than through traceparent_parse (which also takes the later
 * versions and uppercase a TRACEPARENT variable may hold): this runs on every request. */
static void head_context(const struct http_scan *s, struct trace_ctx *ctx)
{
    memset(ctx, 0, sizeof *ctx);
    const char *t = s->tp;
    if (s->tp_count != 1 || s->tp_len != TP_LEN || t[0] != '0' || t[1] != '0' || t[2] != '-' ||
        t[35] != '-' || t[52] != '-')
        return;
    struct trace_ctx c = {0};
    if (decode_lower(t + 3, c.trace_id, 16) || decode_lower(t + 36, c.span_id, 8) ||
        decode_lower(t + 53, &c.trace_flags, 1) || bytes_all_zero(c.trace_id, 16) ||
        bytes_all_zero(c.span_id, 8))
        return;
    memcpy(c.transaction_id, c.span_id, 8);
    c.present = 1;
    *ctx = c;
}

/* The request line after its first byte: the method's other bytes (tracking whether it is
 * HEAD), a space, the target, a space, "HTTP/1.x", CR LF. */
static size_t request_line(struct http_scan *s, const uint8_t *q, size_t lim)
{
    size_t k = 0;
    uint8_t c;
    while (k < lim && s->state < S_FIELD_START) {
        switch (s->state) {
        case S_METHOD:
            c = q[k++];
            if (c == ' ') { /* pos is 1 at least: the first byte started the head */
                s->method_head = s->method_head && s->pos == 4;
                s->state = S_TARGET;
            } else if (is_tchar(c) && s->pos < HTTP_METHOD_MAX) {
                s->method_head = s->method_head && s->pos < 4 && c == (uint8_t)"HEAD"[s->pos];
                s->pos++;
            } else {
                s->state = S_DEAD;
            }
            break;
        case S_TARGET:
            while (k < lim && q[k] > 0x20 && q[k] != 0x7f)
                k++;
            if (k < lim) {
                if (q[k++] == ' ') {
                    s->pos = 0;
                    s->state = S_VERSION;
                } else {
                    s->state = S_DEAD; /* HTTP/0.9 or not HTTP */
                }
            }
            break;
        case S_VERSION:
            k += version_run(s, q + k, lim - k);
            if (k < lim && s->state == S_VERSION) {
                c = q[k++];
                s->state = c == '\r' ? S_LINE_CR : c == '\n' ? S_FIELD_START : S_DEAD;
            }
            break;
        default: /* S_LINE_CR */
            line_cr(s, q[k++]);
            break;
        }
    }
    return k;
}

/* The empty line ended a request head: its context, then what follows is its body. */
static enum http_scan_event end_request_head(struct http_scan *s, struct trace_ctx *ctx)
{
    head_context(s, ctx);
    if (s->te_seen) {
        /* Any transfer coding but a final "chunked" means "until the connection closes". */
        s->state = te_chunked(s) ? S_CHUNK_SIZE : S_DEAD;
    } else if (s->cl_seen && s->cl > 0) {
        s->left = s->cl;
        s->state = S_BODY;
    } else {
        s->state = S_IDLE;
    }
    return HTTP_SCAN_HEAD_END;
}

size_t http_request_feed(struct http_scan *s, const uint8_t *p, size_t n,
                         enum http_scan_event *event, struct trace_ctx *ctx)
{
    return scan_feed(s, p, n, event, ctx, 0, request_line, end_request_head);
}
