/* lock_reset.h — a module's lock made new again, for the fork sequence's orphan child
 * (fork_sequence.c): a process that became a copy of its parent without the fork handlers (a raw
 * clone(SIGCHLD)) may hold a lock that a parent thread had taken, and that thread does not exist
 * here to release it. Unlocking is not the answer (a default mutex may only be unlocked by its
 * owner); the child is single-threaded when it runs this, so the lock is simply overwritten
 * with the state of a lock nobody ever took (what its static initializer gives). */
#ifndef PROFLINK_LOCK_RESET_H
#define PROFLINK_LOCK_RESET_H

#include <pthread.h>

static inline void lock_reset(pthread_mutex_t *m)
{
    static const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    *m = fresh;
}

#endif
