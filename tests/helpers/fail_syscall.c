/* fail_syscall — runs a command with some system calls made to fail, to show that proflink
 * survives what it cannot control (no file descriptors left, no memfd, a restrictive seccomp
 * profile, ...) and takes its fallbacks.
 * usage: fail_syscall CALL ERRNO [CALL ERRNO]... CMD [ARGS...]
 *   e.g. fail_syscall socket EMFILE /bin/echo hi
 * CALL: socket | memfd_create | bind | getrandom, or one use of a call:
 *   prctl_set_vma     prctl(PR_SET_VMA, ...)          (naming a mapping)
 *   madvise_dontfork  madvise(..., MADV_DONTFORK)
 * ERRNO: EMFILE | ENOSYS | EACCES | ENOMEM | EINVAL, or OK: the call is not made and returns 0
 * (a kernel that says yes without doing anything).
 * Installs a seccomp filter (after PR_SET_NO_NEW_PRIVS, so no privilege is needed) that returns
 * ERRNO for those calls, then execs CMD: the filter is inherited, so CMD's constructors and its
 * children run under it. Exit status 2 on bad usage or if the filter cannot be installed, 127
 * if CMD cannot be run. */
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

/* Rules at most (each 6 instructions) and the filter's length: the arch check and the final
 * allow around them. */
#define MAX_RULES 8
#define MAX_INSNS (4 + 6 * MAX_RULES)

struct call {
    const char *name;
    unsigned nr;
    int arg; /* the argument compared, -1 for none */
    unsigned value;
};

static const struct call calls[] = {
    {"socket", SYS_socket, -1, 0},
    {"memfd_create", SYS_memfd_create, -1, 0},
    {"bind", SYS_bind, -1, 0},
    {"getrandom", SYS_getrandom, -1, 0},
    {"prctl_set_vma", SYS_prctl, 0, PR_SET_VMA},
    {"madvise_dontfork", SYS_madvise, 2, MADV_DONTFORK},
};

static const struct call *find_call(const char *name)
{
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
        if (!strcmp(name, calls[i].name))
            return &calls[i];
    return NULL;
}

static int errno_value(const char *name)
{
    static const struct {
        const char *name;
        int value;
    } names[] = {{"EMFILE", EMFILE}, {"ENOSYS", ENOSYS}, {"EACCES", EACCES},
                 {"ENOMEM", ENOMEM}, {"EINVAL", EINVAL}, {"OK", 0}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i].name))
            return names[i].value;
    return -1;
}

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

/* "if nr == NR [and argument arg == value] return errno err": 4 or 6 instructions. The syscall
 * number is reloaded each time, since the argument check overwrites the accumulator. */
static void deny(struct prog *p, const struct call *c, unsigned err)
{
    emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, offsetof(struct seccomp_data, nr));
    if (c->arg < 0) {
        emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, c->nr);
    } else {
        emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 3, c->nr);
        emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, ARG_LO(c->arg));
        emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, c->value);
    }
    emit(p, BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA));
}

int main(int argc, char **argv)
{
    struct prog p = {.n = 0};
    /* A foreign-architecture syscall would be numbered differently: let it through untouched. */
    emit(&p, BPF_LD | BPF_W | BPF_ABS, 0, 0, offsetof(struct seccomp_data, arch));
    emit(&p, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, THIS_ARCH);
    emit(&p, BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW);
    int i = 1, rules = 0;
    for (; i + 1 < argc && find_call(argv[i]); i += 2) {
        int err = errno_value(argv[i + 1]);
        if (err < 0 || ++rules > MAX_RULES)
            break;
        deny(&p, find_call(argv[i]), (unsigned)err);
    }
    if (!rules || i >= argc || find_call(argv[i])) {
        fprintf(stderr, "usage: fail_syscall CALL ERRNO [CALL ERRNO]... CMD [ARGS...]\n");
        return 2;
    }
    emit(&p, BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW);

    struct sock_fprog fprog = {.len = p.n, .filter = p.insn};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) != 0) {
        perror("fail_syscall: seccomp");
        return 2;
    }
    execvp(argv[i], argv + i);
    perror("fail_syscall: exec");
    return 127;
}
