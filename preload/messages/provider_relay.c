/* provider_relay.c — see provider_relay.h. */
#include "provider_relay.h"

#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "leaves/log.h"
#include "publish/process_storage.h"
#include "leaves/raw_syscall.h"
#include "leaves/real_calls.h"
#include "leaves/sys_calls.h"
#include "leaves/str.h"

/* The other block's fields, bounded as the profiler bounds them (its reader refuses longer). */
#define OTHER_SERVICE_MAX 128
#define OTHER_ENV_MAX 128
#define OTHER_SOCKET_MAX 1024

static _Atomic int yielded; /* the other block was seen (and logged) */

/* Intake thread only: the relay socket and the path it sends to, for the block it was read from;
 * whether the block names a path, and whether that path was found not to be our own socket. */
static int relay_fd = -1;
static const void *relay_block;
static struct sockaddr_un relay_addr;
static int relay_named, relay_checked, relay_ok;

/* Copies n bytes of this process's memory at addr, failing with EFAULT where a plain read would
 * crash: the block is the other library's, which may replace or free it at any time. */
static int read_own(const void *addr, void *out, size_t n)
{
    struct iovec local = {out, n}, remote = {(void *)addr, n};
    return raw_syscall6(SYS_process_vm_readv, raw_getpid(), (long)&local, 1, (long)&remote, 1, 0) ==
                   (long)n
               ? 0
               : -1;
}

/* Skips the utf8-str (u32 length + bytes) at *p, or copies it into out (cap bytes) when out is
 * given; 0 when unreadable or longer than max. */
static int next_str(const uint8_t **p, uint32_t max, char *out, size_t cap, uint32_t *len)
{
    if (read_own(*p, len, 4) != 0 || *len > max)
        return 0;
    if (out && (*len >= cap || read_own(*p + 4, out, *len) != 0))
        return 0;
    *p += 4 + *len;
    return 1;
}

/* The socket path the other block names, into out (a sun_path); 0 when it cannot be read or
 * does not fit. */
static int other_socket(const void *block, struct sockaddr_un *out)
{
    const uint8_t *p = (const uint8_t *)block + 2;
    uint32_t len;
    memset(out, 0, sizeof *out);
    out->sun_family = AF_UNIX;
    return next_str(&p, OTHER_SERVICE_MAX, NULL, 0, &len) &&
           next_str(&p, OTHER_ENV_MAX, NULL, 0, &len) &&
           next_str(&p, OTHER_SOCKET_MAX, out->sun_path, sizeof out->sun_path, &len) && len > 0;
}

/* The first loaded object other than proflink named by the profiler's rule
 * (elastic-jvmti-linux-*.so): the library that published the block. */
static int find_other(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    const char **found = data;
    const char *name = info->dlpi_name, *base = name ? str_last(name, '/') : NULL;
    base = base ? base + 1 : name;
    if (!base || !str_starts(base, "elastic-jvmti-linux-") ||
        str_starts(base, "elastic-jvmti-linux-proflink-"))
        return 0;
    *found = name;
    return 1;
}

/* Our own socket's path (runtime.c's buffer, which keeps its address through fork children's
 * renames): the relay never sends there, which would be a loop. */
static const char *own_socket = "";

void provider_relay_own_socket(const char *path) { own_socket = path ? path : ""; }

/* 1 when path is our own socket's file (the same device and inode: one file has many spellings,
 * a trailing '/', "//", "..", a link), 0 when it is another file, -1 when there is none yet. */
static int own_socket_file(const char *path)
{
    struct stat to, own;
    if (sys_fstatat(AT_FDCWD, path, &to, 0) != 0)
        return -1;
    /* ours gone (a /tmp cleaner): no path reaches it, so no datagram can come back */
    if (!own_socket[0] || sys_fstatat(AT_FDCWD, own_socket, &own, 0) != 0)
        return 0;
    return to.st_dev == own.st_dev && to.st_ino == own.st_ino;
}

int provider_noticed(void)
{
    const void *other = process_storage_foreign();
    if (!other || atomic_load_explicit(&yielded, memory_order_relaxed))
        return other != NULL;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&yielded, &expected, 1))
        return 1;
    const char *lib = NULL;
    dl_iterate_phdr(find_other, &lib);
    struct sockaddr_un to;
    int named = other_socket(other, &to);
    log_info("%s published its own apmint process storage (socket %s): proflink leaves the "
             "storage pointer to it and relays the profiler's messages from its socket to that one",
             lib ? lib : "another library", named ? to.sun_path : "(unusable)");
    return 1;
}

int provider_relaying(void) { return provider_noticed(); }

void provider_relay(const void *buf, size_t len)
{
    const void *other = process_storage_foreign();
    if (!other)
        return;
    if (other != relay_block) { /* the other provider published a new block: read it again */
        relay_block = other;
        relay_named = other_socket(other, &relay_addr);
        relay_checked = 0;
    }
    if (!relay_named)
        return;
    if (!relay_checked) {
        /* never to our own socket, however it is spelt: each datagram would come back to be
         * sent again, forever */
        int own = own_socket_file(relay_addr.sun_path);
        if (own < 0)
            return; /* no file there yet: looked at again with the next datagram */
        relay_checked = 1;
        relay_ok = !own;
    }
    if (!relay_ok)
        return;
    if (relay_fd < 0)
        relay_fd = sys_socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (relay_fd < 0)
        return;
    /* as the profiler sends: never waits, drops what the other socket's queue refuses */
    real_sendto(relay_fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL, (const struct sockaddr *)&relay_addr,
           sizeof relay_addr);
}
