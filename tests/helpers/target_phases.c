/* target_phases — an ordinary program that goes through every phase in which proflink makes
 * system calls of its own: its start, its first thread, a tracer's first use of the message API
 * (proflink's threads start), a fork whose child exits, an exec, and its exit.
 * usage: target_phases [exec]   creates and joins a thread, sets a message callback through
 * dlsym (nothing without proflink), ends a sampled transaction, forks a child that exits 0,
 * waits for it, then (without "exec") execs itself with "exec", which prints "phases done" and
 * exits 0. The calls a seccomp allowlist must admit for the program alone are those of a run
 * without proflink. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proflink.h"

static void *work(void *arg) { return arg; }

static void on_message(const proflink_message *m, void *user)
{
    (void)m;
    (void)user;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "exec")) {
        printf("phases done\n");
        return 0;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, work, NULL) != 0 || pthread_join(t, NULL) != 0)
        return 3;
    void (*set_cb)(proflink_message_fn, void *) =
        (void (*)(proflink_message_fn, void *))dlsym(RTLD_DEFAULT, "proflink_set_message_callback");
    int (*end_txn)(const uint8_t *, const uint8_t *, uint8_t, proflink_transaction_fn, void *) =
        (int (*)(const uint8_t *, const uint8_t *, uint8_t, proflink_transaction_fn,
                 void *))dlsym(RTLD_DEFAULT, "proflink_end_transaction");
    if (set_cb)
        set_cb(on_message, NULL);
    if (end_txn) {
        static const uint8_t trace[16] = {1}, txn[8] = {2};
        end_txn(trace, txn, 1, NULL, NULL);
    }
    fflush(stdout);
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    int status = -1;
    if (child < 0 || waitpid(child, &status, 0) != child || status != 0)
        return 4;
    execl("/proc/self/exe", argv[0], "exec", (char *)NULL);
    return 5;
}
