/* process_start — wall time of fork+exec+wait of a program (default /bin/true), alternating
 * runs without and with LD_PRELOAD=<lib> so that machine noise hits both alike.
 * usage: process_start LIB [N] [PROGRAM]; prints "start_plain_us X" and "start_preload_us Y"
 * (medians). */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

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

static double spawn_once(const char *prog, char **envp)
{
    char *argv[] = {(char *)prog, NULL};
    pid_t pid;
    double t0 = now_us();
    if (posix_spawn(&pid, prog, NULL, NULL, argv, envp) != 0)
        return -1;
    int st;
    waitpid(pid, &st, 0);
    return now_us() - t0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    int n = argc > 2 ? atoi(argv[2]) : 200;
    const char *prog = argc > 3 ? argv[3] : "/bin/true";
    int envc = 0;
    while (environ[envc])
        envc++;
    char **plain = calloc((size_t)envc + 1, sizeof *plain);
    char **pre = calloc((size_t)envc + 2, sizeof *pre);
    int p = 0, q = 0;
    for (int i = 0; i < envc; i++)
        if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0)
            plain[p++] = pre[q++] = environ[i];
    char *ld = malloc(strlen(argv[1]) + 12);
    sprintf(ld, "LD_PRELOAD=%s", argv[1]);
    pre[q++] = ld;
    double *a = calloc((size_t)n, sizeof *a), *b = calloc((size_t)n, sizeof *b);
    for (int i = 0; i < n; i++) {
        a[i] = spawn_once(prog, plain);
        b[i] = spawn_once(prog, pre);
    }
    qsort(a, (size_t)n, sizeof *a, cmp);
    qsort(b, (size_t)n, sizeof *b, cmp);
    printf("start_plain_us %.0f\nstart_preload_us %.0f\n", a[n / 2], b[n / 2]);
    return 0;
}
