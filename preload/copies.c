/* copies.c — see copies.h. The exported names (the contract's storage pointer and TLS variable,
 * the API, the hooks) resolve to the first copy in the program's global scope, for the program
 * and for every later copy's own references alike: a second copy that started would write its
 * storage block and thread records into the first copy's variables, name a socket of its own,
 * and publish a second OTEL_CTX. So a copy that is not the first stays inactive, and the first
 * serves alone whatever the order the constructors run in (glibc runs a later preload's first). */
#include "copies.h"

#include <dlfcn.h>
#include <string.h>

#include "log.h"

#ifndef PROFLINK_STATIC
/* 1 when PATH is proflink's build for the other C library: that copy stays inactive in this
 * program (libc_check.c), so it serves nothing and is not one to yield to. Our references to
 * the exported names still reach its variables, whose mapping the profiler reads as any copy's. */
static int other_libc_build(const char *path)
{
    const char *base = strrchr(path, '/');
    int musl_name = strstr(base ? base : path, "-proflink-musl-") != NULL;
#ifdef __GLIBC__
    return musl_name;
#else
    return !musl_name && strstr(base ? base : path, "-proflink-") != NULL;
#endif
}
#endif

int copies_first(void)
{
#ifdef PROFLINK_STATIC
    return 1; /* linked into the program: the program's own definitions come first anyway */
#else
    /* an exported function every copy defines: where the global scope finds it is the first */
    void *first_def = dlsym(RTLD_DEFAULT, "proflink_version");
    Dl_info mine, first;
    if (!first_def || !dladdr((void *)copies_first, &mine) || !dladdr(first_def, &first) ||
        first.dli_fbase == mine.dli_fbase || !first.dli_fname || other_libc_build(first.dli_fname))
        return 1;
    log_warn("another copy of proflink, %s, was loaded first and serves this process; this copy, "
             "%s, stays inactive (load only one copy: LD_PRELOAD, /etc/ld.so.preload)",
             first.dli_fname, mine.dli_fname ? mine.dli_fname : "?");
    return 0;
#endif
}
