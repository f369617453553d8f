/* process_storage.c — see process_storage.h. */
#include "process_storage.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "leaves/export.h"

PROFLINK_EXPORT void *elastic_apm_profiling_correlation_process_storage_v1;

static uint8_t *put_u32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
    return p + 4;
}

static uint8_t *put_str(uint8_t *p, const char *s)
{
    uint32_t n = (uint32_t)strlen(s);
    p = put_u32(p, n);
    memcpy(p, s, n);
    return p + n;
}

/* Publication is a release store (a compare-and-swap, below): the block is complete before the
 * pointer can be seen. The replaced block (a fork child's copy of its parent's, or the block
 * before a tracer's new service name) is deliberately not freed: a profiler
 * that read the old pointer an instant earlier may still be reading the block, and a hundred
 * bytes per fork generation is a price worth paying for never showing it freed memory.
 *
 * Another provider of the format (provider.c) may have stored its own block in the pointer:
 * its code's references resolve to ours when it is loaded after us. It is never overwritten:
 * the store is a compare-and-swap from the block we published last. Our recent blocks are kept
 * in a small ring, each written before the pointer can name it (and read after it,
 * process_storage_foreign), so a block of ours in the pointer is always found there, even when
 * two threads publish at once (a failed exec beside a tracer's new resource). */
/* more than the publications that can be in flight at once (a failed exec on each of a few
 * threads beside one tracer's resource, serialized by its lock) */
#define OURS_KEPT 8
static void *ours[OURS_KEPT];
static unsigned ours_next;
static void *published;

static void swap_pointer(void *block)
{
    if (block)
        __atomic_store_n(&ours[__atomic_fetch_add(&ours_next, 1, __ATOMIC_RELAXED) % OURS_KEPT],
                         block, __ATOMIC_RELEASE);
    void *expected = __atomic_load_n(&published, __ATOMIC_ACQUIRE);
    if (__atomic_compare_exchange_n(&elastic_apm_profiling_correlation_process_storage_v1,
                                    &expected, block, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        __atomic_store_n(&published, block, __ATOMIC_RELEASE);
}

void *process_storage_foreign(void)
{
    void *cur = __atomic_load_n(&elastic_apm_profiling_correlation_process_storage_v1,
                                __ATOMIC_ACQUIRE);
    if (!cur)
        return NULL;
    for (int i = 0; i < OURS_KEPT; i++)
        if (__atomic_load_n(&ours[i], __ATOMIC_ACQUIRE) == cur)
            return NULL;
    return cur;
}

/* The first block, in static storage when it fits: in a program that has not called malloc yet
 * (a short command), a malloc here would set up libc's allocator at start (a getrandom, two brk
 * and a fresh heap page) for a hundred bytes. Taken once per process image (a fork child's copy
 * of the flag says taken), never reused, like every block (above). */
#define FIRST_BLOCK_SIZE 512 /* a service name, an environment and a socket path, typically */
static _Alignas(16) uint8_t first_block[FIRST_BLOCK_SIZE];
static int first_block_taken;

static uint8_t *block_alloc(size_t size)
{
    /* relaxed: only which caller takes it matters; swap_pointer publishes the contents */
    if (size <= sizeof first_block && !__atomic_exchange_n(&first_block_taken, 1, __ATOMIC_RELAXED))
        return first_block;
    return malloc(size);
}

int process_storage_publish(const struct config *cfg, const char *socket_path)
{
    size_t size = 2 + 3 * 4 + strlen(cfg->service_name) + strlen(cfg->service_environment) +
                  strlen(socket_path);
    uint8_t *block = block_alloc(size);
    if (!block)
        return -1;
    uint16_t minor = 1;
    memcpy(block, &minor, 2);
    uint8_t *p = block + 2;
    p = put_str(p, cfg->service_name);
    p = put_str(p, cfg->service_environment);
    put_str(p, socket_path);
    swap_pointer(block);
    return 0;
}

void process_storage_unpublish(void) { swap_pointer(NULL); }
