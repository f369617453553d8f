/* fork_sequence.c — the fork sequence: the only place that registers fork handlers, and the
 * only caller of the modules' X_fork_prepare / X_fork_parent / X_fork_child.
 *
 * pthread_atfork runs for every fork() (the program's, libc's own daemon(), forkpty()...), in
 * glibc and musl alike, and its child handler runs before fork() returns in the child, which
 * the contract requires (docs/internals.md, fork and exec). posix_spawn and vfork run no handlers; their
 * children exec at once and start afresh. _Fork() runs none either: its child is a raw copy.
 *
 * Lock order. prepare takes every proflink lock a child needs consistent, outermost first;
 * parent releases them in reverse; child releases them in reverse too, resetting each module's
 * state for a process of its own:
 *   1. tracer_resource  resource_lock: held across a republication of the storage and the
 *                       OTel context, and guards the service fields the child republishes
 *                       (step R): released last in the child, after that republication.
 *   2. attr_keys        register_lock: held across a republication of the OTel key map.
 *   3. profiler_state   the callback's and the host id's locks.
 *   4. pull_queue       fd_lock, then take_lock (that module's own order).
 *   5. fifo             the pipe's lock.
 *   6. deferral         the id table's lock.
 *   R. (child only)     reader_fork_child (the parent's reader and sockets are not ours),
 *                       stats_reset, runtime_fork_child (own socket, storage, OTel context;
 *                       the reader's threads start later, when the child asks: deliverer_lazy.h,
 *                       so that the child stays single-threaded for unshare and setns).
 * Why this order: a lock held while publishing (1, 2) comes before the data locks (3-6) that a
 * publication might one day take, never after. Today no proflink lock is taken while another
 * is held (each guards a copy or one non-blocking system call and is released before anything
 * is called out), so no order could deadlock with the program's threads; this one is what a
 * change must keep. The reader thread is not stopped: it holds 5 or 6 for microseconds at a
 * time, and prepare simply waits for them. Not taken, and why: the OTel context's publication
 * flag is a try-lock its users never wait on (1 and 2 cover both of its multi-threaded users;
 * the child clears it, otel_process_ctx_after_fork); thread records have no lock. Step R runs
 * after 6-2 are released because the child's reader threads, once started, take them.
 *
 * The fork-child rule (every X_fork_child follows it): the child handler may allocate, with the
 * C library (malloc, free; it creates no thread); it may not take a lock prepare did not take (a parent thread may have held
 * it when fork copied the memory), and may not wait. Allocating is safe because glibc and musl
 * take their allocator's locks after the prepare handlers and make it consistent in the child
 * before the child handlers run (glibc's fork.c says so: fork handlers may use malloc). A
 * replacement allocator (jemalloc, tcmalloc) guards itself with fork handlers of its own,
 * registered when it is loaded or first used: start-up allocates (the main thread's record,
 * the storage) before fork_sequence_install, so those run before ours in the child. Not
 * supported: a fork() from a signal handler that interrupted the allocator (POSIX.1-2024 no
 * longer lists fork() as async-signal-safe; libc's own handlers break there too).
 *
 * A sandboxed process (the program installed a seccomp filter) makes no system call of its
 * own: its child only unpublishes and turns proflink off, before step 6. The locks stay held
 * there, which nothing notices: an inactive proflink takes none of them (every entry point
 * checks runtime_active first).
 *
 * A copy made without the handlers (a raw clone(SIGCHLD) system call, made by a runtime or a
 * sandbox that bypasses libc's fork) starts as a copy of its parent's state: the
 * storage names the parent's socket, no OTel context is mapped (MADV_DONTFORK), no reader runs.
 * Nothing runs at its creation, so it is found at its first use of the library
 * (fork_sequence_check_process compares getpid() with the pid recorded at set-up) and then set
 * up by fork_sequence_orphan_child: the same child steps, after the locks are made new instead
 * of released, since nothing took them. The allocations of those steps are as safe there as
 * the program's own calls to libc in that child. */
#include "fork_sequence.h"

#include <errno.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "atfork.h"
#include "context/attr_keys.h"
#include "deferral/deferral.h"
#include "messages/fifo.h"
#include "leaves/log.h"
#include "leaves/raw_syscall.h"
#include "messages/profiler_state.h"
#include "deferral/pull_queue.h"
#include "delivery/deliverer.h"
#include "runtime.h"
#include "leaves/runtime_state.h"
#include "leaves/stats.h"
#include "tracer_resource.h"
#include "leaves/raw_syscall.h"

static void take_locks(void)
{
    if (!runtime_active())
        return;
    tracer_resource_fork_prepare();
    attr_keys_fork_prepare();
    profiler_state_fork_prepare();
    pull_queue_fork_prepare();
    fifo_fork_prepare();
    deferral_fork_prepare();
}

/* A raw clone child that was not set up yet and forks: set up first, so that the locks taken
 * next are its own (one may be a copy held by a parent thread) and its child is a copy of a
 * process with a socket of its own. */
static void prepare(void)
{
    fork_sequence_check_process();
    runtime_fork_prepare();
    take_locks();
}

static void parent(void)
{
    if (!runtime_active())
        return;
    deferral_fork_parent();
    fifo_fork_parent();
    pull_queue_fork_parent();
    profiler_state_fork_parent();
    attr_keys_fork_parent();
    tracer_resource_fork_parent();
}

/* The process proflink was set up for: the one that started it, or the fork child that set
 * itself up. A process whose getpid() differs is a copy of it (fork_sequence_check_process).
 * Relaxed: only this process's own threads read it, to compare it with getpid(); what a set-up
 * publishes is ordered by the publications themselves. */
static _Atomic int set_up_for;

void fork_sequence_child(void)
{
    if (!runtime_active())
        return;
    if (runtime_sandboxed()) {
        runtime_fork_child_sandboxed();
        return;
    }
    atomic_store_explicit(&set_up_for, (int)raw_getpid(), memory_order_relaxed);
    deferral_fork_child();
    fifo_fork_child();
    pull_queue_fork_child();
    profiler_state_fork_child();
    attr_keys_fork_child();
    reader_fork_child();
    stats_reset();
    runtime_fork_child();
    tracer_resource_fork_child();
}

/* Nothing was prepared in the parent: each module's locks are made new (a parent thread may
 * have held one at the copy, and it does not exist here), then taken as prepare takes them, so
 * that the child steps, which release them, are exactly a fork child's. Single-threaded. */
void fork_sequence_orphan_child(void)
{
    if (!runtime_active() || runtime_sandboxed())
        return;
    tracer_resource_fork_orphan();
    attr_keys_fork_orphan();
    profiler_state_fork_orphan();
    pull_queue_fork_orphan();
    fifo_fork_orphan();
    deferral_fork_orphan();
    take_locks();
    fork_sequence_child();
}

#ifndef KCMP_VM
#define KCMP_VM 1 /* linux/kcmp.h: the kernel ABI */
#endif

/* 1 when pid certainly runs in our address space: a vfork() child, or a clone(CLONE_VM) one,
 * is another process in its parent's memory, and a set-up there would rewrite the parent's
 * published state with the child's. kcmp says so; when it cannot (no CONFIG_KCMP, a container
 * policy, the parent gone) the answer is "not shared": the entry points that check (see the
 * header) are none that such a child calls between its creation and its exec or _exit. */
static int shares_memory_with(int pid)
{
#ifdef SYS_kcmp
    /* the instruction itself: syscall() is proflink's own hook (hooks/seccomp.c), and the
     * library never goes through its hooks */
    return raw_syscall6(SYS_kcmp, (long)raw_getpid(), (long)pid, (long)KCMP_VM, 0, 0, 0) == 0;
#else
    (void)pid;
    return 0;
#endif
}

void fork_sequence_check_process(void)
{
    if (!runtime_active() || runtime_sandboxed())
        return; /* sandboxed: getpid itself is a system call the program did not ask for */
    int recorded = atomic_load_explicit(&set_up_for, memory_order_relaxed);
    int now = raw_getpid(); /* a system call each time: nothing cached to go stale in a copy */
    if (__builtin_expect(now == recorded || recorded == 0, 1))
        return;
    int saved_errno = errno; /* the callers are the program's calls: errno is theirs */
    /* One thread sets the copy up; one that races it goes on without waiting (the header says
     * what that means). */
    if (!shares_memory_with(recorded) &&
        atomic_compare_exchange_strong(&set_up_for, &recorded, now)) {
        log_info("pid %d is a copy of pid %d made without fork handlers (a raw clone): it gets "
                 "its own socket and context now",
                 now, recorded);
        fork_sequence_orphan_child();
    }
    errno = saved_errno;
}

void fork_sequence_install(void)
{
    static _Atomic int installed;
    atomic_store_explicit(&set_up_for, (int)raw_getpid(), memory_order_relaxed);
    if (atomic_exchange(&installed, 1))
        return;
    atfork_register(prepare, parent, fork_sequence_child);
}
