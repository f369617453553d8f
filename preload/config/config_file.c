/* config_file.c — see config_file.h. */
#include "config_file.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "leaves/log.h"
#include "leaves/real_calls.h"
#include "leaves/sys_calls.h"

/* A configuration is a few short lines; a larger file is not one we wrote, and is ignored. */
#define CONFIG_FILE_MAX 8192
#define CONFIG_FILE_KEYS 32

/* Only settings that make sense for every program of a host: identity (service name, traceparent)
 * stays per process. tools/common/target_selection.c and scripts/proflink-system hold the same
 * list, to report the lines left out (tests/system_config.bats checks they agree). */
static const char *const allowed[] = {
    "ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED",
    "ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR",
    "ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_BUFFER_SIZE",
    "PROFLINK_INCLUDE",
    "PROFLINK_EXCLUDE",
    "PROFLINK_LOG",
    "PROFLINK_INHERIT",
    "PROFLINK_OTEL_CONTEXT",
};

static char text[CONFIG_FILE_MAX + 1];
static const char *keys[CONFIG_FILE_KEYS], *values[CONFIG_FILE_KEYS];
static int n_keys;

static int is_allowed(const char *key)
{
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        if (!strcmp(key, allowed[i]))
            return 1;
    return 0;
}

static char *trim(char *s, char *end)
{
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
        end--;
    *end = 0;
    return s;
}

static void parse(size_t len)
{
    char *p = text, *stop = text + len;
    while (p < stop) {
        char *nl = memchr(p, '\n', (size_t)(stop - p));
        char *end = nl ? nl : stop;
        char *line = trim(p, end);
        p = end + 1;
        if (!line[0] || line[0] == '#')
            continue;
        /* A line that is not accepted is skipped without a word: with a system-wide preload,
         * every program on the host would print it on its own stderr. proflink-system status
         * and proflink-inspect report such lines instead. */
        char *eq = strchr(line, '=');
        if (!eq)
            continue;
        char *key = trim(line, eq), *value = trim(eq + 1, eq + 1 + strlen(eq + 1));
        if (!is_allowed(key))
            continue;
        if (n_keys == CONFIG_FILE_KEYS)
            break;
        keys[n_keys] = key;
        values[n_keys++] = value;
    }
}

void config_file_load(void)
{
    /* n_keys is 0 until a file is read (read once per process image): not written here, so a
     * host without the file never faults in the page holding it */
    int fd = sys_open(SYSTEM_CONFIG_PATH, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return; /* no file: the usual case */
    struct stat st;
    /* info, not warn: with a system-wide preload every program on the host would print it */
    if (sys_fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > CONFIG_FILE_MAX) {
        log_info("%s is not a regular file of at most %d bytes; ignored", SYSTEM_CONFIG_PATH,
                 CONFIG_FILE_MAX);
        real_close(fd);
        return;
    }
    if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        log_info("%s ignored: it must be owned by root and writable by nobody else", SYSTEM_CONFIG_PATH);
        real_close(fd);
        return;
    }
    size_t len = 0;
    ssize_t r;
    while (len < CONFIG_FILE_MAX && (r = real_read(fd, text + len, CONFIG_FILE_MAX - len)) > 0)
        len += (size_t)r;
    real_close(fd);
    text[len] = 0;
    parse(len);
}

const char *config_file_get(const char *key)
{
    /* the last line for a key wins, as in a shell environment file */
    for (int i = n_keys - 1; i >= 0; i--)
        if (!strcmp(keys[i], key))
            return values[i][0] ? values[i] : NULL;
    return NULL;
}
