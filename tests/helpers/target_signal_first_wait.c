/* target_signal_first_wait — a program whose first wait for work (poll) is made inside a signal
 * handler, while its main thread allocates and frees in a loop: a timer's SIGALRM handler polls
 * (poll is async-signal-safe) and so interrupts malloc at random points.
 * usage: target_signal_first_wait MS   loops MS milliseconds, stops the timer, prints
 * "handler polls N", then polls five times (10 ms each) outside any handler, prints "main polled"
 * and waits for stdin to close (so that its threads can be looked at from outside). */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t polls;

static void on_alarm(int sig)
{
    (void)sig;
    poll(NULL, 0, 0);
    polls++;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    long ms = atol(argv[1]);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 300}, {0, 300}};
    setitimer(ITIMER_REAL, &it, NULL);
    /* blocks below the mmap threshold, kept and then freed together: most of the time is spent
     * growing and trimming the heap (brk) inside malloc and free, where a handler's malloc
     * breaks what the interrupted call holds */
    enum { KEEP = 256 };
    static void *keep[KEEP];
    unsigned r = 1;
    for (long long end = now_ms() + ms; now_ms() < end;) {
        for (int i = 0; i < KEEP; i++) {
            r = r * 1103515245u + 12345u;
            keep[i] = malloc(32768 + (r >> 8) % 65536);
        }
        for (int i = KEEP - 1; i >= 0; i--)
            free(keep[i]);
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    printf("handler polls %d\n", (int)polls);
    for (int i = 0; i < 5; i++) /* as a server's loop waits, again and again */
        poll(NULL, 0, 10);
    printf("main polled\n");
    fflush(stdout);
    char c;
    while (read(0, &c, 1) > 0)
        ;
    return 0;
}
