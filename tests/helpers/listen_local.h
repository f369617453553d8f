/* listen_local.h — for the HTTP test servers: a TCP socket listening on 127.0.0.1:port (the
 * tests' ports only, never another interface). listen_local prints "listening" once it does and
 * exits with status 1 and a message when it cannot; listen_local_any takes a port the kernel
 * picks. */
#ifndef PROFLINK_TEST_LISTEN_LOCAL_H
#define PROFLINK_TEST_LISTEN_LOCAL_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

static inline int listen_local(const char *port, int backlog)
{
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, backlog) != 0) {
        perror("bind/listen");
        exit(1);
    }
    printf("listening\n");
    fflush(stdout);
    return ls;
}

/* A TCP socket listening on 127.0.0.1 at a port the kernel picks (stored in *port), or -1. */
static inline int listen_local_any(int backlog, int *port)
{
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t alen = sizeof a;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, backlog) != 0 ||
        getsockname(ls, (struct sockaddr *)&a, &alen) != 0)
        return -1;
    *port = ntohs(a.sin_port);
    return ls;
}

#endif
