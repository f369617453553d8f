/* target_attach.c — see target_attach.h. */
#include "target_attach.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "target_copies.h"

/* Static TLS is a few KiB to a few MiB from the thread pointer; heap pointers are far larger. */
#define STATIC_TLS_LIMIT (16 << 20)

int target_open(struct target *t, pid_t pid, char *err)
{
    memset(t, 0, sizeof *t);
    t->pid = pid;
    t->mem.fd = -1;
    int exists = target_pid_exists(pid);
    if (exists == 0)
        return target_fail(err, "no such process: %d", (int)pid);
    char rerr[TARGET_ERRLEN];
    if (target_maps_read(pid, &t->maps, rerr) != 0) {
        if (errno == EACCES || errno == EPERM)
            return target_fail(err, "permission denied reading /proc/%d/maps: run as the "
                                    "target's user or with CAP_SYS_PTRACE (e.g. root)",
                               (int)pid);
        if (errno == ENOENT || errno == ESRCH)
            return target_fail(err, "no such process: %d", (int)pid);
        return target_fail(err, "%s", rerr);
    }
    if (target_mem_open(&t->mem, pid, rerr) != 0) {
        int e = errno;
        target_maps_free(&t->maps);
        if (e == EACCES || e == EPERM)
            return target_fail(err, "permission denied opening /proc/%d/mem: run as the "
                                    "target's user or with CAP_SYS_PTRACE (e.g. root)",
                               (int)pid);
        return target_fail(err, "%s", rerr);
    }
    return 0;
}

void target_close(struct target *t)
{
    target_storage_free(&t->storage);
    target_elf_close(&t->elf);
    target_mem_close(&t->mem);
    target_maps_free(&t->maps);
    t->lib = NULL;
}

int target_find_library(struct target *t, char *err)
{
    t->lib = target_maps_find_agent_lib(&t->maps, &t->lib_files);
    if (!t->lib)
        return target_fail(err, "no executable file-backed mapping matches "
                                ".*/elastic-jvmti-linux-([\\w-]*)\\.so");
    if (t->lib_files > 1) { /* the profiler tries each: the published one is what it uses */
        const struct target_mapping *p = target_copies_published(t);
        if (p)
            t->lib = p;
    }
    char buf[sizeof t->lib_path];
    snprintf(t->lib_path, sizeof t->lib_path, "%s",
             target_mapping_clean_path(t->lib, buf, sizeof buf));
    return 0;
}

int target_read_elf(struct target *t, char *err)
{
    char rerr[TARGET_ERRLEN];
    if (target_elf_open_mapping(&t->elf, t->pid, t->lib, rerr) != 0)
        return target_fail(err, "%s", rerr);
    if (!t->elf.sh)
        return target_fail(err, "no section headers: the profiler cannot find the TLSDESC "
                                "relocation");
    if (target_elf_lookup(&t->elf, TARGET_STORAGE_SYMBOL, &t->storage_sym, rerr) != 0)
        return target_fail(err, "%s", rerr);
    if (t->storage_sym.size != 8)
        return target_fail(err, "%s has st_size %" PRIu64 ", the profiler requires exactly 8",
                           TARGET_STORAGE_SYMBOL, t->storage_sym.size);
    if (t->storage_sym.shndx == SHN_UNDEF)
        return target_fail(err, "%s is undefined in this library", TARGET_STORAGE_SYMBOL);
    if (target_elf_find_tlsdesc(&t->elf, TARGET_TLS_SYMBOL, &t->tls_reloc, rerr) != 0)
        return target_fail(err, "%s", rerr);
    t->has_otel_reloc =
        target_elf_find_tlsdesc(&t->elf, TARGET_OTEL_TLS_SYMBOL, &t->otel_reloc,
                                t->otel_reloc_err) == 0;
    if (target_elf_bias(&t->elf, t->lib, &t->load_bias, rerr) != 0)
        return target_fail(err, "load bias: %s", rerr);
    if (target_elf_bias_from_first(&t->elf, target_maps_first_of_file(&t->maps, t->lib),
                                   &t->load_bias_first, rerr) != 0)
        t->load_bias_first = t->load_bias;
    return 0;
}

int target_is_static_tls_offset(int64_t off)
{
#if defined(__x86_64__)
    return off < 0 && off > -(int64_t)STATIC_TLS_LIMIT;
#else
    return off > 0 && off < (int64_t)STATIC_TLS_LIMIT;
#endif
}

/* The descriptor is two words, {resolver, argument}; -z now makes the loader fill both before
 * any constructor runs. The argument is what the profiler adds to the thread pointer. */
static int read_desc(struct target *t, uint64_t r_offset, uint64_t *resolver, int64_t *off,
                     char *err)
{
    uint64_t w[2];
    char rerr[TARGET_ERRLEN];
    if (target_mem_read(&t->mem, t->load_bias + r_offset, w, sizeof w, rerr) != 0)
        return target_fail(err, "TLS descriptor: %s", rerr);
    *resolver = w[0];
    *off = (int64_t)w[1];
    if (!target_is_static_tls_offset(*off))
        return target_fail(err, "TLS descriptor argument 0x%" PRIx64 " is not a static TLS "
                                "offset: the variable is in dynamic TLS (library loaded by a late "
                                "dlopen?), the profiler would read garbage",
                           w[1]);
    return 0;
}

int target_read_tls_offset(struct target *t, char *err)
{
    t->tls_desc_addr = t->load_bias + t->tls_reloc.r_offset;
    if (read_desc(t, t->tls_reloc.r_offset, &t->tls_resolver, &t->tls_offset, err) != 0)
        return -1;
    if (t->has_otel_reloc) {
        uint64_t resolver;
        t->has_otel_offset = read_desc(t, t->otel_reloc.r_offset, &resolver, &t->otel_tls_offset,
                                       t->otel_offset_err) == 0;
    }
    return 0;
}

int target_read_storage(struct target *t, char *err)
{
    t->storage_ptr_addr = t->load_bias + t->storage_sym.value;
    return target_storage_read(&t->mem, t->storage_ptr_addr, &t->storage, err);
}

int target_check_socket(struct target *t, char *err)
{
    return target_socket_check(t->pid, t->storage.socket_path.s, t->storage.socket_path.len,
                               &t->sock, err);
}

int target_attach(struct target *t, pid_t pid, char *err)
{
    if (target_open(t, pid, err) != 0)
        return -1;
    if (target_find_library(t, err) != 0 || target_read_elf(t, err) != 0 ||
        target_read_tls_offset(t, err) != 0 || target_read_storage(t, err) != 0 ||
        target_check_socket(t, err) != 0)
        return -1;
    return 0;
}
