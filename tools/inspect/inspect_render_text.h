/* inspect_render_text.h — a report as text for a terminal: one line per check
 * ("PASS  mapping …"), a "fix:" line under each diagnosed failure, the threads and
 * the process context's attributes under their checks, then the result line. */
#ifndef PROFLINK_INSPECT_RENDER_TEXT_H
#define PROFLINK_INSPECT_RENDER_TEXT_H

#include "inspect_report.h"

void inspect_render_text(const struct inspect_report *r);

#endif
