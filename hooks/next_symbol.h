/* next_symbol.h — the next definition of a function proflink interposes (preload builds).
 *
 * NEXT_SYMBOL(type, name) defines next_<name>(), which finds libc's <name> with
 * dlsym(RTLD_NEXT) on first use, not in the constructor: another library's constructor may call
 * it before ours runs. A benign race: every thread that looks it up stores the same value
 * (relaxed atomics keep that race defined; the code it points to was loaded before dlsym
 * could return it). */
#ifndef PROFLINK_NEXT_SYMBOL_H
#define PROFLINK_NEXT_SYMBOL_H

#include <dlfcn.h>
#include <stdatomic.h>

#define NEXT_SYMBOL(type, name)                                                                \
    static type next_##name(void)                                                              \
    {                                                                                          \
        static _Atomic(type) fn;                                                               \
        type f = atomic_load_explicit(&fn, memory_order_relaxed);                              \
        if (__builtin_expect(!f, 0)) {                                                         \
            f = (type)dlsym(RTLD_NEXT, #name);                                                 \
            atomic_store_explicit(&fn, f, memory_order_relaxed);                               \
        }                                                                                      \
        return f;                                                                              \
    }

#endif
