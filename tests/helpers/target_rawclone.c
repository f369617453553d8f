/* target_rawclone — a thread made with a raw clone(), without pthread_create: it runs on its
 * creator's thread pointer (no CLONE_SETTLS), so a profiler reading "its" TLS reads the main
 * thread's record. Prints "ready", waits for SIGUSR1, exits 0 (the raw thread sleeps on). */
#include <sched.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "usr1.h"

#define RAW_STACK_SIZE (64 * 1024)

static char stack[RAW_STACK_SIZE] __attribute__((aligned(16)));

/* Only raw system calls here: libc state (errno, locks) belongs to the main thread. */
static int raw_thread(void *arg)
{
    (void)arg;
    for (;;) /* ppoll with no descriptor and no timeout: pause() on every architecture */
        syscall(SYS_ppoll, NULL, 0, NULL, NULL, 0);
    return 0;
}

int main(void)
{
    usr1_block();
    int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM;
    if (clone(raw_thread, stack + sizeof stack, flags, NULL) < 0)
        return 1;
    printf("ready\n");
    fflush(stdout);
    usr1_wait();
    return 0;
}
