/* target_dropids — a program started as root that gives up its ids at run time, as daemons do.
 * usage: target_dropids WAY UID GID
 *   WAY: setuid (setgid + setuid), setresuid (setresgid + setresuid), setreuid (setregid +
 *   setreuid), seteuid (setegid + seteuid: only the effective ids)
 * Prints "dropped <euid> <egid>" (or "failed <errno>" and exits 1), waits for SIGUSR1, exits 0. */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "usr1.h"

static int drop(const char *way, uid_t u, gid_t g)
{
    if (!strcmp(way, "setuid"))
        return setgroups(0, NULL) || setgid(g) || setuid(u);
    if (!strcmp(way, "setresuid"))
        return setgroups(0, NULL) || setresgid(g, g, g) || setresuid(u, u, u);
    if (!strcmp(way, "setreuid"))
        return setgroups(0, NULL) || setregid(g, g) || setreuid(u, u);
    if (!strcmp(way, "seteuid"))
        return setegid(g) || seteuid(u);
    errno = EINVAL;
    return -1;
}

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    usr1_block();
    if (drop(argv[1], (uid_t)atoi(argv[2]), (gid_t)atoi(argv[3])) != 0) {
        printf("failed %d\n", errno);
        return 1;
    }
    printf("dropped %d %d\n", (int)geteuid(), (int)getegid());
    fflush(stdout);
    usr1_wait();
    return 0;
}
