/* http_sampler — samples, from outside, the Elastic thread record of every thread of some
 * processes, as an eBPF profiler reads it (thread pointer + the TLS offset of
 * elastic_apm_profiling_correlation_tls_v1 -> pointer -> 37-byte record), HZ times a second,
 * until the processes are gone or SIGTERM. For the HTTP matrix (tests/http_matrix.py).
 *
 *   http_sampler HZ TLS_OFFSET OUT PID...
 * The children of those processes (pre-fork workers) are sampled too, looked for every 100 ms.
 * OUT gets one line per thread and tick: "<t0> <t1> <pid> <tid> <trace id or ->", t0/t1 the
 * CLOCK_MONOTONIC nanoseconds just before and after the read. A thread's pointer is read once,
 * with a short ptrace stop (tools/common/target_threads.c), the first time the thread is seen. */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "../../tools/common/target_threads.c"
#include "../../tools/common/target_util.c"

#define MAX_THREADS 4096
#define MAX_PROCS 64
#define CHILD_SCAN_TICKS_MS 100

struct seen {
    pid_t pid, tid;
    uint64_t tp; /* 0: could not be read */
    int alive;
};

static struct seen threads[MAX_THREADS];
static int nthreads;
static volatile sig_atomic_t stop;
static pid_t procs[MAX_PROCS];
static int nprocs, nroots;

/* Adds the children of the processes given on the command line. */
static void scan_children(void)
{
    DIR *d = opendir("/proc");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) && nprocs < MAX_PROCS) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        char path[300], buf[512];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        char *rp = strrchr(buf, ')'); /* the command may hold spaces and parentheses */
        int ppid = 0;
        if (!rp || sscanf(rp + 2, "%*c %d", &ppid) != 1)
            continue;
        pid_t pid = (pid_t)atoi(e->d_name);
        int known = 0, child = 0;
        for (int i = 0; i < nprocs; i++)
            known |= procs[i] == pid;
        for (int i = 0; i < nroots; i++)
            child |= procs[i] == ppid;
        if (child && !known)
            procs[nprocs++] = pid;
    }
    closedir(d);
}

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int peek(pid_t pid, uint64_t addr, void *buf, size_t n)
{
    struct iovec local = {buf, n}, remote = {(void *)(uintptr_t)addr, n};
    return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)n ? 0 : -1;
}

static struct seen *find(pid_t pid, pid_t tid)
{
    for (int i = 0; i < nthreads; i++)
        if (threads[i].tid == tid && threads[i].pid == pid)
            return &threads[i];
    if (nthreads == MAX_THREADS)
        return 0;
    struct seen *s = &threads[nthreads++];
    char err[256];
    s->pid = pid;
    s->tid = tid;
    if (target_thread_pointer(tid, &s->tp, err) != 0)
        s->tp = 0;
    return s;
}

/* Lists pid's threads, marks them alive; 0 when pid is gone. */
static int list(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] >= '0' && e->d_name[0] <= '9') {
            struct seen *s = find(pid, (pid_t)atoi(e->d_name));
            if (s)
                s->alive = 1;
        }
    closedir(d);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: http_sampler HZ TLS_OFFSET OUT PID...\n");
        return 2;
    }
    long hz = atol(argv[1]);
    long long tls = atoll(argv[2]);
    FILE *out = fopen(argv[3], "w");
    if (!out || hz <= 0)
        return 2;
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    for (int a = 4; a < argc && nprocs < MAX_PROCS; a++)
        procs[nprocs++] = (pid_t)atoi(argv[a]);
    nroots = nprocs;
    uint64_t period = 1000000000u / (uint64_t)hz, next = now_ns(), scanned = 0;
    while (!stop) {
        int any = 0;
        if (next - scanned >= CHILD_SCAN_TICKS_MS * 1000000ull) {
            scan_children();
            scanned = next;
        }
        for (int i = 0; i < nthreads; i++)
            threads[i].alive = 0;
        for (int i = 0; i < nprocs; i++)
            any |= list(procs[i]);
        if (!any)
            break;
        for (int i = 0; i < nthreads; i++) {
            struct seen *s = &threads[i];
            if (!s->alive || !s->tp)
                continue;
            uint64_t rec = 0;
            uint8_t r[37];
            uint64_t t0 = now_ns();
            int ok = peek(s->pid, s->tp + (uint64_t)tls, &rec, sizeof rec) == 0;
            int traced = ok && rec && peek(s->pid, rec, r, sizeof r) == 0 && r[2] && r[3];
            uint64_t t1 = now_ns();
            if (!ok)
                continue;
            char hex[33] = "-";
            if (traced)
                target_hex(r + 5, 16, hex);
            fprintf(out, "%llu %llu %d %d %s\n", (unsigned long long)t0, (unsigned long long)t1,
                    (int)s->pid, (int)s->tid, hex);
        }
        next += period;
        uint64_t t = now_ns();
        if (next > t) {
            struct timespec ts = {(time_t)((next - t) / 1000000000u),
                                  (long)((next - t) % 1000000000u)};
            nanosleep(&ts, 0);
        } else {
            next = t;
        }
    }
    fclose(out);
    return 0;
}
