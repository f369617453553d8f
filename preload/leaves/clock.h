/* clock.h — the clocks the library reads, in nanoseconds. Each is one clock_gettime (a vDSO
 * call: async-signal-safe, never blocks); 0 if the clock cannot be read. */
#ifndef PROFLINK_CLOCK_H
#define PROFLINK_CLOCK_H

#include <stdint.h>

/* Intervals and deadlines inside this process: never jumps. */
uint64_t clock_monotonic_ns(void);

/* Unix time, for what another process orders or joins with its own clock. */
uint64_t clock_realtime_ns(void);

/* Time since boot including suspend, the OpenTelemetry process context's timestamp. */
uint64_t clock_boottime_ns(void);

#endif
