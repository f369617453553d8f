/* otel_exporter.c — a program that exports the OTel thread pointer itself, as a program with a
 * tracer linked in (dd-trace-cpp, an OpenTelemetry C++ SDK) does: built with -rdynamic, its
 * definition comes first in the global scope, before any preloaded library's. Prints whether
 * the pointer was set behind its back in the main thread and in a new thread, and how many
 * OTEL_CTX mappings the process has. Knows nothing of proflink. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

__attribute__((visibility("default"))) __thread void *otel_thread_ctx_v1;

static void *thread_main(void *arg)
{
    printf("thread %s\n", otel_thread_ctx_v1 ? "set" : "null");
    return arg;
}

int main(void)
{
    printf("main %s\n", otel_thread_ctx_v1 ? "set" : "null");
    pthread_t t;
    pthread_create(&t, NULL, thread_main, NULL);
    pthread_join(t, NULL);
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[4096];
    int n = 0;
    while (maps && fgets(line, sizeof line, maps))
        n += strstr(line, "OTEL_CTX") != NULL;
    printf("otel_ctx %d\n", n);
    return 0;
}
