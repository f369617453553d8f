/* otel_seccomp_exec — runs a command with some system calls made to fail, to exercise the
 * fallbacks of the OTel process-context publisher under restrictive seccomp profiles.
 *
 * usage: otel_seccomp_exec [-m] [-p] [-d] [--] CMD ARGS...
 *   -m  memfd_create fails with ENOSYS                 (anonymous-mapping fallback)
 *   -p  prctl(PR_SET_VMA, ...) fails with EINVAL        (mapping left unnamed)
 *   -d  madvise(..., MADV_DONTFORK) fails with EINVAL   (publication must give up cleanly)
 * Installs the filter (after PR_SET_NO_NEW_PRIVS, so no privilege is needed) and execs CMD; the
 * filter is inherited by CMD and its children. Exit status 2 on bad usage, 3 if the filter
 * cannot be installed, 127 if CMD cannot be run. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define THIS_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define THIS_ARCH AUDIT_ARCH_AARCH64
#else
#error "x86_64 and aarch64 only"
#endif

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#endif
#ifndef MADV_DONTFORK
#define MADV_DONTFORK 10
#endif

#define MAX_INSNS 32

struct prog {
    struct sock_filter insn[MAX_INSNS];
    unsigned short n;
};

static void emit(struct prog *p, unsigned short code, unsigned char jt, unsigned char jf,
                 unsigned k)
{
    p->insn[p->n++] = (struct sock_filter){code, jt, jf, k};
}

/* Low 32 bits of syscall argument i (little-endian on both supported architectures). */
#define ARG_LO(i) (unsigned)(offsetof(struct seccomp_data, args) + 8 * (i))

/* "if nr == NR [and arg `arg` == value] return errno err": 4 or 6 instructions. The syscall
 * number is reloaded each time, since the argument check overwrites the accumulator. */
static void deny(struct prog *p, unsigned nr, int arg, unsigned value, unsigned err)
{
    emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, offsetof(struct seccomp_data, nr));
    if (arg < 0) {
        emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, nr);
    } else {
        emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 3, nr);
        emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, ARG_LO(arg));
        emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, value);
    }
    emit(p, BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA));
}

int main(int argc, char **argv)
{
    int memfd = 0, vma = 0, dontfork = 0, i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        } else if (!strcmp(argv[i], "-m")) {
            memfd = 1;
        } else if (!strcmp(argv[i], "-p")) {
            vma = 1;
        } else if (!strcmp(argv[i], "-d")) {
            dontfork = 1;
        } else {
            break;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "usage: otel_seccomp_exec [-m] [-p] [-d] [--] CMD ARGS...\n");
        return 2;
    }

    struct prog p = {.n = 0};
    /* A foreign-architecture syscall would be numbered differently: let it through untouched. */
    emit(&p, BPF_LD | BPF_W | BPF_ABS, 0, 0, offsetof(struct seccomp_data, arch));
    emit(&p, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, THIS_ARCH);
    emit(&p, BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW);
    if (memfd)
        deny(&p, SYS_memfd_create, -1, 0, ENOSYS);
    if (vma)
        deny(&p, SYS_prctl, 0, PR_SET_VMA, EINVAL);
    if (dontfork)
        deny(&p, SYS_madvise, 2, MADV_DONTFORK, EINVAL);
    emit(&p, BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW);

    struct sock_fprog fprog = {.len = p.n, .filter = p.insn};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) != 0) {
        perror("otel_seccomp_exec: seccomp");
        return 3;
    }
    execvp(argv[i], argv + i);
    perror("otel_seccomp_exec: exec");
    return 127;
}
