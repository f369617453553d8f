/* agent_options.c — see agent_options.h. */
#include "agent_options.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proflink.h"
#include "common/target_util.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: proflink-agent [-d SECONDS] [-f HZ] [-n N] [-o FILE] [--register DELAY_MS[,HOST_ID]] "
               "[--otel] [--by ATTR] [--all-threads] [--json] [--folded FILE] [--flamegraph DIR] "
               "[--children] PID... | --pidof NAME\n");
}

static void help(void)
{
    usage(stdout);
    fputs("A local stand-in for an eBPF profiler: attaches to each PID where the profiler would,\n"
          "samples its threads, unwinds their stacks and sends the profiler's correlation messages\n"
          "to its socket; prints what it sent, per process. Several processes (the workers of a\n"
          "pre-fork server) are sampled at the same time.\n"
          "\n"
          "  -d SECONDS      how long to sample (default 5, at most 3600)\n"
          "  -f HZ           samples per second and thread (default 20, 1..1000)\n"
          "  -n N            list at most N transactions in the text summary (default: all)\n"
          "  -o FILE         also write the JSON summary to FILE\n"
          "  --register DELAY_MS[,HOST_ID]\n"
          "                  first send a registration with that samples-delay-ms and host id,\n"
          "                  as Elastic's profiler does\n"
          "  --otel          read the OpenTelemetry thread context instead of the Elastic record\n"
          "  --by ATTR       group the samples by the thread attribute ATTR (OTel thread context)\n"
          "  --all-threads   also sample threads that are not on a CPU\n"
          "  --json          print the summary as one JSON object ({\"processes\": [...]} for\n"
          "                  several processes)\n"
          "  --pidof NAME    every process called NAME (command, argv[0] or executable name);\n"
          "                  may be repeated\n"
          "  --children      also every descendant of the processes named (pre-fork workers)\n"
          "  --folded FILE   write the sampled stacks in folded form (\"trace T;SERVICE (pid\n"
          "                  N);transaction X;outermost;...;innermost COUNT\"), which every\n"
          "                  flame graph tool reads\n"
          "  --flamegraph DIR  write a flame graph per trace to DIR (trace-ID.svg, self-contained,\n"
          "                  opens in a browser), and per transaction when a trace has several\n"
          "  -h, --help      this text\n"
          "  --version       print the version and exit\n"
          "\n"
          "Exit status: 0 after sampling, 1 when a profiler would not attach to PID, 2 on usage\n"
          "errors or when PID cannot be traced; for several processes the worst of theirs.\n",
          stdout);
}

/* One option; returns -1 to go on, else the exit status. */
static int option(int c, struct agent_options *o)
{
    char *end;
    switch (c) {
    case 'd':
        o->secs = strtod(optarg, &end);
        if (*end || !(o->secs > 0 && o->secs <= AGENT_MAX_SECONDS)) {
            fprintf(stderr, "proflink-agent: -d wants seconds in (0, 3600]\n");
            return 2;
        }
        return -1;
    case 'f':
        o->hz = strtod(optarg, &end);
        if (*end || !(o->hz >= 1 && o->hz <= AGENT_MAX_HZ)) {
            fprintf(stderr, "proflink-agent: -f wants a rate in [1, 1000] Hz\n");
            return 2;
        }
        return -1;
    case 'n':
        o->max_txns = strtoul(optarg, &end, 10);
        if (*end || end == optarg) {
            fprintf(stderr, "proflink-agent: -n wants a number of transactions\n");
            return 2;
        }
        return -1;
    case 'o': o->json_file = optarg; return -1;
    case 'r': {
        unsigned long v = strtoul(optarg, &end, 10);
        if (end == optarg || (*end && *end != ',') || v > UINT32_MAX) {
            fprintf(stderr, "proflink-agent: --register wants DELAY_MS[,HOST_ID]\n");
            return 2;
        }
        o->delay = (uint32_t)v;
        o->host = *end == ',' ? end + 1 : NULL;
        o->registered = 1;
        return -1;
    }
    case 'O': o->otel = 1; return -1;
    case 'B':
        o->otel = 1;
        o->by = optarg;
        return -1;
    case 'j': o->json = 1; return -1;
    case 'A': o->all_threads = 1; return -1;
    case 'P':
        if (o->nnames == TARGET_NAMES_MAX) {
            fprintf(stderr, "proflink-agent: at most %d --pidof\n", TARGET_NAMES_MAX);
            return 2;
        }
        o->names[o->nnames++] = optarg;
        return -1;
    case 'C': o->children = 1; return -1;
    case 'F': o->folded = optarg; return -1;
    case 'G': o->flame_dir = optarg; return -1;
    case 'h': help(); return 0;
    case 'V': printf("proflink-agent %s\n", PROFLINK_VERSION_STRING); return 0;
    default: usage(stderr); return 2;
    }
}

int agent_options_parse(int argc, char **argv, struct agent_options *o)
{
    memset(o, 0, sizeof *o);
    o->secs = 5;
    o->hz = 20;
    /* long-only options get letters getopt's short string does not accept */
    static const struct option opts[] = {
        {"register", required_argument, NULL, 'r'},
        {"otel", no_argument, NULL, 'O'},
        {"by", required_argument, NULL, 'B'},
        {"json", no_argument, NULL, 'j'},
        {"all-threads", no_argument, NULL, 'A'},
        {"pidof", required_argument, NULL, 'P'},
        {"children", no_argument, NULL, 'C'},
        {"folded", required_argument, NULL, 'F'},
        {"flamegraph", required_argument, NULL, 'G'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int c, rc;
    while ((c = getopt_long(argc, argv, "d:f:n:o:h", opts, NULL)) != -1)
        if ((rc = option(c, o)) >= 0)
            return rc;
    char err[TARGET_ERRLEN];
    for (int i = optind; i < argc; i++)
        if (target_pids_add_arg(&o->pids, argv[i], err) != 0) {
            fprintf(stderr, "proflink-agent: %s\n", err);
            return 2;
        }
    for (size_t i = 0; i < o->nnames; i++)
        if (target_pids_add_name(&o->pids, o->names[i]) == 0) {
            fprintf(stderr, "proflink-agent: no process named %s\n", o->names[i]);
            return 2;
        }
    if (o->pids.n == 0) {
        fprintf(stderr, "proflink-agent: no process given: name one or more PIDs, or --pidof NAME\n");
        usage(stderr);
        return 2;
    }
    if (o->children)
        target_pids_add_children(&o->pids);
    for (size_t i = 0; i < o->pids.n; i++)
        if (o->pids.v[i] == getpid()) {
            fprintf(stderr, "proflink-agent: will not sample itself\n");
            return 2;
        }
    return -1;
}
