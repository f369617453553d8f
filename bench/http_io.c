/* http_io — what HTTP reading (PROFLINK_HTTP) costs, measured in one process run under the
 * preloaded library with or without the option (bench/run.sh alternates the two):
 *   http_io file N        ns per read() of 4 KiB from a regular file
 *   http_io sock N        ns per recv() of 64 bytes from a stream socket that is not an
 *                         accepted connection (socketpair), the "one cheap check" path
 *   http_io write N       ns per write() + send() of 64 bytes each (and one recv() of both) on
 *                         a socketpair, in a process that has a tracked connection open (an
 *                         accepted loopback connection): a server's writes to other files
 *   http_io keepalive S   requests per second for S seconds: a thread-per-connection server
 *                         thread answering one keep-alive client over TCP on 127.0.0.1, each
 *                         request carrying a traceparent
 *   http_io h2 S          the same over HTTP/2 (plaintext, prior knowledge): one stream at a
 *                         time, each request a HEADERS frame whose header block carries a
 *                         traceparent (literal fields: every block the same bytes), each
 *                         response a HEADERS and a DATA frame ending the stream
 * Prints "<mode> <value>" (keepalive and h2: also the process's CPU ns per request). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
    perror(what);
    exit(1);
}

static void bench_file(long n)
{
    char path[] = "/tmp/http_io_bench.XXXXXX", buf[4096] = {0};
    int fd = mkstemp(path);
    if (fd < 0)
        die("mkstemp");
    unlink(path);
    for (int i = 0; i < 256; i++) /* 1 MiB, in the page cache */
        if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
            die("write");
    lseek(fd, 0, SEEK_SET);
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r == 0)
            lseek(fd, 0, SEEK_SET);
        else if (r < 0)
            die("read");
    }
    printf("file %.1f\n", (now_s() - t0) * 1e9 / n);
}

static void bench_sock(long n)
{
    int sv[2];
    char buf[64] = {0};
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        die("socketpair");
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        if (write(sv[0], buf, sizeof buf) != (ssize_t)sizeof buf)
            die("write");
        if (recv(sv[1], buf, sizeof buf, 0) != (ssize_t)sizeof buf)
            die("recv");
    }
    printf("sock %.1f\n", (now_s() - t0) * 1e9 / n);
}

/* A loopback connection accepted by this process, left open: HTTP reading tracks it, so
 * lookups of other descriptors walk the table instead of stopping at "none tracked". */
static void accept_one(void)
{
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 1) != 0 ||
        getsockname(ls, (struct sockaddr *)&a, &len) != 0 ||
        connect(c, (struct sockaddr *)&a, sizeof a) != 0 || accept(ls, NULL, NULL) < 0)
        die("accept_one");
}

static void bench_write(long n)
{
    int sv[2];
    char buf[128] = {0};
    accept_one();
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        die("socketpair");
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        if (write(sv[0], buf, 64) != 64 || send(sv[0], buf, 64, 0) != 64)
            die("write");
        size_t got = 0;
        while (got < sizeof buf) {
            ssize_t r = recv(sv[1], buf, sizeof buf - got, 0);
            if (r <= 0)
                die("recv");
            got += (size_t)r;
        }
    }
    printf("write %.1f\n", (now_s() - t0) * 1e9 / n);
}

static const char request[] =
    "GET /item/42 HTTP/1.1\r\nHost: bench\r\nUser-Agent: http_io\r\nAccept: */*\r\n"
    "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n\r\n";
static const char response[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/* The server side of one connection: read a head (it arrives whole), answer. */
static void *serve(void *arg)
{
    int ls = (int)(long)arg;
    int fd = accept(ls, NULL, NULL);
    char buf[1024];
    while (read(fd, buf, sizeof buf) > 0)
        if (write(fd, response, sizeof response - 1) < 0)
            break;
    close(fd);
    return NULL;
}

/* HTTP/2: the client's preface and empty SETTINGS, then one request per stream. */
static const char h2_preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
                                 "\0\0\0\x04\0\0\0\0\0";
/* :method GET, :scheme http (static table), :path and :authority literal with indexed names,
 * traceparent literal with a new name, none added to the dynamic table */
static const char h2_block[] = "\x82\x86\x04\x08/item/42\x01\x05" "bench"
                               "\x00\x0btraceparent\x37"
                               "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
#define H2_BLOCK_LEN (sizeof h2_block - 1)
#define H2_REQUEST_LEN (9 + H2_BLOCK_LEN)
/* :status 200 (static), then DATA "ok" ending the stream; the stream id is patched in */
static const char h2_response[] = "\0\0\x01\x01\x04\0\0\0\0\x88"
                                  "\0\0\x02\0\x01\0\0\0\0ok";
#define H2_RESPONSE_LEN (sizeof h2_response - 1)

static int read_full(int fd, char *buf, size_t n)
{
    for (size_t got = 0; got < n;) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

static void *serve_h2(void *arg)
{
    int ls = (int)(long)arg;
    int fd = accept(ls, NULL, NULL);
    char buf[1024], out[H2_RESPONSE_LEN];
    memcpy(out, h2_response, sizeof out);
    static const char settings[9] = {0, 0, 0, 4, 0, 0, 0, 0, 0};
    if (write(fd, settings, sizeof settings) != sizeof settings ||
        read_full(fd, buf, sizeof h2_preface - 1) != 0)
        return NULL;
    while (read_full(fd, buf, H2_REQUEST_LEN) == 0) {
        memcpy(out + 5, buf + 5, 4); /* the request's stream id */
        memcpy(out + 10 + 5, buf + 5, 4);
        if (write(fd, out, sizeof out) < 0)
            break;
    }
    close(fd);
    return NULL;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static void bench_h2(double seconds)
{
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 1) != 0 ||
        getsockname(ls, (struct sockaddr *)&a, &len) != 0)
        die("listen");
    pthread_t th;
    pthread_create(&th, NULL, serve_h2, (void *)(long)ls);
    int c = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (connect(c, (struct sockaddr *)&a, sizeof a) != 0)
        die("connect");
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char buf[H2_RESPONSE_LEN], req[H2_REQUEST_LEN] = {0, 0, (char)H2_BLOCK_LEN, 1, 5};
    memcpy(req + 9, h2_block, H2_BLOCK_LEN);
    if (write(c, h2_preface, sizeof h2_preface - 1) != (ssize_t)sizeof h2_preface - 1 ||
        read_full(c, buf, 9) != 0)
        die("preface");
    long n = 0;
    uint32_t stream = 1;
    double cpu0 = cpu_s(), t0 = now_s(), t;
    do {
        for (int i = 0; i < 100; i++, n++, stream += 2) {
            req[5] = (char)(stream >> 24);
            req[6] = (char)(stream >> 16);
            req[7] = (char)(stream >> 8);
            req[8] = (char)stream;
            if (write(c, req, sizeof req) != (ssize_t)sizeof req)
                die("write");
            if (read_full(c, buf, sizeof buf) != 0)
                die("read");
        }
        t = now_s() - t0;
    } while (t < seconds);
    close(c);
    pthread_join(th, NULL);
    printf("h2 %.0f\nh2_cpu_ns %.0f\n", n / t, (cpu_s() - cpu0) * 1e9 / n);
}

static void bench_keepalive(double seconds)
{
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 1) != 0 ||
        getsockname(ls, (struct sockaddr *)&a, &len) != 0)
        die("listen");
    pthread_t th;
    pthread_create(&th, NULL, serve, (void *)(long)ls);
    int c = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (connect(c, (struct sockaddr *)&a, sizeof a) != 0)
        die("connect");
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char buf[256];
    long n = 0;
    struct rusage ru0;
    getrusage(RUSAGE_SELF, &ru0);
    double cpu0 = ru0.ru_utime.tv_sec + ru0.ru_utime.tv_usec / 1e6 + ru0.ru_stime.tv_sec +
                  ru0.ru_stime.tv_usec / 1e6;
    double t0 = now_s(), t;
    do {
        for (int i = 0; i < 100; i++, n++) {
            if (write(c, request, sizeof request - 1) != (ssize_t)sizeof request - 1)
                die("write");
            size_t got = 0;
            while (got < sizeof response - 1) {
                ssize_t r = read(c, buf, sizeof buf);
                if (r <= 0)
                    die("read");
                got += (size_t)r;
            }
        }
        t = now_s() - t0;
    } while (t < seconds);
    close(c);
    pthread_join(th, NULL);
    /* the CPU time the process spent per request (both sides, user and kernel): on a shared
     * machine the wall clock also counts other programs' turns, this does not */
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
                 ru.ru_stime.tv_usec / 1e6;
    printf("keepalive %.0f\nkeepalive_cpu_ns %.0f\n", n / t, (cpu - cpu0) * 1e9 / n);
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    if (!strcmp(argv[1], "file"))
        bench_file(atol(argv[2]));
    else if (!strcmp(argv[1], "sock"))
        bench_sock(atol(argv[2]));
    else if (!strcmp(argv[1], "write"))
        bench_write(atol(argv[2]));
    else if (!strcmp(argv[1], "keepalive"))
        bench_keepalive(atof(argv[2]));
    else if (!strcmp(argv[1], "h2"))
        bench_h2(atof(argv[2]));
    else
        return 2;
    return 0;
}
