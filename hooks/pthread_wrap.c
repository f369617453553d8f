/* pthread_wrap.c — optional eager thread records for statically linked programs.
 *
 * A program linked with libproflink.a and `-Wl,--wrap=pthread_create` has every reference to
 * pthread_create redirected by the linker to __wrap_pthread_create, and libc's function renamed
 * __real_pthread_create. This file is a separate archive member on purpose: the linker
 * extracts it only when something references __wrap_pthread_create, that is only under --wrap,
 * so a program linked without the option never sees its (then unresolvable) reference to
 * __real_pthread_create. The library's own threads reach libc through a weak reference to
 * __real_pthread_create (preload/leaves/pthread_real.c) and get no record. The wrapper has
 * default visibility so that it stays global when the archive's hidden symbols are localized.
 *
 * Preload builds interpose pthread_create directly (pthread_create.c); nothing here. */
#include <pthread.h>

#include "leaves/export.h"

#ifdef PROFLINK_STATIC
typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

int proflink_create_with_records(create_fn next, pthread_t *t, const pthread_attr_t *a,
                                 void *(*fn)(void *), void *arg);
int __real_pthread_create(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

PROFLINK_EXPORT int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a,
                                          void *(*fn)(void *), void *arg)
{
    return proflink_create_with_records(__real_pthread_create, t, a, fn, arg);
}
#else
typedef int proflink_no_wrapper_in_preload_builds; /* ISO C wants a non-empty file */
#endif
