/* thread_churn — cost of pthread_create + pthread_join of an empty thread.
 * Run with and without the preload; prints "create_join_ns X" (median of rounds). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define PER_ROUND 4000
#define ROUNDS 9

static void *empty(void *arg) { return arg; }

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    double per[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now_ns();
        for (int i = 0; i < PER_ROUND; i++) {
            pthread_t t;
            if (pthread_create(&t, NULL, empty, NULL) != 0)
                return 1;
            pthread_join(t, NULL);
        }
        per[r] = (now_ns() - t0) / PER_ROUND;
    }
    qsort(per, ROUNDS, sizeof per[0], cmp);
    printf("create_join_ns %.0f\n", per[ROUNDS / 2]);
    return 0;
}
