/* fork_sequence.h — the one owner of what proflink does around fork() (fork_sequence.c says the
 * order and the rules). Modules expose X_fork_prepare / X_fork_parent / X_fork_child (and
 * X_fork_orphan for a copy made without the handlers) and know nothing else about fork; only
 * fork_sequence.c registers fork handlers and calls them. */
#ifndef PROFLINK_FORK_SEQUENCE_H
#define PROFLINK_FORK_SEQUENCE_H

/* Registers the sequence's handlers (pthread_atfork semantics), once per process image. Called
 * by start-up once proflink is active, after its first allocation (fork_sequence.c: why). */
void fork_sequence_install(void);

/* "Become a child": everything a child that keeps running needs before it runs the program's
 * code again (its own socket, storage, OTel context, reader; the parent's in-flight state
 * dropped). It is the fork child handler; the one entry point for any other way a process
 * finds itself a copy of its parent. Expects the prepare step to have run in the parent (it
 * releases the locks that step took). Single-threaded caller. */
void fork_sequence_child(void);

/* The same for a copy of the process made without the fork handlers (a raw clone(SIGCHLD)): no
 * prepare step ran, so the locks are made new rather than released. Single-threaded caller. */
void fork_sequence_orphan_child(void);

/* Called by the library's entry points that may be a copy's first use of it; sets the copy up
 * (fork_sequence_orphan_child) when getpid() is not the pid proflink was set up for. One getpid
 * system call, so never on the hot path (proflink_set_trace and the other record writes have
 * none: a copy that only writes its records publishes them in its own memory, which is right,
 * but has no socket of its own until one of these runs). The entry points that check:
 *   - pthread_create (hooks/pthread_create.c, and __wrap_pthread_create in static programs);
 *   - fork() (the prepare handler: the copy is set up before it is copied again);
 *   - proflink_init, proflink_set_resource, the first registration of an attribute key
 *     (proflink_set_attribute);
 *   - the message and pull API: proflink_set_message_callback, proflink_samples_delay_ms,
 *     proflink_host_id, proflink_end_transaction, proflink_take_transactions,
 *     proflink_transactions_fd, proflink_flush_transactions.
 * Not accept (HTTP reading): a copy that only serves did not ask for a socket of its own, and a
 * set-up allocates, which hangs in a copy whose allocator lock a parent thread held at the
 * copy (MALLOC_ARENA_MAX=1, musl); the copy keeps naming its parent's socket and leaves no file.
 * Not exec*, _exit, exit or set*id: they are what a vfork() child (another process in its
 * parent's memory) calls, and a set-up there would overwrite its parent's state; they already
 * leave the parent's socket file alone (only its creator removes or chowns it). Not while
 * sandboxed (seccomp): no system call of our own then. Not supported: a copy that made threads
 * without pthread_create before its first use, and uses the library from two of them at once
 * (the one that loses the race goes on without waiting for the set-up). Preserves errno. */
void fork_sequence_check_process(void);

#endif
