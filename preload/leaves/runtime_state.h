/* runtime_state.h — two process-wide flags every layer reads: whether proflink runs in this
 * process, and whether the program has sandboxed it (seccomp). A leaf: it calls nothing, so the
 * modules that only ask "am I on?" (records, statistics, the API, the hooks) depend on these
 * flags and not on the start-up code that sets them (start.c, runtime.c). */
#ifndef PROFLINK_RUNTIME_STATE_H
#define PROFLINK_RUNTIME_STATE_H

/* 1 once proflink runs in this process (socket, storage and records published). Cheap. */
int runtime_active(void);
/* Set by start-up once everything is published (release), cleared when a fork child cannot
 * publish its own. */
void runtime_set_active(int on);

/* The program is about to install a seccomp filter (begin) / could not (failed). While
 * sandboxed, proflink makes no system call of its own. */
void runtime_sandbox_begin(void);
void runtime_sandbox_failed(void);
int runtime_sandboxed(void);

#endif
