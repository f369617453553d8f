/* target_diagnose.c — see target_diagnose.h. */
#include "target_diagnose.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <elf.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "target_selection.h"

#include "target_maps.h"
#include "target_socket.h"
#include "target_util.h"

#define ENV_PREFIX "ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_"
/* The symbol only proflink defines: a mapped file holding it is proflink, whatever its name. */
#define PROFLINK_TLS_SYMBOL "elastic_apm_profiling_correlation_tls_v1"
/* A library is a few MB at most; reading more to find a symbol name would only cost time. */
#define SCAN_MAX (32u << 20)
#define ENVIRON_MAX (256u << 10)

static char buf[ENVIRON_MAX + 1];

/* Reads at most cap bytes of path into buf (NUL-terminated); returns the length or -1. */
static ssize_t slurp(const char *path, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t n = 0;
    ssize_t r;
    while (n < cap && (r = read(fd, buf + n, cap - n)) > 0)
        n += (size_t)r;
    close(fd);
    buf[n] = 0;
    return (ssize_t)n;
}

/* 1 if the file at path contains the proflink TLS symbol name. */
static int file_is_proflink(const char *path)
{
    static char chunk[1 << 16];
    static const char sym[] = PROFLINK_TLS_SYMBOL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t keep = 0, total = 0;
    ssize_t r;
    int found = 0;
    while (!found && total < SCAN_MAX && (r = read(fd, chunk + keep, sizeof chunk - keep)) > 0) {
        size_t n = keep + (size_t)r;
        found = memmem(chunk, n, sym, sizeof sym - 1) != NULL;
        keep = n < sizeof sym ? n : sizeof sym - 1; /* a name split across two reads */
        memmove(chunk, chunk + n - keep, keep);
        total += (size_t)r;
    }
    close(fd);
    return found;
}

/* The mapped proflink file under another name, or the loader's absence (a static program). */
static int diagnose_mapping(pid_t pid, char *fix, size_t cap)
{
    char path[64], root_path[PATH_MAX + 64], last[PATH_MAX] = "";
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    char line[PATH_MAX + 128];
    int has_loader = 0, found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        char *file = strchr(line, '/');
        if (!file)
            continue;
        file[strcspn(file, "\n")] = 0;
        if (strstr(file, "/ld-linux") || strstr(file, "/ld-musl"))
            has_loader = 1;
        if (!strcmp(file, last) || !strstr(file, ".so"))
            continue;
        snprintf(last, sizeof last, "%s", file);
        snprintf(root_path, sizeof root_path, "/proc/%d/root%s", (int)pid, file);
        if (file_is_proflink(root_path)) {
            snprintf(fix, cap,
                     "proflink is loaded as %s, a file name the profiler ignores (it matches "
                     "elastic-jvmti-linux-proflink-*.so); preload the library under its own name, "
                     "not a renamed or copied file",
                     file);
            found = 1;
        }
    }
    fclose(f);
    if (found)
        return 1;
    if (!has_loader) {
        snprintf(fix, cap,
                 "the program is statically linked, so LD_PRELOAD cannot load proflink into it; "
                 "link it with libproflink.a and call proflink_init() (the profiler then sees "
                 "the OpenTelemetry contexts only)");
        return 1;
    }
    return 0;
}

/* The program's ELF interpreter (PT_INTERP of /proc/PID/exe) into out; 1 when found. Its name
 * says the C library: ld-musl-* or ld-linux-* (the mapped file may be a resolved symlink such as
 * Debian's /usr/lib/x86_64-linux-musl/libc.so). */
static int interpreter(pid_t pid, char *out, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC), found = 0;
    Elf64_Ehdr eh;
    if (fd < 0)
        return 0;
    if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
        eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr))
        for (unsigned i = 0; !found && i < eh.e_phnum; i++) {
            Elf64_Phdr ph;
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) != (ssize_t)sizeof ph)
                break;
            if (ph.p_type != PT_INTERP || ph.p_filesz == 0 || ph.p_filesz >= cap)
                continue;
            found = pread(fd, out, ph.p_filesz, (off_t)ph.p_offset) == (ssize_t)ph.p_filesz;
            out[ph.p_filesz] = 0;
        }
    close(fd);
    return found;
}

/* One build of proflink in a program of the other C library: it loads, sees that, and stays
 * inactive (preload/start/libc_check.c). */
static int diagnose_libc(pid_t pid, char *fix, size_t cap)
{
    char loader[PATH_MAX], lib[PATH_MAX];
    if (!target_maps_find_file(pid, "/elastic-jvmti-linux-", lib, sizeof lib))
        return 0;
    int musl_lib = strstr(lib, "-musl-") != NULL;
    if (!interpreter(pid, loader, sizeof loader))
        return 0;
    if (!musl_lib && strstr(loader, "/ld-musl-")) {
        snprintf(fix, cap,
                 "this is a musl program (%s is its loader) but the glibc build of proflink is "
                 "loaded (%s), which stays inactive there; preload the musl build "
                 "(build/musl/elastic-jvmti-linux-proflink-musl-ARCH.so, installed as "
                 "lib/proflink/musl/) or start the program with proflink-run, which picks it",
                 loader, lib);
        return 1;
    }
    if (musl_lib && strstr(loader, "/ld-linux-")) {
        snprintf(fix, cap,
                 "this is a glibc program (%s is its loader) but the musl build of proflink is "
                 "loaded (%s), which stays inactive there; preload the glibc build "
                 "(elastic-jvmti-linux-proflink-ARCH.so) or start the program with proflink-run, "
                 "which picks it",
                 loader, lib);
        return 1;
    }
    return 0;
}

/* The value of NAME in pid's environment, into out; NULL when unset. */
static const char *env_of(pid_t pid, const char *name, char *out, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    ssize_t n = slurp(path, ENVIRON_MAX);
    size_t len = strlen(name);
    for (const char *p = buf; n > 0 && p < buf + n; p += strlen(p) + 1)
        if (!strncmp(p, name, len) && p[len] == '=') {
            snprintf(out, cap, "%s", p + len + 1);
            return out;
        }
    return NULL;
}

/* Why pid (effective ids from /proc/PID/status) cannot create a file in dir (seen under its
 * root), or NULL when it can. */
static const char *dir_unusable(pid_t pid, const char *dir, char *why, size_t cap)
{
    char path[PATH_MAX + 64], status[64];
    struct stat st;
    struct statvfs vfs;
    snprintf(path, sizeof path, "/proc/%d/root%s", (int)pid, dir);
    if (stat(path, &st) != 0) {
        snprintf(why, cap, "%s: %s", dir, strerror(errno));
        return why;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, cap, "%s is not a directory", dir);
        return why;
    }
    if (statvfs(path, &vfs) == 0 && (vfs.f_flag & ST_RDONLY)) {
        snprintf(why, cap, "%s is on a read-only file system (in the process's mount namespace)", dir);
        return why;
    }
    unsigned euid = 0, egid = 0;
    snprintf(status, sizeof status, "/proc/%d/status", (int)pid);
    FILE *f = fopen(status, "re");
    char line[256];
    while (f && fgets(line, sizeof line, f)) {
        sscanf(line, "Uid: %*u %u", &euid);
        sscanf(line, "Gid: %*u %u", &egid);
    }
    if (f)
        fclose(f);
    int w = euid == 0 || (st.st_uid == euid ? (st.st_mode & S_IWUSR) != 0
                          : st.st_gid == egid ? (st.st_mode & S_IWGRP) != 0
                                              : (st.st_mode & S_IWOTH) != 0);
    if (!w) {
        snprintf(why, cap, "%s (mode %04o, owner %u:%u) is not writable by the process's uid %u",
                 dir, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, (unsigned)st.st_gid, euid);
        return why;
    }
    return NULL;
}

/* No directory proflink tries for its socket (the configured one, $TMPDIR, /tmp) is usable:
 * read-only (a container's read-only root), missing or not writable by the process's user. */
static int diagnose_socket_dir(pid_t pid, char *fix, size_t cap)
{
    char dirs[3][PATH_MAX], why[3][PATH_MAX + 128];
    const char *cand[3];
    int n = 0;
    if (env_of(pid, ENV_PREFIX "SOCKET_DIR", dirs[n], sizeof dirs[n]))
        cand[n] = dirs[n], n++;
    if (env_of(pid, "TMPDIR", dirs[n], sizeof dirs[n]) && dirs[n][0])
        cand[n] = dirs[n], n++;
    cand[n++] = "/tmp";
    for (int i = 0; i < n; i++)
        if (!dir_unusable(pid, cand[i], why[i], sizeof why[i]))
            return 0; /* a usable one exists: not the cause */
    int len = snprintf(fix, cap, "proflink found no directory for its socket: ");
    for (int i = 0; i < n && len > 0 && (size_t)len < cap; i++)
        len += snprintf(fix + len, cap - (size_t)len, "%s%s", i ? "; " : "", why[i]);
    if (len > 0 && (size_t)len < cap)
        snprintf(fix + len, cap - (size_t)len,
                 ". Give it a writable one: %sSOCKET_DIR=DIR (a container: a tmpfs or emptyDir "
                 "volume there), readable by the profiler through /proc/PID/root",
                 ENV_PREFIX);
    return 1;
}

/* Why a loaded proflink published nothing: excluded on purpose, the other C library's build, no
 * directory for its socket. */
static int diagnose_disabled(pid_t pid, char *fix, size_t cap)
{
    return target_excluded(pid, fix, cap) || diagnose_libc(pid, fix, cap) ||
           diagnose_socket_dir(pid, fix, cap);
}

void target_fix(pid_t pid, const char *check, char *fix, size_t cap)
{
    if (!strcmp(check, "mapping")) {
        if (!diagnose_mapping(pid, fix, cap))
            snprintf(fix, cap, "proflink is not loaded; start the program with "
                               "LD_PRELOAD=/path/to/elastic-jvmti-linux-proflink-ARCH.so or proflink-run");
    } else if (!strcmp(check, "storage")) {
        if (!diagnose_disabled(pid, fix, cap))
            snprintf(fix, cap, "proflink is loaded but published nothing; run the program with "
                               "PROFLINK_LOG=info to see why");
    } else if (!strcmp(check, "socket")) {
        if (target_socket_fix(pid, fix, cap))
            return;
        snprintf(fix, cap, "the socket must exist and be writable by the target's user: check "
                           "that %sSOCKET_DIR (default $TMPDIR or /tmp) exists, is writable by "
                           "that user and that nothing removes files from it",
                 ENV_PREFIX);
    } else if (!strcmp(check, "tls")) {
        snprintf(fix, cap, "proflink's thread-local storage is not static (loaded late by dlopen?); "
                           "load it at program start with LD_PRELOAD");
    } else {
        snprintf(fix, cap, "see docs/troubleshooting.md for the %s check", check);
    }
}
