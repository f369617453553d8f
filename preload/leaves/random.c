/* random.c — see random.h. */
#include "random.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include "clock.h"
#include "fd_safe.h"
#include "real_calls.h"
#include "raw_syscall.h"
#include "sys_calls.h"

/* getrandom here, and memfd_create in otel_process_ctx.c, are made as system calls
 * (raw_syscall.h), not through their libc wrappers: every libc symbol the library imports is
 * looked up at load time (-z now) in every process, served or not, and the kernel call is the
 * same on both C libraries. A failing call (ENOSYS on an old kernel, a seccomp filter) only
 * leads to the next source. */

/* Without GRND_NONBLOCK getrandom waits for the entropy pool at early boot: a service started
 * then must not hang in our constructor. */
static size_t from_kernel(uint8_t *out, size_t n)
{
    size_t got = 0;
    while (got < n) {
        long r = raw_syscall6(SYS_getrandom, (long)(out + got), (long)(n - got), GRND_NONBLOCK, 0, 0,
                              0);
        if (r > 0)
            got += (size_t)r;
        else if (r != -EINTR)
            break;
    }
    return got;
}

static size_t from_urandom(uint8_t *out, size_t n)
{
    int fd = fd_above_stdio(sys_open("/dev/urandom", O_RDONLY | O_CLOEXEC));
    size_t got = 0;
    if (fd < 0)
        return 0;
    while (got < n) {
        ssize_t r = real_read(fd, out + got, n - got);
        if (r > 0)
            got += (size_t)r;
        else if (!(r < 0 && errno == EINTR))
            break;
    }
    real_close(fd);
    return got;
}

/* The last resort (seccomp forbids both, no /dev): an identifier only has to be unique, so
 * clocks, pid and a stack address through splitmix64 will do. */
static void from_clocks(uint8_t *out, size_t n)
{
    uint64_t x = clock_monotonic_ns() ^ clock_realtime_ns() << 20 ^ (uint64_t)raw_getpid() << 40 ^
                 (uint64_t)(uintptr_t)&x;
    for (size_t i = 0; i < n; i++) {
        x += 0x9e3779b97f4a7c15u;
        uint64_t z = x;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        out[i] = (uint8_t)(z ^ (z >> 31));
    }
}

void random_bytes(void *buf, size_t n)
{
    uint8_t *out = buf;
    int saved = errno;
    size_t got = from_kernel(out, n);
    if (got < n)
        got += from_urandom(out + got, n - got);
    if (got < n)
        from_clocks(out + got, n - got);
    errno = saved;
}

void random_uuid(char out[RANDOM_UUID_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    uint8_t b[16];
    random_bytes(b, sizeof b);
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
    size_t o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = hex[b[i] >> 4];
        out[o++] = hex[b[i] & 15];
    }
    out[o] = 0;
}
