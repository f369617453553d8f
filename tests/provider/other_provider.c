/* other_provider.c — a library of the same shape as the Elastic Java agent's native library
 * (elastic-jvmti-linux-*.so): it exports the apmint process storage pointer and TLS variable
 * with default visibility, and other_provider_start publishes a block naming a socket of its
 * own, as the agent does once its profiling integration starts (other_provider_publish: a block
 * naming a socket it did not bind, such as one spelt differently). Loaded with dlopen after
 * proflink, its references to both names resolve to proflink's definitions. Knows nothing of
 * proflink. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

__attribute__((visibility("default"))) void *elastic_apm_profiling_correlation_process_storage_v1;
__attribute__((visibility("default"))) __thread void *elastic_apm_profiling_correlation_tls_v1;

static uint8_t *put_str(uint8_t *p, const char *s)
{
    uint32_t n = (uint32_t)strlen(s);
    memcpy(p, &n, 4);
    memcpy(p + 4, s, n);
    return p + 4 + n;
}

/* Publishes the storage block naming path, as the socket of this library. */
__attribute__((visibility("default"))) void other_provider_publish(const char *path, const char *service)
{
    uint8_t *block = malloc(2 + 12 + strlen(service) + strlen(path));
    uint16_t minor = 1;
    memcpy(block, &minor, 2);
    uint8_t *p = put_str(block + 2, service);
    p = put_str(p, "");
    put_str(p, path);
    __atomic_store_n(&elastic_apm_profiling_correlation_process_storage_v1, block, __ATOMIC_RELEASE);
    /* the calling thread's record, as the agent sets one per thread (a TLSDESC reference) */
    static uint8_t record[37];
    elastic_apm_profiling_correlation_tls_v1 = record;
}

/* Binds a datagram socket at path and publishes the storage block naming it; returns the fd. */
__attribute__((visibility("default"))) int other_provider_start(const char *path, const char *service)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strncpy(a.sun_path, path, sizeof a.sun_path - 1);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0)
        return -1;
    other_provider_publish(path, service);
    return fd;
}

/* The storage pointer as this library's code sees it (through its own reference). */
__attribute__((visibility("default"))) void *other_provider_storage(void)
{
    return elastic_apm_profiling_correlation_process_storage_v1;
}
