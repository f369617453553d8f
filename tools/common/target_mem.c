/* target_mem.c — see target_mem.h. */
#include "target_mem.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "target_util.h"

int target_mem_open(struct target_mem *m, pid_t pid, char *err)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
    m->pid = pid;
    m->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (m->fd < 0)
        return target_fail(err, "cannot open %s: %s", path, strerror(errno));
    return 0;
}

void target_mem_close(struct target_mem *m)
{
    if (m->fd >= 0)
        close(m->fd);
    m->fd = -1;
}

int target_mem_read(const struct target_mem *m, uint64_t addr, void *buf, size_t len, char *err)
{
    size_t done = 0;
    while (done < len) {
        /* Addresses above 2^63 do not fit off_t; they are never user space anyway. */
        if (addr + done > (uint64_t)INT64_MAX)
            return target_fail(err, "address 0x%" PRIx64 " is not a user-space address", addr);
        ssize_t n = pread(m->fd, (char *)buf + done, len - done, (off_t)(addr + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return target_fail(err, "cannot read %zu bytes at 0x%" PRIx64 ": %s", len, addr,
                               n < 0 ? strerror(errno) : "unmapped");
        done += (size_t)n;
    }
    return 0;
}

int target_mem_u64(const struct target_mem *m, uint64_t addr, uint64_t *out, char *err)
{
    return target_mem_read(m, addr, out, sizeof *out, err);
}
