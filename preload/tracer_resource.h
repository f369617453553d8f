/* tracer_resource.h — proflink_set_resource: the tracer's own resource replaces proflink's
 * defaults in both published process descriptions. The OTel process context is republished
 * with the update protocol (otel_process_ctx.h); the Elastic process storage only when the
 * service name or environment it carries changes (a new block, the pointer swapped, the old
 * block never freed: process_storage.h). */
#ifndef PROFLINK_TRACER_RESOURCE_H
#define PROFLINK_TRACER_RESOURCE_H

/* fork: the service fields a child republishes must not be half-written by another thread. */
void tracer_resource_fork_prepare(void);
void tracer_resource_fork_parent(void);
void tracer_resource_fork_child(void);

#endif
