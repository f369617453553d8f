/* target_tlsaddr — shows, from inside, where each thread's copy of the apmint TLS pointer lives,
 * so that a test can check what an outside reader computes (thread pointer + the TLSDESC
 * argument word) against the truth. Knows nothing of proflink: it looks the variable up by name.
 * usage: target_tlsaddr NTHREADS SECONDS
 * Prints one line per thread (main first), then "ready <pid>", sleeps SECONDS and exits 0:
 *   tls <tid> <thread pointer hex> <&variable hex> <value hex>
 * The thread pointer is the fs base (x86_64) or tpidr_el0 (aarch64), what the profiler reads. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "thread_pointer.h"

#define VAR "elastic_apm_profiling_correlation_tls_v1"

static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t all_printed;


static void report(void)
{
    /* dlsym of a TLS symbol gives the calling thread's copy (glibc and musl alike) */
    void **addr = dlsym(RTLD_DEFAULT, VAR);
    pthread_mutex_lock(&print_lock);
    printf("tls %ld %#lx %#lx %#lx\n", (long)syscall(SYS_gettid), (unsigned long)thread_pointer(),
           (unsigned long)(uintptr_t)addr, (unsigned long)(uintptr_t)(addr ? *addr : NULL));
    fflush(stdout);
    pthread_mutex_unlock(&print_lock);
}

static unsigned seconds;

static void *worker(void *arg)
{
    (void)arg;
    report();
    pthread_barrier_wait(&all_printed);
    sleep(seconds);
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2;
    seconds = argc > 2 ? (unsigned)atoi(argv[2]) : 5;
    if (n < 0 || n > 1000)
        return 2;
    report();
    pthread_barrier_init(&all_printed, NULL, (unsigned)n + 1);
    pthread_t *t = calloc((size_t)n + 1, sizeof *t);
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, worker, NULL) != 0)
            return 2;
    pthread_barrier_wait(&all_printed);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    sleep(seconds);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    free(t);
    return 0;
}
