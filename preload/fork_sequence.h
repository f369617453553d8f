/* fork_sequence.h — the one owner of what proflink does around fork() (fork_sequence.c says the
 * order and the rules). Modules expose X_fork_prepare / X_fork_parent / X_fork_child and know
 * nothing else about fork; only fork_sequence.c registers fork handlers and calls them. */
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

#endif
