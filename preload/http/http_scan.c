/* http_scan.c — what the HTTP/1.x scanner (http_scan.h) does the same in both directions: a
 * scanner's start, the questions asked of its state, bytes that went by unseen, and the feed
 * that hands bytes to the request half (http_request_scan.c) or the response half
 * (http_response_scan.c) of the one state machine (http_scan_machine.h). */
#include "http_scan_machine.h"

void http_scan_init(struct http_scan *s)
{
    memset(s, 0, sizeof *s);
    s->state = S_IDLE;
}

void http_scan_init_response(struct http_scan *s)
{
    http_scan_init(s);
    s->response = 1;
}

int http_scan_until_close(const struct http_scan *s) { return s->state == S_UNTIL_CLOSE; }
int http_scan_idle(const struct http_scan *s) { return s->state == S_IDLE; }
int http_scan_dead(const struct http_scan *s) { return s->state == S_DEAD; }
void http_scan_kill(struct http_scan *s) { s->state = S_DEAD; }

int http_scan_skip(struct http_scan *s, uint64_t n)
{
    if (s->state == S_UNTIL_CLOSE)
        return 0;
    if ((s->state != S_BODY && s->state != S_CHUNK_DATA) || n > s->left) {
        s->state = S_DEAD;
        return -1;
    }
    s->left -= n;
    if (s->left)
        return 0;
    if (s->state == S_CHUNK_DATA) {
        s->state = S_CHUNK_DATA_END;
        return 0;
    }
    s->state = S_IDLE;
    return s->response;
}

size_t http_scan_feed(struct http_scan *s, const uint8_t *p, size_t n, enum http_scan_event *event,
                      struct trace_ctx *ctx)
{
    return s->response ? http_response_feed(s, p, n, event, ctx)
                       : http_request_feed(s, p, n, event, ctx);
}
