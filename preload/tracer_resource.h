/* tracer_resource.h — proflink_set_resource (tracer_resource.c). Only the fork sequence needs
 * this header: the lock that serializes tracers' updates of the service fields. */
#ifndef PROFLINK_TRACER_RESOURCE_H
#define PROFLINK_TRACER_RESOURCE_H

/* The fork sequence (fork_sequence.c): the child keeps the tracer's resource; the lock is
 * released after the child republished from the fields it guards. */
void tracer_resource_fork_prepare(void);
void tracer_resource_fork_parent(void);
void tracer_resource_fork_child(void);

#endif
