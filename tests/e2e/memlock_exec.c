/* memlock_exec — runs a program (the eBPF profiler) whose start-up insists on raising
 * RLIMIT_MEMLOCK to infinity, on a machine where root lacks CAP_SYS_RESOURCE (containers, some
 * VMs): there the raise fails with EPERM and the profiler refuses to start, although since Linux
 * 5.11 eBPF maps are charged to the memory cgroup and the limit no longer matters.
 * usage: memlock_exec PROGRAM ARGS...
 * If the raise works here, PROGRAM is executed unchanged. Otherwise a seccomp filter makes
 * setrlimit/prlimit64 calls on RLIMIT_MEMLOCK (only that resource: the Go runtime raises
 * RLIMIT_NOFILE itself) return success without changing anything, then PROGRAM is executed. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define AUDIT_ARCH_HERE AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define AUDIT_ARCH_HERE AUDIT_ARCH_AARCH64
#else
#error "x86_64 and aarch64 only"
#endif

/* the low and high 32 bits of argument N (both architectures are little-endian) */
#define ARG_LO(n) offsetof(struct seccomp_data, args[n])
#define ARG_HI(n) (offsetof(struct seccomp_data, args[n]) + 4)

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: memlock_exec PROGRAM ARGS...\n");
        return 2;
    }
    struct rlimit inf = {RLIM_INFINITY, RLIM_INFINITY};
    if (setrlimit(RLIMIT_MEMLOCK, &inf) != 0) {
        struct sock_filter f[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_HERE, 1, 0),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_prlimit64, 0, 6),
            /* prlimit64(pid, resource, new, old): only a call that sets (new != NULL); a
             * read must still fill old */
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(1)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, RLIMIT_MEMLOCK, 0, 8),
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(2)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 5),
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_HI(2)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 4, 3),
            /* setrlimit(resource, new) */
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_setrlimit, 0, 3),
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(0)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, RLIMIT_MEMLOCK, 0, 1),
            /* SECCOMP_RET_ERRNO with 0: the call returns 0 and does nothing */
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 0),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = {sizeof f / sizeof f[0], f};
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
            prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
            fprintf(stderr, "memlock_exec: cannot install the filter: %s\n", strerror(errno));
            return 1;
        }
        fprintf(stderr, "memlock_exec: RLIMIT_MEMLOCK cannot be raised here (%s); "
                        "the profiler's attempts to raise it are made no-ops\n", strerror(EPERM));
    }
    execvp(argv[1], argv + 1);
    fprintf(stderr, "memlock_exec: %s: %s\n", argv[1], strerror(errno));
    return 127;
}
