/* target_dlclose — a program that loads proflink late with dlopen (not preloaded), uses the API
 * from a thread (so that thread has records and a thread-exit destructor), starts the reader
 * thread (proflink_set_message_callback), dlcloses the library, then lets the thread exit and
 * keeps running. Prints "survived" and exits 0 if nothing crashed.
 * usage: target_dlclose LIBRARY */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

typedef void (*set_trace_fn)(const uint8_t *, const uint8_t *, const uint8_t *, uint8_t);
typedef void (*set_callback_fn)(void (*)(const void *, void *), void *);

static set_trace_fn set_trace;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int stage; /* 1: the thread used the API; 2: main closed the library */

static void on_message(const void *msg, void *user) { (void)msg, (void)user; }

static void *worker(void *arg)
{
    (void)arg;
    static const uint8_t trace[16] = {1}, span[8] = {2};
    set_trace(trace, span, span, 1);
    pthread_mutex_lock(&lock);
    stage = 1;
    pthread_cond_broadcast(&cond);
    while (stage < 2)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    return NULL; /* thread exit: TSD destructors run now */
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 3;
    }
    set_trace = (set_trace_fn)dlsym(h, "proflink_set_trace");
    set_callback_fn set_cb = (set_callback_fn)dlsym(h, "proflink_set_message_callback");
    if (!set_trace || !set_cb)
        return 4;
    set_cb(on_message, NULL); /* starts the reader thread */
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0)
        return 5;
    pthread_mutex_lock(&lock);
    while (stage < 1)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    if (dlclose(h) != 0)
        return 6;
    pthread_mutex_lock(&lock);
    stage = 2;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
    pthread_join(t, NULL);
    /* give the reader thread time to run (it would wake in unmapped code) */
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    printf("survived\n");
    return 0;
}
