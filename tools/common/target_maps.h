/* target_maps.h — the target's /proc/PID/maps, and the two mappings profilers look for in it:
 * the apmint agent library (by file name regex) and the OpenTelemetry process context
 * (OTEL_CTX, by exact mapping name). */
#ifndef TARGET_MAPS_H
#define TARGET_MAPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct target_mapping {
    uint64_t start, end;   /* [start, end) in the target's address space */
    uint64_t offset;       /* file offset of start */
    uint64_t inode;        /* 0 for anonymous and special mappings */
    unsigned dev_major, dev_minor;
    char perms[5];         /* "r-xp" */
    char *path;            /* exactly as printed by the kernel ("" when none) */
};

struct target_maps {
    struct target_mapping *v;
    size_t n;
};

/* Reads and parses /proc/PID/maps. */
int target_maps_read(pid_t pid, struct target_maps *out, char *err);

/* Without reading the whole table: the path of the first mapped file of pid whose path contains
 * needle, into out (if not NULL); 1 when there is one, 0 when not (or /proc/PID/maps is gone). */
int target_maps_find_file(pid_t pid, const char *needle, char *out, size_t cap);
void target_maps_free(struct target_maps *m);

int target_mapping_exec(const struct target_mapping *m);

/* The path as the profiler sees it: the kernel's " (deleted)" suffix removed. Returns a pointer
 * into buf (of size cap) or to m->path. */
const char *target_mapping_clean_path(const struct target_mapping *m, char *buf, size_t cap);

/* Whether a path matches the apmint library regex `.*\/elastic-jvmti-linux-([\w-]*)\.so`
 * (unanchored, so e.g. "...-x.so.1" matches too, exactly as in the profiler). */
int target_agent_lib_name_matches(const char *path);

/* The first executable, file-backed mapping whose path matches that regex (NULL if none).
 * *count (if not NULL) gets the number of distinct matching files. */
const struct target_mapping *target_maps_find_agent_lib(const struct target_maps *m, size_t *count);

/* The OTEL_CTX mapping: non-executable, named exactly "[anon_shmem:OTEL_CTX]", "[anon:OTEL_CTX]",
 * "/memfd:OTEL_CTX" or "/memfd:OTEL_CTX (deleted)". NULL if none. */
const struct target_mapping *target_maps_find_otel_ctx(const struct target_maps *m);

/* The lowest-addressed mapping of the same file (same device and inode) as m. */
const struct target_mapping *target_maps_first_of_file(const struct target_maps *m,
                                                       const struct target_mapping *of);

#endif
