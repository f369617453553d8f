/* stats.c — the counters every layer increments (stats.h); api/stats_api.c takes their public
 * snapshot. */
#include "stats.h"

_Atomic uint64_t proflink_stat_counters[STAT_COUNT];

void stats_reset(void)
{
    for (int i = 0; i < STAT_COUNT; i++)
        atomic_store_explicit(&proflink_stat_counters[i], 0, memory_order_relaxed);
}
