/* api_http_invariant — a randomised driver of HTTP reading (PROFLINK_HTTP=1, the library preloaded):
 * one server thread accepts, reads, writes, closes and waits on many connections of several
 * clients in a random interleaving, and after every step reads the context its own thread
 * shows (proflink_get_trace, the record a profiler reads). The server knows what it has read
 * and answered (ground truth: every request carries its own traceparent, whose trace id names
 * its connection and its number). Checks, after each step:
 *  - a request shown is one the server read and has not finished answering, the oldest such on
 *    its connection (answers go in order);
 *  - no connection the thread read or wrote since it last showed none, other than the shown
 *    request's, has a request open (the thread might be working on that one).
 * Clients send plain GETs, HEADs, pipelined pairs, heads cut anywhere, and bytes that are not
 * HTTP; the server answers in pieces, writes answers when no request is open (an answer to a
 * request smuggled in a body, an early error), closes and polls. More than 32 connections hold
 * requests at once (the thread's notes). Prints "ok steps=N shown=S" or the first violation.
 *   api_http_invariant SEED STEPS */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "listen_local.h"

#define MAX_CONNS 48
#define MAX_REQS 64

struct req {
    size_t head_end; /* offset in the client's stream just past the head */
    int head;        /* a HEAD request: its answer has no body */
    int answered;
};

struct conn {
    int live, cfd, sfd;
    unsigned uid;
    char out[1 << 14]; /* what the client sent, from the stream's start */
    size_t sent, rd;
    struct req reqs[MAX_REQS];
    int nreq;
    char ans[256];       /* the answer being written */
    size_t ans_len, ans_put;
    int ans_req;         /* which request it answers, -1: none (a stray answer) */
    int touched;
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

static int is_open(const struct conn *c, int r) { return c->rd >= c->reqs[r].head_end && !c->reqs[r].answered; }

static int oldest_open(const struct conn *c)
{
    for (int r = 0; r < c->nreq; r++)
        if (!c->reqs[r].answered)
            return is_open(c, r) ? r : -1;
    return -1;
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
        c->ans_req = -1;
        return;
    }
}

static void client_put(struct conn *c, const char *p, size_t n)
{
    if (c->sent + n > sizeof c->out)
        return;
    memcpy(c->out + c->sent, p, n);
    c->sent += n;
}

/* The client sends one request (or bytes that are not HTTP) on c. */
static void client_send(struct conn *c)
{
    if (c->nreq >= MAX_REQS - 2 || c->sent + 512 > sizeof c->out)
        return;
    size_t before = c->sent;
    char h[256];
    int kind = rnd(20);
    for (int k = 0; k < (kind == 0 ? 2 : 1); k++) { /* kind 0: two pipelined */
        int head = kind == 1;
        int n = snprintf(h, sizeof h,
                         "%s /r HTTP/1.1\r\nHost: x\r\ntraceparent: 00-%08x%08x%016x-00f067aa0ba902b7-01\r\n\r\n",
                         head ? "HEAD" : "GET", c->uid, (unsigned)c->nreq, 0xabcdu);
        client_put(c, h, (size_t)n);
        c->reqs[c->nreq].head_end = c->sent;
        c->reqs[c->nreq].head = head;
        c->nreq++;
    }
    if (kind == 2 && c->nreq == 1) { /* not HTTP: the connection is not followed */
        c->sent = before;
        c->nreq = 0;
        client_put(c, "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11);
    }
    ssize_t w = write(c->cfd, c->out + before, c->sent - before);
    if (w != (ssize_t)(c->sent - before)) {
        fprintf(stderr, "client write: %zd\n", w);
        exit(2);
    }
}

static void server_read(struct conn *c)
{
    char buf[512];
    size_t want = 1 + rnd(rnd(2) ? 40 : sizeof buf);
    ssize_t n = read(c->sfd, buf, want);
    if (n > 0) {
        if (memcmp(buf, c->out + c->rd, (size_t)n) != 0) {
            fprintf(stderr, "stream mismatch\n");
            exit(2);
        }
        c->rd += (size_t)n;
        c->touched = 1;
    }
}

static void server_write(struct conn *c)
{
    if (c->ans_put == c->ans_len) { /* a new answer */
        int r = oldest_open(c);
        int stray = r < 0 || rnd(30) == 0;
        for (int q = 0; stray && q < c->nreq; q++)
            if (is_open(c, q) || (c->reqs[q].answered == 0 && c->rd >= c->reqs[q].head_end))
                return; /* strays only where nothing is open (see docs/http.md) */
        if (stray && rnd(3))
            return;
        if (stray)
            c->ans_len = (size_t)snprintf(c->ans, sizeof c->ans, rnd(2) ?
                                          "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" :
                                          "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        else if (c->reqs[r].head)
            c->ans_len = (size_t)snprintf(c->ans, sizeof c->ans,
                                          "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n");
        else
            c->ans_len = (size_t)snprintf(c->ans, sizeof c->ans,
                                          "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
        c->ans_put = 0;
        c->ans_req = stray ? -1 : r;
    }
    size_t n = 1 + rnd((unsigned)(c->ans_len - c->ans_put));
    ssize_t w = write(c->sfd, c->ans + c->ans_put, n);
    if (w > 0) {
        c->ans_put += (size_t)w;
        c->touched = 1;
        if (c->ans_put == c->ans_len && c->ans_req >= 0)
            c->reqs[c->ans_req].answered = 1;
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
    unsigned num = (unsigned)t[4] << 24 | t[5] << 16 | t[6] << 8 | t[7];
    struct conn *shown = NULL;
    for (int i = 0; i < MAX_CONNS; i++)
        if (conns[i].live && conns[i].uid == uid)
            shown = &conns[i];
    if (!shown)
        fail("shows a request of a connection that is closed or never was", NULL);
    if ((int)num >= shown->nreq || !is_open(shown, (int)num))
        fail("shows a request that is not open", shown);
    if (oldest_open(shown) != (int)num)
        fail("shows a request that is not its connection's oldest open one", shown);
    for (int i = 0; i < MAX_CONNS; i++) {
        struct conn *c = &conns[i];
        if (c->live && c != shown && c->touched)
            for (int q = 0; q < c->nreq; q++)
                if (is_open(c, q))
                    fail("shows a request while a connection it touched since it last showed "
                         "none has one open",
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
        /* calm stretches (a few connections, answers as often as requests) and floods (up
         * to MAX_CONNS, requests held) alternate */
        int flood = (s / 1500) % 2;
        unsigned a = rnd(100);
        if (!c || (a < 6 && (flood || n < 3)))
            open_conn();
        else if (a < 6)
            close_conn(c);
        else if (a < (flood ? 36u : 20u))
            client_send(c);
        else if (a < (flood ? 66u : 55u))
            server_read(c);
        else if (a < 88)
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
