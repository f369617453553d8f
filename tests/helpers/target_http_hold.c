/* target_http_hold — a one-thread epoll HTTP/1.1 server that holds some requests open: it
 * knows nothing of proflink. `GET /hold` is never answered (a long poll: its client decides
 * when it ends, by closing); `GET /work?ms=N` prints "working <n>" (its n-th work request),
 * burns N ms of CPU, prints "worked <n>" and is answered. It prints "held <count>" after each
 * held head and "closed <count>" after each connection its client closed.
 *   target_http_hold   — prints "port N" (kernel-picked, 127.0.0.1) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "listen_local.h"

#define MAX_FD 4096

static char bufs[MAX_FD][4096];
static size_t lens[MAX_FD];

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int port = 0, ls = listen_local_any(128, &port);
    if (ls < 0)
        return 1;
    printf("port %d\n", port);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = ls};
    epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
    int held = 0, closed = 0, works = 0;
    for (;;) {
        struct epoll_event got[64];
        int n = epoll_wait(ep, got, 64, -1);
        for (int i = 0; i < n; i++) {
            int fd = got[i].data.fd;
            if (fd == ls) {
                int c = accept(ls, NULL, NULL);
                if (c < 0 || c >= MAX_FD) {
                    if (c >= 0)
                        close(c);
                    continue;
                }
                lens[c] = 0;
                struct epoll_event ce = {.events = EPOLLIN, .data.fd = c};
                epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce);
                continue;
            }
            ssize_t r = read(fd, bufs[fd] + lens[fd], sizeof bufs[fd] - 1 - lens[fd]);
            if (r <= 0) {
                epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
                close(fd);
                printf("closed %d\n", ++closed);
                continue;
            }
            lens[fd] += (size_t)r;
            bufs[fd][lens[fd]] = 0;
            char *end;
            while ((end = strstr(bufs[fd], "\r\n\r\n")) != NULL) {
                size_t head = (size_t)(end + 4 - bufs[fd]);
                if (strncmp(bufs[fd], "GET /hold", 9) == 0) {
                    printf("held %d\n", ++held);
                } else {
                    char *ms = strstr(bufs[fd], "?ms=");
                    double until = cpu_s() + (ms ? atoi(ms + 4) : 0) / 1000.0;
                    printf("working %d\n", ++works);
                    volatile unsigned long x = 0;
                    while (cpu_s() < until)
                        x++;
                    printf("worked %d\n", works);
                    static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
                    if (write(fd, ok, sizeof ok - 1) < 0)
                        perror("write");
                }
                memmove(bufs[fd], bufs[fd] + head, lens[fd] - head + 1);
                lens[fd] -= head;
            }
        }
    }
}
