/* copies.c — see copies.h. The exported names (the contract's storage pointer and TLS variable,
 * the API, the hooks) resolve to the first copy in the program's global scope, for the program
 * and for every later copy's own references alike: a second copy that started would write its
 * storage block and thread records into the first copy's variables, name a socket of its own,
 * and publish a second OTEL_CTX. So a copy that is not the first stays inactive, and the first
 * serves alone whatever the order the constructors run in (glibc runs a later preload's first). */
#include "copies.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "config/config.h"
#include "leaves/export.h"
#include "leaves/log.h"
#include "leaves/str.h"

#ifndef PROFLINK_STATIC
/* 1 when PATH is proflink's build for the other C library: that copy stays inactive in this
 * program (libc_check.c), so it serves nothing and is not one to yield to. Our references to
 * the exported names still reach its variables, whose mapping the profiler reads as any copy's. */
static int other_libc_build(const char *path)
{
    const char *base = str_last(path, '/');
    int musl_name = str_contains(base ? base : path, "-proflink-musl-");
#ifdef __GLIBC__
    return musl_name;
#else
    return !musl_name && str_contains(base ? base : path, "-proflink-");
#endif
}

/* This object's own extent, from the linker (hidden: each copy sees its own). */
extern const char __ehdr_start[] __attribute__((visibility("hidden")));
extern const char _end[] __attribute__((visibility("hidden")));

/* The contract's names as the global scope resolves them for our code: our references go
 * through the GOT (default visibility, no -Bsymbolic), so these are the first definitions. */
PROFLINK_EXPORT const char *proflink_version(void);
extern void *elastic_apm_profiling_correlation_process_storage_v1;
extern __thread void *otel_thread_ctx_v1;
extern __thread void *thread_records_own_otel_ctx __attribute__((visibility("hidden")));

/* The object whose TLS block (in this thread) holds addr: dlsym and dladdr know nothing of TLS
 * addresses, dl_iterate_phdr gives each module's block. */
struct tls_owner {
    const void *addr;
    const char *name;
};

static int find_tls_owner(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct tls_owner *o = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        const char *block = info->dlpi_tls_data;
        if (ph->p_type == PT_TLS && block && (const char *)o->addr >= block &&
            (const char *)o->addr < block + ph->p_memsz) {
            o->name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "the program";
            return 1;
        }
    }
    return 0;
}

/* When def (the global scope's definition) lies outside this object: its path in *who (dladdr,
 * only then: it searches symbol tables), unless it is proflink's build for the other libc. */
static int defined_before_us(const void *def, const char **who)
{
    Dl_info first;
    if ((const char *)def >= __ehdr_start && (const char *)def < _end)
        return 0;
    if (!dladdr(def, &first) || !first.dli_fname || other_libc_build(first.dli_fname))
        return 0;
    *who = first.dli_fname;
    return 1;
}
#endif

int copies_first(void)
{
#ifdef PROFLINK_STATIC
    return 1; /* linked into the program: the program's own definitions come first anyway */
#else
    const char *who;
    /* an exported function every copy of proflink defines: where the global scope finds it. No
     * lookup by name: this runs at the start of every process under a host-wide preload. */
    if (defined_before_us((const void *)proflink_version, &who)) {
        Dl_info mine;
        log_warn("another copy of proflink, %s, was loaded first and serves this process; this "
                 "copy, %s, stays inactive (load only one copy: LD_PRELOAD, /etc/ld.so.preload)",
                 who, dladdr((void *)copies_first, &mine) && mine.dli_fname ? mine.dli_fname : "?");
        return 0;
    }
    /* Another provider of the format loaded before proflink (an agent's library earlier in
     * LD_PRELOAD): every write of ours to the contract's names would land in its variables, its
     * storage and its threads' records. It serves the process; proflink stays out of it. */
    if (defined_before_us(&elastic_apm_profiling_correlation_process_storage_v1, &who)) {
        log_info("%s, loaded before proflink, provides the apmint format in this process; "
                 "proflink stays inactive here", who);
        return 0;
    }
    /* Another exporter of the OTel thread pointer ahead of proflink (a tracer in the program
     * itself, a library earlier in LD_PRELOAD): our thread records would be written into its
     * variable. The OTel side (thread records and the process context that describes them) is
     * left to it; the apmint side stays proflink's. */
    if (&otel_thread_ctx_v1 != &thread_records_own_otel_ctx && proflink_config.otel_context) {
        struct tls_owner o = {(const void *)&otel_thread_ctx_v1, NULL};
        dl_iterate_phdr(find_tls_owner, &o);
        proflink_config.otel_context = 0;
        log_info("%s exports otel_thread_ctx_v1 ahead of proflink: proflink leaves the "
                 "OpenTelemetry thread and process contexts to it",
                 o.name ? o.name : "another object");
    }
    return 1;
#endif
}
