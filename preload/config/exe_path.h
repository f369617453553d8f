/* exe_path.h — the path of the running program's executable, as /proc/self/exe names it, which
 * is what PROFLINK_INCLUDE/EXCLUDE match and what the default service name is made of.
 *
 * Reading /proc/self/exe is the dearest step of a start that a selection leaves out: the
 * first /proc access of a new process makes the kernel build its /proc entries, 12 to 22 us,
 * more than the rest of such a start (docs/speed.md). The same path is usually had for a few
 * system calls from the name the program was executed by (AT_EXECFN): made absolute, every
 * symbolic link resolved, and kept only when that file is an ELF program of this machine (a
 * script's or a binfmt_misc program's /proc/self/exe is its interpreter, not the file that was
 * executed). Anything else (a relative name, a file it cannot read, a link loop, a path too long)
 * falls back to /proc/self/exe. */
#ifndef PROFLINK_EXE_PATH_H
#define PROFLINK_EXE_PATH_H

#include <limits.h>

/* Fills path (PATH_MAX bytes, NUL-terminated; "" when even /proc/self/exe cannot be read). */
void exe_path_read(char path[PATH_MAX]);

/* The same from the given name alone: 0 when path holds its resolved form and name is an ELF
 * program of this machine, -1 when the caller must ask /proc/self/exe (exposed for the tests). */
int exe_path_resolve(const char *name, char path[PATH_MAX]);

#endif
