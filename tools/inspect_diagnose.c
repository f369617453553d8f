/* inspect_diagnose.c — see inspect_diagnose.h. */
#include "inspect_diagnose.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "target_socket.h"
#include "target_util.h"

#define ENV_PREFIX "ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_"
/* The symbol only proflink defines: a mapped file holding it is proflink, whatever its name. */
#define PROFLINK_TLS_SYMBOL "elastic_apm_profiling_correlation_tls_v1"
/* A library is a few MB at most; reading more to find a symbol name would only cost time. */
#define SCAN_MAX (32u << 20)
#define ENVIRON_MAX (256u << 10)
#define CONF_MAX 8192

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

/* value of NAME in a NUL-separated environment block of len bytes, or NULL */
static const char *env_in(const char *block, size_t len, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = block; p < block + len; p += strlen(p) + 1)
        if (!strncmp(p, name, n) && p[n] == '=')
            return p + n + 1;
    return NULL;
}

static int secure_exec(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/auxv", (int)pid);
    ssize_t n = slurp(path, 4096);
    for (ssize_t i = 0; i + (ssize_t)sizeof(Elf64_auxv_t) <= n; i += (ssize_t)sizeof(Elf64_auxv_t)) {
        Elf64_auxv_t a;
        memcpy(&a, buf + i, sizeof a);
        if (a.a_type == AT_SECURE)
            return a.a_un.a_val != 0;
    }
    return 0;
}

/* Why a loaded proflink published nothing: its environment, the system configuration, or a
 * setuid program. */
static int diagnose_disabled(pid_t pid, char *fix, size_t cap)
{
    char path[PATH_MAX];
    if (secure_exec(pid)) {
        snprintf(fix, cap, "the program is setuid/setgid (secure-exec); proflink never activates "
                           "there, since its environment is not to be trusted");
        return 1;
    }
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    ssize_t n = slurp(path, ENVIRON_MAX);
    const char *v;
    if (n > 0) {
        if ((v = env_in(buf, (size_t)n, ENV_PREFIX "ENABLED")) && !strcasecmp(v, "false")) {
            snprintf(fix, cap, "disabled by %sENABLED=false in its environment; remove it or set true",
                     ENV_PREFIX);
            return 1;
        }
        const char *inc = env_in(buf, (size_t)n, "PROFLINK_INCLUDE");
        const char *exc = env_in(buf, (size_t)n, "PROFLINK_EXCLUDE");
        if (inc || exc) {
            snprintf(fix, cap,
                     "probably not selected by its environment (PROFLINK_INCLUDE=%.200s "
                     "PROFLINK_EXCLUDE=%.200s); make the globs match the executable's path",
                     inc ? inc : "", exc ? exc : "");
            return 1;
        }
    }
    snprintf(path, sizeof path, "/proc/%d/root/etc/proflink/proflink.conf", (int)pid);
    n = slurp(path, CONF_MAX);
    if (n > 0 && (strstr(buf, "ENABLED") || strstr(buf, "PROFLINK_INCLUDE") ||
                  strstr(buf, "PROFLINK_EXCLUDE"))) {
        snprintf(fix, cap,
                 "the system configuration /etc/proflink/proflink.conf disables or does not "
                 "select this program (ENABLED, PROFLINK_INCLUDE/EXCLUDE there); change it, or "
                 "set the variable in the program's environment, which wins");
        return 1;
    }
    return 0;
}

void inspect_fix(pid_t pid, const char *check, char *fix, size_t cap)
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
        snprintf(fix, cap, "see the README's troubleshooting section for the %s check", check);
    }
}
