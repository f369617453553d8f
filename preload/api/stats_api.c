/* stats_api.c — proflink_get_stats (include/proflink.h): the counters of leaves/stats.h as the
 * public struct, zeros while proflink does not run in this process. */
#include <string.h>

#include "leaves/export.h"
#include "leaves/runtime_state.h"
#include "leaves/stats.h"
#include "proflink.h"

PROFLINK_EXPORT int proflink_get_stats(proflink_stats *out, size_t size)
{
    if (!out)
        return -1;
    proflink_stats s;
    memset(&s, 0, sizeof s);
    int active = runtime_active();
    if (active) {
        s.messages_received = stat_get(STAT_MESSAGES_RECEIVED);
        s.correlations = stat_get(STAT_CORRELATIONS);
        s.registrations = stat_get(STAT_REGISTRATIONS);
        s.discarded_truncated = stat_get(STAT_DISCARDED_TRUNCATED);
        s.discarded_oversized = stat_get(STAT_DISCARDED_OVERSIZED);
        s.ignored_unknown_type = stat_get(STAT_IGNORED_UNKNOWN_TYPE);
        s.fifo_records = stat_get(STAT_FIFO_RECORDS);
        s.fifo_drops = stat_get(STAT_FIFO_DROPS);
        s.transactions_deferred = stat_get(STAT_TRANSACTIONS_DEFERRED);
        s.transactions_immediate = stat_get(STAT_TRANSACTIONS_IMMEDIATE);
        s.queue_overflows = stat_get(STAT_QUEUE_OVERFLOWS);
        s.ids_evicted = stat_get(STAT_IDS_EVICTED);
        s.threads_seen = stat_get(STAT_THREADS_SEEN);
        s.pull_overflows = stat_get(STAT_PULL_OVERFLOWS);
        s.http_requests_traced = stat_get(STAT_HTTP_REQUESTS_TRACED);
        s.http_requests_untraced = stat_get(STAT_HTTP_REQUESTS_UNTRACED);
        s.attributes_refused = stat_get(STAT_ATTRIBUTES_REFUSED);
    }
    /* Callers compiled against an older, smaller struct get the prefix they know. */
    memcpy(out, &s, size < sizeof s ? size : sizeof s);
    if (size > sizeof s)
        memset((char *)out + sizeof s, 0, size - sizeof s);
    return active ? 0 : -1;
}
