/* version.c — proflink_version (include/proflink.h). A leaf although it is an entry point:
 * start/copies.c finds which copy of proflink the global scope serves by this function's
 * address, and the start may not use a floor above it (api/). */
#include "export.h"
#include "proflink.h"

PROFLINK_EXPORT const char *proflink_version(void) { return PROFLINK_VERSION_STRING; }
