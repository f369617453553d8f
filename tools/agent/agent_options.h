/* agent_options.h — proflink-agent's command line (see proflink-agent.c for its meaning). */
#ifndef AGENT_OPTIONS_H
#define AGENT_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/target_pids.h"

/* Bounds of -d and -f: an hour is longer than any look at a service needs; above 1000 Hz a
 * sample's ptrace stop costs more than the period between samples. */
#define AGENT_MAX_SECONDS 3600
#define AGENT_MAX_HZ 1000

struct agent_options {
    struct target_pids pids; /* PIDs, --pidof NAME, --children: at least one */
    const char *folded;      /* --folded FILE, or NULL */
    const char *flame_dir;   /* --flamegraph DIR, or NULL */
    double secs, hz;
    int json;              /* --json */
    const char *json_file; /* -o FILE, or NULL */
    int registered;        /* --register given */
    uint32_t delay;        /* its samples-delay-ms */
    const char *host;      /* its host id, or NULL */
    int otel;              /* --otel (or --by) */
    const char *by;        /* --by ATTR, or NULL */
    int all_threads;       /* --all-threads */
    size_t max_txns;       /* -n N (0: all) */
    const char *names[TARGET_NAMES_MAX]; /* --pidof NAME… */
    size_t nnames;
    int children; /* --children */
};

/* Fills o from argv. Returns -1 to go on, else the exit status to end with: 0 after --help or
 * --version (printed), 2 on a usage error (said on stderr). */
int agent_options_parse(int argc, char **argv, struct agent_options *o);

#endif
