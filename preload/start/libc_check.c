/* libc_check.c — see libc_check.h. glibc defines gnu_get_libc_version and musl does not; a weak
 * reference tells them apart without calling into either. */
#include "libc_check.h"

/* for __GLIBC__ (any libc header defines it on glibc) */
#include <stdlib.h>
#include <unistd.h>

#include "leaves/log.h"
#include "leaves/start_path.h"
#include "leaves/str.h"

extern const char *gnu_get_libc_version(void) __attribute__((weak));

#ifdef __GLIBC__
#define BUILT_FOR_GLIBC 1
#define MISMATCH_WARNING "proflink: this is the glibc build in a program of another C library " \
                         "(musl?); inactive in this process (use the musl build)\n"
#else
#define BUILT_FOR_GLIBC 0
#define MISMATCH_WARNING "proflink: this is the musl build in a glibc program; inactive in " \
                         "this process (use the glibc build)\n"
#endif

START_PATH_CODE int libc_check(void)
{
#ifdef PROFLINK_STATIC
    /* Linked into the program: its libc is ours by construction (and in a static link a weak
     * reference pulls nothing out of libc.a, so it would read as NULL). */
    return 1;
#endif
    int on_glibc = gnu_get_libc_version != NULL;
    if (on_glibc == BUILT_FOR_GLIBC)
        return 1;
    /* The configuration is never read in this process, but PROFLINK_LOG=off (or error) still
     * silences this warning: a host that asked for silence gets it. secure_getenv exists in
     * both C libraries and only reads the environment, so calling the other one is safe. */
    const char *level = secure_getenv("PROFLINK_LOG");
    if (!level || !(str_is_word(level, "off") || str_is_word(level, "error")))
        log_raw(MISMATCH_WARNING, sizeof MISMATCH_WARNING - 1);
    return 0;
}
