/* tracer_resource.c — proflink_set_resource: the tracer's own resource replaces proflink's
 * defaults in both published process descriptions. The OTel process context is republished
 * with the update protocol (otel_process_ctx.h); the Elastic process storage only when the
 * service name or environment it carries changes (a new block, the pointer swapped, the old
 * block never freed: process_storage.h). */
#include <pthread.h>
#include <string.h>

#include "config/config.h"
#include "leaves/lock_reset.h"
#include "leaves/log.h"
#include "publish/otel_process_ctx.h"
#include "publish/process_storage.h"
#include "proflink.h"
#include "config/resource_attrs.h"
#include "runtime.h"
#include "leaves/runtime_state.h"
#include "tracer_resource.h"
#include "leaves/utf8.h"

/* Serializes tracers calling proflink_set_resource, and a fork against them: it guards the
 * service fields of proflink_config, which the fork child republishes (fork_sequence.c).
 * Cancellation is disabled while it is held, so that no cancellation point on the way (none
 * today: publishing opens and reads files with the system calls themselves) leaves it held. */
static pthread_mutex_t resource_lock = PTHREAD_MUTEX_INITIALIZER;

void tracer_resource_fork_prepare(void) { pthread_mutex_lock(&resource_lock); }
void tracer_resource_fork_parent(void) { pthread_mutex_unlock(&resource_lock); }
void tracer_resource_fork_child(void) { pthread_mutex_unlock(&resource_lock); }
void tracer_resource_fork_orphan(void) { lock_reset(&resource_lock); }

static int count_member(const char *key, const char *value, void *user)
{
    (void)key, (void)value;
    ++*(int *)user;
    return 0;
}

/* field = the tracer's value of key (cut like the environment's, config.c), if it set one.
 * Returns 1 when the field changed. */
static int take_field(const char *attrs, const char *key, char *field)
{
    char v[SERVICE_FIELD_MAX * 4 + 64];
    if (!resource_attrs_get(attrs, key, v, sizeof v) || !v[0])
        return 0;
    utf8_truncate(v, SERVICE_FIELD_MAX);
    if (!strcmp(field, v))
        return 0;
    memcpy(field, v, strlen(v) + 1);
    return 1;
}

int tracer_resource_set(const char *attributes)
{
    if (!attributes || !runtime_active())
        return -1;
    int members = 0;
    if (resource_attrs_each(attributes, count_member, &members) != 0)
        return -1; /* a malformed member: nothing is published, so nothing half-applied */
    int cancel_state;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
    pthread_mutex_lock(&resource_lock);
    struct config *cfg = &proflink_config;
    int storage_changed = take_field(attributes, "service.name", cfg->service_name);
    if (!take_field(attributes, "deployment.environment.name", cfg->service_environment))
        storage_changed |=
            take_field(attributes, "deployment.environment", cfg->service_environment);
    else
        storage_changed = 1;
    take_field(attributes, "service.version", cfg->service_version);
    take_field(attributes, "service.namespace", cfg->service_namespace);
    int rc = 0;
    if (storage_changed && process_storage_publish(cfg, runtime_socket_path()) != 0)
        rc = -1; /* out of memory: the old block stays published */
    if (otel_process_ctx_set_tracer_attrs(cfg, attributes) != 0)
        rc = -1;
    pthread_mutex_unlock(&resource_lock);
    pthread_setcancelstate(cancel_state, NULL);
    log_debug("tracer resource: %d attribute(s), service %s", members, cfg->service_name);
    return rc;
}
