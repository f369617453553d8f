/* process_start — wall time of fork+exec+wait of a program under several environments, run in
 * interleaved rounds so that machine noise hits every environment alike.
 *
 * usage: process_start ROUNDS PROGRAM [-- NAME [VAR=VALUE...]]...
 * The first environment is the baseline (usually NAME alone: the environment without
 * LD_PRELOAD). Each environment is this process's own without LD_PRELOAD, with its VAR=VALUE
 * pairs replacing or adding variables. Each round starts PROGRAM once per environment, in an
 * order shuffled from round to round. Prints per environment "NAME_us M" (median start) and,
 * after the first, "NAME_added_us D": the median over the rounds of (this start - the
 * baseline's start in the same round), steadier than a difference of medians. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

#define MAX_ENVS 16

struct env {
    const char *name;
    char **envp;
    double *start_us, *added_us;
};

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double spawn_once(const char *prog, char **envp)
{
    char *argv[] = {(char *)prog, NULL};
    pid_t pid;
    double t0 = now_us();
    if (posix_spawn(&pid, prog, NULL, NULL, argv, envp) != 0) {
        perror(prog);
        exit(1);
    }
    int st;
    waitpid(pid, &st, 0);
    return now_us() - t0;
}

static int sets(char **pairs, int n, const char *var)
{
    size_t len = strcspn(var, "=");
    if (!strncmp(var, "LD_PRELOAD=", 11))
        return 1;
    for (int i = 0; i < n; i++)
        if (!strncmp(pairs[i], var, len) && pairs[i][len] == '=')
            return 1;
    return 0;
}

static char **make_env(char **pairs, int n)
{
    int envc = 0;
    while (environ[envc])
        envc++;
    char **e = calloc((size_t)(envc + n + 1), sizeof *e);
    int k = 0;
    for (int i = 0; i < envc; i++)
        if (!sets(pairs, n, environ[i]))
            e[k++] = environ[i];
    for (int i = 0; i < n; i++)
        e[k++] = pairs[i];
    return e;
}

int main(int argc, char **argv)
{
    if (argc < 5 || strcmp(argv[3], "--")) {
        fprintf(stderr, "usage: process_start ROUNDS PROGRAM -- NAME [VAR=VALUE...] [-- ...]\n");
        return 2;
    }
    int rounds = atoi(argv[1]);
    const char *prog = argv[2];
    struct env envs[MAX_ENVS];
    int n_envs = 0;
    for (int i = 3; i < argc && n_envs < MAX_ENVS;) {
        i++; /* "--" */
        int first = i + 1, last = first;
        while (last < argc && strcmp(argv[last], "--"))
            last++;
        envs[n_envs].name = argv[i];
        envs[n_envs].envp = make_env(argv + first, last - first);
        envs[n_envs].start_us = calloc((size_t)rounds, sizeof(double));
        envs[n_envs].added_us = calloc((size_t)rounds, sizeof(double));
        n_envs++;
        i = last;
    }
    for (int e = 0; e < n_envs; e++) /* warm the page cache and the loader's files */
        spawn_once(prog, envs[e].envp);
    /* A new order every round (a fixed seed: runs stay comparable). A rotation would keep each
     * environment behind the same one, and a start pays for what the one before it left behind:
     * a served start right after another served start in the same directory took 25-45 us more
     * than after a bare one, whichever library either was. */
    int order[MAX_ENVS];
    for (int e = 0; e < n_envs; e++)
        order[e] = e;
    srand(26);
    for (int r = 0; r < rounds; r++) {
        for (int k = n_envs - 1; k > 0; k--) {
            int j = rand() % (k + 1), t = order[k];
            order[k] = order[j];
            order[j] = t;
        }
        for (int k = 0; k < n_envs; k++) {
            int e = order[k];
            envs[e].start_us[r] = spawn_once(prog, envs[e].envp);
        }
    }
    for (int e = 1; e < n_envs; e++)
        for (int r = 0; r < rounds; r++)
            envs[e].added_us[r] = envs[e].start_us[r] - envs[0].start_us[r];
    for (int e = 0; e < n_envs; e++) {
        printf("%s_us %.0f\n", envs[e].name, median(envs[e].start_us, rounds));
        if (e > 0)
            printf("%s_added_us %.0f\n", envs[e].name, median(envs[e].added_us, rounds));
    }
    return 0;
}
