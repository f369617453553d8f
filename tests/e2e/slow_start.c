/* slow_start.so — a library whose constructor burns CPU (SLOW_START_MS, default 300 ms) before
 * the program's main. Preloaded after proflink (LD_PRELOAD="proflink.so slow_start.so"), its
 * constructor runs first (the dynamic loader initializes the last loaded first): the process is on
 * the CPU, and so sampled, while proflink is mapped but has not published anything yet, which is
 * what a program with a heavy start-up (large libraries to relocate, constructors of its own)
 * does too. */
#include <stdlib.h>
#include <time.h>

__attribute__((constructor)) static void slow_start(void)
{
    const char *e = getenv("SLOW_START_MS");
    double ms = e ? atof(e) : 300;
    struct timespec t;
    volatile unsigned long x = 0;
    for (;;) {
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
        if (t.tv_sec * 1e3 + t.tv_nsec / 1e6 >= ms)
            break;
        for (int i = 0; i < 5000; i++)
            x += (unsigned long)i;
    }
}
