/* pthread_real.c — libc's pthread_create, past proflink's interposer (hooks/pthread_create.c):
 * proflink's own threads (the reader) get no record. Apart from the interposer because the
 * reader needs it and the interposer needs the fork sequence, which needs the reader: one file
 * for both would be a call cycle; and in the library, not in hooks/, because the hooks depend on
 * the library, never the reverse. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include "pthread_real.h"

#ifdef PROFLINK_STATIC
/* A program linked with --wrap=pthread_create has every reference to pthread_create (ours
 * included) redirected to hooks/pthread_wrap.c's __wrap_pthread_create, and libc's function is
 * reachable only as __real_pthread_create, a name the linker resolves under --wrap alone. A weak
 * reference to it is libc's function under --wrap and NULL without: the library reaches libc,
 * never the hook, so the hooks stay above the library with weak references counted. */
extern int __real_pthread_create(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                                 void *) __attribute__((weak));

int real_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
    if (__real_pthread_create)
        return __real_pthread_create(t, a, fn, arg);
    return pthread_create(t, a, fn, arg);
}
#else
static _Atomic(create_fn) next_create;

/* Resolved on first use, not in the constructor: another library's constructor may create a
 * thread before ours runs. Racing resolvers store the same value. */
create_fn real_pthread_create_next(void)
{
    create_fn f = atomic_load_explicit(&next_create, memory_order_acquire);
    if (!f) {
        f = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
        atomic_store_explicit(&next_create, f, memory_order_release);
    }
    return f;
}

int real_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
    create_fn next = real_pthread_create_next();
    return next ? next(t, a, fn, arg) : EAGAIN;
}
#endif
