/* static_app — a statically linked program using proflink the documented way: proflink_init()
 * first thing in main, then the API. Built four ways by tests/static.mk: glibc and musl, each
 * plain and with -Wl,--wrap=pthread_create (eager records and context inheritance).
 * usage: static_app SECONDS
 * Prints "init <rc>", then one line per thread "<who> <get rc> [<trace id> <txn id> <flags>]"
 * (main and "setter" set their own context; "plain" sets none and reports what it has), then
 * "ready <pid>", sleeps SECONDS and exits 0. */
#define _POSIX_C_SOURCE 200809L /* pthread barriers under -std=c11 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "proflink.h"

static pthread_barrier_t reported, done;
static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

static void report(const char *who)
{
    uint8_t tid[16], sid[8], xid[8], flags = 0;
    int rc = proflink_get_trace(tid, sid, xid, &flags);
    pthread_mutex_lock(&print_lock);
    printf("%s %d", who, rc);
    if (rc == 1) {
        printf(" ");
        for (int i = 0; i < 16; i++)
            printf("%02x", tid[i]);
        printf(" ");
        for (int i = 0; i < 8; i++)
            printf("%02x", xid[i]);
        printf(" %02x", flags);
    }
    printf("\n");
    fflush(stdout);
    pthread_mutex_unlock(&print_lock);
}

static void *setter(void *arg)
{
    (void)arg;
    proflink_set_traceparent("00-11111111111111111111111111111111-2222222222222222-00",
                             "3333333333333333");
    report("setter");
    pthread_barrier_wait(&reported);
    pthread_barrier_wait(&done);
    return NULL;
}

static void *plain(void *arg)
{
    (void)arg;
    report("plain");
    pthread_barrier_wait(&reported);
    pthread_barrier_wait(&done);
    return NULL;
}

int main(int argc, char **argv)
{
    int rc = proflink_init();
    unsigned seconds = argc > 1 ? (unsigned)atoi(argv[1]) : 5;
    printf("init %d\n", rc);
    fflush(stdout);
    proflink_set_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", NULL);
    report("main");
    pthread_barrier_init(&reported, NULL, 3);
    pthread_barrier_init(&done, NULL, 3);
    pthread_t a, b;
    if (pthread_create(&a, NULL, setter, NULL) || pthread_create(&b, NULL, plain, NULL))
        return 2;
    pthread_barrier_wait(&reported);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    sleep(seconds);
    pthread_barrier_wait(&done);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    return 0;
}
