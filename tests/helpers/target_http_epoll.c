/* target_http_epoll — one-thread epoll HTTP/1.1 servers of three shapes, for the HTTP matrix
 * (tests/http_matrix.py); they know nothing of proflink. Each request `GET /work?ms=N` costs N
 * ms of CPU, logged by the server itself from its own parsing of the request: one line per
 * stretch of work, "w <tid> <start ns> <end ns> <trace id or ->" (CLOCK_MONOTONIC), to LOG.
 *
 *   target_http_epoll inline|batch|rr LOG   — prints "port N" (kernel-picked, 127.0.0.1)
 * inline: each ready connection is read, worked on and answered in turn;
 * batch:  every ready connection is read first, then each request is worked on and answered;
 * rr:     requests are worked on in 2 ms slices, round robin, new ones read between rounds
 *         (epoll_wait with a zero timeout), each answered when its work is done. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 1024
#define SLICE_NS 2000000L

struct conn {
    int fd;
    char buf[8192];
    size_t len;
    long left_ns;    /* work still to do for the pending request; -1: none */
    char trace[33];
};

static struct conn *conns[MAX_CONNS];
static FILE *log_f;

static long now_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* Burns up to ns of CPU time for c's request and logs the stretch. */
static void work(struct conn *c, long ns)
{
    long start = now_ns(CLOCK_MONOTONIC), cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    while (now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0 < ns)
        ;
    fprintf(log_f, "w %d %ld %ld %s\n", gettid(), start, now_ns(CLOCK_MONOTONIC), c->trace);
    fflush(log_f);
    c->left_ns -= ns;
}

/* A whole head at the start of c's buffer: takes it (sets the request's trace and work), 1;
 * 0 when there is none yet. */
static int take_head(struct conn *c)
{
    c->buf[c->len] = 0;
    char *end = strstr(c->buf, "\r\n\r\n");
    if (!end)
        return 0;
    strcpy(c->trace, "-");
    char *tp = strcasestr(c->buf, "\ntraceparent:");
    if (tp && tp < end) {
        tp += 13;
        while (*tp == ' ')
            tp++;
        if (tp[0] == '0' && tp[1] == '0' && tp[2] == '-' && tp[35] == '-') {
            memcpy(c->trace, tp + 3, 32);
            c->trace[32] = 0;
        }
    }
    char *ms = strstr(c->buf, "?ms=");
    c->left_ns = ms && ms < end ? atol(ms + 4) * 1000000L : 0;
    size_t used = (size_t)(end + 4 - c->buf);
    memmove(c->buf, c->buf + used, c->len - used);
    c->len -= used;
    return 1;
}

/* Reads what c has; 1 when a whole head is there (taken), 0 when not yet, -1 when the
 * connection is closed. */
static int read_request(struct conn *c)
{
    ssize_t n = read(c->fd, c->buf + c->len, sizeof c->buf - 1 - c->len);
    if (n <= 0)
        return -1;
    c->len += (size_t)n;
    return take_head(c);
}

static void answer(struct conn *c)
{
    static const char r[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    if (write(c->fd, r, sizeof r - 1) < 0)
        perror("write");
    c->left_ns = -1;
}

static void drop(int ep, struct conn *c)
{
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    conns[c->fd] = NULL;
    free(c);
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    const char *mode = argv[1];
    log_f = fopen(argv[2], "a");
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    if (!log_f || bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 128) ||
        getsockname(ls, (struct sockaddr *)&a, &alen))
        return 1;
    printf("port %d\n", ntohs(a.sin_port));
    fflush(stdout);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = ls};
    epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
    struct epoll_event ready[64];
    int rr = !strcmp(mode, "rr"), batch = !strcmp(mode, "batch");
    for (;;) {
        int pending = 0;
        for (int i = 0; i < MAX_CONNS; i++)
            pending += conns[i] && conns[i]->left_ns >= 0;
        int n = epoll_wait(ep, ready, 64, rr && pending ? 0 : -1);
        struct conn *got[64];
        int ngot = 0;
        for (int i = 0; i < n; i++) {
            int fd = ready[i].data.fd;
            if (fd == ls) {
                int c = accept(ls, NULL, NULL);
                if (c < 0 || c >= MAX_CONNS) {
                    if (c >= 0)
                        close(c);
                    continue;
                }
                conns[c] = calloc(1, sizeof *conns[c]);
                conns[c]->fd = c;
                conns[c]->left_ns = -1;
                ev.data.fd = c;
                epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
                continue;
            }
            struct conn *c = conns[fd];
            if (!c || c->left_ns >= 0)
                continue; /* a request of it is still being worked on: read it later */
            int r = read_request(c);
            if (r < 0) {
                drop(ep, c);
            } else if (r > 0 && !batch && !rr) {
                do { /* pipelined heads read at once are answered in turn */
                    work(c, c->left_ns);
                    answer(c);
                } while (take_head(c));
            } else if (r > 0) {
                got[ngot++] = c;
            }
        }
        if (batch)
            for (int i = 0; i < ngot; i++) {
                work(got[i], got[i]->left_ns);
                answer(got[i]);
            }
        if (rr)
            for (int i = 0; i < MAX_CONNS; i++) {
                struct conn *c = conns[i];
                if (!c || c->left_ns < 0)
                    continue;
                work(c, c->left_ns < SLICE_NS ? c->left_ns : SLICE_NS);
                if (c->left_ns <= 0)
                    answer(c);
            }
    }
}
