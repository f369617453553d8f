/* fail_syscall — runs a command with one system call made to fail, to show that proflink
 * survives what it cannot control (no file descriptors left, no memfd, ...).
 * usage: fail_syscall SYSCALL ERRNO CMD [ARGS...]   e.g. fail_syscall socket EMFILE /bin/echo hi
 * SYSCALL: socket | memfd_create | bind | getrandom; ERRNO: EMFILE | ENOSYS | EACCES | ENOMEM.
 * Installs a seccomp filter (after PR_SET_NO_NEW_PRIVS) that returns ERRNO for that call, then
 * execs CMD: the filter is inherited, so CMD's constructors run under it. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static long syscall_number(const char *name)
{
    if (!strcmp(name, "socket"))
        return SYS_socket;
    if (!strcmp(name, "memfd_create"))
        return SYS_memfd_create;
    if (!strcmp(name, "bind"))
        return SYS_bind;
    if (!strcmp(name, "getrandom"))
        return SYS_getrandom;
    return -1;
}

static int errno_value(const char *name)
{
    if (!strcmp(name, "EMFILE"))
        return EMFILE;
    if (!strcmp(name, "ENOSYS"))
        return ENOSYS;
    if (!strcmp(name, "EACCES"))
        return EACCES;
    if (!strcmp(name, "ENOMEM"))
        return ENOMEM;
    return -1;
}

int main(int argc, char **argv)
{
    long nr = argc > 3 ? syscall_number(argv[1]) : -1;
    int err = argc > 3 ? errno_value(argv[2]) : -1;
    if (nr < 0 || err < 0) {
        fprintf(stderr, "usage: fail_syscall socket|memfd_create|bind|getrandom "
                        "EMFILE|ENOSYS|EACCES|ENOMEM CMD [ARGS...]\n");
        return 2;
    }
    struct sock_filter prog[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog fprog = {.len = sizeof prog / sizeof prog[0], .filter = prog};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) != 0) {
        perror("fail_syscall: seccomp");
        return 2;
    }
    execvp(argv[3], argv + 3);
    perror("fail_syscall: exec");
    return 127;
}
