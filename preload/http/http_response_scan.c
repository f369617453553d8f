/* http_response_scan.c — the response half of the HTTP/1.x scanner (http_scan.h): the status
 * line ("HTTP/1.x", three digits, a reason phrase), and what follows a response head (RFC 9112
 * §6.3): an interim 1xx head, another protocol after 101, no body (the answer to a HEAD, 204,
 * 304, a zero Content-Length), a body by Content-Length or chunked, or one that lasts until
 * the connection closes. The machine itself is http_scan_machine.h. */
#include "http_scan_machine.h"

/* The status line after its first byte. */
static size_t status_line(struct http_scan *s, const uint8_t *q, size_t lim)
{
    size_t k = 0;
    uint8_t c;
    while (k < lim && s->state < S_FIELD_START) {
        switch (s->state) {
        case S_STATUS_VERSION:
            k += version_run(s, q + k, lim - k);
            if (k < lim && s->state == S_STATUS_VERSION) {
                s->pos = 0;
                s->status = 0;
                s->state = q[k++] == ' ' ? S_STATUS_CODE : S_DEAD;
            }
            break;
        case S_STATUS_CODE:
            c = q[k++];
            if (s->pos < 3 && c >= '0' && c <= '9') {
                s->status = (uint16_t)(s->status * 10 + (c - '0'));
                s->pos++;
            } else if (s->pos < 3 || s->status < 100 || s->status > 599) {
                s->state = S_DEAD;
            } else if (c == ' ') {
                s->state = S_REASON;
            } else if (c == '\r') {
                s->state = S_LINE_CR;
            } else if (c == '\n') {
                s->state = S_FIELD_START;
            } else {
                s->state = S_DEAD;
            }
            break;
        case S_REASON: {
            const uint8_t *nl = memchr(q + k, '\n', lim - k);
            if (!nl)
                return lim;
            s->state = S_FIELD_START;
            k = (size_t)(nl - q) + 1;
            break;
        }
        default: /* S_LINE_CR */
            line_cr(s, q[k++]);
            break;
        }
    }
    return k;
}

/* The empty line ended a response head: what follows, and whether the response is complete
 * already. */
static enum http_scan_event end_response_head(struct http_scan *s, struct trace_ctx *ctx)
{
    memset(ctx, 0, sizeof *ctx);
    if (s->status == 101) {
        s->state = S_DEAD; /* another protocol follows */
        return HTTP_SCAN_HEAD_END;
    }
    if (s->status < 200) {
        s->state = S_IDLE; /* interim: the final response is still to come */
        return HTTP_SCAN_HEAD_END;
    }
    if (s->no_body || s->status == 204 || s->status == 304) {
        s->state = S_IDLE;
        return HTTP_SCAN_MESSAGE_END;
    }
    if (s->te_seen) {
        s->state = te_chunked(s) ? S_CHUNK_SIZE : S_UNTIL_CLOSE;
    } else if (s->cl_seen) {
        s->left = s->cl;
        s->state = s->cl ? S_BODY : S_IDLE;
        if (!s->cl)
            return HTTP_SCAN_MESSAGE_END;
    } else {
        s->state = S_UNTIL_CLOSE;
    }
    return HTTP_SCAN_HEAD_END;
}

size_t http_response_feed(struct http_scan *s, const uint8_t *p, size_t n,
                          enum http_scan_event *event, struct trace_ctx *ctx)
{
    return scan_feed(s, p, n, event, ctx, 1, status_line, end_response_head);
}
