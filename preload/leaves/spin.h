/* spin.h — the CPU's spin-wait hint, for the few short waits that retry instead of sleeping. */
#ifndef PROFLINK_SPIN_H
#define PROFLINK_SPIN_H

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield" ::: "memory")
#else
#define cpu_relax() __asm__ __volatile__("" ::: "memory")
#endif

#endif
