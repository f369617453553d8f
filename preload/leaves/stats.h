/* stats.h — process-wide counters behind proflink_get_stats(). Relaxed atomics: each counter is
 * independent and only ever read as a snapshot for humans and tests. */
#ifndef PROFLINK_STATS_H
#define PROFLINK_STATS_H

#include <stdatomic.h>
#include <stdint.h>

enum stat_id {
    STAT_MESSAGES_RECEIVED,
    STAT_CORRELATIONS,
    STAT_REGISTRATIONS,
    STAT_DISCARDED_TRUNCATED,
    STAT_DISCARDED_OVERSIZED,
    STAT_IGNORED_UNKNOWN_TYPE,
    STAT_FIFO_RECORDS,
    STAT_FIFO_DROPS,
    STAT_TRANSACTIONS_DEFERRED,
    STAT_TRANSACTIONS_IMMEDIATE,
    STAT_QUEUE_OVERFLOWS,
    STAT_IDS_EVICTED,
    STAT_THREADS_SEEN,
    STAT_PULL_OVERFLOWS,
    STAT_HTTP_REQUESTS_TRACED,
    STAT_HTTP_REQUESTS_UNTRACED,
    STAT_ATTRIBUTES_REFUSED,
    STAT_COUNT
};

extern _Atomic uint64_t proflink_stat_counters[STAT_COUNT];

static inline void stat_add(enum stat_id id, uint64_t n)
{
    atomic_fetch_add_explicit(&proflink_stat_counters[id], n, memory_order_relaxed);
}
static inline void stat_inc(enum stat_id id) { stat_add(id, 1); }
static inline uint64_t stat_get(enum stat_id id)
{
    return atomic_load_explicit(&proflink_stat_counters[id], memory_order_relaxed);
}
/* A forked child starts counting afresh. */
void stats_reset(void);

#endif
