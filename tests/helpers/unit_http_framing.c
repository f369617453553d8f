/* unit_http_framing — where the response side of the HTTP scanner (preload/http/http_response_scan.c) says a
 * response ends, for every framing a server uses: Content-Length, chunked (extensions,
 * trailers), until the connection closes, interim 1xx heads before the final one, no body for
 * a HEAD request, 204 and 304, a protocol switch (101), keep-alive sequences; each stream fed
 * whole, then cut at every point into two writes and at every pair of points into three, and
 * with its body bytes passed by count (sendfile). Prints one line per failure and exits 1. */
#include <stdio.h>
#include <string.h>

#include "../../preload/http/http_scan.c"
#include "../../preload/http/http_request_scan.c"
#include "../../preload/http/http_response_scan.c"
#include "../../preload/leaves/ids.c"

#define MAX_ENDS 8

struct framing {
    const char *what;
    const char *bytes;
    unsigned head_mask; /* bit k: the k-th response answers a HEAD request */
    size_t ends[MAX_ENDS]; /* offsets just past each response's last byte, 0-terminated */
    enum { OPEN_IDLE, OPEN_UNTIL_CLOSE, OPEN_DEAD, OPEN_INSIDE } after;
};

#define OK200 "HTTP/1.1 200 OK\r\n"
#define CHUNKED "Transfer-Encoding: chunked\r\n"

static const struct framing cases[] = {
    {"Content-Length", OK200 "Content-Length: 5\r\n\r\nhello", 0, {43}, OPEN_IDLE},
    {"Content-Length: 0", OK200 "Content-Length: 0\r\n\r\n", 0, {38}, OPEN_IDLE},
    {"status line without reason, bare LF lines", "HTTP/1.1 200\nContent-Length: 2\n\nok", 0,
     {34}, OPEN_IDLE},
    {"chunked", OK200 CHUNKED "\r\n5\r\nhello\r\n0\r\n\r\n", 0, {62}, OPEN_IDLE},
    {"chunked, extensions and trailers",
     OK200 CHUNKED "\r\n3;a=b\r\nabc\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\nY: 2\r\n\r\n", 0,
     {93}, OPEN_IDLE},
    {"chunked, then more bytes", OK200 CHUNKED "\r\n1\r\nx\r\n0\r\n\r\nHTTP", 0, {58},
     OPEN_INSIDE},
    {"until close (HTTP/1.0, no length)", "HTTP/1.0 200 OK\r\nServer: s\r\n\r\nany bytes", 0,
     {0}, OPEN_UNTIL_CLOSE},
    {"until close (a coding that is not chunked last)",
     OK200 "Transfer-Encoding: chunked, gzip\r\n\r\nxyz", 0, {0}, OPEN_UNTIL_CLOSE},
    {"100 Continue, then the final response",
     "HTTP/1.1 100 Continue\r\n\r\n" OK200 "Content-Length: 2\r\n\r\nok", 0, {65}, OPEN_IDLE},
    {"103 Early Hints with headers, 100, then the final response",
     "HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n" OK200
     "Content-Length: 0\r\n\r\n",
     0, {107}, OPEN_IDLE},
    {"a HEAD request's answer has a length but no body", OK200 "Content-Length: 1000\r\n\r\n",
     1, {41}, OPEN_IDLE},
    {"a HEAD request's answer, chunked announced", OK200 CHUNKED "\r\n", 1, {47}, OPEN_IDLE},
    {"204", "HTTP/1.1 204 No Content\r\nServer: s\r\n\r\n", 0, {38}, OPEN_IDLE},
    {"304 with a Content-Length", "HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n",
     0, {49}, OPEN_IDLE},
    {"keep-alive: length, chunked, 204, HEAD, length",
     OK200 "Content-Length: 1\r\n\r\nx" OK200 CHUNKED "\r\n0\r\n\r\n"
           "HTTP/1.1 204 No Content\r\n\r\n" OK200 "Content-Length: 7\r\n\r\n" OK200
           "Content-Length: 3\r\n\r\nabc",
     8, {39, 91, 118, 156, 197}, OPEN_IDLE},
    {"101 Switching Protocols: not followed any more",
     "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x05hello", 0, {0},
     OPEN_DEAD},
    {"two different lengths", OK200 "Content-Length: 1\r\nContent-Length: 2\r\n\r\nab", 0, {0},
     OPEN_DEAD},
    {"not HTTP", "\x16\x03\x01\x02\x00", 0, {0}, OPEN_DEAD},
    {"HTTP/2", "HTTP/2 200\r\n\r\n", 0, {0}, OPEN_DEAD},
    {"a status out of range", "HTTP/1.1 600 X\r\n\r\n", 0, {0}, OPEN_DEAD},
    {"a response cut short", OK200 "Content-Length: 10\r\n\r\nhalf", 0, {0}, OPEN_INSIDE},
};

static int failures;

struct result {
    size_t ends[MAX_ENDS + 1];
    unsigned n;
};

/* Feeds bytes[0..n) in pieces cut at cut1 and cut2 (cut1 <= cut2 <= n); with skip, the bytes
 * of bodies the scanner waits for go by count (http_scan_skip), as sendfile's do. */
static void run(const struct framing *f, size_t n, size_t cut1, size_t cut2, int skip,
                struct result *r, struct http_scan *s)
{
    const uint8_t *p = (const uint8_t *)f->bytes;
    size_t bounds[3] = {cut1, cut2, n}, off = 0;
    http_scan_init_response(s);
    r->n = 0;
    for (int piece = 0; piece < 3; piece++) {
        while (off < bounds[piece]) {
            size_t left = bounds[piece] - off;
            enum http_scan_event ev = HTTP_SCAN_NONE;
            if (skip && (s->state == S_BODY || s->state == S_CHUNK_DATA)) {
                size_t k = s->left < left ? (size_t)s->left : left;
                if (http_scan_skip(s, k) == 1)
                    ev = HTTP_SCAN_MESSAGE_END;
                off += k;
            } else {
                struct trace_ctx ctx;
                off += http_scan_feed(s, p + off, left, &ev, &ctx);
            }
            if (ev == HTTP_SCAN_HEAD_START)
                s->no_body = (uint8_t)((f->head_mask >> r->n) & 1);
            if (ev == HTTP_SCAN_MESSAGE_END && r->n < MAX_ENDS)
                r->ends[r->n++] = off;
        }
    }
}

static void check(const struct framing *f, size_t cut1, size_t cut2, int skip)
{
    size_t n = strlen(f->bytes);
    if (!strcmp(f->what, "not HTTP"))
        n = 5;
    struct result r;
    struct http_scan s;
    run(f, n, cut1, cut2, skip, &r, &s);
    unsigned want = 0;
    while (want < MAX_ENDS && f->ends[want])
        want++;
    int ok = r.n == want && memcmp(r.ends, f->ends, want * sizeof r.ends[0]) == 0;
    switch (f->after) {
    case OPEN_IDLE:
        ok = ok && http_scan_idle(&s);
        break;
    case OPEN_UNTIL_CLOSE:
        ok = ok && http_scan_until_close(&s);
        break;
    case OPEN_DEAD:
        ok = ok && http_scan_dead(&s);
        break;
    case OPEN_INSIDE:
        ok = ok && !http_scan_idle(&s) && !http_scan_dead(&s) && !http_scan_until_close(&s);
        break;
    }
    if (!ok && failures++ < 20) {
        printf("FAIL %s (cuts %zu %zu%s): %u ends", f->what, cut1, cut2,
               skip ? ", bodies skipped" : "", r.n);
        for (unsigned i = 0; i < r.n; i++)
            printf(" %zu", r.ends[i]);
        printf(", state %u\n", s.state);
    }
}

int main(void)
{
    unsigned runs = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t n = strlen(cases[i].bytes);
        if (!strcmp(cases[i].what, "not HTTP"))
            n = 5;
        for (int skip = 0; skip < 2; skip++)
            for (size_t a = 0; a <= n; a++)
                for (size_t b = a; b <= n; b++, runs++)
                    check(&cases[i], a, b, skip);
    }
    printf("%zu framings, %u ways of cutting them, %d failures\n",
           sizeof cases / sizeof *cases, runs, failures);
    return failures != 0;
}
