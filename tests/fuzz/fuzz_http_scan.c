/* fuzz_http_scan — fuzz target for the HTTP/1.x request scanner (preload/http/http_request_scan.c
 * on the machine of http_scan_machine.h): the
 * bytes a server reads from a client are anyone's. Checks, for any input:
 *  - fed whole, cut into pieces at points taken from the input, or one byte at a time, the
 *    scanner reports the same events with the same contexts and ends in the same state (split
 *    heads, pipelining): a state's run of bytes cut anywhere must leave it as when whole;
 *  - a context is only ever reported at the end of a head, with non-zero ids;
 *  - a head is never followed past HTTP_HEAD_MAX bytes (the next byte ends the scanning).
 * Input: byte 0 = number of cuts (mod 16), then that many cut sizes (1 byte each), then the
 * stream. libFuzzer as in tests/fuzz.mk; -DFUZZ_STANDALONE gives a seeded random driver. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../preload/http/http_scan.c"
#include "../../preload/http/http_request_scan.c"
#include "../../preload/http/http_response_scan.c"
#include "../../preload/leaves/ids.c"

#define MAX_EVENTS 4096

struct run {
    int n;
    uint8_t ev[MAX_EVENTS];
    struct trace_ctx ctx[MAX_EVENTS];
    struct http_scan end;
};

static void fail(const char *why)
{
    fprintf(stderr, "fuzz_http_scan: %s\n", why);
    abort();
}

static void feed(struct run *r, struct http_scan *s, const uint8_t *p, size_t n)
{
    while (n > 0) {
        enum http_scan_event ev;
        struct trace_ctx ctx;
        memset(&ctx, 0xAB, sizeof ctx);
        size_t used = http_scan_feed(s, p, n, &ev, &ctx);
        if (used == 0 || used > n)
            fail("consumed nothing or too much");
        if (s->head_len > HTTP_HEAD_MAX && !http_scan_dead(s))
            fail("head followed past the limit");
        if (ev != HTTP_SCAN_NONE && r->n < MAX_EVENTS) {
            r->ev[r->n] = (uint8_t)ev;
            if (ev == HTTP_SCAN_HEAD_END) {
                if (ctx.present > 1)
                    fail("present is not 0/1");
                if (ctx.present && (bytes_all_zero(ctx.trace_id, 16) ||
                                    bytes_all_zero(ctx.span_id, 8) ||
                                    memcmp(ctx.span_id, ctx.transaction_id, 8) != 0))
                    fail("a context with zero ids, or transaction id != parent id");
                if (!ctx.present)
                    memset(&ctx, 0, sizeof ctx);
                r->ctx[r->n] = ctx;
            } else {
                memset(&r->ctx[r->n], 0, sizeof r->ctx[r->n]);
                if (ev != HTTP_SCAN_HEAD_START)
                    fail("unknown event");
            }
            r->n++;
        }
        p += used;
        n -= used;
    }
}

static void compare(const struct run *a, const struct run *b, const char *how)
{
    char why[96];
    if (a->n != b->n || memcmp(a->ev, b->ev, (size_t)a->n) != 0) {
        snprintf(why, sizeof why, "events differ when the stream is %s", how);
        fail(why);
    }
    for (int i = 0; i < a->n; i++)
        if (memcmp(&a->ctx[i], &b->ctx[i], sizeof a->ctx[i]) != 0) {
            snprintf(why, sizeof why, "contexts differ when the stream is %s", how);
            fail(why);
        }
    if (a->end.state != b->end.state || a->end.left != b->end.left ||
        a->end.head_len != b->end.head_len) {
        snprintf(why, sizeof why, "end states differ when the stream is %s", how);
        fail(why);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t ncuts = data[0] % 16;
    if (size < 1 + ncuts)
        return 0;
    const uint8_t *cuts = data + 1, *p = data + 1 + ncuts;
    size_t n = size - 1 - ncuts;

    static struct run whole, pieces, bytes;
    struct http_scan s;
    whole.n = pieces.n = bytes.n = 0;
    http_scan_init(&s);
    feed(&whole, &s, p, n);
    whole.end = s;

    http_scan_init(&s);
    size_t off = 0;
    for (size_t i = 0; i < ncuts && off < n; i++) {
        size_t k = cuts[i] + 1u;
        if (k > n - off)
            k = n - off;
        feed(&pieces, &s, p + off, k);
        off += k;
    }
    feed(&pieces, &s, p + off, n - off);
    pieces.end = s;

    http_scan_init(&s);
    for (size_t i = 0; i < n; i++)
        feed(&bytes, &s, p + i, 1);
    bytes.end = s;
    compare(&whole, &pieces, "cut into pieces");
    compare(&whole, &bytes, "fed one byte at a time");
    return 0;
}

#ifdef FUZZ_STANDALONE
/* Seeded random streams built from HTTP fragments, for when libFuzzer is not available:
 * usage fuzz_http_scan [-runs=N] [-seed=S] */
static const char *const frags[] = {
    "GET / HTTP/1.1\r\n", "POST /x HTTP/1.0\r\n", "traceparent: ", "TraceParent:",
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "Content-Length: 5\r\n",
    "Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\n\r\n", "\r\n", "\n", " ", "\t", ":",
    "abc", "0", "ff", "Host: x\r\n", "PRI * HTTP/2.0\r\n", "\x16\x03\x01", "-", "zz",
    /* whole heads of the plainest form, and near misses */
    "GET /a HTTP/1.1\r\nHost: b\r\ntraceparent: "
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n\r\n",
    "GET /a HTTP/1.1\r\nTRACEPARENT:\t 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 "
    "\r\nAccept: */*\r\n\r\n",
    "GET / HTTP/1.1\r\n\r\n", "DELETE /x?y HTTP/1.0\r\nX: \r\n\r\n", "\r\n\r\n",
    "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n", ": v\r\n",
    "content-length: 0\r\n", "X-Folded: a\r\n b\r\n", " x", "X: a\nY: b\n\r\n"};

int main(int argc, char **argv)
{
    unsigned long runs = 1000000, seed = 1;
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "-runs=", 6))
            runs = strtoul(argv[i] + 6, NULL, 10);
        else if (!strncmp(argv[i], "-seed=", 6))
            seed = strtoul(argv[i] + 6, NULL, 10);
    }
    /* whole heads at the edges of the header runs (blanks, repeats), each fed as it is (no cuts) */
    static const char *const heads[] = {
        "GET / HTTP/1.1\r\ntraceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 x\r\n\r\n",
        "GET / HTTP/1.1\r\ntraceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 \r\n\r\n",
        "GET / HTTP/1.1\r\ntraceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n"
        "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n\r\n",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345 / HTTP/1.1\r\n\r\n",  /* a method of 32 bytes */
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456 / HTTP/1.1\r\n\r\n", /* 33 */
        "GET / HTTP/1.1\r\n: x\r\n\r\n", "GET / HTTP/1.1\r\nX: a\n\r\nY: b\r\n\r\n",
        "GET / HTTP/1.1x\n\r\n", "GET / HTTP/1.x\r\n\r\n", "GET / HTTP/1.1\n\r\n"};
    for (size_t i = 0; i < sizeof heads / sizeof *heads; i++) {
        static uint8_t one[512];
        size_t len = strlen(heads[i]);
        one[0] = 0;
        memcpy(one + 1, heads[i], len);
        LLVMFuzzerTestOneInput(one, len + 1);
    }
    srandom((unsigned)seed);
    static uint8_t buf[1 << 14];
    for (unsigned long r = 0; r < runs; r++) {
        size_t n = 0;
        buf[n++] = (uint8_t)random();
        for (int i = 0; i < 16; i++)
            buf[n++] = (uint8_t)random();
        int parts = (int)(random() % 40);
        for (int i = 0; i < parts; i++) {
            const char *f = frags[random() % (sizeof frags / sizeof *frags)];
            size_t len = strlen(f);
            if (random() % 8 == 0 && len > 1)
                len = (size_t)random() % len; /* a cut fragment */
            if (n + len >= sizeof buf)
                break;
            memcpy(buf + n, f, len);
            n += len;
        }
        LLVMFuzzerTestOneInput(buf, n);
    }
    printf("fuzz_http_scan: %lu runs\n", runs);
    return 0;
}
#endif
