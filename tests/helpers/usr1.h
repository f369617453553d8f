/* usr1.h — the test helpers' "wait until the test says so": SIGUSR1, blocked early (so it is
 * never lost nor fatal) and taken with sigwait. */
#ifndef TEST_USR1_H
#define TEST_USR1_H

#include <signal.h>

static inline void usr1_block(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, NULL);
}

/* Returns once SIGUSR1 arrived (usr1_block must have run). */
static inline void usr1_wait(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    int sig;
    sigwait(&set, &sig);
}

#endif
