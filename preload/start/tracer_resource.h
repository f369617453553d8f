/* tracer_resource.h — proflink_set_resource (tracer_resource.c): the entry point
 * (resource_api.c) and the fork sequence, for the lock that serializes tracers' updates of the
 * service fields. */
#ifndef PROFLINK_TRACER_RESOURCE_H
#define PROFLINK_TRACER_RESOURCE_H

/* proflink_set_resource's work (resource_api.c is the entry point). */
int tracer_resource_set(const char *attributes);

/* The fork sequence (fork_sequence.c): the child keeps the tracer's resource; the lock is
 * released after the child republished from the fields it guards. */
void tracer_resource_fork_prepare(void);
/* A copy made without fork handlers (fork_sequence_orphan_child): the locks, new again. */
void tracer_resource_fork_orphan(void);
void tracer_resource_fork_parent(void);
void tracer_resource_fork_child(void);

#endif
