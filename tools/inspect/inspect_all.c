/* inspect_all.c — see inspect_all.h. */
#include "inspect_all.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inspect_checks.h"
#include "inspect_slots.h"
#include "common/target_maps.h"
#include "common/target_selection.h"

/* The first failed check's reason, or NULL when the profiler would attach. */
static const char *first_failure(const struct inspect_report *r)
{
    for (int i = C_MAPPING; i <= C_SOCKET; i++)
        if (r->c[i].st == ST_FAIL)
            return r->c[i].detail;
    return NULL;
}

int inspect_all(void)
{
    DIR *d = opendir("/proc");
    if (!d) {
        perror("proflink-inspect: /proc");
        return 2;
    }
    static struct inspect_report r; /* large: keep it off the stack */
    static const struct inspect_options no_threads = {.threads = 0};
    int n = 0, failing = 0, excluded = 0;
    struct dirent *e;
    printf("%-8s %-40s %-24s %s\n", "PID", "EXECUTABLE", "SERVICE", "STATE");
    while ((e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0 || pid == getpid() || !target_maps_find_file((pid_t)pid, "/elastic-jvmti-linux-", NULL, 0))
            continue;
        char exe[PATH_MAX] = "?", path[64], err[TARGET_ERRLEN] = "";
        snprintf(path, sizeof path, "/proc/%ld/exe", pid);
        ssize_t k = readlink(path, exe, sizeof exe - 1);
        exe[k > 0 ? k : 1] = 0;
        const char *why = err;
        if (target_open(&r.t, (pid_t)pid, err) == 0) {
            inspect_run(&r, &no_threads);
            why = first_failure(&r);
        }
        char service[64] = "-";
        if (r.t.storage.service_name.len)
            snprintf(service, sizeof service, "%.*s", (int)r.t.storage.service_name.len,
                     r.t.storage.service_name.s);
        n++;
        /* off on purpose (proflink.conf, its environment, setuid): not a failure */
        char reason[INSPECT_FIX_MAX];
        const char *state = why ? "FAIL: " : "attachable";
        if (why && r.c[C_STORAGE].st == ST_FAIL && target_excluded((pid_t)pid, reason, sizeof reason)) {
            state = "excluded: ";
            why = reason;
            excluded++;
        } else {
            failing += why != NULL;
        }
        if (!why)
            inspect_slots_add(exe);
        printf("%-8ld %-40s %-24s %s%s\n", pid, exe, service, state, why ? why : "");
        inspect_report_free(&r);
        memset(&r, 0, sizeof r);
    }
    closedir(d);
    printf("%d process%s map proflink (%d not attachable, %d excluded on purpose); the profiler "
           "has %d process slots%s\n",
           n, n == 1 ? "" : "es", failing, excluded, PROFILER_PROCESS_SLOTS,
           n > PROFILER_PROCESS_SLOTS ? ": more processes than slots, some will not be profiled "
                                         "(fix: restrict with PROFLINK_INCLUDE/EXCLUDE)"
                                       : "");
    inspect_slots_report(PROFILER_PROCESS_SLOTS);
    return failing || n > PROFILER_PROCESS_SLOTS;
}
