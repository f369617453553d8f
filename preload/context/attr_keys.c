/* attr_keys.c — see attr_keys.h. */
#include "attr_keys.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "leaves/lock_reset.h"
#include "leaves/log.h"
#include "otel_attrs.h"
#include "publish/otel_process_ctx.h"
#include "config/resource_attrs.h"
#include "leaves/stats.h"
#include "thread_records.h"
#include "leaves/utf8.h"
#include "leaves/raw_syscall.h"

/* How many times a registration retries a contended lock before giving up (ATTR_KEY_BUSY):
 * registrations take microseconds, and a caller must never hang (a signal handler that
 * interrupted the registering thread would otherwise wait for itself forever). */
#define REGISTER_TRIES 1000

static char names[ATTR_KEYS_MAX][ATTR_KEY_NAME_MAX + 1];
/* names[i] as the process context takes them (it keeps this array by pointer). */
static const char *name_ptrs[ATTR_KEYS_MAX];
/* Keys usable in records. Release/acquire: a thread that sees count n also sees names[0..n)
 * complete, and the process context already republished with them. */
static _Atomic unsigned published;
static pthread_mutex_t register_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct config *config_used;

int attr_key_find(const char *key, size_t len)
{
    unsigned n = atomic_load_explicit(&published, memory_order_acquire);
    if (len > ATTR_KEY_NAME_MAX)
        return -1;
    for (unsigned i = 0; i < n; i++)
        if (names[i][0] == key[0] && !memcmp(names[i], key, len) && names[i][len] == 0)
            return (int)i;
    return -1;
}

static int valid_name(const char *key, size_t len)
{
    return len > 0 && len <= ATTR_KEY_NAME_MAX && !memchr(key, 0, len) && utf8_valid(key, len);
}

/* Appends key under register_lock. */
static int append(const char *key, size_t len)
{
    int i = attr_key_find(key, len); /* registered by another thread meanwhile */
    if (i >= 0)
        return i;
    unsigned n = atomic_load_explicit(&published, memory_order_relaxed);
    if (n == ATTR_KEYS_MAX)
        return ATTR_KEY_FULL;
    memcpy(names[n], key, len);
    names[n][len] = 0;
    name_ptrs[n] = names[n];
    /* The process context first (OTEP 4947): only once readers can resolve index n does any
     * record carry it. On failure n stays unpublished and is reused by the next try, which is
     * safe: no record and no reader ever saw it. */
    if (otel_process_ctx_set_key_map(config_used, name_ptrs, n + 1) != 0)
        return ATTR_KEY_BUSY;
    atomic_store_explicit(&published, n + 1, memory_order_release);
    return (int)n;
}

int attr_key_index(const char *key, size_t len)
{
    if (!key || !valid_name(key, len))
        return ATTR_KEY_INVALID;
    int i = attr_key_find(key, len);
    if (i >= 0)
        return i;
    for (int t = 0; t < REGISTER_TRIES; t++) {
        if (pthread_mutex_trylock(&register_lock) == 0) {
            i = append(key, len);
            pthread_mutex_unlock(&register_lock);
            if (i == ATTR_KEY_FULL)
                stat_inc(STAT_ATTRIBUTES_REFUSED);
            return i;
        }
        raw_sched_yield();
    }
    return ATTR_KEY_BUSY;
}

struct fixed_build {
    uint8_t attrs[OTEL_FIXED_MAX];
    uint16_t size;
};

static int add_fixed(const char *key, const char *value, void *user)
{
    struct fixed_build *f = user;
    size_t klen = strlen(key), vlen = strlen(value);
    int idx = -1;
    if (!valid_name(key, klen) || !utf8_valid(value, vlen) || vlen > OTEL_ATTR_VALUE_MAX) {
        log_warn("PROFLINK_THREAD_ATTRIBUTES: \"%.64s\" skipped (key of 1..%d bytes and value "
                 "of at most %d bytes, both UTF-8)", key, ATTR_KEY_NAME_MAX, OTEL_ATTR_VALUE_MAX);
        return 0;
    }
    if (pthread_mutex_lock(&register_lock) == 0) {
        idx = append(key, klen);
        pthread_mutex_unlock(&register_lock);
    }
    if (idx == OTEL_KEY_LOCAL_ROOT) {
        log_warn("PROFLINK_THREAD_ATTRIBUTES: local_root_span_id is set by proflink; skipped");
        return 0;
    }
    if (idx < 0 || otel_attrs_put(f->attrs, &f->size, sizeof f->attrs, (uint8_t)idx,
                                  (const uint8_t *)value, vlen) != 0)
        log_warn("PROFLINK_THREAD_ATTRIBUTES: \"%.64s\" skipped: the thread record is limited "
                 "to %d bytes", key, OTEL_RECORD_MAX);
    return 0;
}

void attr_keys_init(const struct config *cfg)
{
    config_used = cfg;
    if (atomic_load_explicit(&published, memory_order_relaxed) == 0) {
        memcpy(names[0], "local_root_span_id", sizeof "local_root_span_id");
        name_ptrs[0] = names[0];
        atomic_store_explicit(&published, 1, memory_order_release);
    }
    /* Not published yet: this only hands the map over; the first publication carries it. */
    otel_process_ctx_set_key_map(cfg, name_ptrs, atomic_load(&published));
    const char *env = secure_getenv("PROFLINK_THREAD_ATTRIBUTES");
    if (!env || !cfg->otel_context)
        return;
    static struct fixed_build f; /* start-up only: kept off the constructor's stack */
    int bad = resource_attrs_each(env, add_fixed, &f);
    if (bad)
        log_warn("PROFLINK_THREAD_ATTRIBUTES: %d malformed member(s) skipped", bad);
    thread_records_set_fixed(f.attrs, f.size);
}

void attr_keys_fork_prepare(void) { pthread_mutex_lock(&register_lock); }
void attr_keys_fork_parent(void) { pthread_mutex_unlock(&register_lock); }
/* The child keeps the key map (plain process memory, complete: prepare waited for a
 * registration in progress). */
void attr_keys_fork_child(void) { pthread_mutex_unlock(&register_lock); }
void attr_keys_fork_orphan(void) { lock_reset(&register_lock); }
