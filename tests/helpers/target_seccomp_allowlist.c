/* target_seccomp_allowlist — a program that sandboxes itself with a strict allowlist, as
 * hardened services do, then writes and exits.
 * usage: target_seccomp_allowlist prctl|syscall|tsync exit|_exit [api|api-early|serve|wait]
 * Installs (after PR_SET_NO_NEW_PRIVS) a filter that allows only write, exit, exit_group,
 * rt_sigreturn, brk, mmap, munmap and futex and kills the process for anything else, through
 * prctl(PR_SET_SECCOMP) or syscall(SYS_seccomp), or syscall(SYS_seccomp) with
 * SECCOMP_FILTER_FLAG_TSYNC (every thread of the process under it, as libseccomp's TSYNC). Then writes "sandboxed" and ends with exit(6)
 * or _exit(6). Status 3 if the filter cannot be installed. With "api", a tracer in the
 * sandboxed program then sets a message callback and ends a sampled transaction through
 * proflink's API (found with dlsym before the filter; absent without the library), and prints
 * "api rc=R delivered=D" (D: the transaction callback ran before the end call returned).
 * "api-early" sets the callback before the filter (proflink's threads start then), ends the
 * transaction after it, and waits up to 3 s for its delivery by proflink's reader.
 * "serve" listens on 127.0.0.1 (a port the kernel picks, printed as "port N" before the
 * filter), also allows accept, accept4, read, recvfrom, sendto and close, then serves one HTTP
 * request (answering "200 served") before it ends: an HTTP server that sandboxes itself.
 * "wait" sets a message callback before the filter (proflink's threads start then), also allows
 * read, and after "sandboxed" reads a line from stdin (the test sends datagrams first), busy
 * waits about half a second (what proflink's threads do with them happens then) and prints
 * "alive". */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "listen_local.h"
#include "proflink.h"

/* The kernel ABI (linux/filter.h, linux/seccomp.h, linux/audit.h) spelled out, so that the
 * musl build, which has no kernel headers, compiles it too. */
#if defined(__x86_64__)
#define THIS_ARCH 0xc000003eu
#elif defined(__aarch64__)
#define THIS_ARCH 0xc00000b7u
#else
#error "x86_64 and aarch64 only"
#endif
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
#define BPF_LD 0x00
#define BPF_JMP 0x05
#define BPF_RET 0x06
#define BPF_W 0x00
#define BPF_ABS 0x20
#define BPF_JEQ 0x10
#define BPF_K 0x00
#define BPF_STMT(code, k) {(uint16_t)(code), 0, 0, (k)}
#define BPF_JUMP(code, k, jt, jf) {(uint16_t)(code), (jt), (jf), (k)}
#define SECCOMP_RET_KILL_PROCESS 0x80000000u
#define SECCOMP_RET_ALLOW 0x7fff0000u
#define SECCOMP_MODE_FILTER 2
#define SECCOMP_SET_MODE_FILTER 1
#define SECCOMP_FILTER_FLAG_TSYNC 1

#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

static int delivered;

static void on_message(const proflink_message *m, void *user)
{
    (void)m;
    (void)user;
}

static void on_transaction(const uint8_t trace[16], const uint8_t txn[8],
                           const proflink_stack_count *ids, size_t n, void *user)
{
    (void)trace, (void)txn, (void)ids, (void)n, (void)user;
    __atomic_store_n(&delivered, 1, __ATOMIC_RELEASE);
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4)
        return 2;
    int api = argc == 4 && !strcmp(argv[3], "api");
    int early = argc == 4 && !strcmp(argv[3], "api-early");
    void (*set_cb)(proflink_message_fn, void *) = (void (*)(proflink_message_fn, void *))dlsym(
        RTLD_DEFAULT, "proflink_set_message_callback");
    int (*end_txn)(const uint8_t *, const uint8_t *, uint8_t, proflink_transaction_fn, void *) =
        (int (*)(const uint8_t *, const uint8_t *, uint8_t, proflink_transaction_fn,
                 void *))dlsym(RTLD_DEFAULT, "proflink_end_transaction");
    int serve = argc == 4 && !strcmp(argv[3], "serve");
    int wait = argc == 4 && !strcmp(argv[3], "wait");
#define ALLOW_ALWAYS                                                                                \
    ALLOW(SYS_write), ALLOW(SYS_exit), ALLOW(SYS_exit_group), ALLOW(SYS_rt_sigreturn),           \
        ALLOW(SYS_brk), ALLOW(SYS_mmap), ALLOW(SYS_munmap), ALLOW(SYS_futex)
#define FILTER(...)                                                                                \
    {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),                      \
     BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, THIS_ARCH, 1, 0),                                       \
     BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),                                        \
     BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)), __VA_ARGS__,          \
     BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)}
    struct sock_filter plain[] = FILTER(ALLOW_ALWAYS);
    struct sock_filter server[] =
        FILTER(ALLOW_ALWAYS, ALLOW(SYS_accept), ALLOW(SYS_accept4), ALLOW(SYS_read),
               ALLOW(SYS_recvfrom), ALLOW(SYS_sendto), ALLOW(SYS_close));
    struct sock_filter waiter[] = FILTER(ALLOW_ALWAYS, ALLOW(SYS_read));
    struct sock_filter *insns = serve ? server : wait ? waiter : plain;
    size_t n_insns = serve  ? sizeof server / sizeof server[0]
                     : wait ? sizeof waiter / sizeof waiter[0]
                            : sizeof plain / sizeof plain[0];
    int ls = -1, port = 0;
    if (serve) {
        if ((ls = listen_local_any(4, &port)) < 0)
            return 4;
        printf("port %d\n", port);
        fflush(stdout);
    }
    if ((early || wait) && set_cb)
        set_cb(on_message, NULL); /* proflink's threads start here, before the filter */
    struct sock_fprog prog = {.len = (unsigned short)n_insns, .filter = insns};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return 3;
    int rc = !strcmp(argv[1], "prctl")
                 ? prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0)
                 : (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                                !strcmp(argv[1], "tsync") ? SECCOMP_FILTER_FLAG_TSYNC : 0, &prog);
    if (rc != 0)
        return 3;
    const char msg[] = "sandboxed\n";
    (void)!write(1, msg, sizeof msg - 1);
    if (serve) {
        int c = accept(ls, NULL, NULL);
        char req[4096];
        ssize_t got = c >= 0 ? read(c, req, sizeof req) : -1;
        static const char reply[] = "HTTP/1.0 200 OK\r\nContent-Length: 7\r\n\r\nserved\n";
        if (got > 0)
            (void)!write(c, reply, sizeof reply - 1);
        close(c);
        (void)!write(1, got > 0 ? "served\n" : "not served\n", got > 0 ? 7 : 11);
    }
    if (wait) {
        char c;
        while (read(0, &c, 1) == 1 && c != '\n')
            ;
        /* no clock, no sleep: both would be system calls this allowlist forbids */
        for (volatile unsigned long i = 0; i < 500000000ul; i++)
            ;
        (void)!write(1, "alive\n", 6);
    }
    if (api || early) {
        int rc = -2;
        if (set_cb && end_txn) {
            static const uint8_t trace[16] = {1}, txn[8] = {2};
            if (api)
                set_cb(on_message, NULL);
            rc = end_txn(trace, txn, 1, on_transaction, NULL);
            /* held: proflink's reader (no filter on it) delivers after the delay; a busy wait,
             * since sleeping is a system call this allowlist forbids */
            for (unsigned long i = 0; early && i < 20000000000ul; i++)
                if (__atomic_load_n(&delivered, __ATOMIC_ACQUIRE))
                    break;
        }
        char line[64];
        int len = snprintf(line, sizeof line, "api rc=%d delivered=%d\n", rc,
                           __atomic_load_n(&delivered, __ATOMIC_ACQUIRE));
        (void)!write(1, line, (size_t)len);
    }
    if (!strcmp(argv[2], "_exit"))
        _exit(6);
    exit(6);
}
