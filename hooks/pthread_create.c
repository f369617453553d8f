/* pthread_create.c — interposes pthread_create so that every new thread has its records before
 * its start routine runs, starting with its creator's context (PROFLINK_INHERIT) or the
 * TRACEPARENT one. The block is allocated and filled in the creator, so the inherited context
 * is the one in force at the pthread_create call, and the new thread only publishes a pointer.
 *
 * Preload builds interpose by symbol precedence and find the libc function with
 * dlsym(RTLD_NEXT). A statically linked program (PROFLINK_STATIC) has no symbol precedence to
 * play with: its threads get records lazily on their first API call, unless it is linked with
 * `-Wl,--wrap=pthread_create`, which routes its calls through __wrap_pthread_create
 * (pthread_wrap.c) and gives it the same eager records and inheritance as a preloaded program. */
#include <errno.h>
#include <pthread.h>

#include "leaves/export.h"
#include "start/fork_sequence.h"
#include "leaves/pthread_real.h"
#include "start/provider.h"
#include "delivery/deliverer_lazy.h"
#include "leaves/runtime_state.h"
#include "context/thread_records.h"

/* In the static archive, pthread_wrap.c (a separate member) calls proflink_create_with_records,
 * so it keeps default visibility there: it must survive the archive's localization of hidden
 * symbols, and a static program has no dynamic symbol table to leak it into. In the preload
 * library it is private. */
#ifdef PROFLINK_STATIC
#define BRIDGE PROFLINK_EXPORT
#else
#define BRIDGE static
#endif

static void *start_with_records(void *p)
{
    struct thread_block *b = p;
    void *(*fn)(void *) = b->start_fn;
    void *arg = b->start_arg;
    thread_block_install(b); /* may free b if the thread key cannot be set: read it first */
    return fn(arg);
}

/* Creates a thread through `next` (libc's pthread_create) with its records installed before fn
 * runs. Prefixed: in a static link this symbol lives in the program's namespace. */
BRIDGE int proflink_create_with_records(create_fn next, pthread_t *t, const pthread_attr_t *a,
                                        void *(*fn)(void *), void *arg)
{
    fork_sequence_check_process(); /* a raw clone child's first use, often: its own socket */
    if (!runtime_active())
        return next(t, a, fn, arg);
    provider_check(); /* a JVM creates threads after its agent's library published (provider.h) */
    reader_kick(); /* the program becomes multi-threaded: ours may start now (deliverer_lazy.h) */
    struct trace_ctx ctx;
    const struct thread_block *from = thread_initial_context(&ctx);
    struct thread_block *b = thread_block_new(&ctx, from);
    if (!b) /* out of memory: the thread still starts, it will get a record lazily */
        return next(t, a, fn, arg);
    b->start_fn = fn;
    b->start_arg = arg;
    int rc = next(t, a, start_with_records, b);
    if (rc != 0)
        thread_block_free_unused(b);
    return rc;
}

#ifndef PROFLINK_STATIC
PROFLINK_EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *),
                                   void *arg)
{
    create_fn next = real_pthread_create_next();
    if (!next)
        return EAGAIN;
    return proflink_create_with_records(next, t, a, fn, arg);
}
#endif
