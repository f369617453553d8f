/* seccomp_exec — runs a program under a kill-by-default system-call allowlist installed before
 * its exec, as systemd's SystemCallFilter= and OCI runtimes do.
 * usage: seccomp_exec NR,NR,... PROG ARGS...   allows the listed call numbers (and execve, to
 * start PROG), kills the process for any other; with SECCOMP_EXEC_PRELOAD=LIB in its
 * environment, PROG gets LD_PRELOAD=LIB (the launcher itself runs without it). Exit status 3
 * when the filter cannot be installed, 4 when PROG cannot be executed. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define THIS_ARCH 0xc000003eu
#elif defined(__aarch64__)
#define THIS_ARCH 0xc00000b7u
#else
#error "x86_64 and aarch64 only"
#endif
/* The kernel ABI (linux/filter.h, linux/seccomp.h) spelled out, as target_seccomp_allowlist.c. */
struct sock_filter {
    uint16_t code;
    uint8_t jt, jf;
    uint32_t k;
};
struct sock_fprog {
    unsigned short len;
    struct sock_filter *filter;
};
struct seccomp_data {
    int nr;
    uint32_t arch;
    uint64_t instruction_pointer, args[6];
};
#define LD_W_ABS 0x20 /* BPF_LD | BPF_W | BPF_ABS */
#define JEQ_K 0x15    /* BPF_JMP | BPF_JEQ | BPF_K */
#define RET_K 0x06    /* BPF_RET | BPF_K */
#define RET_KILL_PROCESS 0x80000000u
#define RET_ALLOW 0x7fff0000u
#define MAX_CALLS 512

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    static struct sock_filter f[2 * MAX_CALLS + 8];
    size_t n = 0;
    f[n++] = (struct sock_filter){LD_W_ABS, 0, 0, offsetof(struct seccomp_data, arch)};
    f[n++] = (struct sock_filter){JEQ_K, 1, 0, THIS_ARCH};
    f[n++] = (struct sock_filter){RET_K, 0, 0, RET_KILL_PROCESS};
    f[n++] = (struct sock_filter){LD_W_ABS, 0, 0, offsetof(struct seccomp_data, nr)};
    f[n++] = (struct sock_filter){JEQ_K, 0, 1, SYS_execve};
    f[n++] = (struct sock_filter){RET_K, 0, 0, RET_ALLOW};
    int calls = 0;
    for (char *p = argv[1]; *p && calls < MAX_CALLS; calls++) {
        char *end;
        unsigned long nr = strtoul(p, &end, 10);
        if (end == p)
            return 2;
        f[n++] = (struct sock_filter){JEQ_K, 0, 1, (uint32_t)nr};
        f[n++] = (struct sock_filter){RET_K, 0, 0, RET_ALLOW};
        p = *end == ',' ? end + 1 : end;
    }
    f[n++] = (struct sock_filter){RET_K, 0, 0, RET_KILL_PROCESS};
    const char *preload = getenv("SECCOMP_EXEC_PRELOAD");
    if (preload && setenv("LD_PRELOAD", preload, 1) != 0)
        return 3;
    unsetenv("SECCOMP_EXEC_PRELOAD");
    struct sock_fprog prog = {.len = (unsigned short)n, .filter = f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, 2 /* SECCOMP_MODE_FILTER */, &prog, 0, 0) != 0)
        return 3;
    execv(argv[2], argv + 2);
    return 4;
}
