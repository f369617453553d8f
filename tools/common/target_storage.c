/* target_storage.c — see target_storage.h. */
#include "target_storage.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "target_util.h"

/* Reads the utf8-str at *addr and advances *addr past it. */
static int next_str(const struct target_mem *m, uint64_t *addr, const char *what, uint32_t max,
                    struct target_str *out, char *err)
{
    char rerr[TARGET_ERRLEN];
    if (target_mem_read(m, *addr, &out->len, 4, rerr) != 0)
        return target_fail(err, "%s length: %s", what, rerr);
    *addr += 4;
    if (out->len > max)
        return target_fail(err, "%s is %" PRIu32 " bytes, more than the %" PRIu32
                                " the profiler accepts: it would not attach",
                           what, out->len, max);
    out->s = malloc((size_t)out->len + 1);
    if (!out->s)
        return target_fail(err, "out of memory");
    if (out->len && target_mem_read(m, *addr, out->s, out->len, rerr) != 0)
        return target_fail(err, "%s bytes: %s", what, rerr);
    out->s[out->len] = '\0';
    *addr += out->len;
    return 0;
}

int target_storage_read(const struct target_mem *m, uint64_t ptr_addr, struct target_storage *out,
                        char *err)
{
    memset(out, 0, sizeof *out);
    char rerr[TARGET_ERRLEN];
    if (target_mem_u64(m, ptr_addr, &out->addr, rerr) != 0)
        return target_fail(err, "storage pointer: %s", rerr);
    if (out->addr == 0)
        return target_fail(err, "storage pointer at 0x%" PRIx64 " is NULL (not published)",
                           ptr_addr);
    if (target_mem_read(m, out->addr, &out->minor, 2, rerr) != 0)
        return target_fail(err, "storage block: %s", rerr);
    uint64_t p = out->addr + 2;
    if (next_str(m, &p, "service-name", TARGET_MAX_SERVICE_NAME, &out->service_name, err) != 0 ||
        next_str(m, &p, "service-environment", TARGET_MAX_SERVICE_ENV, &out->service_environment,
                 err) != 0 ||
        next_str(m, &p, "socket-file-path", TARGET_MAX_SOCKET_PATH, &out->socket_path, err) != 0)
        return -1;
    return 0;
}

void target_storage_free(struct target_storage *s)
{
    free(s->service_name.s);
    free(s->service_environment.s);
    free(s->socket_path.s);
    memset(s, 0, sizeof *s);
}
