/* agent_unwind.h — walking a stopped thread's stack from outside with libunwind's ptrace
 * accessors (DWARF CFI from .eh_frame, as profilers do for native code), and naming the result:
 * a 128-bit stack-trace id computed from the frame addresses. Equal stacks in one process get
 * equal ids; the id is opaque to the receiver, exactly like the profiler's. */
#ifndef AGENT_UNWIND_H
#define AGENT_UNWIND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <libunwind.h>

#define AGENT_MAX_FRAMES 64

struct agent_stack {
    uint64_t ip[AGENT_MAX_FRAMES]; /* [0] = where the thread was, then return addresses */
    size_t n;
    uint8_t id[16];
};

struct agent_unwinder {
    unw_addr_space_t as;
    struct agent_upt {
        pid_t tid;
        void *upt; /* libunwind's per-thread ptrace context (caches the ELF images it read) */
    } *v;
    size_t n, cap;
    uint64_t vdso_start, vdso_end; /* the target's [vdso], 0, 0 when unknown */
};

int agent_unwinder_init(struct agent_unwinder *u, char *err);
void agent_unwinder_free(struct agent_unwinder *u);

/* The ptrace context for tid (created on first use; NULL on failure). */
void *agent_unwinder_context(struct agent_unwinder *u, pid_t tid);

/* The target's [vdso] mapping: a thread stopped in it cannot be unwound from outside (the
 * vDSO has no file for libunwind to read its .eh_frame from, and the frame-pointer guess it
 * falls back to gave a garbage caller, e.g. in clock_gettime). */
void agent_unwinder_set_vdso(struct agent_unwinder *u, uint64_t start, uint64_t end);

/* Unwinds the stack of tid, which must be in a ptrace stop, and hashes it into out->id.
 * Returns 0 when at least one frame was found, AGENT_UNWIND_IN_VDSO when the thread is in the
 * vDSO (nothing unwound: sample it again), -1 otherwise. */
#define AGENT_UNWIND_IN_VDSO (-2)
int agent_unwind(struct agent_unwinder *u, pid_t tid, struct agent_stack *out);

/* The 128-bit stack-trace id of a list of frame addresses (two independently seeded 64-bit
 * FNV-1a style passes, each finished with an avalanche mix; big-endian bytes). */
void agent_stack_hash(const uint64_t *ip, size_t n, uint8_t id[16]);

#endif
