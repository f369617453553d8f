/* resource_api.c — proflink_set_resource, the entry point (include/proflink.h). Apart from its
 * work (tracer_resource.c) because it may be the first use of the library in a copy of the
 * process made by a raw clone, which the fork sequence sets up first; and the fork sequence
 * depends on tracer_resource.c (its lock). */
#include "leaves/export.h"
#include "start/fork_sequence.h"
#include "proflink.h"
#include "start/tracer_resource.h"

PROFLINK_EXPORT int proflink_set_resource(const char *attributes)
{
    fork_sequence_check_process(); /* before the storage and context are republished */
    return tracer_resource_set(attributes);
}
