/* target_threads.h — the target's threads and their thread pointers.
 *
 * A TLS variable of a thread lives at thread pointer + static TLS offset; the thread pointer
 * (fs_base on x86_64, tpidr_el0 on aarch64) is only visible to a tracer. The eBPF profiler reads
 * it from the kernel's task struct; from user space we briefly stop the thread with
 * PTRACE_SEIZE + PTRACE_INTERRUPT (no signal is sent, unlike PTRACE_ATTACH), read the register
 * and detach at once. Threads are never left stopped and never killed: a signal that arrived
 * while we held the thread is handed back to it on detach. */
#ifndef TARGET_THREADS_H
#define TARGET_THREADS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The thread ids in /proc/PID/task, ascending. The caller frees *tids. */
int target_threads_list(pid_t pid, pid_t **tids, size_t *n, char *err);

/* /proc/PID/task/TID/comm without the newline ("" if unreadable). */
void target_thread_comm(pid_t pid, pid_t tid, char *buf, size_t cap);

/* A thread held in a ptrace stop; resume with target_thread_release. */
struct target_stopped {
    pid_t tid;
    int pending_signal; /* delivered back on release */
};

/* Stops tid; on success it must be released. */
int target_thread_stop(pid_t tid, struct target_stopped *st, char *err);
/* Reads the thread pointer of a stopped thread. */
int target_thread_tp(const struct target_stopped *st, uint64_t *tp, char *err);
/* Detaches, letting the thread run on exactly as before. */
void target_thread_release(const struct target_stopped *st);

/* stop + tp + release. */
int target_thread_pointer(pid_t tid, uint64_t *tp, char *err);

#endif
