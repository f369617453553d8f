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
/* Defined by pthread_wrap.c, an archive member the linker extracts only when the program is
 * linked with --wrap=pthread_create: then plain references to pthread_create (ours included)
 * lead to the wrapper, and libc's function is only reachable through __real_pthread_create.
 * A weak reference extracts nothing, so without --wrap this stays NULL. */
extern int proflink_wrapped_real_create(pthread_t *, const pthread_attr_t *, void *(*)(void *),
                                        void *) __attribute__((weak));

int real_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
    if (proflink_wrapped_real_create)
        return proflink_wrapped_real_create(t, a, fn, arg);
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
