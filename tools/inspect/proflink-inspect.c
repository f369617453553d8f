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
 * Usage: proflink-inspect [--json] [--no-threads | --stop] [--children] PID… | --pidof NAME
 * Several processes (PIDs, every process named NAME, with --children their descendants: the
 * workers of a pre-fork server) are reported one after the other, each whole; --json then
 * prints {"processes": [one object per process]}.
 *
 * The checks (inspect_checks.h) fill a report (inspect_report.h); text or --json
 * (inspect_render_json.h, which documents the object) render it. This file holds the options.
 *
 * Exit status: 0 when the apmint profiler would attach (checks 1-5 pass), 1 when it would not,
 * 2 on usage errors or when the process cannot be inspected (no such process, permission); for
 * several processes, the worst of theirs.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inspect_all.h"
#include "inspect_checks.h"
#include "inspect_render_json.h"
#include "inspect_render_text.h"
#include "proflink.h"
#include "common/target_pids.h"

static void usage(void)
{
    printf(
            "usage: proflink-inspect [--json] [--no-threads | --stop] [--children] PID...\n"
            "       proflink-inspect [options] --pidof NAME   (every process called NAME)\n"
            "       proflink-inspect --all   (every process that maps proflink, one line each)\n"
            "\n"
            "Reads each process from outside, the way an eBPF profiler does, and reports check by\n"
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
            "  --pidof NAME  every process called NAME (command, argv[0] or executable name);\n"
            "                may be repeated\n"
            "  --children    also every descendant of the processes named (pre-fork workers)\n"
            "  -h, --help    this help\n"
            "\n"
            "Several processes are reported one after the other (--json: {\"processes\": [...]}).\n"
            "Exit status: 0 attachable, 1 not attachable, 2 usage error or cannot inspect PID;\n"
            "for several processes the worst of theirs.\n"
            "\n"
            "proflink's own system calls (for a seccomp allowlist or SystemCallFilter=) are listed\n"
            "by phase in docs/system-wide.md; strace -f shows them in a run.\n");
}

static int fatal(int json, pid_t pid, const char *msg)
{
    fprintf(stderr, "proflink-inspect: %s\n", msg);
    if (json)
        inspect_render_json_error(pid, msg);
    return 2;
}

/* One process, rendered; returns its exit status. */
static int inspect_one(pid_t pid, int json, struct inspect_options run)
{
    static struct inspect_report r; /* large: keep it off the stack */
    memset(&r, 0, sizeof r);
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

static int usage_error(const char *msg)
{
    if (msg)
        fprintf(stderr, "proflink-inspect: %s\n", msg);
    fprintf(stderr, "usage: proflink-inspect [--json] [--no-threads | --stop] [--children] "
                    "PID… | --pidof NAME (see --help)\n");
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
                                         {"pidof", required_argument, NULL, 'P'},
                                         {"children", no_argument, NULL, 'C'},
                                         {NULL, 0, NULL, 0}};
    struct inspect_options run = {.threads = 1, .stop = 0};
    static struct target_pids pids;
    const char *names[TARGET_NAMES_MAX];
    size_t nnames = 0;
    int json = 0, children = 0, o;
    char err[TARGET_ERRLEN];
    while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (o) {
        case 'j': json = 1; break;
        case 'n': run.threads = 0; break;
        case 's': run.stop = 1; break;
        case 'h': usage(); return 0;
        case 'A': return inspect_all();
        case 'V': printf("proflink-inspect %s\n", PROFLINK_VERSION_STRING); return 0;
        case 'P':
            if (nnames == TARGET_NAMES_MAX)
                return usage_error("too many --pidof");
            names[nnames++] = optarg;
            break;
        case 'C': children = 1; break;
        default: return usage_error(NULL);
        }
    }
    for (int i = optind; i < argc; i++)
        if (target_pids_add_arg(&pids, argv[i], err) != 0)
            return usage_error(err);
    for (size_t i = 0; i < nnames; i++)
        if (target_pids_add_name(&pids, names[i]) == 0) {
            fprintf(stderr, "proflink-inspect: no process named %s\n", names[i]);
            return 2;
        }
    if (pids.n == 0)
        return usage_error("no process given: name one or more PIDs, or --pidof NAME");
    if (children)
        target_pids_add_children(&pids);

    if (pids.n == 1)
        return inspect_one(pids.v[0], json, run);
    /* Several: each reported whole, one after the other; the worst status is the exit status. */
    int rc = 0, counts[3] = {0, 0, 0};
    if (json)
        printf("{\"processes\": [\n");
    for (size_t i = 0; i < pids.n; i++) {
        if (i)
            printf(json ? ",\n" : "\n");
        fflush(stdout);
        int one = inspect_one(pids.v[i], json, run);
        counts[one]++;
        if (one > rc)
            rc = one;
    }
    if (json)
        printf("]}\n");
    else
        printf("\nproflink-inspect: %zu processes: %d attachable, %d not attachable, %d could not "
               "be inspected\n",
               pids.n, counts[0], counts[1], counts[2]);
    return rc;
}
