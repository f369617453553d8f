/* target_no_close_range — runs a command in which close_range fails with ENOSYS, as on a
 * kernel older than 5.9 or under a seccomp profile that predates the call.
 * usage: target_no_close_range COMMAND [ARG...]
 * A seccomp filter survives exec and is inherited by every thread, so the command and all its
 * threads see it. The filter is installed with the system call instruction, not prctl(), so
 * that a proflink preloaded here (it should not be: the command is what the test preloads)
 * could not notice it either. The kernel's ABI values are spelled out: musl's toolchain has no
 * kernel headers. */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

struct bpf_insn {
    uint16_t code;
    uint8_t jt, jf;
    uint32_t k;
};
struct bpf_prog {
    unsigned short len;
    struct bpf_insn *insns;
};

#define NR_CLOSE_RANGE 436 /* x86_64 and aarch64 alike */
#define PR_SET_NO_NEW_PRIVS 38
#define PR_SET_SECCOMP 22
#define SECCOMP_MODE_FILTER 2

/* prctl with its unused arguments 0 (PR_SET_NO_NEW_PRIVS refuses anything else) */
static long raw_prctl(long option, long a2, long a3)
{
#if defined(__x86_64__)
    long ret;
    register long r10 __asm__("r10") = 0;
    register long r8 __asm__("r8") = 0;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(157L /* prctl */), "D"(option), "S"(a2), "d"(a3), "r"(r10), "r"(r8)
                     : "rcx", "r11", "memory");
    return ret;
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = 167; /* prctl */
    register long x0 __asm__("x0") = option;
    register long x1 __asm__("x1") = a2;
    register long x2 __asm__("x2") = a3;
    register long x3 __asm__("x3") = 0;
    register long x4 __asm__("x4") = 0;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4) : "memory");
    return x0;
#else
#error "raw_prctl: add this architecture"
#endif
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s COMMAND [ARG...]\n", argv[0]);
        return 2;
    }
    struct bpf_insn insns[] = {
        {0x20, 0, 0, 0},                      /* A = seccomp_data.nr */
        {0x15, 0, 1, NR_CLOSE_RANGE},         /* close_range? */
        {0x06, 0, 0, 0x00050000u | 38u},      /* SECCOMP_RET_ERRNO | ENOSYS */
        {0x06, 0, 0, 0x7fff0000u},            /* SECCOMP_RET_ALLOW */
    };
    struct bpf_prog prog = {sizeof insns / sizeof insns[0], insns};
    long rc = raw_prctl(PR_SET_NO_NEW_PRIVS, 1, 0);
    if (rc == 0)
        rc = raw_prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, (long)&prog);
    if (rc != 0) {
        fprintf(stderr, "target_no_close_range: cannot install the filter (%ld)\n", rc);
        return 3;
    }
    execvp(argv[1], argv + 1);
    perror("target_no_close_range: exec");
    return 127;
}
