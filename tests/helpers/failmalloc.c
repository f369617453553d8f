/* failmalloc — a preloadable shim (built as build/tests/libfailmalloc.so by tests/robustness
 * setup) whose malloc/calloc/realloc fail for callers inside proflink's library and work for
 * everyone else, to show that proflink survives malloc failure without harming the program.
 * Without -DFAILMALLOC_SO this file builds an empty program, so the helper rules accept it. */
#ifdef FAILMALLOC_SO
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

static int caller_is_proflink(void *ret)
{
    Dl_info info;
    return dladdr(ret, &info) && info.dli_fname && strstr(info.dli_fname, "elastic-jvmti-linux-proflink");
}

void *malloc(size_t n)
{
    return caller_is_proflink(__builtin_return_address(0)) ? NULL : __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
    return caller_is_proflink(__builtin_return_address(0)) ? NULL : __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
    return caller_is_proflink(__builtin_return_address(0)) ? NULL : __libc_realloc(p, n);
}
#else
int main(void) { return 0; }
#endif
