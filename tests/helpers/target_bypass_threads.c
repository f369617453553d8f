/* target_bypass_threads — threads created through a pthread_create the preload does not
 * interpose: libc's own, found with dlsym on libc's handle (what a library loaded after the
 * preload gets from dlsym(RTLD_NEXT, "pthread_create"), as redis's jemalloc does), next to one
 * made through the ordinary call. Prints "ready", waits for SIGUSR1, exits 0. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "usr1.h"

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static void *idle(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

int main(void)
{
    usr1_block();
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    create_fn libc_create = libc ? (create_fn)dlsym(libc, "pthread_create") : NULL;
    pthread_t t;
    if (!libc_create || libc_create(&t, NULL, idle, NULL) != 0 || libc_create(&t, NULL, idle, NULL) != 0 ||
        pthread_create(&t, NULL, idle, NULL) != 0)
        return 1;
    printf("ready\n");
    fflush(stdout);
    usr1_wait();
    return 0;
}
