/* exe_path.h — the path of the running program's executable, as /proc/self/exe names it, which
 * is what PROFLINK_INCLUDE/EXCLUDE match and what the default service name is made of.
 *
 * Read at every start of a host that selects programs, most of which it does not serve, so with
 * the system calls the C library's dynamic loader makes anyway (open, read, stat, close): a
 * program sandboxed from its exec on by an allowlist of its own calls (systemd's
 * SystemCallFilter=, OCI profiles) must survive a start that does not serve it, and readlink
 * is not among them. The path is had from the name the program was executed by (AT_EXECFN)
 * when that is absolute, holds no symbolic link and is an ELF program of this machine (a
 * script's or a binfmt_misc program's /proc/self/exe is its interpreter, not the file that was
 * executed): a stat per component, then its first bytes. Anything else (a relative name, a
 * link on the way as on merged-/usr systems, a file it cannot read) is read from
 * /proc/self/maps: the file mapped at the program's entry point, named as /proc/self/exe names
 * it. That costs the process's first /proc access, 12 to 22 us (docs/speed.md). */
#ifndef PROFLINK_EXE_PATH_H
#define PROFLINK_EXE_PATH_H

#include <limits.h>

/* Fills path (PATH_MAX bytes, NUL-terminated; "" when even /proc/self/exe cannot be read). */
void exe_path_read(char path[PATH_MAX]);

/* The same from the given name alone: 0 when path holds its absolute form (no link on the way)
 * and name is an ELF program of this machine, -1 when the caller must ask the kernel (exposed
 * for the tests). */
int exe_path_resolve(const char *name, char path[PATH_MAX]);

#endif
