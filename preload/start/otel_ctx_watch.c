/* otel_ctx_watch.c — see otel_ctx_watch.h. */
#include "otel_ctx_watch.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "leaves/log.h"
#include "publish/otel_process_ctx.h"
#include "leaves/runtime_state.h"
#include "context/thread_records.h"
#include "leaves/raw_syscall.h"

/* The kernel ABI values (linux/prctl.h), spelled out as in hooks/seccomp.c. */
#define WATCH_PR_SET_VMA 0x53564d41
#define WATCH_PR_SET_VMA_ANON_NAME 0

/* 1 when the program's name argument reads "OTEL_CTX". Copied with process_vm_readv from our
 * own memory, which fails with EFAULT where a plain read of a bad pointer would crash: the call
 * may have failed before the kernel looked at the string (a kernel that cannot name mappings
 * still gets the attempt, and the other publisher's memfd still names its mapping). */
static int names_otel_ctx(unsigned long name)
{
    char buf[9];
    struct iovec local = {buf, sizeof buf}, remote = {(void *)name, sizeof buf};
    if (raw_syscall6(SYS_process_vm_readv, raw_getpid(), (long)&local, 1, (long)&remote, 1, 0) !=
        (long)sizeof buf)
        return 0;
    return memcmp(buf, "OTEL_CTX", sizeof buf) == 0;
}

void otel_ctx_watch_prctl(int option, unsigned long a2, unsigned long addr, unsigned long name)
{
    /* Nothing in a sandboxed process: reading the name and withdrawing are system calls of ours. */
    if (option != WATCH_PR_SET_VMA || a2 != WATCH_PR_SET_VMA_ANON_NAME || !name ||
        !runtime_active() || runtime_sandboxed() || otel_process_ctx_is_ours((const void *)addr))
        return;
    int saved = errno;
    if (names_otel_ctx(name) && otel_process_ctx_withdraw()) {
        thread_records_otel_off();
        log_info("another OpenTelemetry process context was published in this process (OTEL_CTX "
                 "at %p): proflink withdrew its own, one per process (OTEP 4719), and gives new "
                 "threads no OTel record", (void *)addr);
    }
    errno = saved;
}
