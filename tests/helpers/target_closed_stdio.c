/* target_closed_stdio — a program meant to be started with descriptors 0-2 closed. It opens
 * DIR/f0, DIR/f1, DIR/f2 (which then get the numbers 0, 1 and 2, as the program expects), writes
 * "fN opened as fd X" into each, creates DIR/ready, waits (at most SECONDS) for DIR/go, then
 * writes "stdout line" to fd 1 (its "stdout": f1) and "end fN" into each file, and exits 0. It
 * waits with poll, as a server does (a preloaded library may start its threads there).
 * usage: target_closed_stdio DIR SECONDS */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void put(int fd, const char *s)
{
    ssize_t w = write(fd, s, strlen(s));
    (void)w;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    char path[4096], line[64];
    int fds[3];
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/f%d", argv[1], i);
        fds[i] = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fds[i] < 0)
            return 3;
        snprintf(line, sizeof line, "f%d opened as fd %d\n", i, fds[i]);
        put(fds[i], line);
    }
    snprintf(path, sizeof path, "%s/ready", argv[1]);
    close(open(path, O_WRONLY | O_CREAT, 0600));
    snprintf(path, sizeof path, "%s/go", argv[1]);
    for (int t = 0; t < atoi(argv[2]) * 20 && access(path, F_OK) != 0; t++)
        poll(NULL, 0, 50);
    put(1, "stdout line\n");
    for (int i = 0; i < 3; i++) {
        snprintf(line, sizeof line, "end f%d\n", i);
        put(fds[i], line);
    }
    return 0;
}
