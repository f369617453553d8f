/* config.h — what the environment asks of proflink (docs/configuration.md), read once per
 * process image.
 * Every variable is read with secure_getenv; a bad value warns and falls back to the default. */
#ifndef PROFLINK_CONFIG_H
#define PROFLINK_CONFIG_H

#include <limits.h>
#include <stdint.h>

#include "leaves/ids.h"

enum profiling_mode { MODE_AUTO, MODE_TRUE, MODE_FALSE };

/* The apmint reader rejects a process whose service name is longer than this. */
#define SERVICE_FIELD_MAX 128
#define DEFAULT_BUFFER_SIZE 8096
#define MAX_BUFFER_SIZE (1u << 20)

struct config {
    enum profiling_mode mode;
    int selected;     /* PROFLINK_INCLUDE/EXCLUDE let this program activate */
    int inherit;      /* PROFLINK_INHERIT */
    int otel_context; /* PROFLINK_OTEL_CONTEXT */
    int http;         /* PROFLINK_HTTP: read traceparent from accepted HTTP/1.x connections */
    uint32_t buffer_size;
    int has_traceparent;     /* TRACEPARENT was present and well formed */
    int exe_read;            /* exe_path was read */
    char exe_path[PATH_MAX]; /* readlink /proc/self/exe once exe_read, "" if unknown */
    struct trace_ctx traceparent;
    char socket_dir[PATH_MAX]; /* configured dir, "" = default ($TMPDIR, else /tmp) */
    char fifo_path[PATH_MAX];  /* "" = off */
    char service_name[SERVICE_FIELD_MAX + 1];
    char service_environment[SERVICE_FIELD_MAX + 1];
    char service_version[SERVICE_FIELD_MAX + 1];
    char service_namespace[SERVICE_FIELD_MAX + 1];
};

/* What decides whether the program is served. Kept apart from struct config (on the caller's
 * stack) so that a program that is not served never touches the configuration's pages: each
 * page faulted in costs microseconds, and every process of a host pays them. */
struct selection {
    enum profiling_mode mode;
    int selected;            /* PROFLINK_INCLUDE/EXCLUDE let this program activate */
    int exe_read;            /* exe_path was read */
    char exe_path[PATH_MAX]; /* readlink /proc/self/exe once exe_read, "" if unknown */
};

/* Whether this program is served at all, decided before anything else is done (docs/system-wide.md:
 * system-wide use): from the environment, then the system configuration file, and the
 * executable's path only when a selection glob needs it. Fills *sel (no need to clear it);
 * sets the log level. 1 served, 0 not. */
int config_decide(struct selection *sel);

/* The rest of the configuration of a served program into a zeroed *cfg, after config_decide
 * said yes. Never fails: every problem is a warning and a default. */
void config_load_served(struct config *cfg, const struct selection *sel);

/* Both of the above into *cfg (zeroed first; the rest only for a served program). */
void config_load(struct config *cfg);

/* The configuration of the running process image (loaded by the constructor). */
extern struct config proflink_config;

/* fnmatch-style glob lists "a,b,c": 1 if any glob matches path. */
int glob_list_matches(const char *list, const char *path);

#endif
