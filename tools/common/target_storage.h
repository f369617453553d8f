/* target_storage.h — the apmint process storage: the block that the exported pointer
 * elastic_apm_profiling_correlation_process_storage_v1 points to, read once at attach:
 *   u16 layout-minor-version | utf8-str service-name (<= 128 bytes) |
 *   utf8-str service-environment (<= 128) | utf8-str socket-file-path (<= 1024)
 * where utf8-str = u32 length + bytes (no NUL), all native endian. A string over its limit makes
 * the profiler give up on the process, so it fails here too. */
#ifndef TARGET_STORAGE_H
#define TARGET_STORAGE_H

#include <stddef.h>
#include <stdint.h>

#include "target_mem.h"

#define TARGET_MAX_SERVICE_NAME 128
#define TARGET_MAX_SERVICE_ENV 128
#define TARGET_MAX_SOCKET_PATH 1024

struct target_str {
    char *s; /* len bytes plus a NUL */
    uint32_t len;
};

struct target_storage {
    uint64_t addr; /* where the block is (the value of the exported pointer) */
    uint16_t minor;
    struct target_str service_name, service_environment, socket_path;
};

/* Reads the pointer stored at ptr_addr (runtime address of the exported variable), then the
 * block. A NULL pointer is an error: the block is not published (yet). */
int target_storage_read(const struct target_mem *m, uint64_t ptr_addr, struct target_storage *out,
                        char *err);
void target_storage_free(struct target_storage *s);

#endif
