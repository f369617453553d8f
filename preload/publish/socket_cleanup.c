/* socket_cleanup.c — removes sockets left behind by proflink processes that were killed or that
 * exec'd (same uid only).
 *
 * A file is removed only when all of these hold, so that a live socket is never touched:
 *  - its name is ours ("proflink-<pid>-<8 hex>.sock") and it is a socket owned by our euid;
 *  - it is not the socket this process just bound;
 *  - connect() to it fails with ECONNREFUSED: no socket is bound to that file any more.
 * The pid in the name is not asked about: a directory may be shared with processes of another
 * pid namespace (a container's /tmp mounted from the host), where a number alive here may be
 * dead there and the reverse, so only "is anyone still bound?" tells a live file from a stale
 * one. It is also the cheapest sure question: one connect() on a probe socket reused for every
 * file, against a kill() that could only ever give a hint.
 *
 * The sweep runs in every served process before main, so it costs a start next to nothing,
 * however full the directory (another user can put 100,000 look-alike names in a shared /tmp):
 *  - one read (getdents64) of SWEEP_READ_BYTES per start; the cheap questions first: the
 *    name, then the entry's type from the directory itself (no system call), and only for a
 *    socket with our name a newfstatat (owner) and a connect(), at most SWEEP_MAX_PROBES each;
 *  - a directory larger than one read is looked at in the slice at a random position (its
 *    size from fstat, an lseek before the read): in ext4's hash-ordered directories (where a
 *    disk's /tmp is), each start sees a different slice, so stale files anywhere go away
 *    over a number of starts. Where positions are not hashes (xfs, btrfs, tmpfs on older
 *    kernels) a random position may be past the end; the slice is then the directory's
 *    start, and more than a slice of look-alikes that never go away there can hide stale
 *    files behind them for good.
 * Most files never need the sweep: proflink removes its own on exit, _exit and exec. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "leaves/fd_safe.h"
#include "leaves/log.h"
#include "leaves/raw_syscall.h"
#include "socket.h"
#include "leaves/real_calls.h"
#include "leaves/sys_calls.h"
#include "leaves/str.h"

/* One read per start: about 70 entries of proflink-length names, one page of stack. */
#define SWEEP_READ_BYTES 4096
/* Sockets with our name looked at (newfstatat, then connect if ours) per start: a few
 * microseconds even when all of them are another user's look-alikes. */
#define SWEEP_MAX_PROBES 8

/* The kernel's getdents64 record (no libc spells it the same way). */
struct kdirent {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

/* "proflink-<decimal pid>-<8 hex>.sock" exactly, as socket.c names its files. */
static int our_name(const char *name)
{
    const char *p = name + sizeof SOCKET_NAME_PREFIX - 1;
    if (!str_starts(name, SOCKET_NAME_PREFIX) || *p < '1' || *p > '9')
        return 0;
    while (*p >= '0' && *p <= '9')
        p++;
    if (*p++ != '-')
        return 0;
    for (int i = 0; i < 8; i++, p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return !strcmp(p, ".sock");
}

/* The position to start reading at: random bits this process already has (the 8 hex digits
 * of its own socket's name), so no system call; spread over the 63-bit positions of a
 * hash-ordered directory. */
static int64_t start_position(const char *own_path)
{
    size_t n = strlen(own_path), tail = sizeof ".sock" - 1;
    uint64_t r = 0;
    for (size_t i = n >= tail + 8 ? n - tail - 8 : n; i + tail < n; i++) {
        char c = own_path[i];
        r = r << 4 | ((uint64_t)(c >= '0' && c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10) & 0xf);
    }
    return (int64_t)(r << 31);
}

/* 1 when nobody is bound to dir/name any more; the probe socket is made on first use. */
static int nobody_bound(int *probe, const char *dir, const char *name)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    size_t d = strlen(dir), n = strlen(name);
    if (d + 1 + n >= sizeof addr.sun_path)
        return 0;
    if (*probe < 0 &&
        (*probe = fd_above_stdio(sys_socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0))) < 0)
        return 0;
    memcpy(addr.sun_path, dir, d);
    addr.sun_path[d] = '/';
    memcpy(addr.sun_path + d + 1, name, n + 1);
    /* A datagram socket may connect again and again; the peer learns nothing of it. */
    return sys_connect(*probe, (struct sockaddr *)&addr, sizeof addr) != 0 && errno == ECONNREFUSED;
}

/* The same question for one path, with a probe socket of its own (socket, connect, close:
 * async-signal-safe, as socket_remove_dead needs). */
int socket_nobody_bound(const char *path)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    size_t n = strlen(path);
    if (n >= sizeof addr.sun_path)
        return 0;
    int fd = fd_above_stdio(sys_socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (fd < 0)
        return 0;
    memcpy(addr.sun_path, path, n + 1);
    int refused =
        sys_connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0 && errno == ECONNREFUSED;
    real_close(fd);
    return refused;
}

static long read_entries(int dfd, char *buf, size_t cap)
{
    return raw_syscall4(SYS_getdents64, dfd, (long)buf, (long)cap, 0);
}

void socket_cleanup_stale(const char *dir, const char *own_path)
{
    int dfd = fd_above_stdio(sys_open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dfd < 0)
        return;
    int saved_errno = errno;
    _Alignas(struct kdirent) char buf[SWEEP_READ_BYTES];
    /* A directory that fits in one read (the usual case) is read whole. In a larger one the
     * slice is taken at a random position, or, where that position is past the end (index
     * positions), at the start. fstat tells which: one cheap call, where a read of a large
     * directory just to learn its size cost tens of microseconds. */
    struct stat st;
    int sliced = sys_fstat(dfd, &st) == 0 && st.st_size > SWEEP_READ_BYTES &&
                 raw_syscall4(SYS_lseek, dfd, start_position(own_path), SEEK_SET, 0) >= 0;
    long len = read_entries(dfd, buf, sizeof buf);
    if (sliced && len == 0 && raw_syscall4(SYS_lseek, dfd, 0, SEEK_SET, 0) == 0)
        len = read_entries(dfd, buf, sizeof buf); /* past the end: index positions */
    const char *own_name = str_last(own_path, '/');
    own_name = own_name ? own_name + 1 : own_path;
    uid_t euid = (uid_t)-1;
    int probe = -1, probes = 0, removed = 0, examined = 0;
    for (long off = 0; off < len && probes < SWEEP_MAX_PROBES;) {
        const struct kdirent *e = (const struct kdirent *)(buf + off);
        off += e->d_reclen;
        examined++;
        /* the type comes with the entry on every common file system; DT_UNKNOWN asks */
        if ((e->d_type != DT_SOCK && e->d_type != DT_UNKNOWN) || !our_name(e->d_name) ||
            !strcmp(e->d_name, own_name))
            continue;
        probes++;
        if (euid == (uid_t)-1)
            euid = raw_geteuid();
        if (sys_fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISSOCK(st.st_mode) ||
            st.st_uid != euid)
            continue;
        if (nobody_bound(&probe, dir, e->d_name) && sys_unlinkat(dfd, e->d_name, 0) == 0)
            removed++;
    }
    if (probe >= 0)
        real_close(probe);
    real_close(dfd);
    if (removed)
        log_info("removed %d stale socket file(s) in %s", removed, dir);
    log_debug("socket sweep of %s: %d entries examined (one read of at most %d bytes, %d of "
              "them probed)", dir, examined, SWEEP_READ_BYTES, probes);
    errno = saved_errno;
}
