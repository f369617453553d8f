/* atfork.h — the one way proflink registers fork handlers (pthread_atfork semantics). */
#ifndef PROFLINK_ATFORK_H
#define PROFLINK_ATFORK_H

/* Registers prepare/parent/child like pthread_atfork. Returns 0, or -1 when this libc offers
 * no registration to a library of our build (the other libc: see atfork.c). */
int atfork_register(void (*prepare)(void), void (*parent)(void), void (*child)(void));

#endif
