/* target_libc_threads.h — every thread's thread pointer, read from the C library's own thread
 * list in the target's memory, without stopping any thread (the way glibc's libthread_db finds
 * threads for a debugger).
 *
 * glibc keeps each thread's descriptor (struct pthread) on one of two lists in ld.so's
 * _rtld_global: _dl_stack_used (stacks it allocated) and _dl_stack_user (the main thread and
 * threads on stacks the program supplied). libc.so exports, for libthread_db, descriptors of
 * the offsets involved (_thread_db_<struct>_<field> = {bits, count, offset}); so no layout is
 * hard-coded here. The thread pointer is the descriptor's address on x86_64 (the TCB is at the
 * thread pointer) and just past it on aarch64 (the TCB follows struct pthread).
 * A thread created without pthread_create (a raw clone()) has no descriptor and is not listed.
 * musl has no such exported description: there the caller must stop threads (ptrace) to read
 * their thread pointers. */
#ifndef TARGET_LIBC_THREADS_H
#define TARGET_LIBC_THREADS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "target_maps.h"
#include "target_mem.h"

struct target_libc_thread {
    pid_t tid;
    uint64_t tp;
};

/* Fills *out (caller frees) with the threads on glibc's lists. 0 ok; -1 when the lists cannot
 * be found (not glibc, static, symbols missing: err says which) or read. */
int target_libc_threads(pid_t pid, const struct target_maps *maps, const struct target_mem *mem,
                        struct target_libc_thread **out, size_t *n, char *err);

/* The thread pointer of tid from such a list; 0 found, -1 not listed. */
int target_libc_thread_tp(const struct target_libc_thread *v, size_t n, pid_t tid, uint64_t *tp);

#endif
