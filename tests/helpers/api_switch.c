/* api_switch — a tiny "tracer": switches contexts through the API found with dlsym, so it runs
 * with and without proflink. usage: api_switch TRACEPARENT [TXN_HEX] [SECONDS]
 * Sets the context on the main thread and on a new thread, prints "ready <pid>", sleeps, then
 * clears and prints "cleared", sleeps again. Also prints what proflink_get_trace returns. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*set_tp_fn)(const char *, const char *);
typedef int (*get_fn)(uint8_t *, uint8_t *, uint8_t *, uint8_t *);
typedef void (*clear_fn)(void);

static set_tp_fn set_tp;
static const char *tp, *txn;
static unsigned seconds;
static int child_sets = 1;
static pthread_barrier_t started; /* "ready" only once the new thread has set its context */

static void *thread_main(void *arg)
{
    (void)arg;
    if (set_tp && child_sets)
        set_tp(tp, txn);
    pthread_barrier_wait(&started);
    sleep(seconds * 2 + 1);
    return NULL;
}

int main(int argc, char **argv)
{
    tp = argc > 1 ? argv[1] : "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    txn = argc > 2 && argv[2][0] ? argv[2] : NULL;
    seconds = argc > 3 ? (unsigned)atoi(argv[3]) : 2;
    child_sets = !(argc > 4 && !strcmp(argv[4], "noset"));
    set_tp = (set_tp_fn)dlsym(RTLD_DEFAULT, "proflink_set_traceparent");
    get_fn get = (get_fn)dlsym(RTLD_DEFAULT, "proflink_get_trace");
    clear_fn clear = (clear_fn)dlsym(RTLD_DEFAULT, "proflink_clear_trace");
    int rc = set_tp ? set_tp(tp, txn) : -2;
    printf("set %d\n", rc);
    pthread_t t;
    pthread_barrier_init(&started, NULL, 2);
    if (pthread_create(&t, NULL, thread_main, NULL) == 0)
        pthread_barrier_wait(&started);
    uint8_t tid[16], sid[8], xid[8], flags = 0;
    int got = get ? get(tid, sid, xid, &flags) : -2;
    printf("get %d", got);
    if (got == 1) {
        printf(" ");
        for (int i = 0; i < 16; i++)
            printf("%02x", tid[i]);
        printf(" ");
        for (int i = 0; i < 8; i++)
            printf("%02x", xid[i]);
        printf(" %02x", flags);
    }
    printf("\nready %d\n", (int)getpid());
    fflush(stdout);
    sleep(seconds);
    if (clear)
        clear();
    printf("cleared\n");
    fflush(stdout);
    sleep(seconds);
    return 0;
}
