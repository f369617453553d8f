/* spinner — an ordinary multi-threaded C program that knows nothing of proflink: NTHREADS
 * threads burn SECONDS of CPU each, then the program prints "spun" and idles (off the CPU) until
 * SIGTERM or SIGINT, so that an observer can finish reading it while it still exists.
 * usage: spinner NTHREADS SECONDS */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds;

static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
    char name[16];
    snprintf(name, sizeof name, "spin-%d", (int)(long)arg);
    pthread_setname_np(pthread_self(), name);
    volatile unsigned long x = 0;
    while (cpu_seconds() < seconds)
        for (int i = 0; i < 5000; i++)
            x += (unsigned long)i;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: spinner NTHREADS SECONDS\n");
        return 2;
    }
    int n = atoi(argv[1]);
    seconds = atof(argv[2]);
    pthread_t *t = calloc((size_t)n, sizeof *t);
    if (!t)
        return 1;
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, worker, (void *)(long)i);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    /* blocked only now (no other thread is left): until here SIGTERM ends the program */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    printf("spun\n");
    fflush(stdout);
    int sig;
    sigwait(&sigs, &sig);
    free(t);
    return 0;
}
