/* target_threads — an ordinary multi-threaded program that knows nothing of proflink.
 * usage: target_threads NTHREADS SECONDS [spin]
 * Starts NTHREADS threads (named worker-N) that sleep (or spin on the CPU with "spin"), prints
 * "ready <pid>" once they all run, and exits 0 after SECONDS. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int spin;
static _Atomic int started;
static _Atomic int stop;

static void *worker(void *arg)
{
    char name[16];
    snprintf(name, sizeof name, "worker-%d", (int)(long)arg);
    pthread_setname_np(pthread_self(), name);
    atomic_fetch_add(&started, 1);
    volatile unsigned long x = 0;
    while (!atomic_load(&stop)) {
        if (spin)
            for (int i = 0; i < 100000; i++)
                x += (unsigned long)i;
        else
            usleep(10000);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2;
    double seconds = argc > 2 ? atof(argv[2]) : 5;
    spin = argc > 3 && !strcmp(argv[3], "spin");
    pthread_t *t = calloc((size_t)n, sizeof *t);
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)(long)i) != 0)
            return 2;
    while (atomic_load(&started) < n)
        usleep(1000);
    printf("ready\n");
    fflush(stdout);
    struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
    atomic_store(&stop, 1);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    free(t);
    printf("done\n");
    return 0;
}
