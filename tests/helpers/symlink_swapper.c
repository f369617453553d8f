/* symlink_swapper — the attacker of the symlink-swap test: watches DIR with inotify and, as soon
 * as a proflink socket file appears there, replaces it with a symlink to VICTIM (unlink +
 * symlink), hoping that the creator then changes the mode "of its socket" by path.
 * usage: symlink_swapper DIR VICTIM SECONDS
 * Prints "ready" once watching, and at the end "swapped N" (replacements that succeeded) and
 * "refused N" (files it could not remove). */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    int in = inotify_init1(IN_CLOEXEC);
    if (in < 0 || inotify_add_watch(in, argv[1], IN_CREATE) < 0) {
        perror("inotify");
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    double end = now() + atof(argv[3]);
    unsigned swapped = 0, refused = 0;
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    while (now() < end) {
        struct pollfd p = {in, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t n = read(in, buf, sizeof buf);
        for (char *q = buf; n > 0 && q < buf + n;) {
            struct inotify_event *e = (struct inotify_event *)q;
            q += sizeof *e + e->len;
            if (!e->len || strncmp(e->name, "proflink-", 9) != 0)
                continue;
            char path[PATH_MAX];
            snprintf(path, sizeof path, "%s/%s", argv[1], e->name);
            if (unlink(path) != 0) {
                refused++;
                continue;
            }
            if (symlink(argv[2], path) == 0)
                swapped++;
        }
    }
    printf("swapped %u\nrefused %u\n", swapped, refused);
    return 0;
}
