/* target_http_server — a small HTTP/1.1 server with one thread per connection that knows
 * nothing of proflink: it reads each request head with read() until the empty line (however
 * the client splits it), skips a Content-Length body, and for GET /spin?ms=N burns N ms of CPU
 * in the serving thread before answering; every answer is that thread's id. Keep-alive until
 * the client closes. Usage: target_http_server PORT (listens on 127.0.0.1). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "listen_local.h"

#define HEAD_MAX 16384

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void spin(long ms)
{
    volatile unsigned long x = 0;
    double end = now() + ms / 1000.0;
    while (now() < end)
        for (int i = 0; i < 10000; i++)
            x++;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void *serve(void *arg)
{
    int fd = (int)(long)arg;
    static __thread char buf[HEAD_MAX + 1];
    size_t have = 0;
    for (;;) {
        char *end;
        buf[have] = 0;
        while (!(end = strstr(buf, "\r\n\r\n"))) {
            if (have == HEAD_MAX)
                goto out;
            ssize_t r = read(fd, buf + have, HEAD_MAX - have);
            if (r <= 0)
                goto out;
            have += (size_t)r;
            buf[have] = 0;
        }
        size_t head = (size_t)(end + 4 - buf);
        long body = 0, ms = 0;
        char *cl = strcasestr(buf, "\r\ncontent-length:");
        if (cl && cl < end)
            body = atol(cl + 17);
        char *q = strstr(buf, "/spin?ms=");
        if (q && q < end)
            ms = atol(q + 9);
        /* the body: what is already buffered, then the rest from the socket */
        size_t extra = have - head;
        size_t used = extra < (size_t)body ? extra : (size_t)body;
        long left = body - (long)used;
        while (left > 0) {
            char sink[4096];
            ssize_t r = read(fd, sink, left < (long)sizeof sink ? (size_t)left : sizeof sink);
            if (r <= 0)
                goto out;
            left -= r;
        }
        memmove(buf, buf + head + used, have - head - used);
        have -= head + used;
        spin(ms);
        char resp[256], bodytxt[32];
        int bl = snprintf(bodytxt, sizeof bodytxt, "%d\n", (int)gettid());
        int n = snprintf(resp, sizeof resp,
                         "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nContent-Type: text/plain\r\n\r\n%s",
                         bl, bodytxt);
        if (write_all(fd, resp, (size_t)n) != 0)
            goto out;
    }
out:
    close(fd);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s PORT\n", argv[0]);
        return 2;
    }
    int ls = listen_local(argv[1], 64);
    for (;;) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0)
            continue;
        pthread_t t;
        if (pthread_create(&t, NULL, serve, (void *)(long)fd) != 0) {
            close(fd);
            continue;
        }
        pthread_detach(t);
    }
}
