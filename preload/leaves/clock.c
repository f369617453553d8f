/* clock.c — see clock.h. */
#include "clock.h"

#include <time.h>

/* Musl's and old glibc's headers may lack it; the value is the kernel ABI. */
#ifndef CLOCK_BOOTTIME
#define CLOCK_BOOTTIME 7
#endif

static uint64_t read_ns(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t clock_monotonic_ns(void) { return read_ns(CLOCK_MONOTONIC); }

uint64_t clock_realtime_ns(void) { return read_ns(CLOCK_REALTIME); }

uint64_t clock_boottime_ns(void) { return read_ns(CLOCK_BOOTTIME); }
