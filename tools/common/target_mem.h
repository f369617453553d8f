/* target_mem.h — reading the target's memory through /proc/PID/mem, as a profiler does from
 * outside: no stop needed, each read is a snapshot of that moment (so multi-word structures
 * need their own consistency protocol: valid byte, timestamps). */
#ifndef TARGET_MEM_H
#define TARGET_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct target_mem {
    pid_t pid;
    int fd;
};

/* Opens /proc/PID/mem read-only (needs ptrace access: same uid and not dumpable-protected, or
 * CAP_SYS_PTRACE). */
int target_mem_open(struct target_mem *m, pid_t pid, char *err);
void target_mem_close(struct target_mem *m);

/* Reads exactly len bytes at addr. 0 ok, -1 (err says where and why) on a short or failed read. */
int target_mem_read(const struct target_mem *m, uint64_t addr, void *buf, size_t len, char *err);
int target_mem_u64(const struct target_mem *m, uint64_t addr, uint64_t *out, char *err);

#endif
