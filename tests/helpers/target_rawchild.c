/* target_rawchild [thread|api|fork|vm|busy] — a child made by a raw clone(SIGCHLD) system call, the way a
 * runtime that bypasses libc's fork() makes one: no fork handlers run in it, so it starts with a
 * copy of its parent's published state (the storage names the parent's socket).
 *
 * Prints "parent PID" and "child PID". The child waits for SIGUSR1, then makes its first use of
 * the library: a pthread_create (thread, the default), the API call proflink_samples_delay_ms
 * (api, looked up at run time: the program is not linked with proflink) or a fork() whose child
 * exits at once (fork), prints "used", waits for
 * SIGUSR1 again and exits 0 through exit(). The parent waits for SIGUSR1, then for the child,
 * and exits with 0 when the child exited 0.
 *
 * vm: instead, a child in the parent's memory (clone(CLONE_VM | CLONE_VFORK), what vfork and
 * posix_spawn make) calls proflink_samples_delay_ms and _exit(0); the parent prints "vm done"
 * once it is gone, then "parent PID" and waits for SIGUSR1.
 *
 * busy: while a thread calls proflink_set_resource in a loop (so that proflink's resource lock
 * is held most of the time, by a thread no copy will have), BUSY_CHILDREN raw clone children in
 * turn make their first use (pthread_create) and _exit: 0 when the copy's storage then names a
 * socket file of its own. The parent prints "busy: N of M children set up" (a child that did
 * not exit within BUSY_CHILD_WAIT_MS counts as not set up, and is killed) and exits 0. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "usr1.h"

#define VM_CHILD_STACK_SIZE (64 * 1024)
#define BUSY_CHILDREN 8
#define BUSY_CHILD_WAIT_MS 10000 /* a loaded 2-CPU machine sets a child up in milliseconds */

typedef uint32_t (*delay_fn)(void);

static void *thread_main(void *arg) { return arg; }

static delay_fn api_call(void)
{
    return (delay_fn)dlsym(RTLD_DEFAULT, "proflink_samples_delay_ms");
}

static int first_use(const char *how)
{
    if (!strcmp(how, "api")) {
        delay_fn delay = api_call();
        if (!delay)
            return -1;
        delay();
        return 0;
    }
    if (!strcmp(how, "fork")) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(0);
        int status;
        return pid > 0 && waitpid(pid, &status, 0) == pid ? 0 : -1;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, thread_main, NULL) != 0)
        return -1;
    return pthread_join(t, NULL) == 0 ? 0 : -1;
}

/* ---- busy ---- */
static _Atomic int busy_stop;

static void *resource_loop(void *arg)
{
    int (*set)(const char *) = (int (*)(const char *))arg;
    char attrs[64];
    for (unsigned i = 0; !busy_stop; i++) {
        snprintf(attrs, sizeof attrs, "service.version=%u", i);
        set(attrs);
    }
    return NULL;
}

/* The socket path in the process storage (u16 minor, then three u32-length strings). */
static int storage_names_own_socket(void)
{
    void **ptr = (void **)dlsym(RTLD_DEFAULT, "elastic_apm_profiling_correlation_process_storage_v1");
    const uint8_t *p = ptr ? *ptr : NULL;
    if (!p)
        return 0;
    p += 2;
    uint32_t n = 0;
    for (int i = 0; i < 3; i++) {
        memcpy(&n, p, 4);
        p += 4;
        if (i < 2)
            p += n;
    }
    char path[256], want[32];
    if (n >= sizeof path)
        return 0;
    memcpy(path, p, n);
    path[n] = 0;
    snprintf(want, sizeof want, "/proflink-%d-", (int)getpid());
    return strstr(path, want) && access(path, F_OK) == 0;
}

/* 1 when pid exited 0 within BUSY_CHILD_WAIT_MS; otherwise it is killed. */
static int reaped_ok(pid_t pid)
{
    int status;
    for (int ms = 0; ms < BUSY_CHILD_WAIT_MS; ms += 10) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (r < 0)
            return 0;
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return 0;
}

static int busy_mode(void)
{
    void *set = dlsym(RTLD_DEFAULT, "proflink_set_resource");
    pthread_t loop;
    if (!set || pthread_create(&loop, NULL, resource_loop, set) != 0)
        return 1;
    int ok = 0;
    for (int i = 0; i < BUSY_CHILDREN; i++) {
        usleep(1000); /* the loop runs between two copies */
        long pid = syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
        if (pid < 0)
            break;
        if (pid == 0)
            _exit(first_use("thread") == 0 && storage_names_own_socket() ? 0 : 4);
        ok += reaped_ok((pid_t)pid);
    }
    busy_stop = 1;
    pthread_join(loop, NULL);
    printf("busy: %d of %d children set up\n", ok, BUSY_CHILDREN);
    return 0;
}

static char vm_stack[VM_CHILD_STACK_SIZE] __attribute__((aligned(16)));

/* In the parent's memory, with the parent suspended until it exits (CLONE_VFORK). */
static int vm_child(void *arg)
{
    ((delay_fn)arg)();
    _exit(0);
}

static int vm_mode(void)
{
    delay_fn delay = api_call(); /* looked up here: the child only calls */
    if (!delay)
        return 1;
    int pid = clone(vm_child, vm_stack + sizeof vm_stack, CLONE_VM | CLONE_VFORK | SIGCHLD,
                    (void *)delay);
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return 1;
    printf("vm done\nparent %d\n", (int)getpid());
    fflush(stdout);
    usr1_wait();
    return 0;
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "thread";
    usr1_block();
    if (!strcmp(how, "vm"))
        return vm_mode();
    if (!strcmp(how, "busy"))
        return busy_mode();
    printf("parent %d\n", (int)getpid());
    fflush(stdout);
    /* The raw system call, not libc's clone() or fork(): the child shares nothing (no CLONE_VM)
     * and gets a copy of the stack, like a fork child; only the atfork handlers do not run.
     * Arguments past the flags are all 0, so their order (which differs by architecture) does
     * not matter. */
    long pid = syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
    if (pid < 0)
        return 1;
    if (pid == 0) {
        printf("child %d\n", (int)getpid());
        fflush(stdout);
        usr1_wait();
        if (first_use(how) != 0)
            exit(3);
        printf("used\n");
        fflush(stdout);
        usr1_wait();
        exit(0);
    }
    usr1_wait();
    int status;
    if (waitpid((pid_t)pid, &status, 0) != (pid_t)pid)
        return 1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 2;
}
