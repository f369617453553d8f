/* target_exits — ends (or tries to replace itself) in one of the ways a program can, to check
 * that none leaves a socket file behind.
 * usage: target_exits MODE [ARG]
 *   _exit | _Exit      print "bye", end with that function, status 3
 *   exit_group         print "bye", end with a raw exit_group system call (Go's os.Exit)
 *   exec PATH          execl(PATH, PATH, NULL); status 127 if it returns
 *   execfail           execv of a missing file, print "failed <errno>", then wait for SIGUSR1
 *                      and exit 0 (the test inspects the process in between)
 *   forks N            N children that each _exit(0) at once, then exit 0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "usr1.h"

static void say(const char *s) { (void)!write(1, s, strlen(s)); }

static void wait_usr1(void)
{
    usr1_block();
    say("waiting\n");
    usr1_wait();
}

static void raw_exit_group(int status)
{
#if defined(__x86_64__)
    __asm__ volatile("syscall" ::"a"((long)SYS_exit_group), "D"((long)status) : "rcx", "r11", "memory");
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = SYS_exit_group;
    register long x0 __asm__("x0") = status;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8) : "memory");
#endif
    abort();
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "_exit")) {
        say("bye\n");
        _exit(3);
    }
    if (!strcmp(mode, "_Exit")) {
        say("bye\n");
        _Exit(3);
    }
    if (!strcmp(mode, "exit_group")) {
        say("bye\n");
        raw_exit_group(3);
    }
    if (!strcmp(mode, "exec") && argc > 2) {
        execl(argv[2], argv[2], (char *)NULL);
        return 127;
    }
    if (!strcmp(mode, "execfail")) {
        char *args[] = {"missing", NULL};
        execv("/nonexistent/missing", args);
        printf("failed %d\n", errno);
        fflush(stdout);
        wait_usr1();
        return 0;
    }
    if (!strcmp(mode, "forks") && argc > 2) {
        int n = atoi(argv[2]);
        for (int i = 0; i < n; i++) {
            pid_t p = fork();
            if (p == 0)
                _exit(0);
            if (p > 0)
                waitpid(p, NULL, 0);
        }
        return 0;
    }
    fprintf(stderr, "usage: target_exits _exit|_Exit|exit_group|exec PATH|execfail|forks N\n");
    return 2;
}
