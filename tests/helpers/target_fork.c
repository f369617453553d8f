/* target_fork — forks a child that keeps running (does not exec), like a pre-fork server.
 * usage: target_fork SECONDS
 * Prints "parent <pid>" and "child <pid>", both processes sleep SECONDS and exit 0. The child
 * also starts a thread, to show that its threads get records too. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void *sleeper(void *arg)
{
    sleep((unsigned)(long)arg);
    return NULL;
}

int main(int argc, char **argv)
{
    unsigned seconds = argc > 1 ? (unsigned)atoi(argv[1]) : 5;
    printf("parent %d\n", (int)getpid());
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 2;
    if (pid == 0) {
        pthread_t t;
        pthread_create(&t, NULL, sleeper, (void *)(long)seconds);
        printf("child %d\n", (int)getpid());
        fflush(stdout);
        pthread_join(t, NULL);
        return 0;
    }
    sleep(seconds);
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 3;
}
