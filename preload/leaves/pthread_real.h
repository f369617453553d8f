/* pthread_real.h — libc's pthread_create past proflink's interposer (hooks/pthread_create.c),
 * for the library's own threads and for the interposer itself. */
#ifndef PROFLINK_PTHREAD_REAL_H
#define PROFLINK_PTHREAD_REAL_H

#include <pthread.h>

/* The libc pthread_create, bypassing our interposer: proflink's own threads (the reader) must
 * not get a thread record, or the profiler would attribute proflink's work to the program's
 * trace. */
int real_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *),
                        void *arg);

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

#ifndef PROFLINK_STATIC
/* libc's pthread_create itself (dlsym RTLD_NEXT, resolved on first use), NULL if not found. */
create_fn real_pthread_create_next(void);
#endif

#endif
