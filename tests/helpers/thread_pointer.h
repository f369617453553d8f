/* thread_pointer.h — the calling thread's thread pointer, as the profiler reads it for a sampled
 * thread: the %fs base on x86_64, tpidr_el0 on aarch64. Static TLS is addressed from it. */
#ifndef PROFLINK_TEST_THREAD_POINTER_H
#define PROFLINK_TEST_THREAD_POINTER_H

#include <stdint.h>

static inline uintptr_t thread_pointer(void)
{
    uintptr_t tp = 0;
#if defined(__x86_64__)
    /* both glibc and musl keep the thread pointer at %fs:0 (the TCB points to itself) */
    __asm__ volatile("mov %%fs:0, %0" : "=r"(tp));
#elif defined(__aarch64__)
    __asm__ volatile("mrs %0, tpidr_el0" : "=r"(tp));
#endif
    return tp;
}

#endif
