/* target_churn — many short-lived threads, for leak and use-after-free checks under valgrind or
 * ASan. usage: target_churn TOTAL [BATCH]; joins every thread, a third of them exit through
 * pthread_exit, prints "churned TOTAL". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void *body(void *arg)
{
    long i = (long)arg;
    if (i % 3 == 0)
        pthread_exit(arg);
    return arg;
}

int main(int argc, char **argv)
{
    long total = argc > 1 ? atol(argv[1]) : 10000, batch = argc > 2 ? atol(argv[2]) : 16;
    pthread_t *t = calloc((size_t)batch, sizeof *t);
    long done = 0;
    while (done < total) {
        long n = total - done < batch ? total - done : batch;
        for (long i = 0; i < n; i++)
            if (pthread_create(&t[i], NULL, body, (void *)(done + i)) != 0)
                return 1;
        for (long i = 0; i < n; i++)
            pthread_join(t[i], NULL);
        done += n;
    }
    free(t);
    printf("churned %ld\n", total);
    return 0;
}
