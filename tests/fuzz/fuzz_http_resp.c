/* fuzz_http_resp — fuzz target for the response side of the HTTP/1.x scanner
 * (preload/http/http_response_scan.c, http_scan_init_response): what a server writes decides when a request
 * ends, so its framing must not depend on how the writes are cut. Checks, for any input:
 *  - fed whole, cut into pieces at points taken from the input, or one byte at a time, the
 *    scanner reports the same events at the same byte offsets and ends in the same state;
 *  - the same when the body bytes of the pieces go through http_scan_skip (sendfile) instead;
 *  - a response ends (HTTP_SCAN_MESSAGE_END) only after it started, at most once per start,
 *    and leaves the scanner between messages.
 * Input: byte 0 = which responses answer a HEAD request (bit k: the k-th, the next ones
 * alternate with bit 7), byte 1 = number of cuts (mod 16), then that many cut sizes (1 byte
 * each), then the stream. libFuzzer as in tests/fuzz.mk; -DFUZZ_STANDALONE gives a seeded
 * random driver. */
#include <stddef.h>
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
    size_t at[MAX_EVENTS]; /* stream offset just after the byte that gave the event */
    size_t off;            /* bytes fed so far */
    unsigned ended;        /* responses complete so far: which request the next one answers */
    int open;              /* a response started and not ended */
    struct http_scan end;
};

static uint8_t head_mask;

static void fail(const char *why)
{
    fprintf(stderr, "fuzz_http_resp: %s\n", why);
    abort();
}

static int answers_head(unsigned k) { return k < 7 ? (head_mask >> k) & 1 : (head_mask >> 7) & (k & 1); }

static void event(struct run *r, struct http_scan *s, enum http_scan_event ev)
{
    if (ev == HTTP_SCAN_NONE)
        return;
    if (ev == HTTP_SCAN_HEAD_START) {
        s->no_body = (uint8_t)answers_head(r->ended); /* as http_conn.c does */
        r->open = 1;
    } else if (ev == HTTP_SCAN_MESSAGE_END) {
        if (!r->open)
            fail("a response ended that had not started");
        if (!http_scan_idle(s))
            fail("a response ended with the scanner inside a message");
        r->open = 0;
        r->ended++;
    } else if (ev != HTTP_SCAN_HEAD_END) {
        fail("unknown event");
    }
    if (r->n < MAX_EVENTS) {
        r->ev[r->n] = (uint8_t)ev;
        r->at[r->n] = r->off;
        r->n++;
    }
}

static void feed(struct run *r, struct http_scan *s, const uint8_t *p, size_t n)
{
    while (n > 0) {
        enum http_scan_event ev;
        struct trace_ctx ctx = {0};
        size_t used = http_scan_feed(s, p, n, &ev, &ctx);
        if (used == 0 || used > n)
            fail("consumed nothing or too much");
        if (s->head_len > HTTP_RESPONSE_HEAD_MAX && !http_scan_dead(s))
            fail("head followed past the limit");
        if (ctx.present)
            fail("a response gave a context");
        r->off += used;
        event(r, s, ev);
        p += used;
        n -= used;
    }
}

/* As feed, but body bytes the scanner waits for go through http_scan_skip, as sendfile's do. */
static void feed_skipping(struct run *r, struct http_scan *s, const uint8_t *p, size_t n)
{
    while (n > 0) {
        size_t k = 0;
        if (http_scan_until_close(s))
            k = n;
        else if (s->state == S_BODY || s->state == S_CHUNK_DATA)
            k = s->left < n ? (size_t)s->left : n;
        if (k) {
            int done = http_scan_skip(s, k);
            if (done < 0)
                fail("body bytes refused");
            r->off += k;
            if (done)
                event(r, s, HTTP_SCAN_MESSAGE_END);
            p += k;
            n -= k;
            continue;
        }
        size_t before = r->off;
        feed(r, s, p, 1);
        p += r->off - before;
        n -= r->off - before;
    }
}

static void compare(const struct run *a, const struct run *b, const char *how)
{
    char why[96];
    if (a->n != b->n || memcmp(a->ev, b->ev, (size_t)a->n) != 0 ||
        memcmp(a->at, b->at, (size_t)a->n * sizeof a->at[0]) != 0) {
        snprintf(why, sizeof why, "events differ when the stream is %s", how);
        fail(why);
    }
    if (a->end.state != b->end.state || a->end.left != b->end.left ||
        a->end.head_len != b->end.head_len || a->end.status != b->end.status) {
        snprintf(why, sizeof why, "end states differ when the stream is %s", how);
        fail(why);
    }
}

typedef void feeder(struct run *, struct http_scan *, const uint8_t *, size_t);

static void cut_run(struct run *r, feeder *f, const uint8_t *cuts, size_t ncuts, const uint8_t *p,
                    size_t n)
{
    struct http_scan s;
    memset(r, 0, offsetof(struct run, end));
    http_scan_init_response(&s);
    size_t off = 0;
    for (size_t i = 0; i < ncuts && off < n; i++) {
        size_t k = cuts[i] + 1u;
        if (k > n - off)
            k = n - off;
        f(r, &s, p + off, k);
        off += k;
    }
    f(r, &s, p + off, n - off);
    r->end = s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    head_mask = data[0];
    size_t ncuts = data[1] % 16;
    if (size < 2 + ncuts)
        return 0;
    const uint8_t *cuts = data + 2, *p = data + 2 + ncuts;
    size_t n = size - 2 - ncuts;

    static struct run whole, pieces, bytes, skipped;
    cut_run(&whole, feed, cuts, 0, p, n);
    cut_run(&pieces, feed, cuts, ncuts, p, n);
    struct http_scan s;
    memset(&bytes, 0, offsetof(struct run, end));
    http_scan_init_response(&s);
    for (size_t i = 0; i < n; i++)
        feed(&bytes, &s, p + i, 1);
    bytes.end = s;
    cut_run(&skipped, feed_skipping, cuts, ncuts, p, n);
    compare(&whole, &pieces, "cut into pieces");
    compare(&whole, &bytes, "fed one byte at a time");
    compare(&whole, &skipped, "cut, its body bytes skipped");
    return 0;
}

#ifdef FUZZ_STANDALONE
/* Seeded random streams built from HTTP response fragments, for when libFuzzer is not
 * available: usage fuzz_http_resp [-runs=N] [-seed=S] */
static const char *const frags[] = {
    "HTTP/1.1 200 OK\r\n", "HTTP/1.0 200 OK\r\n", "HTTP/1.1 100 Continue\r\n\r\n",
    "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n", "HTTP/1.1 204 No Content\r\n",
    "HTTP/1.1 304 Not Modified\r\n", "HTTP/1.1 101 Switching Protocols\r\n", "HTTP/1.1 200\r\n",
    "HTTP/1.1 404 Not Found\n", "Content-Length: 5\r\n", "content-length: 0\r\n",
    "Content-Length: 12\r\n", "Transfer-Encoding: chunked\r\n", "Transfer-Encoding: gzip\r\n",
    "5\r\nhello\r\n", "0\r\n\r\n", "0\r\nX-T: 1\r\n\r\n", "a;ext=1\r\n0123456789\r\n", "\r\n",
    "\n", " ", "hello", "Server: x\r\n", "X-Folded: a\r\n b\r\n", "HTTP/2 200\r\n", "ff", "zz"};

int main(int argc, char **argv)
{
    unsigned long runs = 1000000, seed = 1;
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "-runs=", 6))
            runs = strtoul(argv[i] + 6, NULL, 10);
        else if (!strncmp(argv[i], "-seed=", 6))
            seed = strtoul(argv[i] + 6, NULL, 10);
    }
    srandom((unsigned)seed);
    static uint8_t buf[1 << 14];
    for (unsigned long r = 0; r < runs; r++) {
        size_t n = 0;
        buf[n++] = (uint8_t)random();
        buf[n++] = (uint8_t)random();
        for (int i = 0; i < buf[1] % 16; i++) /* the cut sizes, the stream right after them */
            buf[n++] = (uint8_t)(random() % 64);
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
    printf("fuzz_http_resp: %lu runs\n", runs);
    return 0;
}
#endif
