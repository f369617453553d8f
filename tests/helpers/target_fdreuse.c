/* target_fdreuse — a daemon-like program that closes every descriptor above 2 (as daemons do
 * at start) and reuses the lowest number for its own datagram socket. Whatever a preloaded
 * library kept open is gone; the library must not read from, write to or close the number
 * the program now owns. usage: target_fdreuse SOCKET_PATH EXPECTED
 * Prints "fd N" once its socket is bound, then "got K" after EXPECTED datagrams (or 5 s). It
 * first waits with poll, as a server does (a preloaded library may start its threads there). */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    int expected = atoi(argv[2]);
    poll(NULL, 0, 300);
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    int s = socket(AF_UNIX, SOCK_DGRAM, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", argv[1]);
    if (s < 0 || bind(s, (struct sockaddr *)&addr, sizeof addr) != 0)
        return 3;
    struct timeval tv = {5, 0};
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    printf("fd %d\n", s);
    fflush(stdout);
    int got = 0;
    char buf[256];
    while (got < expected && recv(s, buf, sizeof buf, 0) >= 0)
        got++;
    printf("got %d\n", got);
    return 0;
}
