/* stats_probe.so — preloaded after proflink into an otherwise unmodified program: a thread that
 * rewrites the file STATS_PROBE_FILE every 50 ms with proflink's counters (proflink_get_stats,
 * found with dlsym), "received=N correlations=N discarded=N fifo_drops=N", so that the
 * end-to-end tests compare what proflink received with what the profiler sent whatever a
 * PROFLINK_FIFO reader loses. The thread, named "stats-probe", first clears the trace context it
 * may have inherited (it works for no trace). Without STATS_PROBE_FILE it does nothing. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "proflink.h"

typedef int (*stats_fn)(proflink_stats *, size_t);
typedef void (*clear_fn)(void);

static const char *path;

static void *probe(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "stats-probe");
    clear_fn clear = (clear_fn)dlsym(RTLD_DEFAULT, "proflink_clear_trace");
    stats_fn get_stats = (stats_fn)dlsym(RTLD_DEFAULT, "proflink_get_stats");
    if (!clear || !get_stats)
        return NULL;
    clear();
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    struct timespec tick = {0, 50 * 1000 * 1000};
    for (;;) {
        proflink_stats s;
        get_stats(&s, sizeof s);
        FILE *f = fopen(tmp, "w");
        if (f) {
            fprintf(f, "received=%llu correlations=%llu discarded=%llu fifo_drops=%llu\n",
                    (unsigned long long)s.messages_received, (unsigned long long)s.correlations,
                    (unsigned long long)(s.discarded_truncated + s.discarded_oversized +
                                         s.ignored_unknown_type),
                    (unsigned long long)s.fifo_drops);
            fclose(f);
            rename(tmp, path);
        }
        nanosleep(&tick, NULL);
    }
    return NULL;
}

__attribute__((constructor)) static void stats_probe_start(void)
{
    path = getenv("STATS_PROBE_FILE");
    if (!path)
        return;
    pthread_t t;
    if (pthread_create(&t, NULL, probe, NULL) == 0)
        pthread_detach(t);
}
