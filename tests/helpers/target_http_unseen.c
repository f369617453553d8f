/* target_http_unseen — a server that knows nothing of proflink and moves a connection's bytes,
 * or closes it, where a preloaded library cannot see. It listens on 127.0.0.1 (a kernel-picked
 * port, printed as "port N"), accepts one connection, reads a request head with read() (the
 * head only: its end is found with MSG_PEEK first) and works 2 s on it ("working 1"). Then:
 *   fclose    fdopen + fclose the connection; a file holding a request head with TRACEPARENT
 *             takes the number and is read with read() ("reused N" when the number is the
 *             connection's)
 *   rawclose  the same, the connection closed by the system call instruction itself
 *   splice    the request's body (Content-Length) goes to a pipe by splice(); the answer is
 *             written; the next request is read with read(), head then body
 *   dup       the answer is written on a dup() of the connection; the next request's head is
 *             read from the connection
 * and works 2 s more ("working 2"), then sleeps. usage: target_http_unseen METHOD TRACEPARENT */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "leaves/raw_syscall.h"

static void spin(int seconds, int step)
{
    printf("working %d\n", step);
    fflush(stdout);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while (t.tv_sec - t0.tv_sec < seconds);
}

/* Reads exactly one head from fd; returns its Content-Length (0 if none), -1 on errors. */
static long read_head(int fd)
{
    char buf[4096];
    ssize_t n;
    char *end = NULL;
    for (;;) {
        n = recv(fd, buf, sizeof buf - 1, MSG_PEEK);
        if (n < 0 && errno == EINTR) /* proflink-inspect --stop interrupts it (musl) */
            continue;
        if (n <= 0)
            return -1;
        buf[n] = 0;
        if ((end = strstr(buf, "\r\n\r\n")))
            break;
        usleep(10000);
    }
    size_t len = (size_t)(end + 4 - buf);
    if (read(fd, buf, len) != (ssize_t)len)
        return -1;
    buf[len] = 0;
    char *cl = strcasestr(buf, "\ncontent-length:");
    return cl ? atol(cl + 16) : 0;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 1) ||
        getsockname(ls, (struct sockaddr *)&a, &alen))
        return 1;
    printf("port %d\n", ntohs(a.sin_port));
    fflush(stdout);
    int fd = accept(ls, NULL, NULL);
    long body = read_head(fd);
    if (body < 0)
        return 3;
    spin(2, 1);
    const char *m = argv[1];
    if (!strcmp(m, "splice")) {
        int p[2];
        if (pipe(p) != 0)
            return 4;
        char sink[65536];
        while (body > 0) {
            ssize_t n = splice(fd, NULL, p[1], NULL, (size_t)body, 0);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return 5;
            body -= n;
            if (read(p[0], sink, (size_t)n) != n)
                return 5;
        }
        static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        if (write(fd, ok, sizeof ok - 1) != sizeof ok - 1 || (body = read_head(fd)) < 0)
            return 6;
        while (body > 0) { /* the next request's body, read as usual */
            ssize_t n = read(fd, sink, (size_t)body < sizeof sink ? (size_t)body : sizeof sink);
            if (n <= 0)
                return 7;
            body -= n;
        }
    } else if (!strcmp(m, "dup")) {
        static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        int d = dup(fd);
        if (d < 0 || write(d, ok, sizeof ok - 1) != sizeof ok - 1 || close(d) != 0 ||
            read_head(fd) < 0)
            return 6;
    } else {
        char path[] = "/tmp/target_http_unseen.XXXXXX";
        int tmp = mkstemp(path);
        if (tmp < 0)
            return 4;
        dprintf(tmp, "GET / HTTP/1.1\r\ntraceparent: %s\r\n\r\n", argv[2]);
        close(tmp);
        if (!strcmp(m, "fclose")) {
            FILE *f = fdopen(fd, "r+");
            if (!f || fclose(f) != 0)
                return 5;
        } else {
            raw_syscall6(SYS_close, fd, 0, 0, 0, 0, 0);
        }
        int again = open(path, O_RDONLY);
        unlink(path);
        printf("reused %d\n", again == fd);
        char buf[512];
        if (read(again, buf, sizeof buf) <= 0)
            return 6;
    }
    spin(2, 2);
    sleep(30);
    return 0;
}
