/* inspect_otel.h — check 7: the OpenTelemetry process context (OTEP 4719) as the profiler reads
 * it; its key map names the OTel thread attributes (OTEP 4947) the thread check reads. */
#ifndef PROFLINK_INSPECT_OTEL_H
#define PROFLINK_INSPECT_OTEL_H

#include "inspect_report.h"

/* Reads the context into r->otel (absent or invalid is a warning, never a failure) and points
 * r->key_map at its threadlocal.attribute_key_map. Called again to re-read it: the caller frees
 * the previous read first (target_otel_free). */
void inspect_check_otel(struct inspect_report *r);

#endif
