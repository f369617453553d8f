/* target_http_adopt — a server that knows nothing of proflink, where one thread reads a
 * request and another answers it: it listens on 127.0.0.1 (a kernel-picked port, printed as
 * "port N"), accepts one connection and reads a request head with read(), then hands the
 * connection to a worker thread and waits in read() for the next request. The worker writes
 * the head of a chunked answer and a first chunk, works 2 s ("working 1 TID"), writes the last
 * chunk, then works 2 s more ("working 2 TID") and exits; the program sleeps. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void spin(int seconds, int step)
{
    printf("working %d %d\n", step, gettid());
    fflush(stdout);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while (t.tv_sec - t0.tv_sec < seconds);
}

static void put(int fd, const char *s)
{
    size_t n = strlen(s);
    if (write(fd, s, n) != (ssize_t)n)
        perror("write");
}

static void *worker(void *arg)
{
    int fd = (int)(long)arg;
    put(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
    spin(2, 1);
    put(fd, "0\r\n\r\n");
    spin(2, 2);
    return NULL;
}

int main(void)
{
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 1) ||
        getsockname(ls, (struct sockaddr *)&a, &alen))
        return 1;
    printf("port %d\n", ntohs(a.sin_port));
    fflush(stdout);
    int fd = accept(ls, NULL, NULL);
    char buf[4096];
    size_t have = 0;
    while (have < sizeof buf - 1 && !memmem(buf, have, "\r\n\r\n", 4)) {
        ssize_t r = read(fd, buf + have, sizeof buf - 1 - have);
        if (r <= 0)
            return 3;
        have += (size_t)r;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, worker, (void *)(long)fd) != 0)
        return 4;
    (void)!read(fd, buf, sizeof buf); /* the next request, or the client's close */
    pthread_join(t, NULL);
    sleep(30);
    return 0;
}
