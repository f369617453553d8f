/* fork.c — keeps proflink right across fork() through pthread_atfork: it runs for every fork()
 * (the program's, libc's own daemon()/forkpty()...), in glibc and musl alike, and its child
 * handler runs before fork() returns in the child, which the contract requires. posix_spawn
 * and vfork run no handlers; their children exec at once and start afresh. */
#include <pthread.h>
#include <stdatomic.h>

#include "hooks.h"
#include "runtime.h"

/* A preload library must load in a program of the other libc too (libc_check.c), so it may not
 * need a symbol only its own libc has. glibc's pthread_atfork is a stub in libc_nonshared.a that
 * calls __register_atfork with the caller's DSO handle (musl has neither); glibc exports
 * pthread_atfork only as an old compat version, which musl's build cannot bind to. So the
 * preload builds reference both weakly; they are called only once libc_check() passed. Static
 * builds keep plain references: a weak one would not pull the function out of libc.a. */
#if defined(PROFLINK_STATIC)
#define register_fork_handlers(p, pa, c) pthread_atfork(p, pa, c)
#elif defined(__GLIBC__)
extern int __register_atfork(void (*)(void), void (*)(void), void (*)(void), void *)
    __attribute__((weak));
extern void *__dso_handle __attribute__((visibility("hidden")));
#define register_fork_handlers(p, pa, c) __register_atfork(p, pa, c, __dso_handle)
#else
#pragma weak pthread_atfork
#define register_fork_handlers(p, pa, c) pthread_atfork(p, pa, c)
#endif

void hooks_install_fork_handlers(void)
{
    static _Atomic int installed;
    if (atomic_exchange(&installed, 1))
        return;
    register_fork_handlers(runtime_fork_prepare, runtime_fork_parent, runtime_fork_child);
}
