/* exe_path.c — the executable's path, with no system call the dynamic loader does not make
 * (exe_path.h says why). */
#include "exe_path.h"

#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>

#include "leaves/real_calls.h"
#include "leaves/start_path.h"
#include "leaves/sys_calls.h"

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

/* The kind of path's last component itself, a link not followed, with the calls the C library's
 * dynamic loader makes as well (a seccomp allowlist made of a program's own calls admits them):
 * glibc's lstat is its newfstatat; musl's loader never makes lstat, so a descriptor of the name
 * itself (O_PATH) is opened and fstat'ed there. */
START_PATH_CODE static int component_stat(const char *path, struct stat *st)
{
#ifdef __GLIBC__
    return sys_lstat(path, st);
#else
    int fd = sys_open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = sys_fstat(fd, st);
    real_close(fd);
    return rc;
#endif
}

/* Takes name as the kernel looks it up, component by component from the root, as long as no
 * component is a symbolic link: "." and ".." taken as they come (".." of a prefix that holds no
 * link is its parent). A link's target is had only from readlink, a call the loader never makes
 * (exe_path.h): a name through a link is left to the kernel's own answer. */
START_PATH_CODE int exe_path_resolve(const char *name, char path[PATH_MAX])
{
    size_t len = 0, n = name ? strlen(name) : 0;
    int regular = 0;
    if (n == 0 || name[0] != '/' || n >= PATH_MAX)
        return -1;
    path[0] = 0;
    for (const char *p = name;;) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        const char *end = p;
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
        if (component_stat(path, &st) != 0 || S_ISLNK(st.st_mode))
            return -1;
        len += 1 + c;
        p = end;
        regular = S_ISREG(st.st_mode); /* of the last component, in the end */
    }
    if (len == 0 || !regular || !native_elf(path))
        return -1;
    return 0;
}

/* Parses a hexadecimal number at *p, moving past it. */
START_PATH_CODE static unsigned long hex_at(const char **p)
{
    unsigned long v = 0;
    for (;; (*p)++) {
        char ch = **p;
        unsigned d = ch >= '0' && ch <= '9' ? (unsigned)(ch - '0')
                     : ch >= 'a' && ch <= 'f' ? (unsigned)(ch - 'a' + 10)
                                              : 16u;
        if (d == 16)
            return v;
        v = v * 16 + d;
    }
}

/* From one line of /proc/self/maps ("START-END PERMS OFFSET DEV INODE PATH"): the path when the
 * range holds addr. 1 when it does. */
START_PATH_CODE static int maps_line(const char *line, unsigned long addr, char path[PATH_MAX])
{
    unsigned long start = hex_at(&line);
    if (*line++ != '-')
        return 0;
    unsigned long end = hex_at(&line);
    if (addr < start || addr >= end)
        return 0;
    for (int field = 0; field < 4; field++) { /* perms, offset, device, inode */
        while (*line == ' ')
            line++;
        while (*line && *line != ' ')
            line++;
    }
    while (*line == ' ')
        line++;
    size_t n = strlen(line);
    if (line[0] != '/' || n >= PATH_MAX)
        return 1; /* not a file's path: nothing better to be had */
    memcpy(path, line, n + 1);
    return 1;
}

/* The path of the file mapped where the program's entry point is: the executable the kernel
 * loaded (the interpreter of a script), named by the kernel as /proc/self/exe names it. Read
 * from /proc/self/maps with open, read and close, the calls the loader makes too, where a
 * readlink of /proc/self/exe would be one it never makes. */
#define MAPS_READ 512

START_PATH_CODE static void exe_path_from_maps(char path[PATH_MAX])
{
    char buf[2 * PATH_MAX + 256];
    unsigned long entry = getauxval(AT_ENTRY);
    size_t have = 0;
    path[0] = 0;
    int fd = sys_open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    for (;;) {
        /* a small read: the kernel formats only the lines that fit, and the program's own
         * mappings come first (the lowest addresses) */
        size_t want = sizeof buf - 1 - have < MAPS_READ ? sizeof buf - 1 - have : MAPS_READ;
        ssize_t got = real_read(fd, buf + have, want);
        if (got <= 0)
            break;
        have += (size_t)got;
        buf[have] = 0;
        char *line = buf, *nl;
        while ((nl = memchr(line, '\n', have - (size_t)(line - buf)))) {
            *nl = 0;
            if (maps_line(line, entry, path)) {
                real_close(fd);
                return;
            }
            line = nl + 1;
        }
        have -= (size_t)(line - buf);
        /* the unfinished line to the front; written out: memmove would be one more libc name
         * for every start to bind (leaves/sys_calls.h) */
        for (size_t i = 0; i < have; i++)
            buf[i] = line[i];
        if (have == sizeof buf - 1)
            have = 0; /* a line longer than any path: not the one */
    }
    real_close(fd);
}

START_PATH_CODE void exe_path_read(char path[PATH_MAX])
{
    if (exe_path_resolve((const char *)getauxval(AT_EXECFN), path) == 0)
        return;
    exe_path_from_maps(path);
}
