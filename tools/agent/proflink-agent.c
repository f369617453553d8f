/*
 * proflink-agent — a local stand-in for an eBPF profiler's apmint integration, to see the whole
 * correlation loop work without a profiler: it attaches to PID exactly where the profiler would
 * (same checks as proflink-inspect), samples the target's threads, reads each sampled thread's
 * trace context through its TLS pointer, unwinds the stack, names it with a 128-bit stack-trace
 * id and sends the profiler's correlation datagrams to the target's socket.
 *
 * Usage: proflink-agent [options] PID… | --pidof NAME [--children]
 *   several processes are sampled at once, each by a child of the agent (agent_multi.h)
 *   -d SECONDS   how long to sample (default 5)
 *   -f HZ        samples per second and thread (default 20)
 *   -n N         list at most N transactions in the text summary (default: all)
 *   --register DELAY_MS[,HOST_ID]
 *                first send a registration (type 2, minor 2) with that samples-delay-ms and
 *                host id, as Elastic's profiler does (the OTel profiler never registers)
 *   --otel       read the OpenTelemetry thread context (otel_thread_ctx_v1) instead of the
 *                Elastic record; the transaction id is its local_root_span_id attribute
 *   --by ATTR    (implies --otel) also count the samples per value of the OTel thread
 *                attribute ATTR (e.g. http.route), named through the process context key map
 *   --all-threads  also sample threads that are not on a CPU (a CPU profiler does not)
 *   --json       print the summary as one JSON object
 *   -o FILE      also write that JSON summary to FILE
 *   --pidof NAME every process called NAME; --children: also their descendants (target_pids.h)
 *   --folded FILE      the samples inside a trace as folded stacks (agent_folded.h)
 *   --flamegraph DIR   one SVG flame graph per trace, and an index (agent_flame.h)
 *
 * Sampling: every thread is seized once with PTRACE_SEIZE; each sample is PTRACE_INTERRUPT,
 * wait for the stop, read the record, unwind if it is valid and has a trace, PTRACE_CONT. At the
 * end every thread is detached and runs on as before; signals that arrive meanwhile are handed
 * back. The target is never killed nor left stopped (also on SIGINT/SIGTERM of the agent).
 *
 * Sending: one 46-byte correlation (type 1, minor 1, count 1) per sample with a trace, queued and
 * sent every 250 ms with sendto(MSG_DONTWAIT) to /proc/PID/root/<socket path>; a datagram the
 * socket cannot take is dropped and counted, as the profiler does.
 *
 * Output: per stack-trace id its frames (function names from the ELF symbol tables of the
 * target's files, else file+offset), per
 * {trace id, transaction id} the stack-trace ids sent with their counts. Stack-trace ids are
 * printed base64url without padding, as receivers render them.
 *
 * --json:
 * {"pid": 123, "service_name": "…", "socket": "/proc/123/root/…", "source": "elastic|otel",
 *  "duration_s": 4.0, "frequency_hz": 50, "threads": 4,
 *  "registration": {"samples_delay_ms": 200, "host_id": "…"} | null,
 *  "samples": 800, "samples_with_trace": 412, "sent": 412, "dropped": 0, "failed": 0,
 *  "bursts": 16, "unwind_failures": 0, "in_vdso": 1,
 *  "socket_reader": true | false | null   (proflink's intake thread ran at the end: false means
 *                                          nothing read what was sent, target_reader.h),
 *  "stacks": {"<id>": {"samples": 210, "sent": 210, "frames": ["compute_prices", …]}, …},
 *  "transactions": [{"trace_id": "<32 hex>", "transaction_id": "<16 hex>",
 *                    "stack_trace_ids": {"<id>": sent count, …}, "samples": 3}, …],
 *  "by": {"attribute": "http.route", "key_map_refreshes": 0, "without": 12,
 *         "groups": {"/r/1": 40, …}}}      ("by" only with --by)
 * Several processes: {"processes": [one such object per process, or {"pid": N, "status": 1|2,
 * "error": "…"} for one that was not sampled]}.
 *
 * Exit status: 0 after sampling (also when PID exits meanwhile, or on SIGINT/SIGTERM: the summary
 * is printed all the same); 1 when the profiler would not attach to PID; 2 on usage errors, when
 * PID cannot be traced (no such process, ptrace not permitted) or -o FILE cannot be written.
 * For several processes the worst of theirs.
 *
 * Here: attaching and the run's order. The options are in agent_options.c, the sampling loop in
 * agent_sampling.c, the summary in agent_report.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_flame.h"
#include "agent_folded.h"
#include "agent_multi.h"
#include "agent_options.h"
#include "agent_report.h"
#include "agent_sampling.h"
#include "common/target_diagnose.h"
#include "common/target_reader.h"
#include "common/target_util.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* Finds what the profiler would find (the same checks as proflink-inspect); returns -1 to go
 * on, else the exit status. */
static int attach(struct agent *a, const struct agent_options *o, pid_t target)
{
    char err[TARGET_ERRLEN];
    long pid = target;
    if (target_open(&a->t, target, err) != 0) {
        fprintf(stderr, "proflink-agent: pid %ld: %s\n", pid, err);
        return 2;
    }
    /* the checks in the profiler's order; the first that fails is named with its fix */
    const char *failed = target_find_library(&a->t, err) != 0    ? "mapping"
                         : target_read_elf(&a->t, err) != 0        ? "elf"
                         : target_read_tls_offset(&a->t, err) != 0 ? "tls"
                         : target_read_storage(&a->t, err) != 0    ? "storage"
                         : target_check_socket(&a->t, err) != 0    ? "socket"
                                                                   : NULL;
    if (failed) {
        char fix[1024];
        target_fix(target, failed, fix, sizeof fix);
        fprintf(stderr, "proflink-agent: pid %ld is not attachable: %s\n", pid, err);
        fprintf(stderr, "proflink-agent: fix: %s\n", fix);
        fprintf(stderr, "proflink-agent: (proflink-inspect %ld shows every check)\n", pid);
        return 1;
    }
    a->ctx = (struct agent_context){.t = &a->t, .otel = o->otel, .by = &a->by};
    if (o->otel) {
        if (!a->t.has_otel_offset) {
            fprintf(stderr, "proflink-agent: pid %ld has no usable %s: %s\n", pid,
                    TARGET_OTEL_TLS_SYMBOL,
                    a->t.has_otel_reloc ? a->t.otel_offset_err : a->t.otel_reloc_err);
            return 1;
        }
        agent_context_load_key_map(&a->ctx);
    }
    return -1;
}

static void catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* Seizes the threads and sends the registration; returns the threads seized, 0 on failure
 * (said on stderr, every thread already let go). */
static size_t start(struct agent *a, const struct agent_options *o)
{
    char err[TARGET_ERRLEN];
    if (agent_sender_open(&a->sender, a->t.sock.proc_path, err) != 0 ||
        agent_unwinder_init(&a->unwinder, err) != 0) {
        fprintf(stderr, "proflink-agent: %s\n", err);
        return 0;
    }
    for (size_t i = 0; i < a->t.maps.n; i++)
        if (!strcmp(a->t.maps.v[i].path, "[vdso]"))
            agent_unwinder_set_vdso(&a->unwinder, a->t.maps.v[i].start, a->t.maps.v[i].end);
    agent_symbols_init(&a->symbols, a->t.pid);
    agent_sampler_init(&a->sampler, a->t.pid);
    size_t threads = agent_sampler_refresh(&a->sampler);
    if (threads == 0) {
        fprintf(stderr, "proflink-agent: cannot ptrace pid %ld: %s\n", (long)a->t.pid,
                a->sampler.last_error[0] ? a->sampler.last_error : "no threads");
        agent_sampler_detach_all(&a->sampler);
        return 0;
    }
    if (!o->json)
        printf("proflink-agent: attached to pid %ld, service \"%s\", socket %s\n", (long)a->t.pid,
               a->t.storage.service_name.s, a->t.sock.proc_path);
    if (o->registered && o->delay < AGENT_FLUSH_INTERVAL_NS / 1000000)
        fprintf(stderr, "proflink-agent: warning: samples-delay-ms %" PRIu32 " is shorter than "
                        "this agent's reporting interval (%lld ms): transactions may be delivered "
                        "before their last samples arrive\n",
                o->delay, AGENT_FLUSH_INTERVAL_NS / 1000000);
    if (o->registered) {
        if (agent_sender_register(&a->sender, o->delay, o->host, err) != 0)
            fprintf(stderr, "proflink-agent: %s\n", err);
        else if (!o->json)
            printf("proflink-agent: registration sent: samples-delay-ms %" PRIu32
                   ", host id \"%s\"\n",
                   o->delay, o->host ? o->host : "");
    }
    if (!o->json) {
        printf("proflink-agent: sampling %zu threads at %g Hz for %g s (%s thread records)\n",
               threads, o->hz, o->secs, o->otel ? "OpenTelemetry" : "Elastic");
        fflush(stdout);
    }
    return threads;
}

/* The summary to -o FILE (if given) and stdout; returns the exit status. */
static int report(const struct agent *a, const struct agent_options *o, const struct agent_run *run)
{
    int rc = 0;
    if (o->json_file) {
        FILE *f = fopen(o->json_file, "w");
        if (f) {
            agent_report_json(f, a, o, run);
            if (fclose(f) != 0)
                f = NULL;
        }
        if (!f) {
            fprintf(stderr, "proflink-agent: cannot write %s: %s\n", o->json_file, strerror(errno));
            rc = 2;
        }
    }
    if (o->json)
        agent_report_json(stdout, a, o, run);
    else
        agent_report_text(a, o, run);
    return rc;
}

/* One process: attach, sample, report; its folded stacks appended to folded (if not NULL).
 * Returns the exit status. */
static int run_one(const struct agent_options *o, pid_t pid, FILE *folded)
{
    static struct agent a; /* large: keep it off the stack */
    memset(&a, 0, sizeof a);
    a.all_threads = o->all_threads;
    if (o->by)
        agent_by_init(&a.by, o->by);
    int rc;
    if ((rc = attach(&a, o, pid)) >= 0) {
        target_close(&a.t);
        return rc;
    }
    catch_signals();
    size_t threads = start(&a, o);
    if (threads == 0) {
        target_close(&a.t);
        return 2;
    }
    struct agent_run run;
    agent_sample_for(&a, o->secs, o->hz, threads, &stop_requested, &run);
    a.reader = target_socket_reader(pid);
    rc = report(&a, o, &run);
    if (folded)
        agent_folded_write(folded, &a);
    agent_by_free(&a.by);
    agent_sender_close(&a.sender);
    agent_symbols_free(&a.symbols);
    agent_unwinder_free(&a.unwinder);
    agent_sampler_free(&a.sampler);
    agent_tally_free(&a.tally);
    target_close(&a.t);
    return rc;
}

/* --folded FILE and --flamegraph DIR from the folded stacks of every process; returns the exit
 * status (2 when a file cannot be written). */
static int write_pictures(const struct agent_options *o, FILE *folded)
{
    int rc = 0;
    /* the paths go where the user reads: with the text, or beside the JSON on stderr */
    FILE *report = o->json ? stderr : stdout;
    fflush(folded);
    if (o->folded) {
        FILE *f = fopen(o->folded, "w");
        if (f) {
            rewind(folded);
            char buf[8192];
            size_t n;
            while ((n = fread(buf, 1, sizeof buf, folded)) > 0)
                fwrite(buf, 1, n, f);
        }
        if (!f || fclose(f) != 0) {
            fprintf(stderr, "proflink-agent: cannot write %s: %s\n", o->folded, strerror(errno));
            rc = 2;
        } else {
            char abs[PATH_MAX];
            fprintf(report, "proflink-agent: folded stacks: %s\n",
                    realpath(o->folded, abs) ? abs : o->folded);
        }
    }
    if (o->flame_dir) {
        char err[TARGET_ERRLEN + PATH_MAX];
        int n = agent_flame_write(folded, o->flame_dir, report, err, sizeof err);
        if (n < 0) {
            fprintf(stderr, "proflink-agent: %s\n", err);
            rc = 2;
        } else if (n == 0) {
            fprintf(report, "proflink-agent: no flame graph: no sample was taken inside a trace\n");
        }
    }
    return rc;
}

int main(int argc, char **argv)
{
    static struct agent_options o; /* large: keep it off the stack */
    int rc = agent_options_parse(argc, argv, &o);
    if (rc >= 0)
        return rc;
    FILE *folded = NULL;
    if ((o.folded || o.flame_dir) && !(folded = tmpfile())) {
        fprintf(stderr, "proflink-agent: no temporary file for the stacks: %s\n", strerror(errno));
        return 2;
    }
    rc = o.pids.n == 1 ? run_one(&o, o.pids.v[0], folded) : agent_multi(&o, run_one, folded);
    if (folded) {
        fflush(stdout);
        int prc = write_pictures(&o, folded);
        if (prc > rc)
            rc = prc;
        fclose(folded);
    }
    return rc;
}
