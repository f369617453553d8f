/* atfork.c — see atfork.h.
 *
 * A preload library must load in a program of the other libc too (libc_check.c), so it may not
 * need a symbol only its own libc has. glibc's pthread_atfork is a stub in libc_nonshared.a that
 * calls __register_atfork with the caller's DSO handle (musl has neither); glibc exports
 * pthread_atfork only as an old compat version, which the musl build cannot bind to. So the
 * preload builds reference both weakly and call them only when they resolved. Static builds
 * keep plain references: a weak one would not pull the function out of libc.a. */
#include "atfork.h"

#include <pthread.h>

#if defined(PROFLINK_STATIC)
int atfork_register(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
    return pthread_atfork(prepare, parent, child) == 0 ? 0 : -1;
}
#elif defined(__GLIBC__)
extern int __register_atfork(void (*)(void), void (*)(void), void (*)(void), void *)
    __attribute__((weak));
extern void *__dso_handle __attribute__((visibility("hidden")));

int atfork_register(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
    if (!__register_atfork)
        return -1;
    return __register_atfork(prepare, parent, child, __dso_handle) == 0 ? 0 : -1;
}
#else
#pragma weak pthread_atfork

int atfork_register(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
    if (!pthread_atfork)
        return -1;
    return pthread_atfork(prepare, parent, child) == 0 ? 0 : -1;
}
#endif
