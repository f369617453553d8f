/* api_h2_invariant — a randomised driver of HTTP/2 reading (PROFLINK_HTTP=1, the library
 * preloaded): one server thread accepts, reads, writes, closes and waits on many plaintext
 * HTTP/2 connections (prior knowledge) in a random interleaving, and after every step reads the
 * context its own thread shows (proflink_get_trace, the record a profiler reads). The server
 * knows which streams it has read the request headers of and not finished answering (ground
 * truth: every request carries its own traceparent, whose trace id names its connection and its
 * stream). Checks, after each step:
 *  - a stream shown is open: the server read its HEADERS, has not written its END_STREAM or
 *    RST_STREAM, and has not read the client's RST_STREAM for it;
 *  - no other stream of its connection is open;
 *  - no connection the thread read or wrote since it last showed none, other than the shown
 *    stream's, has a stream open.
 * Clients send HEADERS on new streams (one or two per write; header blocks growing the HPACK
 * dynamic table), resets of their streams, frames of unknown types, and now and then a block
 * HPACK refuses; the server reads bytes cut anywhere, writes its SETTINGS first or not, answers
 * one stream at a time in pieces (HEADERS + DATA ending the stream, or RST_STREAM), closes and
 * polls. Prints "ok steps=N shown=S" or the first violation.
 *   api_h2_invariant SEED STEPS */
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "listen_local.h"

#define MAX_CONNS 24
#define MAX_STREAMS 48 /* client streams 1, 3, … 95 */
#define MAX_EVENTS 128

enum { S_NONE, S_SENT, S_OPEN, S_ENDED };

struct event {
    size_t end; /* offset in the client's stream just past the frame */
    uint32_t sid;
    int reset; /* 0: request HEADERS, 1: RST_STREAM */
};

struct conn {
    int live, cfd, sfd, touched, dead;
    unsigned uid;
    char out[1 << 15]; /* what the client sent, from the stream's start */
    size_t sent, rd;
    struct event ev[MAX_EVENTS];
    int nev, next_ev;
    uint8_t state[MAX_STREAMS];
    uint32_t next_sid;
    char ans[64]; /* the answer being written */
    size_t ans_len, ans_put;
    uint32_t ans_sid;
};

static struct conn conns[MAX_CONNS];
static unsigned next_uid = 1;
static unsigned long rng;
static int ls;

typedef int (*get_trace_fn)(uint8_t *, uint8_t *, uint8_t *, uint8_t *);
static get_trace_fn get_trace;

static unsigned rnd(unsigned n)
{
    rng = rng * 6364136223846793005ul + 1442695040888963407ul;
    return (unsigned)(rng >> 33) % n;
}

static void fail(const char *why, const struct conn *c)
{
    printf("VIOLATION: %s (connection %u)\n", why, c ? c->uid : 0);
    exit(1);
}

static uint8_t *st(struct conn *c, uint32_t sid) { return &c->state[(sid - 1) / 2]; }

static size_t frame(char *p, unsigned len, int type, int flags, uint32_t sid)
{
    p[0] = (char)(len >> 16);
    p[1] = (char)(len >> 8);
    p[2] = (char)len;
    p[3] = (char)type;
    p[4] = (char)flags;
    p[5] = (char)(sid >> 24);
    p[6] = (char)(sid >> 16);
    p[7] = (char)(sid >> 8);
    p[8] = (char)sid;
    return 9;
}

static void client_put(struct conn *c, const char *p, size_t n)
{
    memcpy(c->out + c->sent, p, n);
    c->sent += n;
}

static void client_flush(struct conn *c, size_t before)
{
    ssize_t w = write(c->cfd, c->out + before, c->sent - before);
    if (w != (ssize_t)(c->sent - before)) {
        fprintf(stderr, "client write: %zd\n", w);
        exit(2);
    }
}

static void open_conn(void)
{
    for (int i = 0; i < MAX_CONNS; i++) {
        struct conn *c = &conns[i];
        if (c->live)
            continue;
        struct sockaddr_in a;
        socklen_t al = sizeof a;
        getsockname(ls, (struct sockaddr *)&a, &al);
        memset(c, 0, sizeof *c);
        c->cfd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(c->cfd, (struct sockaddr *)&a, al) != 0) {
            perror("connect");
            exit(2);
        }
        c->sfd = accept(ls, NULL, NULL);
        if (c->sfd < 0) {
            perror("accept");
            exit(2);
        }
        fcntl(c->sfd, F_SETFL, O_NONBLOCK);
        fcntl(c->cfd, F_SETFL, O_NONBLOCK);
        c->uid = next_uid++;
        c->live = 1;
        c->next_sid = 1;
        char h[9];
        if (rnd(2)) { /* the server speaks first */
            frame(h, 0, 4, 0, 0);
            if (write(c->sfd, h, 9) != 9)
                exit(2);
        }
        client_put(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24);
        client_put(c, h, frame(h, 0, 4, 0, 0));
        client_flush(c, 0);
        return;
    }
}

/* A request's HEADERS on a new stream: :method GET, :scheme http, :path /, :authority added to
 * the dynamic table (then indexed from it), traceparent naming the connection and the stream. */
static void put_request(struct conn *c)
{
    uint32_t sid = c->next_sid;
    char b[160], h[9];
    size_t n = 0;
    memcpy(b, "\x82\x86\x84", 3);
    n = 3;
    if (sid == 1 || rnd(2)) {
        memcpy(b + n, "\x41\x01x", 3);
        n += 3;
    } else {
        b[n++] = (char)0xbe; /* the newest dynamic entry: :authority x */
    }
    memcpy(b + n, "\x00\x0btraceparent\x37", 14);
    n += 14;
    n += (size_t)sprintf(b + n, "00-%08x%08x%016x-00f067aa0ba902b7-01", c->uid, (unsigned)sid,
                         0xabcdu);
    client_put(c, h, frame(h, (unsigned)n, 1, 5, sid));
    client_put(c, b, n);
    c->ev[c->nev++] = (struct event){c->sent, sid, 0};
    *st(c, sid) = S_SENT;
    c->next_sid += 2;
}

static void client_send(struct conn *c)
{
    if (c->dead || c->nev >= MAX_EVENTS - 3 || c->sent + 512 > sizeof c->out)
        return;
    size_t before = c->sent;
    char h[13];
    unsigned kind = rnd(40);
    if (kind < 6) { /* reset one of its streams still going on */
        for (uint32_t sid = 1; sid < c->next_sid; sid += 2)
            if ((*st(c, sid) == S_SENT || *st(c, sid) == S_OPEN) && rnd(2)) {
                frame(h, 4, 3, 0, sid);
                memcpy(h + 9, "\0\0\0\x08", 4);
                client_put(c, h, 13);
                c->ev[c->nev++] = (struct event){c->sent, sid, 1};
                break;
            }
    } else if (kind < 8) { /* a frame of an unknown type: skipped */
        client_put(c, h, frame(h, 4, 0xfa, 0, 0));
        client_put(c, "abcd", 4);
    } else if (kind == 8 && rnd(8) == 0) { /* an index past the tables: not followed any more */
        client_put(c, h, frame(h, 2, 1, 5, c->next_sid));
        client_put(c, "\xff\x7f", 2);
        c->next_sid += 2;
        c->dead = 1; /* a real server would close it: nothing more is sent */
    } else if (c->next_sid < 2 * MAX_STREAMS - 3) {
        put_request(c);
        if (kind < 14)
            put_request(c); /* two in one write */
    }
    if (c->sent > before)
        client_flush(c, before);
}

static void server_read(struct conn *c)
{
    char buf[512];
    size_t want = 1 + rnd(rnd(2) ? 30 : sizeof buf);
    ssize_t n = read(c->sfd, buf, want);
    if (n <= 0)
        return;
    if (memcmp(buf, c->out + c->rd, (size_t)n) != 0) {
        fprintf(stderr, "stream mismatch\n");
        exit(2);
    }
    c->rd += (size_t)n;
    c->touched = 1;
    for (; c->next_ev < c->nev && c->ev[c->next_ev].end <= c->rd; c->next_ev++) {
        uint8_t *s = st(c, c->ev[c->next_ev].sid);
        if (!c->ev[c->next_ev].reset)
            *s = S_OPEN;
        else if (*s == S_OPEN)
            *s = S_ENDED;
    }
}

static void server_write(struct conn *c)
{
    if (c->ans_put == c->ans_len) { /* a new answer, to an open stream */
        uint32_t open[MAX_STREAMS];
        int n = 0;
        for (uint32_t sid = 1; sid < c->next_sid; sid += 2)
            if (*st(c, sid) == S_OPEN)
                open[n++] = sid;
        if (!n)
            return;
        c->ans_sid = open[rnd((unsigned)n)];
        if (rnd(5)) {
            c->ans_len = frame(c->ans, 1, 1, 4, c->ans_sid);
            c->ans[c->ans_len++] = (char)0x88; /* :status 200 */
            c->ans_len += frame(c->ans + c->ans_len, 5, 0, 1, c->ans_sid);
            memcpy(c->ans + c->ans_len, "hello", 5);
            c->ans_len += 5;
        } else {
            c->ans_len = frame(c->ans, 4, 3, 0, c->ans_sid);
            memcpy(c->ans + c->ans_len, "\0\0\0\x02", 4);
            c->ans_len += 4;
        }
        c->ans_put = 0;
    }
    size_t n = 1 + rnd((unsigned)(c->ans_len - c->ans_put));
    ssize_t w = write(c->sfd, c->ans + c->ans_put, n);
    if (w > 0) {
        c->ans_put += (size_t)w;
        c->touched = 1;
        if (c->ans_put == c->ans_len)
            *st(c, c->ans_sid) = S_ENDED;
    }
    char sink[4096]; /* the client reads its answers */
    while (read(c->cfd, sink, sizeof sink) > 0) {
    }
}

static void close_conn(struct conn *c)
{
    close(c->sfd);
    close(c->cfd);
    c->live = 0;
}

static void wait_all(void)
{
    struct pollfd p[MAX_CONNS];
    int n = 0;
    for (int i = 0; i < MAX_CONNS; i++)
        if (conns[i].live)
            p[n++] = (struct pollfd){.fd = conns[i].sfd, .events = POLLIN};
    poll(p, (nfds_t)n, 0);
}

static int any_open(struct conn *c, uint32_t except)
{
    for (uint32_t sid = 1; sid < c->next_sid; sid += 2)
        if (sid != except && *st(c, sid) == S_OPEN)
            return 1;
    return 0;
}

static int check(void)
{
    uint8_t t[16];
    int r = get_trace(t, NULL, NULL, NULL);
    if (r <= 0) {
        for (int i = 0; i < MAX_CONNS; i++)
            conns[i].touched = 0;
        return 0;
    }
    unsigned uid = (unsigned)t[0] << 24 | t[1] << 16 | t[2] << 8 | t[3];
    unsigned sid = (unsigned)t[4] << 24 | t[5] << 16 | t[6] << 8 | t[7];
    struct conn *shown = NULL;
    for (int i = 0; i < MAX_CONNS; i++)
        if (conns[i].live && conns[i].uid == uid)
            shown = &conns[i];
    if (!shown)
        fail("shows a stream of a connection that is closed or never was", NULL);
    if (!(sid & 1) || sid >= shown->next_sid || *st(shown, sid) != S_OPEN)
        fail("shows a stream that is not open", shown);
    if (any_open(shown, sid))
        fail("shows a stream while another stream of its connection is open", shown);
    for (int i = 0; i < MAX_CONNS; i++) {
        struct conn *c = &conns[i];
        if (c->live && c != shown && c->touched && any_open(c, 0))
            fail("shows a stream while a connection it touched since it last showed none has "
                 "one open",
                 c);
    }
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    rng = strtoul(argv[1], NULL, 10) * 2654435761ul + 1;
    long steps = atol(argv[2]), shown = 0;
    get_trace = (get_trace_fn)dlsym(RTLD_DEFAULT, "proflink_get_trace");
    if (!get_trace) {
        printf("proflink is not loaded\n");
        return 2;
    }
    int port;
    ls = listen_local_any(128, &port);
    if (ls < 0)
        return 2;
    for (long s = 0; s < steps; s++) {
        int live[MAX_CONNS], n = 0;
        for (int i = 0; i < MAX_CONNS; i++)
            if (conns[i].live)
                live[n++] = i;
        struct conn *c = n ? &conns[live[rnd((unsigned)n)]] : NULL;
        /* calm stretches (a few connections, answers as often as requests) and floods
         * alternate */
        int flood = (s / 1500) % 2;
        unsigned a = rnd(100);
        if (!c || (a < 5 && (flood || n < 3)))
            open_conn();
        else if (a < 5 || (c->next_sid >= 2 * MAX_STREAMS - 3 && !any_open(c, 0)))
            close_conn(c);
        else if (a < (flood ? 36u : 20u))
            client_send(c);
        else if (a < (flood ? 66u : 55u))
            server_read(c);
        else if (a < 90)
            server_write(c);
        else if (a < 92)
            close_conn(c);
        else
            wait_all();
        shown += check();
    }
    printf("ok steps=%ld shown=%ld\n", steps, shown);
    return 0;
}
