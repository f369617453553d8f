/* agent_multi.c — see agent_multi.h. */
#include "agent_multi.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/target_json.h"
#include "common/target_util.h"

struct child {
    pid_t target, pid;
    FILE *out, *folded, *json;
    int status;
};

static struct child kids[AGENT_MULTI_MAX];
static size_t nkids;

/* A signal to the agent is passed on to every child, which stops sampling and reports (the
 * terminal's SIGINT reaches them too; a second one changes nothing). */
static void forward(int sig)
{
    (void)sig;
    int saved = errno;
    for (size_t i = 0; i < nkids; i++)
        if (kids[i].pid > 0)
            kill(kids[i].pid, SIGINT);
    errno = saved;
}

static void copy(FILE *from, FILE *to)
{
    char buf[8192];
    size_t n;
    rewind(from);
    while ((n = fread(buf, 1, sizeof buf, from)) > 0)
        fwrite(buf, 1, n, to);
}

static void comm_of(pid_t pid, char *out, size_t cap)
{
    char path[64];
    size_t len;
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    char *c = target_read_file(path, &len);
    snprintf(out, cap, "%s", c ? c : "?");
    out[strcspn(out, "\n")] = 0;
    free(c);
}

static int start_child(struct child *k, const struct agent_options *o, agent_run_one_fn run_one,
                       int want_folded)
{
    k->out = tmpfile();
    k->folded = want_folded ? tmpfile() : NULL;
    k->json = o->json || o->json_file ? tmpfile() : NULL;
    if (!k->out || (want_folded && !k->folded) || ((o->json || o->json_file) && !k->json))
        return -1;
    fflush(NULL); /* nothing buffered before the fork may be written by both processes */
    k->pid = fork();
    if (k->pid < 0)
        return -1;
    if (k->pid > 0)
        return 0;
    /* the child: its report into its files, read by the parent when it has ended. The parent's
     * forwarder means nothing here (no children of its own): until run_one installs its handler,
     * before it seizes any thread, a signal may end it as it would end the agent */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    dup2(fileno(k->out), STDOUT_FILENO);
    dup2(fileno(k->out), STDERR_FILENO); /* its errors belong in its section */
    struct agent_options co = *o;
    co.json = 0;
    co.json_file = NULL;
    char json_path[64] = "";
    if (k->json) {
        snprintf(json_path, sizeof json_path, "/proc/self/fd/%d", fileno(k->json));
        co.json_file = json_path;
    }
    int rc = run_one(&co, k->target, k->folded);
    fflush(NULL);
    _exit(rc); /* not exit: the parent's atexit work and streams are the parent's */
}

static void write_json(FILE *f)
{
    fputs("{\"processes\": [\n", f);
    for (size_t i = 0; i < nkids; i++) {
        struct child *k = &kids[i];
        if (i)
            fputs(",\n", f);
        fseek(k->json, 0, SEEK_END);
        if (ftell(k->json) > 0) {
            copy(k->json, f);
            continue;
        }
        /* no summary: the reason is what the child said */
        char why[1024] = "";
        rewind(k->out);
        size_t n = fread(why, 1, sizeof why - 1, k->out);
        why[n] = 0;
        while (n > 0 && why[n - 1] == '\n')
            why[--n] = 0;
        struct target_json j;
        target_json_init(&j, f);
        target_json_object(&j, NULL);
        target_json_int(&j, "pid", k->target);
        target_json_int(&j, "status", k->status);
        target_json_str(&j, "error", n ? why : "not sampled");
        target_json_end_object(&j);
    }
    fputs("]}\n", f);
}

int agent_multi(const struct agent_options *o, agent_run_one_fn run_one, FILE *folded)
{
    nkids = 0;
    if (o->pids.n > AGENT_MULTI_MAX) {
        fprintf(stderr, "proflink-agent: %zu processes, more than the %d sampled at once; name "
                        "fewer (a profiler has 128 process slots)\n",
                o->pids.n, AGENT_MULTI_MAX);
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    for (size_t i = 0; i < o->pids.n; i++) {
        struct child *k = &kids[nkids];
        *k = (struct child){.target = o->pids.v[i], .status = 2};
        nkids++;
        if (start_child(k, o, run_one, folded != NULL) != 0) {
            fprintf(stderr, "proflink-agent: pid %d: cannot start its sampler: %s\n",
                    (int)k->target, strerror(errno));
            k->pid = 0;
        }
    }
    int rc = 0, ended[3] = {0, 0, 0};
    for (size_t i = 0; i < nkids; i++) {
        struct child *k = &kids[i];
        int st;
        while (k->pid > 0 && waitpid(k->pid, &st, 0) < 0 && errno == EINTR)
            ;
        if (k->pid > 0)
            k->status = WIFEXITED(st) && WEXITSTATUS(st) <= 2 ? WEXITSTATUS(st) : 2;
        ended[k->status]++;
        if (k->status > rc)
            rc = k->status;
    }
    for (size_t i = 0; !o->json && i < nkids; i++) {
        char comm[64];
        comm_of(kids[i].target, comm, sizeof comm);
        printf("%s=== pid %d (%s), process %zu of %zu\n", i ? "\n" : "", (int)kids[i].target,
               comm, i + 1, nkids);
        fflush(stdout);
        if (kids[i].out)
            copy(kids[i].out, stdout);
    }
    if (!o->json)
        printf("\nproflink-agent: %zu processes: %d sampled, %d not attachable, %d could not be "
               "traced\n",
               nkids, ended[0], ended[1], ended[2]);
    for (size_t i = 0; o->json && i < nkids; i++)
        if (kids[i].status != 0 && kids[i].out)
            copy(kids[i].out, stderr); /* what went wrong, where a user sees it */
    if (o->json)
        write_json(stdout);
    if (o->json_file) {
        FILE *f = fopen(o->json_file, "w");
        if (f)
            write_json(f);
        if (!f || fclose(f) != 0) {
            fprintf(stderr, "proflink-agent: cannot write %s: %s\n", o->json_file, strerror(errno));
            rc = 2;
        }
    }
    for (size_t i = 0; i < nkids; i++) {
        struct child *k = &kids[i];
        if (k->folded && folded)
            copy(k->folded, folded);
        if (k->out)
            fclose(k->out);
        if (k->folded)
            fclose(k->folded);
        if (k->json)
            fclose(k->json);
    }
    fflush(stdout);
    return rc;
}
