/* target_attach.h — everything the eBPF profiler's apmint integration concludes about a process
 * when it attaches, as separate steps so a tool can report each one:
 *
 *   target_open            /proc/PID/maps and /proc/PID/mem
 *   target_find_library    1. an executable, file-backed mapping named elastic-jvmti-linux-*.so
 *   target_read_elf        2. storage symbol (st_size 8) and TLSDESC relocation; load bias
 *   target_read_tls_offset 3. the static TLS offset the dynamic loader put in the descriptor
 *   target_read_storage    4. the process storage block
 *   target_check_socket    5. the socket it names
 *
 * Each step needs the previous ones (the storage step needs only 1-2). target_attach runs them
 * all. The OpenTelemetry thread pointer otel_thread_ctx_v1 is looked up on the way (steps 2-3)
 * but never fails a step: it is optional. */
#ifndef TARGET_ATTACH_H
#define TARGET_ATTACH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "target_elf.h"
#include "target_maps.h"
#include "target_mem.h"
#include "target_socket.h"
#include "target_storage.h"
#include "target_util.h"

#define TARGET_STORAGE_SYMBOL "elastic_apm_profiling_correlation_process_storage_v1"
#define TARGET_TLS_SYMBOL "elastic_apm_profiling_correlation_tls_v1"
#define TARGET_OTEL_TLS_SYMBOL "otel_thread_ctx_v1"

struct target {
    pid_t pid;
    struct target_maps maps;
    struct target_mem mem;

    /* 1 */
    const struct target_mapping *lib; /* points into maps */
    size_t lib_files;                 /* matching files (the profiler attaches to each) */
    char lib_path[4096];              /* without " (deleted)" */

    /* 2 */
    struct target_elf elf;
    struct target_sym storage_sym;
    struct target_reloc tls_reloc;
    uint64_t load_bias;
    uint64_t load_bias_first; /* the second opinion, see target_elf_bias_from_first */
    int has_otel_reloc;
    struct target_reloc otel_reloc;
    char otel_reloc_err[TARGET_ERRLEN];

    /* 3 */
    uint64_t tls_desc_addr; /* runtime address of the descriptor: {resolver, argument} */
    uint64_t tls_resolver;
    int64_t tls_offset;
    int has_otel_offset;
    int64_t otel_tls_offset;
    char otel_offset_err[TARGET_ERRLEN];

    /* 4 */
    uint64_t storage_ptr_addr; /* runtime address of the exported pointer variable */
    struct target_storage storage;

    /* 5 */
    struct target_socket sock;
};

/* Fails with "no such process" or a permission message that says what access is needed.
 * target_close is safe (and needed) after any call of target_open or target_attach. */
int target_open(struct target *t, pid_t pid, char *err);
void target_close(struct target *t);

int target_find_library(struct target *t, char *err);
int target_read_elf(struct target *t, char *err);
int target_read_tls_offset(struct target *t, char *err);
int target_read_storage(struct target *t, char *err);
int target_check_socket(struct target *t, char *err);

/* target_open plus steps 1-5: 0 when the profiler would attach. */
int target_attach(struct target *t, pid_t pid, char *err);

/* Whether a TLSDESC argument is a static TLS offset on this architecture (negative and small on
 * x86_64, where static TLS lies below the thread pointer; positive and small on aarch64). A
 * pointer-sized value means dynamic TLS (a late dlopen): the profiler would read garbage. */
int target_is_static_tls_offset(int64_t off);

#endif
