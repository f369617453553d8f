/* target_http_fdover — a server that knows nothing of proflink. It accepts one connection on
 * 127.0.0.1:PORT, reads one request head from it, then puts a pipe on the connection's number
 * with METHOD and reads from that number again: bytes that look like a request head carrying
 * TRACEPARENT. A pipe is not an accepted connection, so HTTP reading must neither read it as
 * one nor keep the connection's context. Prints "read-conn N" (the head's bytes), then
 * "read-pipe N" and sleeps 30 s.
 * METHOD: dup2 | dup3 | close_range | closefrom | syscall_close (the last three close the
 * number, then take it back with F_DUPFD; close_range and closefrom are glibc's). usage: target_http_fdover PORT METHOD TRACEPARENT */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "listen_local.h"

static void say(const char *fmt, long v)
{
    printf(fmt, v);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    int ls = listen_local(argv[1], 1);
    int p[2]; /* below the connection's number: closefrom(number) leaves it open */
    if (pipe(p) != 0)
        return 4;
    int fd = accept(ls, NULL, NULL);
    char buf[1024];
    size_t have = 0; /* the whole head: a client may write it in several pieces */
    while (have < sizeof buf - 1 && !memmem(buf, have, "\r\n\r\n", 4)) {
        ssize_t r = read(fd, buf + have, sizeof buf - 1 - have);
        if (r <= 0)
            return 3;
        have += (size_t)r;
    }
    say("read-conn %ld\n", (long)have);
    dprintf(p[1], "GET / HTTP/1.1\r\ntraceparent: %s\r\n\r\n", argv[3]);
    const char *m = argv[2];
    int rc;
    if (!strcmp(m, "dup2"))
        rc = dup2(p[0], fd);
    else if (!strcmp(m, "dup3"))
        rc = dup3(p[0], fd, O_CLOEXEC);
    else {
#ifdef __GLIBC__
        if (!strcmp(m, "close_range"))
            rc = close_range((unsigned)fd, (unsigned)fd, 0);
        else if (!strcmp(m, "closefrom"))
            closefrom(fd), rc = 0;
        else
#endif
        if (!strcmp(m, "syscall_close"))
            rc = (int)syscall(SYS_close, fd);
        else
            return 6; /* close_range and closefrom: glibc only */
        if (rc == 0)
            rc = fcntl(p[0], F_DUPFD, fd);
    }
    if (rc != fd)
        return 5;
    ssize_t n = read(fd, buf, sizeof buf);
    say("read-pipe %ld\n", (long)n);
    sleep(30);
    return 0;
}
