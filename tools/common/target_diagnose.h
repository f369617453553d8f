/* target_diagnose.h — for a failed attach check (proflink-inspect's, and proflink-agent's when it
 * cannot attach), the one line that says what to fix, found by looking at the target from
 * outside (its maps, executable, environment and auxiliary vector, the system configuration
 * file and the socket directories under its root). */
#ifndef TARGET_DIAGNOSE_H
#define TARGET_DIAGNOSE_H

#include <stddef.h>
#include <sys/types.h>

/* Writes into fix (cap bytes) what to do about the failed check named check ("mapping",
 * "storage", "socket", ...). Never fails: without a specific cause it names the general one. */
void target_fix(pid_t pid, const char *check, char *fix, size_t cap);

#endif
