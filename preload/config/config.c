/* config.c — reads docs/configuration.md from the environment (see config.h). */
#include "config.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config_file.h"
#include "exe_path.h"
#include "leaves/log.h"
#include "leaves/text.h"
#include "resource_attrs.h"
#include "leaves/utf8.h"
#include "leaves/sys_calls.h"
#include "leaves/str.h"

struct config proflink_config;

#define ENV_PREFIX "ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_"

/* glibc and musl both have secure_getenv: in a setuid/setgid program the environment is the
 * caller's, not to be trusted, and reads as empty. The system configuration file fills in what
 * the environment does not set. */
static const char *env(const char *name)
{
    const char *v = secure_getenv(name);
    return v && v[0] ? v : config_file_get(name);
}

/* A word of a setting (true, off, debug...: lower case) in any ASCII case, as strcasecmp compares
 * in the C locale the constructor runs in: without it the check of ENABLED=false, made at every
 * start, would bind one libc function more and touch its code (docs/speed.md). */
static void copy_field(const char *what, char *dst, const char *src)
{
    size_t n = strlen(src);
    if (n > SERVICE_FIELD_MAX) {
        log_info("%s is %zu bytes; cut to %d (the profiler's limit)", what, n, SERVICE_FIELD_MAX);
        /* copy a little more than the limit so utf8_truncate sees the next byte */
        n = SERVICE_FIELD_MAX + 1;
    }
    char tmp[SERVICE_FIELD_MAX + 2];
    memcpy(tmp, src, n);
    tmp[n] = 0;
    utf8_truncate(tmp, SERVICE_FIELD_MAX);
    memcpy(dst, tmp, strlen(tmp) + 1);
}

/* Booleans: 1/0, true/false, yes/no, on/off. */
static int parse_bool(const char *name, int dflt)
{
    const char *v = env(name);
    if (!v)
        return dflt;
    if (!strcmp(v, "1") || str_is_word(v, "true") || str_is_word(v, "yes") || str_is_word(v, "on"))
        return 1;
    if (!strcmp(v, "0") || str_is_word(v, "false") || str_is_word(v, "no") || str_is_word(v, "off"))
        return 0;
    log_warn("%s=%.64s is not a boolean; using %d", name, v, dflt);
    return dflt;
}

static void load_log_level(const char *v)
{
    static const char *names[] = {"off", "error", "warn", "info", "debug"};
    if (!v)
        return;
    for (int i = 0; i <= LOG_DEBUG; i++)
        if (str_is_word(v, names[i])) {
            log_set_level((enum log_level)i);
            return;
        }
    log_warn("PROFLINK_LOG=%.64s is not off|error|warn|info|debug; using warn", v);
}

static void load_mode(struct selection *sel)
{
    const char *v = env(ENV_PREFIX "ENABLED");
    sel->mode = MODE_AUTO;
    if (!v || str_is_word(v, "auto"))
        return;
    if (str_is_word(v, "true"))
        sel->mode = MODE_TRUE;
    else if (str_is_word(v, "false"))
        sel->mode = MODE_FALSE;
    else
        log_warn(ENV_PREFIX "ENABLED=%.64s is not true|false|auto; using auto", v);
}

/* A decimal count in 1..max read as strtoul reads it (C-locale spaces, then an optional '+'), to
 * its end; 0 if v is not one. Written out: strtoul would be one libc import more (sys_calls.h). */
static unsigned long parse_count(const char *v, unsigned long max)
{
    while (*v == ' ' || (*v >= '\t' && *v <= '\r'))
        v++;
    if (*v == '+')
        v++;
    if (*v < '0' || *v > '9')
        return 0;
    unsigned long n = 0;
    for (; *v >= '0' && *v <= '9'; v++)
        if (n <= max) /* past max it only has to stay past it: no overflow */
            n = n * 10 + (unsigned long)(*v - '0');
    return *v || n > max ? 0 : n;
}

static void load_buffer_size(struct config *cfg)
{
    const char *v = env(ENV_PREFIX "BUFFER_SIZE");
    cfg->buffer_size = DEFAULT_BUFFER_SIZE; /* first page of the struct, written anyway */
    if (!v)
        return;
    unsigned long n = parse_count(v, MAX_BUFFER_SIZE);
    if (n == 0) {
        log_warn(ENV_PREFIX "BUFFER_SIZE=%.64s is not a number in 1..%u; using %u", v,
                 MAX_BUFFER_SIZE, DEFAULT_BUFFER_SIZE);
        return;
    }
    cfg->buffer_size = (uint32_t)n;
}

static void copy_path(const char *name, char *dst, size_t cap)
{
    const char *v = env(name);
    if (!v)
        return; /* dst stays "" (zeroed memory): an untouched page is never faulted in */
    size_t n = strlen(v);
    if (n >= cap) {
        log_warn("%s is longer than %zu bytes; ignored", name, cap - 1);
        return;
    }
    memcpy(dst, v, n + 1);
}

/* The executable's path: read once, only when a selection glob or the default service name
 * needs it. */
static const char *read_exe(int *read, char path[PATH_MAX])
{
    if (!*read) {
        exe_path_read(path);
        *read = 1;
    }
    return path;
}

static void exe_basename(struct config *cfg, char *out, size_t cap)
{
    const char *path = read_exe(&cfg->exe_read, cfg->exe_path);
    const char *slash = str_last(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t len = 0;
    out[0] = 0;
    text_put_str(out, cap, &len, "unknown_service:");
    if (!base[0])
        base = "unknown";
    size_t n = strlen(base); /* cut to a service name's length here already, as before */
    text_put(out, cap, &len, base, n < SERVICE_FIELD_MAX ? n : SERVICE_FIELD_MAX);
}

/* The resource attributes the identity comes from, found in one pass over
 * OTEL_RESOURCE_ATTRIBUTES: it may hold 100 KiB, and a pass per key cost five times that at
 * every start. With duplicate keys the last one wins, as in the SDKs. */
enum { ID_NAME, ID_ENV_NAME, ID_ENV, ID_VERSION, ID_NAMESPACE, ID_COUNT };
static const char *const identity_keys[ID_COUNT] = {
    "service.name", "deployment.environment.name", "deployment.environment", "service.version",
    "service.namespace",
};
struct identity_attrs {
    int found[ID_COUNT];
    char value[ID_COUNT][SERVICE_FIELD_MAX * 4 + 64]; /* cut by copy_field anyway */
};

static int take_identity(const char *key, const char *value, void *user)
{
    struct identity_attrs *a = user;
    for (int i = 0; i < ID_COUNT; i++)
        if (!strcmp(key, identity_keys[i])) {
            snprintf(a->value[i], sizeof a->value[i], "%s", value);
            a->found[i] = 1;
        }
    return 0;
}

static int nonempty(const struct identity_attrs *a, int i) { return a->found[i] && a->value[i][0]; }

/* OTel first, then the Elastic fallbacks (docs/configuration.md). */
static void load_identity(struct config *cfg)
{
    const char *attrs = env("OTEL_RESOURCE_ATTRIBUTES");
    struct identity_attrs a; /* a value is read only when found */
    memset(a.found, 0, sizeof a.found);
    char buf[SERVICE_FIELD_MAX * 4 + 64];
    const char *v;
    if (attrs)
        resource_attrs_each(attrs, take_identity, &a);

    if ((v = env("OTEL_SERVICE_NAME")))
        copy_field("service name", cfg->service_name, v);
    else if (nonempty(&a, ID_NAME))
        copy_field("service name", cfg->service_name, a.value[ID_NAME]);
    else if ((v = env("ELASTIC_APM_SERVICE_NAME")))
        copy_field("service name", cfg->service_name, v);
    else {
        exe_basename(cfg, buf, sizeof buf);
        copy_field("service name", cfg->service_name, buf);
    }

    if (nonempty(&a, ID_ENV_NAME))
        copy_field("service environment", cfg->service_environment, a.value[ID_ENV_NAME]);
    else if (nonempty(&a, ID_ENV))
        copy_field("service environment", cfg->service_environment, a.value[ID_ENV]);
    else if ((v = env("ELASTIC_APM_ENVIRONMENT")))
        copy_field("service environment", cfg->service_environment, v);

    if (a.found[ID_VERSION])
        copy_field("service version", cfg->service_version, a.value[ID_VERSION]);
    else if ((v = env("ELASTIC_APM_SERVICE_VERSION")))
        copy_field("service version", cfg->service_version, v);
    if (a.found[ID_NAMESPACE])
        copy_field("service namespace", cfg->service_namespace, a.value[ID_NAMESPACE]);
}

static void load_traceparent(struct config *cfg)
{
    const char *v = env("TRACEPARENT");
    if (!v)
        return;
    if (traceparent_parse(v, &cfg->traceparent) == 0)
        cfg->has_traceparent = 1;
    else
        log_warn("TRACEPARENT=%.64s is not a W3C traceparent; no context taken from it", v);
}

int glob_list_matches(const char *list, const char *path)
{
    char glob[PATH_MAX];
    const char *p = list;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n > 0 && n < sizeof glob) {
            memcpy(glob, p, n);
            glob[n] = 0;
            if (fnmatch(glob, path, 0) == 0)
                return 1;
        }
        if (!end)
            break;
        p = end + 1;
    }
    return 0;
}

/* Whether INCLUDE/EXCLUDE (as given) leave the program out. */
static int deselected(struct selection *sel, const char *inc, const char *exc)
{
    return (inc && !glob_list_matches(inc, read_exe(&sel->exe_read, sel->exe_path))) ||
           (exc && glob_list_matches(exc, read_exe(&sel->exe_read, sel->exe_path)));
}

static const char *env_only(const char *name)
{
    const char *v = secure_getenv(name);
    return v && v[0] ? v : NULL;
}

int config_decide(struct selection *sel)
{
    sel->mode = MODE_AUTO;
    sel->selected = 1;
    sel->exe_read = 0;
    sel->exe_path[0] = 0;
    load_log_level(env_only("PROFLINK_LOG")); /* first, for what the file reader logs */
    /* What the environment alone decides, before the file is even opened: it wins over the
     * file, and the file can only narrow a selection, so "disabled" or "not selected" here
     * is final. A host that sets these per program (systemd units) pays no system call for
     * a program it disables, one readlink for a program its globs leave out. */
    const char *enabled = env_only(ENV_PREFIX "ENABLED");
    if (enabled && str_is_word(enabled, "false")) {
        sel->mode = MODE_FALSE;
        return 0;
    }
    const char *inc = env_only("PROFLINK_INCLUDE"), *exc = env_only("PROFLINK_EXCLUDE");
    if ((inc || exc) && deselected(sel, inc, exc)) {
        sel->selected = 0;
        return 0;
    }
    config_file_load();
    load_log_level(env("PROFLINK_LOG"));
    sel->selected = !deselected(sel, env("PROFLINK_INCLUDE"), env("PROFLINK_EXCLUDE"));
    load_mode(sel);
    return sel->selected && sel->mode != MODE_FALSE;
}

void config_load_served(struct config *cfg, const struct selection *sel)
{
    cfg->mode = sel->mode;
    cfg->selected = sel->selected;
    if ((cfg->exe_read = sel->exe_read))
        memcpy(cfg->exe_path, sel->exe_path, strlen(sel->exe_path) + 1);
    load_buffer_size(cfg);
    copy_path(ENV_PREFIX "SOCKET_DIR", cfg->socket_dir, sizeof cfg->socket_dir);
    copy_path("PROFLINK_FIFO", cfg->fifo_path, sizeof cfg->fifo_path);
    /* Off by default: runtimes create pool threads lazily, inside whatever request first needs
     * one (libuv's on the first fs/crypto call), and such a thread would keep that request's
     * trace for the rest of its life. Starting from the process context is never wrong. */
    cfg->inherit = parse_bool("PROFLINK_INHERIT", 0);
    cfg->otel_context = parse_bool("PROFLINK_OTEL_CONTEXT", 1);
    cfg->http = parse_bool("PROFLINK_HTTP", 0);
    load_identity(cfg);
    load_traceparent(cfg);
}

void config_load(struct config *cfg)
{
    struct selection sel;
    memset(cfg, 0, sizeof *cfg);
    int served = config_decide(&sel);
    cfg->mode = sel.mode;
    cfg->selected = sel.selected;
    if (served)
        config_load_served(cfg, &sel);
}
