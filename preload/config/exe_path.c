/* exe_path.c — the executable's path without /proc where that is the same path (exe_path.h
 * says why). */
#include "exe_path.h"

#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>

#include "leaves/real_calls.h"
#include "leaves/start_path.h"
#include "leaves/sys_calls.h"

/* Links followed in one resolution before giving up: the kernel's own limit for one lookup
 * (ELOOP), so a name the kernel could execute never runs out of it. */
#define EXE_LINKS_MAX 40

#if defined(__x86_64__)
#define EXE_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define EXE_MACHINE EM_AARCH64
#endif

/* Whether path is an ELF program of this machine, read from its first bytes. A script starts
 * with "#!", a binfmt_misc program (a JAR, another machine's ELF under an emulator) has
 * another format or machine: for each of them /proc/self/exe is the interpreter. */
START_PATH_CODE static int native_elf(const char *path)
{
    /* O_NONBLOCK: should the name have become a FIFO since the exec, the open must not wait for
     * a writer (a start never blocks); a regular file ignores the flag. */
    int fd = sys_open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return 0; /* executable but unreadable (mode 0711): we cannot tell */
    unsigned char h[EI_NIDENT + 4];
    ssize_t n = real_read(fd, h, sizeof h);
    real_close(fd);
    uint16_t machine;
    memcpy(&machine, h + EI_NIDENT + 2, sizeof machine); /* e_machine, after e_type */
    return n == (ssize_t)sizeof h && memcmp(h, ELFMAG, SELFMAG) == 0 &&
           h[EI_CLASS] == ELFCLASS64 && h[EI_DATA] == ELFDATA2LSB && machine == EXE_MACHINE;
}

/* Resolves name as the kernel looks it up: component by component from the root, "." and ".."
 * taken as they come (".." of a resolved prefix is its parent: it holds no link), each symbolic
 * link replaced by its target. One buffer for what is left to walk: when a link is met, the
 * rest is moved to the buffer's end, the target read in front of it and the rest joined back. */
START_PATH_CODE int exe_path_resolve(const char *name, char path[PATH_MAX])
{
    char rest[PATH_MAX];
    size_t len = 0, n = name ? strlen(name) : 0;
    int links = 0, regular = 0;
    if (n == 0 || name[0] != '/' || n >= sizeof rest)
        return -1;
    memcpy(rest, name, n + 1);
    path[0] = 0;
    for (char *p = rest;;) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        char *end = p;
        while (*end && *end != '/')
            end++;
        size_t c = (size_t)(end - p);
        if (c == 1 && p[0] == '.') {
            p = end;
            continue;
        }
        if (c == 2 && p[0] == '.' && p[1] == '.') {
            while (len > 0 && path[len - 1] != '/')
                len--;
            if (len > 0)
                len--; /* the slash before the last component */
            path[len] = 0;
            p = end;
            continue;
        }
        if (len + 1 + c >= PATH_MAX)
            return -1;
        path[len] = '/';
        memcpy(path + len + 1, p, c);
        path[len + 1 + c] = 0;
        struct stat st;
        if (sys_lstat(path, &st) != 0)
            return -1;
        if (!S_ISLNK(st.st_mode)) {
            len += 1 + c;
            p = end;
            regular = S_ISREG(st.st_mode); /* of the last component, in the end */
            continue;
        }
        if (++links > EXE_LINKS_MAX)
            return -1;
        size_t tail = strlen(end); /* what follows the link, with its leading slash */
        char *moved = rest + sizeof rest - tail - 1;
        memmove(moved, end, tail + 1);
        ssize_t t = sys_readlink(path, rest, (size_t)(moved - rest));
        if (t <= 0 || t >= moved - rest)
            return -1; /* unreadable, or too long to join with the rest */
        memmove(rest + t, moved, tail + 1);
        path[len] = 0; /* the link itself is not part of the result */
        if (rest[0] == '/')
            len = 0, path[0] = 0;
        p = rest;
    }
    if (len == 0 || !regular || !native_elf(path))
        return -1;
    return 0;
}

START_PATH_CODE void exe_path_read(char path[PATH_MAX])
{
    if (exe_path_resolve((const char *)getauxval(AT_EXECFN), path) == 0)
        return;
    ssize_t n = sys_readlink("/proc/self/exe", path, PATH_MAX - 1);
    path[n > 0 ? n : 0] = 0;
}
