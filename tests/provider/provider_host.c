/* provider_host.c — a program that loads another provider library late, as a JVM loads its
 * agent's: commands on stdin, one per line:
 *   load LIB SOCKET   dlopen LIB, start it with its socket at SOCKET ("loaded")
 *   alias LIB SOCKET  dlopen LIB, have it publish a block naming SOCKET, a socket it did not
 *                     bind ("aliased")
 *   thread            create and join a thread ("thread")
 *   resource ATTRS    proflink_set_resource(ATTRS) through dlsym, if proflink is there ("resource N")
 *   recv              wait (2 s at most) for a datagram on the other library's socket
 *                     ("other got N bytes" or "other got nothing")
 *   storage           "storage SAME" when the other library's own reference and the published
 *                     pointer agree, "storage OTHER" otherwise
 *   othread           creates a thread that prints whether its otel_thread_ctx_v1 was set
 *                     behind its back ("othread set" or "othread null")
 *   otelctx           publishes an OpenTelemetry process context of its own, as an SDK does: an
 *                     anonymous page with an OTEL_CTX header, named with prctl
 *                     ("otelctx ADDR RC", RC the prctl's result) */
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void *nothing(void *arg) { return arg; }

static void *otel_pointer(void *arg)
{
    void **p = dlsym(RTLD_DEFAULT, "otel_thread_ctx_v1"); /* this thread's instance */
    printf("othread %s\n", p && *p ? "set" : "null");
    return arg;
}

int main(void)
{
    char line[512];
    int fd = -1;
    void *(*storage)(void) = NULL;
    printf("ready pid=%d\n", (int)getpid());
    fflush(stdout);
    while (fgets(line, sizeof line, stdin)) {
        char a[256] = "", b[256] = "";
        if (sscanf(line, "load %255s %255s", a, b) == 2) {
            void *h = dlopen(a, RTLD_NOW);
            typedef int (*start_fn)(const char *, const char *);
            start_fn start = h ? (start_fn)dlsym(h, "other_provider_start") : NULL;
            storage = h ? (void *(*)(void))dlsym(h, "other_provider_storage") : NULL;
            fd = start ? start(b, "other-service") : -1;
            printf(fd >= 0 ? "loaded\n" : "load failed: %s\n", dlerror());
        } else if (sscanf(line, "alias %255s %255s", a, b) == 2) {
            void *h = dlopen(a, RTLD_NOW);
            typedef void (*publish_fn)(const char *, const char *);
            publish_fn publish = h ? (publish_fn)dlsym(h, "other_provider_publish") : NULL;
            if (publish)
                publish(b, "other-service");
            printf(publish ? "aliased\n" : "alias failed: %s\n", dlerror());
        } else if (!strncmp(line, "othread", 7)) {
            pthread_t t;
            pthread_create(&t, NULL, otel_pointer, NULL);
            pthread_join(t, NULL);
        } else if (!strncmp(line, "thread", 6)) {
            pthread_t t;
            pthread_create(&t, NULL, nothing, NULL);
            pthread_join(t, NULL);
            printf("thread\n");
        } else if (sscanf(line, "resource %255s", a) == 1) {
            typedef int (*set_fn)(const char *);
            set_fn set = (set_fn)dlsym(RTLD_DEFAULT, "proflink_set_resource");
            printf("resource %d\n", set ? set(a) : -99);
        } else if (!strncmp(line, "recv", 4)) {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            char buf[2048];
            ssize_t n = poll(&p, 1, 2000) == 1 ? recv(fd, buf, sizeof buf, 0) : -1;
            if (n >= 0)
                printf("other got %zd bytes\n", n);
            else
                printf("other got nothing\n");
        } else if (!strncmp(line, "otelctx", 7)) {
            unsigned char *p =
                mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            struct timespec now;
            clock_gettime(CLOCK_BOOTTIME, &now);
            unsigned long long ts =
                (unsigned long long)now.tv_sec * 1000000000ull + (unsigned long long)now.tv_nsec;
            unsigned version = 2;
            memcpy(p, "OTEL_CTX", 8);
            memcpy(p + 8, &version, 4);
            memcpy(p + 16, &ts, 8);
            int rc = prctl(0x53564d41, 0, (unsigned long)p, 4096, (unsigned long)"OTEL_CTX");
            printf("otelctx %lx %d\n", (unsigned long)p, rc);
        } else if (!strncmp(line, "storage", 7)) {
            void **published =
                dlsym(RTLD_DEFAULT, "elastic_apm_profiling_correlation_process_storage_v1");
            int same = storage && published && storage() == *published;
            printf("storage %s\n", same ? "SAME" : "OTHER");
        }
        fflush(stdout);
    }
    return 0;
}
