/* target_selection.c — see target_selection.h. */
#include "target_selection.h"

#include <elf.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "target_util.h"

#define ENABLED_KEY "ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED"
#define CONF_PATH "/etc/proflink/proflink.conf"

/* The value of name in a NUL-separated environment block, or NULL. */
static const char *env_in(const char *block, size_t len, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = block; p < block + len; p += strlen(p) + 1)
        if (!strncmp(p, name, n) && p[n] == '=')
            return p + n + 1;
    return NULL;
}

/* The value of key in the configuration text (KEY=VALUE lines, '#' comments), into out. */
static const char *conf_in(const char *text, const char *key, char *out, size_t cap)
{
    size_t n = strlen(key);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (strncmp(p, key, n) != 0)
            continue;
        const char *v = p + n;
        while (*v == ' ' || *v == '\t')
            v++;
        if (*v != '=')
            continue;
        v++;
        while (*v == ' ' || *v == '\t')
            v++;
        size_t len = strcspn(v, "\r\n");
        while (len && (v[len - 1] == ' ' || v[len - 1] == '\t'))
            len--;
        snprintf(out, cap, "%.*s", (int)len, v);
        return out;
    }
    return NULL;
}

/* As the library's glob_list_matches: comma-separated fnmatch globs. */
static int globs_match(const char *list, const char *path)
{
    char glob[PATH_MAX];
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n > 0 && n < sizeof glob) {
            memcpy(glob, p, n);
            glob[n] = 0;
            if (fnmatch(glob, path, 0) == 0)
                return 1;
        }
        if (!p[n])
            break;
        p += n + 1;
    }
    return 0;
}

static int secure_exec(pid_t pid)
{
    char path[64];
    size_t n;
    snprintf(path, sizeof path, "/proc/%d/auxv", (int)pid);
    char *auxv = target_read_file(path, &n);
    int secure = 0;
    for (size_t i = 0; auxv && i + sizeof(Elf64_auxv_t) <= n; i += sizeof(Elf64_auxv_t)) {
        Elf64_auxv_t a;
        memcpy(&a, auxv + i, sizeof a);
        if (a.a_type == AT_SECURE)
            secure = a.a_un.a_val != 0;
    }
    free(auxv);
    return secure;
}

/* The configuration file as the library reads it: a regular file owned by root and writable by
 * nobody else, else ignored. */
static char *read_conf(pid_t pid)
{
    char path[64 + sizeof CONF_PATH];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d/root" CONF_PATH, (int)pid);
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022))
        return NULL;
    size_t n;
    return target_read_file(path, &n);
}

/* The keys the library takes from the file (preload/config/config_file.c, allowed[]). */
static const char *const conf_keys[] = {
    ENABLED_KEY,
    "ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR",
    "ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_BUFFER_SIZE",
    "PROFLINK_INCLUDE",
    "PROFLINK_EXCLUDE",
    "PROFLINK_LOG",
    "PROFLINK_INHERIT",
    "PROFLINK_OTEL_CONTEXT",
};

int target_conf_ignored(pid_t pid, char *out, size_t cap)
{
    size_t used = 0;
    int n = 0, lineno = 0;
    out[0] = 0;
    char *conf = read_conf(pid);
    for (char *p = conf; p && *p;) {
        char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        lineno++;
        while (len && (*p == ' ' || *p == '\t'))
            p++, len--;
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\r'))
            len--;
        const char *eq = memchr(p, '=', len);
        char why[160];
        why[0] = 0;
        if (len && *p != '#') {
            if (!eq) {
                snprintf(why, sizeof why, "not KEY=VALUE");
            } else {
                size_t k = (size_t)(eq - p);
                while (k && (p[k - 1] == ' ' || p[k - 1] == '\t'))
                    k--;
                int known = 0;
                for (size_t i = 0; i < sizeof conf_keys / sizeof conf_keys[0]; i++)
                    known |= strlen(conf_keys[i]) == k && !strncmp(conf_keys[i], p, k);
                if (!known)
                    snprintf(why, sizeof why, "%.*s cannot be set there", (int)(k < 64 ? k : 64), p);
            }
        }
        if (why[0]) {
            int w = snprintf(out + used, cap - used, "%s%s:%d: %s; ignored", n ? "\n" : "",
                             CONF_PATH, lineno, why);
            if (w > 0 && (size_t)w < cap - used)
                used += (size_t)w;
            n++;
        }
        p = nl ? nl + 1 : NULL;
    }
    free(conf);
    return n;
}

int target_excluded(pid_t pid, char *why, size_t cap)
{
    if (secure_exec(pid)) {
        snprintf(why, cap, "the program is setuid/setgid (secure-exec); proflink never activates "
                           "there, since its environment is not to be trusted");
        return 1;
    }
    char path[64], exe[PATH_MAX], v[3][PATH_MAX];
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    ssize_t k = readlink(path, exe, sizeof exe - 1);
    exe[k > 0 ? k : 0] = 0;
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    size_t n = 0;
    char *env = target_read_file(path, &n);
    char *conf = read_conf(pid);
    /* the environment wins over the file, key by key */
    static const char *const keys[3] = {ENABLED_KEY, "PROFLINK_INCLUDE", "PROFLINK_EXCLUDE"};
    const char *val[3], *from[3];
    for (int i = 0; i < 3; i++) {
        const char *e = env ? env_in(env, n, keys[i]) : NULL;
        val[i] = NULL;
        if (e) {
            snprintf(v[i], sizeof v[i], "%s", e);
            val[i] = v[i];
            from[i] = "its environment";
        } else if (conf && conf_in(conf, keys[i], v[i], sizeof v[i])) {
            val[i] = v[i];
            from[i] = CONF_PATH;
        }
    }
    int excluded = 1;
    if (val[0] && !strcasecmp(val[0], "false"))
        snprintf(why, cap, "disabled by %s=false in %s; remove it or set true to profile it",
                 ENABLED_KEY, from[0]);
    else if (val[1] && !globs_match(val[1], exe))
        snprintf(why, cap, "not selected: %s is not matched by PROFLINK_INCLUDE=%.300s (%s); "
                           "add it there to profile it",
                 exe, val[1], from[1]);
    else if (val[2] && globs_match(val[2], exe))
        snprintf(why, cap, "not selected: %s is matched by PROFLINK_EXCLUDE=%.300s (%s); take "
                           "it out there to profile it",
                 exe, val[2], from[2]);
    else
        excluded = 0;
    free(env);
    free(conf);
    return excluded;
}
