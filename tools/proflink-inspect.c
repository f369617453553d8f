/*
 * proflink-inspect — what an out-of-process profiler concludes about a process, check by check.
 *
 * It reads the target from outside exactly as the eBPF profiler's apmint integration does
 * (/proc/PID/maps, the library's ELF file, /proc/PID/mem, the socket under /proc/PID/root), plus
 * the OpenTelemetry process and thread contexts. It changes nothing in the target: memory is
 * only read. Thread pointers come from the C library's thread list in memory (glibc,
 * target_libc_threads.h), so no thread is stopped: a stop interrupts the thread's blocking
 * system call, which a service may log (nginx: "epoll_wait() failed (4: Interrupted system
 * call)"). Only with --stop is each thread stopped for a moment (PTRACE_SEIZE/INTERRUPT) and
 * detached: needed for musl and static programs, whose thread lists cannot be found, and to
 * read threads created without pthread_create (raw clone). --no-threads skips threads.
 *
 * Usage: proflink-inspect [--json] [--no-threads | --stop] PID
 *
 * The checks (inspect_checks.h) fill a report (inspect_report.h); text or --json
 * (inspect_render_json.h, which documents the object) render it. This file holds the options.
 *
 * Exit status: 0 when the apmint profiler would attach (checks 1-5 pass), 1 when it would not,
 * 2 on usage errors or when the process cannot be inspected (no such process, permission).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "inspect_all.h"
#include "inspect_checks.h"
#include "inspect_render_json.h"
#include "inspect_render_text.h"
#include "proflink.h"

static void usage(void)
{
    printf(
            "usage: proflink-inspect [--json] [--no-threads | --stop] PID\n"
            "       proflink-inspect --all   (every process that maps proflink, one line each)\n"
            "\n"
            "Reads process PID from outside, the way an eBPF profiler does, and reports check by\n"
            "check whether the Elastic apmint profiler integration would attach to it:\n"
            "  mapping, elf, tls, storage, socket   (all must pass: exit status 0)\n"
            "  threads   each thread's apmint / OpenTelemetry trace context; thread pointers\n"
            "            come from glibc's thread list in memory: no thread is stopped\n"
            "  otel      the OpenTelemetry process context (OTEL_CTX mapping)\n"
            "\n"
            "  --json        print one JSON object instead of text\n"
            "  --no-threads  do not read the threads\n"
            "  --stop        read thread pointers by stopping each thread for a moment with\n"
            "                ptrace (musl, static programs, raw clone threads); this interrupts\n"
            "                the thread's blocking system call (EINTR), which services may log\n"
            "  -h, --help    this help\n"
            "\n"
            "Exit status: 0 attachable, 1 not attachable, 2 usage error or cannot inspect PID.\n");
}

static int parse_pid(const char *s, pid_t *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v <= 0 || v > INT_MAX)
        return -1;
    *out = (pid_t)v;
    return 0;
}

static int fatal(int json, pid_t pid, const char *msg)
{
    fprintf(stderr, "proflink-inspect: %s\n", msg);
    if (json)
        inspect_render_json_error(pid, msg);
    return 2;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
                                         {"no-threads", no_argument, NULL, 'n'},
                                         {"stop", no_argument, NULL, 's'},
                                         {"help", no_argument, NULL, 'h'},
                                         {"version", no_argument, NULL, 'V'},
                                         {"all", no_argument, NULL, 'A'},
                                         {NULL, 0, NULL, 0}};
    struct inspect_options run = {.threads = 1, .stop = 0};
    int json = 0, o;
    while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (o) {
        case 'j': json = 1; break;
        case 'n': run.threads = 0; break;
        case 's': run.stop = 1; break;
        case 'h': usage(); return 0;
        case 'A': return inspect_all();
        case 'V': printf("proflink-inspect %s\n", PROFLINK_VERSION_STRING); return 0;
        default:
            fprintf(stderr, "usage: proflink-inspect [--json] [--no-threads | --stop] PID (see --help)\n");
            return 2;
        }
    }
    pid_t pid;
    if (optind + 1 != argc || parse_pid(argv[optind], &pid) != 0) {
        if (optind < argc && optind + 1 == argc)
            fprintf(stderr, "proflink-inspect: not a process id: %s\n", argv[optind]);
        fprintf(stderr, "usage: proflink-inspect [--json] [--no-threads | --stop] PID (see --help)\n");
        return 2;
    }

    static struct inspect_report r; /* large: keep it off the stack */
    char err[TARGET_ERRLEN];
    if (target_open(&r.t, pid, err) != 0) {
        target_close(&r.t);
        return fatal(json, pid, err);
    }
    run.diagnose = !json; /* only the text names what to fix */
    inspect_run(&r, &run);
    if (json)
        inspect_render_json(&r);
    else
        inspect_render_text(&r);
    fflush(stdout);
    int rc = r.attachable ? 0 : 1;
    inspect_report_free(&r);
    return rc;
}
