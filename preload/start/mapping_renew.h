/* mapping_renew.h — a second look by the profiler once the storage is published. */
#ifndef PROFLINK_MAPPING_RENEW_H
#define PROFLINK_MAPPING_RENEW_H

/* Changes the shape of the library's executable mapping (mapping_renew.c says how and why).
 * Called once, at start, after the process storage is published and before the OTel process
 * context's prctl (which makes the profiler read the process's mappings again). Never fails
 * loudly: where it cannot act, the profiler's first look is all there is, as before. */
void mapping_renew(void);

#endif
